// write_file_atomically: writes bytes to a temporary file next to the target, flushes it, then
// renames it over the target, so a reader never sees a half-written file and a failure leaves no
// partial output behind. Errors (an unwritable folder, a full disk) are IOError naming the path.
#pragma once

#include <string>

namespace qgrad::deploy {

void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace qgrad::deploy

// Storage allocation.
#include "core/storage.h"

namespace qgrad {

Storage::Storage(std::size_t nbytes, Device device)
    : data_(allocate(nbytes, device)), nbytes_(nbytes), device_(device) {}

}  // namespace qgrad

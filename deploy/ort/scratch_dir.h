// ScratchDir: a private temporary folder (mkdtemp under $TMPDIR, else /tmp) that is removed with
// everything in it when the object goes away, for the files a deploy check hands to another
// program (an ONNX export, raw inputs and outputs). Creation failure is an IOError naming the
// path.
#pragma once

#include <string>

namespace qgrad::deploy {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix = "qgrad");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace qgrad::deploy

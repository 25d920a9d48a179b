/// @file
/// ImageFolder: a dataset of JPEG and PNG files sorted into one sub-folder per class, as
/// torchvision.datasets.ImageFolder reads them. The classes are the sub-folders' names in sorted
/// (byte) order, class k being label k; each class folder is searched recursively for files whose
/// name ends in .jpg, .jpeg or .png (any case; other files are ignored), listed folder by folder
/// in sorted order as torchvision's os.walk does. A root holding `train/` and `val/` gives the two
/// splits (their class lists must agree); a root of class folders alone is split deterministically:
/// in each class, a fixed permutation of its sorted files (the same on every machine and run, not
/// depending on the training seed) sends round(n x val_fraction) of them (at most n - 1) to the
/// validation split. Files are decoded when an example is read (nn/data/image_decode.h), on the
/// loader's worker threads: examples are float32 [C, H, W] in [0, 1] at the file's own size, to be
/// resized and cropped by the transforms (nn/data/resize_transforms.h), and int64 0-d labels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/data/dataset.h"
#include "nn/data/mnist.h"

namespace qgrad::data {

/// How an image folder is read.
struct ImageFolderOptions {
  int channels = 3;           ///< 3 (RGB) or 1 (grey), whatever the files hold
  double val_fraction = 0.1;  ///< without train/ and val/: the share of each class held out
};

/// One split of a folder of class folders.
class ImageFolder : public Dataset {
 public:
  /// Lists `split` of `root` (Test is `val/`, or the held-out part). Throws IOError naming the
  /// folder when it is missing, has no class folders, a class folder holds no image, `train/` and
  /// `val/` disagree on the classes, or only one of them exists; ValueError for bad options.
  ImageFolder(const std::string& root, Split split, ImageFolderOptions options = {});

  /// The number of images.
  std::size_t size() const override { return files_.size(); }
  /// Image `index` decoded as float32 [C, H, W] in [0, 1], and its int64 0-d label. Throws
  /// IOError naming the file when it cannot be read or decoded.
  Example get(std::size_t index) const override;

  /// The class names, sorted; label k is classes()[k].
  const std::vector<std::string>& classes() const { return classes_; }
  /// The file of example `index`.
  const std::string& file(std::size_t index) const { return files_.at(index); }
  /// The label of example `index`.
  std::int64_t label(std::size_t index) const { return labels_.at(index); }

 private:
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<std::int64_t> labels_;
};

/// The class names of `root` as ImageFolder sees them (from `train/` when present), without
/// listing the images. Throws IOError as ImageFolder does.
std::vector<std::string> image_folder_classes(const std::string& root);

}  // namespace qgrad::data

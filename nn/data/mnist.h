/// @file
/// MNIST-format image datasets: MNIST and Fashion-MNIST (same IDX files, 28x28 grey images and
/// labels 0-9). Examples are float32 images [1, H, W] scaled to [0, 1] and int64 0-d labels.
/// Files are looked up as `<root>/{train,t10k}-{images-idx3,labels-idx1}-ubyte`, plain or .gz.
/// Fashion-MNIST defaults to /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist).
#pragma once

#include <string>
#include <vector>

#include "nn/data/dataset.h"

namespace qgrad::data {

/// Which part of the dataset: the training or the test images.
enum class Split { Train, Test };

/// An MNIST-format dataset (IDX files) loaded into memory: uint8 images and int64 labels.
class MNIST : public Dataset {
 public:
  /// Throws IOError naming the paths tried when the files are missing, and IOError for files
  /// that are corrupt or inconsistent (no images, image/label counts, label range).
  MNIST(const std::string& root, Split split);

  /// The number of images.
  std::size_t size() const override;
  Example get(std::size_t index) const override;

  const Tensor& images() const { return images_; }    ///< uint8 [N, H, W]
  const Tensor& targets() const { return targets_; }  ///< int64 [N]
  /// The split that was loaded.
  Split split() const { return split_; }

 private:
  Tensor images_, targets_;
  Split split_;
};

/// Fashion-MNIST, read from Debian's dataset-fashion-mnist package by default.
class FashionMNIST : public MNIST {
 public:
  /// Where Debian's dataset-fashion-mnist installs the files.
  static constexpr const char* kDefaultRoot = "/usr/share/datasets/fashion-mnist";
  /// Loads `split` from `root`.
  explicit FashionMNIST(Split split, const std::string& root = kDefaultRoot) : MNIST(root, split) {}
  /// "T-shirt/top", "Trouser", ..., "Ankle boot".
  static const std::vector<std::string>& class_names();
};

/// True when the four Fashion-MNIST/MNIST files exist under `root` (plain or .gz).
bool mnist_files_present(const std::string& root);

}  // namespace qgrad::data

/// @file
/// CIFAR-10 and CIFAR-100 in their binary versions (the `*-binary.tar.gz` archives of
/// https://www.cs.toronto.edu/~kriz/cifar.html; no Debian package ships them). CIFAR-10's folder
/// (`cifar-10-batches-bin`) holds data_batch_1.bin ... data_batch_5.bin (training) and
/// test_batch.bin, each a sequence of 3073-byte records: one label byte (0-9) and a 32x32 RGB
/// image as 3072 bytes in CHW order. CIFAR-100's folder (`cifar-100-binary`) holds train.bin and
/// test.bin of 3074-byte records: the coarse label (0-19), the fine label (0-99), the image.
/// Examples are float32 images [3, 32, 32] scaled to [0, 1] (as MNIST's) and int64 0-d labels.
/// A split is read whole into memory once.
#pragma once

#include <cstdint>
#include <string>

#include "nn/data/dataset.h"
#include "nn/data/mnist.h"

namespace qgrad::data {

/// Which CIFAR: 10 classes, or 100 (fine) / 20 (coarse) classes.
enum class CIFARVariant { CIFAR10, CIFAR100 };
/// CIFAR-100's label: the fine class (0-99) or the coarse superclass (0-19).
enum class CIFARLabel { Fine, Coarse };

/// Images and labels parsed from CIFAR binary records.
struct CIFARRecords {
  Tensor images;  ///< uint8 [N, 3, 32, 32]
  Tensor labels;  ///< int64 [N]
};

/// Parses the bytes of one CIFAR binary file; `source` names it in errors. Throws IOError when
/// the size is not a whole, non-zero number of records or a label is out of range. For CIFAR-10
/// `label` is ignored.
CIFARRecords parse_cifar(const std::string& bytes, CIFARVariant variant, CIFARLabel label,
                         const std::string& source);

/// A CIFAR-10 or CIFAR-100 split loaded into memory.
class CIFAR : public Dataset {
 public:
  /// Loads `split` from `root`: the extracted folder itself, or a folder holding it
  /// (`cifar-10-batches-bin` / `cifar-100-binary`). Throws IOError naming the files expected
  /// and where to get them when they are missing, and IOError naming the file when one is
  /// malformed.
  CIFAR(const std::string& root, Split split, CIFARVariant variant = CIFARVariant::CIFAR10,
        CIFARLabel label = CIFARLabel::Fine);

  /// The number of images.
  std::size_t size() const override;
  /// Image `index` as float32 [3, 32, 32] in [0, 1] and its int64 0-d label.
  Example get(std::size_t index) const override;

  const Tensor& images() const { return images_; }    ///< uint8 [N, 3, 32, 32]
  const Tensor& targets() const { return targets_; }  ///< int64 [N]
  /// 10 (CIFAR-10), 100 (CIFAR-100 fine) or 20 (CIFAR-100 coarse).
  std::int64_t num_classes() const { return num_classes_; }
  /// The number of classes of a variant and label kind.
  static std::int64_t num_classes(CIFARVariant variant, CIFARLabel label);

 private:
  Tensor images_, targets_;
  std::int64_t num_classes_;
};

/// True when every file of `variant`'s two splits exists under `root` (or its standard
/// sub-folder).
bool cifar_files_present(const std::string& root, CIFARVariant variant);

}  // namespace qgrad::data

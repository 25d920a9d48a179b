// make_dataset and data_shape: DataConfig's "format" to a data::MNIST, data::CIFAR,
// data::NpyDataset or data::ImageFolder, npy paths relative to data.dir.
#include "cli/dataset_factory.h"

#include <filesystem>

#include "cli/usage_error.h"
#include "core/shape.h"
#include "nn/data/cifar.h"
#include "nn/data/image_decode.h"
#include "nn/data/image_folder.h"
#include "nn/data/npy_dataset.h"

namespace qgrad::cli {

namespace {

data::CIFARVariant variant(const DataConfig& c) {
  return c.format == "cifar10" ? data::CIFARVariant::CIFAR10 : data::CIFARVariant::CIFAR100;
}

data::CIFARLabel cifar_label(const DataConfig& c) {
  return c.label == "coarse" ? data::CIFARLabel::Coarse : data::CIFARLabel::Fine;
}

data::ImageLayout layout(const DataConfig& c) {
  return c.layout == "nhwc" ? data::ImageLayout::NHWC : data::ImageLayout::NCHW;
}

// An npy path: absolute as given, relative from data.dir ("." the current directory).
std::string npy_path(const DataConfig& c, const std::string& file) {
  const std::filesystem::path p(file);
  if (p.is_absolute() || c.dir.empty() || c.dir == ".") return file;
  return (std::filesystem::path(c.dir) / p).string();
}

// Without the codecs the format cannot work: say so before any folder is listed.
void require_image_decoding() {
  if (!data::image_decoding_available())
    throw UsageError(
        "data.format \"image_folder\": this qgrad was built without JPEG / PNG decoding (install "
        "the Debian packages libjpeg62-turbo-dev and libpng-dev, e.g. with "
        "scripts/install_deps.sh, then configure and build again)");
}

}  // namespace

std::shared_ptr<data::Dataset> make_dataset(const DataConfig& c, data::Split split) {
  const bool train = split == data::Split::Train;
  if (c.format == "mnist") return std::make_shared<data::MNIST>(c.dir, split);
  if (c.format == "cifar10" || c.format == "cifar100")
    return std::make_shared<data::CIFAR>(c.dir, split, variant(c), cifar_label(c));
  if (c.format == "npy")
    return std::make_shared<data::NpyDataset>(npy_path(c, train ? c.train_images : c.test_images),
                                              npy_path(c, train ? c.train_labels : c.test_labels),
                                              layout(c), c.num_classes);
  if (c.format == "image_folder") {
    require_image_decoding();
    data::ImageFolderOptions o;
    o.channels = static_cast<int>(c.channels);
    o.val_fraction = c.val_fraction;
    return std::make_shared<data::ImageFolder>(c.dir, split, o);
  }
  throw UsageError("data.format: unknown format \"" + c.format + "\"");
}

DataShape data_shape(const DataConfig& c) {
  if (c.format == "mnist") return {};
  if (c.format == "cifar10" || c.format == "cifar100")
    return {{3, 32, 32}, data::CIFAR::num_classes(variant(c), cifar_label(c))};
  if (c.format == "npy") {
    const Shape s = data::npy_image_shape(npy_path(c, c.test_images), layout(c));
    return {{s[0], s[1], s[2]}, c.num_classes};
  }
  if (c.format == "image_folder") {
    require_image_decoding();
    return {{c.channels, c.image_size, c.image_size},
            static_cast<std::int64_t>(data::image_folder_classes(c.dir).size())};
  }
  throw UsageError("data.format: unknown format \"" + c.format + "\"");
}

std::string data_source(const DataConfig& c) {
  if (c.format == "mnist") return c.dir;
  if (c.format == "npy")
    return npy_path(c, c.train_images) + " / " + npy_path(c, c.test_images) + " (npy)";
  return c.dir + " (" + c.format + ")";
}

void check_example_shape(const data::Dataset& dataset, const DataShape& shape,
                         const std::string& what) {
  if (dataset.size() == 0) return;
  const Shape s = dataset.get(0).data.shape();
  const Shape want{shape.image.channels, shape.image.height, shape.image.width};
  if (s != want)
    throw UsageError(what + " has images of shape " + shape_str(s) +
                     " but the model is built for " + shape_str(want) +
                     " (the test images' shape)");
}

}  // namespace qgrad::cli

// MNIST/Fashion-MNIST: locating the IDX files, validating them, and building examples.
#include "nn/data/mnist.h"

#include <filesystem>

#include "core/factory.h"
#include "nn/data/idx.h"

namespace qgrad::data {

namespace {

// The existing file for `stem` under root (plain first, then .gz); empty when neither exists.
std::string find_file(const std::string& root, const std::string& stem) {
  for (const std::string& name : {stem, stem + ".gz"}) {
    const auto p = std::filesystem::path(root) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

std::string require_file(const std::string& root, const std::string& stem) {
  std::string p = find_file(root, stem);
  QGRAD_CHECK(!p.empty(), IOError, "MNIST: neither '", root, "/", stem, "' nor '", root, "/", stem,
              ".gz' exists (for Fashion-MNIST on Debian: apt install dataset-fashion-mnist, or "
              "pass the directory holding the files)");
  return p;
}

const char* prefix(Split s) {
  return s == Split::Train ? "train" : "t10k";
}

}  // namespace

bool mnist_files_present(const std::string& root) {
  for (Split s : {Split::Train, Split::Test})
    for (const char* kind : {"-images-idx3-ubyte", "-labels-idx1-ubyte"})
      if (find_file(root, std::string(prefix(s)) + kind).empty()) return false;
  return true;
}

MNIST::MNIST(const std::string& root, Split split) : split_(split) {
  const std::string img_path =
      require_file(root, std::string(prefix(split)) + "-images-idx3-ubyte");
  const std::string lbl_path =
      require_file(root, std::string(prefix(split)) + "-labels-idx1-ubyte");
  Tensor images = read_idx(img_path);
  Tensor labels = read_idx(lbl_path);
  QGRAD_CHECK(images.dtype() == kUInt8 && images.dim() == 3, IOError, "MNIST: '", img_path,
              "' must hold uint8 images [N, H, W], got ", dtype_name(images.dtype()), " ",
              images.shape());
  QGRAD_CHECK(labels.dtype() == kUInt8 && labels.dim() == 1, IOError, "MNIST: '", lbl_path,
              "' must hold uint8 labels [N], got ", dtype_name(labels.dtype()), " ",
              labels.shape());
  // An empty set would let training "succeed" on nothing.
  QGRAD_CHECK(images.size(0) > 0 && images.size(1) > 0 && images.size(2) > 0, IOError, "MNIST: '",
              img_path, "' holds no images (shape ", images.shape(), ")");
  QGRAD_CHECK(images.size(0) == labels.size(0), IOError, "MNIST: '", img_path, "' holds ",
              images.size(0), " images but '", lbl_path, "' holds ", labels.size(0), " labels");
  const auto* l = labels.data_ptr<std::uint8_t>();
  for (std::int64_t i = 0; i < labels.numel(); ++i)
    QGRAD_CHECK(l[i] < 10, IOError, "MNIST: '", lbl_path, "': label ", static_cast<int>(l[i]),
                " at index ", i, " is outside 0..9");
  images_ = images;
  targets_ = labels.to(kInt64);
}

std::size_t MNIST::size() const {
  return static_cast<std::size_t>(images_.size(0));
}

Example MNIST::get(std::size_t index) const {
  QGRAD_CHECK(index < size(), IndexError, "MNIST::get: index ", index, " out of range for ", size(),
              " examples");
  const std::int64_t h = images_.size(1), w = images_.size(2);
  Tensor x = empty({1, h, w});
  const std::uint8_t* src =
      images_.data_ptr<std::uint8_t>() + static_cast<std::int64_t>(index) * h * w;
  float* dst = x.data_ptr<float>();
  for (std::int64_t i = 0; i < h * w; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
  return {x, targets_.select(0, static_cast<std::int64_t>(index))};
}

const std::vector<std::string>& FashionMNIST::class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                 "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                 "Bag",         "Ankle boot"};
  return names;
}

}  // namespace qgrad::data

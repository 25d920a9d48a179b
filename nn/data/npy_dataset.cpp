// NpyDataset: validating an images array and a labels array, NHWC to NCHW, building examples.
#include "nn/data/npy_dataset.h"

#include "core/factory.h"
#include "core/npy.h"

namespace qgrad::data {

namespace {

// The images as an [N, C, H, W] view; IOError naming `path` for a bad dtype or rank.
Tensor to_nchw(const Tensor& images, ImageLayout layout, const std::string& path) {
  QGRAD_CHECK(images.dtype() == kUInt8 || images.dtype() == kFloat32, IOError, "NpyDataset: '",
              path, "' holds ", dtype_name(images.dtype()), " images; expected uint8 or float32");
  QGRAD_CHECK(images.dim() == 3 || images.dim() == 4, IOError, "NpyDataset: '", path,
              "' holds an array of shape ", images.shape(),
              "; expected images [N, C, H, W], [N, H, W, C] or [N, H, W]");
  Tensor t = images.dim() == 3             ? images.unsqueeze(1)
             : layout == ImageLayout::NHWC ? images.permute({0, 3, 1, 2})
                                           : images;
  for (std::int64_t d = 0; d < 4; ++d)
    QGRAD_CHECK(t.size(d) > 0, IOError, "NpyDataset: '", path, "' holds no images (shape ",
                images.shape(), ")");
  return t;
}

}  // namespace

NpyDataset::NpyDataset(const std::string& images_path, const std::string& labels_path,
                       ImageLayout layout, std::int64_t num_classes)
    : NpyDataset(load_npy(images_path), load_npy(labels_path), images_path, labels_path, layout,
                 num_classes) {}

NpyDataset::NpyDataset(Tensor images, Tensor labels, const std::string& images_path,
                       const std::string& labels_path, ImageLayout layout,
                       std::int64_t num_classes) {
  images_ = to_nchw(images, layout, images_path).contiguous();
  QGRAD_CHECK(!is_floating(labels.dtype()), IOError, "NpyDataset: '", labels_path, "' holds ",
              dtype_name(labels.dtype()), " labels; expected an integer dtype");
  QGRAD_CHECK(labels.dim() == 1, IOError, "NpyDataset: '", labels_path,
              "' holds an array of shape ", labels.shape(), "; expected labels [N]");
  QGRAD_CHECK(labels.size(0) == images_.size(0), IOError, "NpyDataset: '", images_path, "' holds ",
              images_.size(0), " images but '", labels_path, "' holds ", labels.size(0), " labels");
  targets_ = labels.to(kInt64).contiguous();
  const auto* l = targets_.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < targets_.numel(); ++i) {
    QGRAD_CHECK(l[i] >= 0, IOError, "NpyDataset: '", labels_path, "': label ", l[i], " at index ",
                i, " is negative");
    QGRAD_CHECK(num_classes <= 0 || l[i] < num_classes, IOError, "NpyDataset: '", labels_path,
                "': label ", l[i], " at index ", i, " is outside 0..", num_classes - 1,
                " (num_classes ", num_classes, ")");
  }
}

std::size_t NpyDataset::size() const {
  return static_cast<std::size_t>(images_.size(0));
}

Example NpyDataset::get(std::size_t index) const {
  QGRAD_CHECK(index < size(), IndexError, "NpyDataset::get: index ", index, " out of range for ",
              size(), " examples");
  const auto i = static_cast<std::int64_t>(index);
  const std::int64_t c = images_.size(1), h = images_.size(2), w = images_.size(3);
  const std::int64_t n = c * h * w;
  Tensor x = empty({c, h, w});
  float* dst = x.data_ptr<float>();
  if (images_.dtype() == kUInt8) {
    const std::uint8_t* src = images_.data_ptr<std::uint8_t>() + i * n;
    for (std::int64_t p = 0; p < n; ++p) dst[p] = static_cast<float>(src[p]) / 255.0f;
  } else {
    const float* src = images_.data_ptr<float>() + i * n;
    for (std::int64_t p = 0; p < n; ++p) dst[p] = src[p];
  }
  return {x, targets_.select(0, i)};
}

Shape npy_image_shape(const std::string& path, ImageLayout layout) {
  const Tensor t = to_nchw(load_npy(path), layout, path);
  return {t.size(1), t.size(2), t.size(3)};
}

}  // namespace qgrad::data

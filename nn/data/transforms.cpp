// Image transforms as plain loops over contiguous [C, H, W] data (no autograd, no threads: they
// run on the loader's background thread, one example at a time).
#include "nn/data/transforms.h"

#include <sstream>

#include "core/factory.h"

namespace qgrad::data {

Tensor as_chw(const char* op, const Tensor& image) {
  QGRAD_CHECK(image.defined(), ValueError, op, ": image is undefined");
  QGRAD_CHECK(is_floating(image.dtype()), DTypeError, op,
              ": expected a float32 or float64 image, got ", dtype_name(image.dtype()));
  QGRAD_CHECK(image.device().is_cpu(), DeviceError, op, ": expected a CPU image");
  QGRAD_CHECK(image.dim() == 2 || image.dim() == 3, ShapeError, op,
              ": expected an image [C, H, W] or [H, W], got shape ", image.shape());
  Tensor c = image.detach().contiguous();
  return image.dim() == 2 ? c.unsqueeze(0) : c;
}

namespace {

std::string list_str(const std::vector<double>& v) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
  return os.str();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Normalize::Normalize(std::vector<double> mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  QGRAD_CHECK(!mean_.empty() && mean_.size() == std_.size(), ValueError,
              "Normalize: mean and std need the same non-zero length, got ", mean_.size(), " and ",
              std_.size());
  for (double s : std_)
    QGRAD_CHECK(s != 0, ValueError,
                "Normalize: std evaluated to zero, leading to division by zero");
}

Tensor Normalize::operator()(const Tensor& image, Generator&) const {
  Tensor x = as_chw("Normalize", image);
  const std::int64_t C = x.size(0), plane = x.size(1) * x.size(2);
  QGRAD_CHECK(mean_.size() == 1 || static_cast<std::int64_t>(mean_.size()) == C, ShapeError,
              "Normalize: ", mean_.size(), " mean/std values for an image with ", C, " channels");
  Tensor out = empty(x.shape(), TensorOptions().dtype(x.dtype()));
  QGRAD_DISPATCH_FLOAT(x.dtype(), "Normalize", [&] {
    const scalar_t* s = x.data_ptr<scalar_t>();
    scalar_t* d = out.data_ptr<scalar_t>();
    for (std::int64_t c = 0; c < C; ++c) {
      const std::size_t k = mean_.size() == 1 ? 0 : static_cast<std::size_t>(c);
      const auto m = static_cast<scalar_t>(mean_[k]), sd = static_cast<scalar_t>(std_[k]);
      for (std::int64_t i = 0; i < plane; ++i) d[c * plane + i] = (s[c * plane + i] - m) / sd;
    }
  });
  return out.view(image.shape());
}

std::string Normalize::repr() const {
  return "Normalize(mean=" + list_str(mean_) + ", std=" + list_str(std_) + ")";
}

// ---------------------------------------------------------------------------------------------

RandomCrop::RandomCrop(std::int64_t size, std::int64_t padding) : RandomCrop(size, size, padding) {}

RandomCrop::RandomCrop(std::int64_t height, std::int64_t width, std::int64_t padding)
    : height_(height), width_(width), padding_(padding) {
  QGRAD_CHECK(height > 0 && width > 0 && padding >= 0, ValueError,
              "RandomCrop: expected a positive size and non-negative padding, got size ", height,
              "x", width, " padding ", padding);
}

Tensor RandomCrop::operator()(const Tensor& image, Generator& gen) const {
  Tensor x = as_chw("RandomCrop", image);
  const std::int64_t C = x.size(0), H = x.size(1), W = x.size(2);
  const std::int64_t ph = H + 2 * padding_, pw = W + 2 * padding_;
  QGRAD_CHECK(height_ <= ph && width_ <= pw, ShapeError, "RandomCrop: crop size ", height_, "x",
              width_, " is larger than the padded image ", ph, "x", pw);
  // torchvision: i = randint(0, h - th + 1), j = randint(0, w - tw + 1).
  const auto top =
      static_cast<std::int64_t>(gen.next_u32() % static_cast<std::uint32_t>(ph - height_ + 1));
  const auto left =
      static_cast<std::int64_t>(gen.next_u32() % static_cast<std::uint32_t>(pw - width_ + 1));
  Tensor out = zeros({C, height_, width_}, TensorOptions().dtype(x.dtype()));
  QGRAD_DISPATCH_FLOAT(x.dtype(), "RandomCrop", [&] {
    const scalar_t* s = x.data_ptr<scalar_t>();
    scalar_t* d = out.data_ptr<scalar_t>();
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t r = 0; r < height_; ++r) {
        const std::int64_t sr = top + r - padding_;  // row in the unpadded image
        if (sr < 0 || sr >= H) continue;
        for (std::int64_t q = 0; q < width_; ++q) {
          const std::int64_t sc = left + q - padding_;
          if (sc < 0 || sc >= W) continue;
          d[(c * height_ + r) * width_ + q] = s[(c * H + sr) * W + sc];
        }
      }
  });
  return image.dim() == 2 ? out.squeeze(0) : out;
}

std::string RandomCrop::repr() const {
  return "RandomCrop(size=(" + std::to_string(height_) + ", " + std::to_string(width_) +
         "), padding=" + std::to_string(padding_) + ")";
}

// ---------------------------------------------------------------------------------------------

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  QGRAD_CHECK(p >= 0 && p <= 1, ValueError, "RandomHorizontalFlip: p must be in [0, 1], got ", p);
}

Tensor RandomHorizontalFlip::operator()(const Tensor& image, Generator& gen) const {
  Tensor x = as_chw("RandomHorizontalFlip", image);
  const bool flip = gen.next_double() < p_;
  if (!flip) return x.view(image.shape()).clone();
  const std::int64_t rows = x.size(0) * x.size(1), W = x.size(2);
  Tensor out = empty(x.shape(), TensorOptions().dtype(x.dtype()));
  QGRAD_DISPATCH_FLOAT(x.dtype(), "RandomHorizontalFlip", [&] {
    const scalar_t* s = x.data_ptr<scalar_t>();
    scalar_t* d = out.data_ptr<scalar_t>();
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t q = 0; q < W; ++q) d[r * W + q] = s[r * W + (W - 1 - q)];
  });
  return out.view(image.shape());
}

std::string RandomHorizontalFlip::repr() const {
  std::ostringstream os;
  os << "RandomHorizontalFlip(p=" << p_ << ")";
  return os.str();
}

}  // namespace qgrad::data

// Resize, CenterCrop and RandomResizedCrop over one separable resampler: per output pixel, the
// taps and normalised weights of PIL's antialiased bilinear filter (Pillow's precompute_coeffs),
// applied along the columns, then along the rows. Plain loops, no tensor ops: they run on the
// loader's workers.
#include "nn/data/resize_transforms.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "core/factory.h"

namespace qgrad::data {

namespace {

// The taps of resampling `in` samples to `out`: output i reads inputs first[i] ..
// first[i] + count[i] - 1 with weights weight[i * ksize + k].
struct Taps {
  std::int64_t ksize = 0;
  std::vector<std::int64_t> first, count;
  std::vector<float> weight;
};

Taps bilinear_taps(std::int64_t in, std::int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double filterscale = std::max(scale, 1.0);  // widen the filter when shrinking
  const double support = 1.0 * filterscale;         // bilinear's support is 1
  Taps t;
  t.ksize = static_cast<std::int64_t>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<std::size_t>(out));
  t.count.resize(static_cast<std::size_t>(out));
  t.weight.assign(static_cast<std::size_t>(out * t.ksize), 0.0f);
  std::vector<double> w(static_cast<std::size_t>(t.ksize));
  for (std::int64_t i = 0; i < out; ++i) {
    const double center = (static_cast<double>(i) + 0.5) * scale;
    // (int)(v + 0.5) as Pillow writes it: truncation toward zero.
    const auto lo = std::max<std::int64_t>(static_cast<std::int64_t>(center - support + 0.5), 0);
    const auto hi = std::min<std::int64_t>(static_cast<std::int64_t>(center + support + 0.5), in);
    const std::int64_t n = std::min(hi - lo, t.ksize);
    double total = 0;
    for (std::int64_t k = 0; k < n; ++k) {
      const double x = std::abs((static_cast<double>(k + lo) - center + 0.5) / filterscale);
      w[static_cast<std::size_t>(k)] = x < 1 ? 1 - x : 0;
      total += w[static_cast<std::size_t>(k)];
    }
    for (std::int64_t k = 0; k < n; ++k)
      t.weight[static_cast<std::size_t>(i * t.ksize + k)] =
          static_cast<float>(total != 0 ? w[static_cast<std::size_t>(k)] / total : 0);
    t.first[static_cast<std::size_t>(i)] = lo;
    t.count[static_cast<std::size_t>(i)] = n;
  }
  return t;
}

// Taps padded to a fixed k = t.ksize for every output (weights zero beyond count, the window
// moved left at the end of the row), so the horizontal pass runs a fixed-length inner loop.
void pad_taps(Taps& t, std::int64_t in) {
  const std::int64_t k = t.ksize;
  for (std::size_t i = 0; i < t.first.size(); ++i) {
    const std::int64_t shift = std::max<std::int64_t>(0, t.first[i] + k - in);
    if (shift > 0) {
      float* w = t.weight.data() + static_cast<std::int64_t>(i) * k;
      for (std::int64_t j = k - 1; j >= 0; --j) w[j] = j >= shift ? w[j - shift] : 0.0f;
      t.first[i] -= shift;
    }
    t.count[i] = k;
  }
}

// One row of the horizontal pass with K taps per output (K known at compile time: unrolled).
template <int K, typename T>
void row_taps(const T* in, const Taps& t, std::int64_t ow, T* out) {
  for (std::int64_t x = 0; x < ow; ++x) {
    const T* p = in + t.first[static_cast<std::size_t>(x)];
    const float* k = t.weight.data() + x * K;
    T acc = 0;
    for (int j = 0; j < K; ++j) acc += p[j] * static_cast<T>(k[j]);
    out[x] = acc;
  }
}

template <typename T>
void row_taps_any(const T* in, const Taps& t, std::int64_t ow, T* out) {
  for (std::int64_t x = 0; x < ow; ++x) {
    const T* p = in + t.first[static_cast<std::size_t>(x)];
    const float* k = t.weight.data() + x * t.ksize;
    T acc = 0;
    for (std::int64_t j = 0; j < t.count[static_cast<std::size_t>(x)]; ++j)
      acc += p[j] * static_cast<T>(k[j]);
    out[x] = acc;
  }
}

template <typename T>
void resample(const T* src, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t top,
              std::int64_t left, std::int64_t h, std::int64_t w, std::int64_t oh, std::int64_t ow,
              T* dst) {
  // Columns first (PIL goes rows first: in exact arithmetic the order does not matter, and here
  // the costly per-pixel taps then run on oh rows only): the window's h rows to oh, each a
  // weighted sum of whole rows (contiguous, vectorised), over the window's w columns.
  std::vector<T> cols;
  const T* mid = nullptr;  // [C, oh, w] rows of width `stride`
  std::int64_t stride = 0;
  if (oh == h) {
    mid = src + top * W + left;  // the window itself, rows of the image
    stride = W;
  } else {
    const Taps ty = bilinear_taps(h, oh);
    cols.resize(static_cast<std::size_t>(C * oh * w));
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t y = 0; y < oh; ++y) {
        T* o = cols.data() + (c * oh + y) * w;
        const float* k = ty.weight.data() + y * ty.ksize;
        const T* row = src + (c * H + top + ty.first[static_cast<std::size_t>(y)]) * W + left;
        const auto w0 = static_cast<T>(k[0]);  // every output row has at least one tap
        for (std::int64_t x = 0; x < w; ++x) o[x] = row[x] * w0;
        for (std::int64_t j = 1; j < ty.count[static_cast<std::size_t>(y)]; ++j) {
          const T* in = row + j * W;
          const auto wj = static_cast<T>(k[j]);
          for (std::int64_t x = 0; x < w; ++x) o[x] += in[x] * wj;
        }
      }
    mid = cols.data();
    stride = w;
  }
  // The plane of channel c in `mid`: the image's (H rows) or the columns pass's (oh rows).
  const std::int64_t plane = oh == h ? H * W : oh * w;
  if (ow == w) {
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t y = 0; y < oh; ++y)
        std::copy_n(mid + c * plane + y * stride, w, dst + (c * oh + y) * ow);
    return;
  }
  Taps tx = bilinear_taps(w, ow);
  const bool fixed = w >= tx.ksize;
  if (fixed) pad_taps(tx, w);
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t y = 0; y < oh; ++y) {
      const T* in = mid + c * plane + y * stride;
      T* o = dst + (c * oh + y) * ow;
      if (fixed && tx.ksize == 3)
        row_taps<3>(in, tx, ow, o);
      else if (fixed && tx.ksize == 5)
        row_taps<5>(in, tx, ow, o);
      else if (fixed && tx.ksize == 7)
        row_taps<7>(in, tx, ow, o);
      else
        row_taps_any(in, tx, ow, o);
    }
}

// Python's int(round(v)): round half to even (nearbyint in the default rounding mode).
std::int64_t round_even(double v) {
  return static_cast<std::int64_t>(std::nearbyint(v));
}

// randint(0, n): as RandomCrop draws it.
std::int64_t below(std::int64_t n, Generator& gen) {
  return static_cast<std::int64_t>(gen.next_u32() % static_cast<std::uint32_t>(n));
}

double uniform(double a, double b, Generator& gen) {
  return a + (b - a) * gen.next_double();
}

}  // namespace

Tensor resized_crop(const Tensor& image, std::int64_t top, std::int64_t left, std::int64_t height,
                    std::int64_t width, std::int64_t out_height, std::int64_t out_width) {
  Tensor x = as_chw("resized_crop", image);
  const std::int64_t C = x.size(0), H = x.size(1), W = x.size(2);
  QGRAD_CHECK(
      top >= 0 && left >= 0 && height > 0 && width > 0 && top + height <= H && left + width <= W,
      ShapeError, "resized_crop: the window ", height, "x", width, " at (", top, ", ", left,
      ") does not fit the ", H, "x", W, " image");
  QGRAD_CHECK(out_height > 0 && out_width > 0, ShapeError,
              "resized_crop: the output size must be positive, got ", out_height, "x", out_width);
  Tensor out = empty({C, out_height, out_width}, TensorOptions().dtype(x.dtype()));
  QGRAD_DISPATCH_FLOAT(x.dtype(), "resized_crop", [&] {
    resample(x.data_ptr<scalar_t>(), C, H, W, top, left, height, width, out_height, out_width,
             out.data_ptr<scalar_t>());
  });
  return image.dim() == 2 ? out.squeeze(0) : out;
}

// ---------------------------------------------------------------------------------------------

Resize::Resize(std::int64_t size) : size_(size) {
  QGRAD_CHECK(size > 0, ValueError, "Resize: size must be positive, got ", size);
}

Tensor Resize::operator()(const Tensor& image, Generator&) const {
  Tensor x = as_chw("Resize", image);
  const std::int64_t H = x.size(1), W = x.size(2);
  const std::int64_t shorter = std::min(H, W), longer = std::max(H, W);
  // torchvision: int(size * long / short), a true division then truncation.
  const auto new_long =
      static_cast<std::int64_t>(static_cast<double>(size_ * longer) / static_cast<double>(shorter));
  const std::int64_t oh = H <= W ? size_ : new_long, ow = H <= W ? new_long : size_;
  return resized_crop(image, 0, 0, H, W, oh, ow);
}

std::string Resize::repr() const {
  return "Resize(size=" + std::to_string(size_) + ", interpolation=bilinear, antialias=True)";
}

// ---------------------------------------------------------------------------------------------

CenterCrop::CenterCrop(std::int64_t size) : size_(size) {
  QGRAD_CHECK(size > 0, ValueError, "CenterCrop: size must be positive, got ", size);
}

Tensor CenterCrop::operator()(const Tensor& image, Generator&) const {
  Tensor x = as_chw("CenterCrop", image);
  const std::int64_t H = x.size(1), W = x.size(2);
  QGRAD_CHECK(H >= size_ && W >= size_, ShapeError, "CenterCrop: the ", H, "x", W,
              " image is smaller than the ", size_, "x", size_, " crop (resize it first)");
  const std::int64_t top = round_even(static_cast<double>(H - size_) / 2.0);
  const std::int64_t left = round_even(static_cast<double>(W - size_) / 2.0);
  return resized_crop(image, top, left, size_, size_, size_, size_);  // a copy
}

std::string CenterCrop::repr() const {
  return "CenterCrop(size=" + std::to_string(size_) + ")";
}

// ---------------------------------------------------------------------------------------------

RandomResizedCrop::RandomResizedCrop(std::int64_t size, double scale_min, double scale_max,
                                     double ratio_min, double ratio_max)
    : size_(size),
      scale_min_(scale_min),
      scale_max_(scale_max),
      ratio_min_(ratio_min),
      ratio_max_(ratio_max) {
  QGRAD_CHECK(size > 0, ValueError, "RandomResizedCrop: size must be positive, got ", size);
  QGRAD_CHECK(scale_min > 0 && scale_min <= scale_max && scale_max <= 1, ValueError,
              "RandomResizedCrop: expected 0 < scale_min <= scale_max <= 1, got (", scale_min, ", ",
              scale_max, ")");
  QGRAD_CHECK(ratio_min > 0 && ratio_min <= ratio_max, ValueError,
              "RandomResizedCrop: expected 0 < ratio_min <= ratio_max, got (", ratio_min, ", ",
              ratio_max, ")");
}

RandomResizedCrop::Window RandomResizedCrop::window(std::int64_t height, std::int64_t width,
                                                    Generator& gen) const {
  // torchvision.transforms.RandomResizedCrop.get_params.
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_lo = std::log(ratio_min_), log_hi = std::log(ratio_max_);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * uniform(scale_min_, scale_max_, gen);
    const double aspect = std::exp(uniform(log_lo, log_hi, gen));
    const std::int64_t w = round_even(std::sqrt(target * aspect));
    const std::int64_t h = round_even(std::sqrt(target / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const std::int64_t top = below(height - h + 1, gen);
      const std::int64_t left = below(width - w + 1, gen);
      return {top, left, h, w};
    }
  }
  // Fallback: the centre crop of the nearest allowed aspect ratio.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  std::int64_t w = width, h = height;
  if (in_ratio < ratio_min_)
    h = round_even(static_cast<double>(w) / ratio_min_);
  else if (in_ratio > ratio_max_)
    w = round_even(static_cast<double>(h) * ratio_max_);
  return {(height - h) / 2, (width - w) / 2, h, w};
}

Tensor RandomResizedCrop::operator()(const Tensor& image, Generator& gen) const {
  Tensor x = as_chw("RandomResizedCrop", image);
  const Window win = window(x.size(1), x.size(2), gen);
  return resized_crop(image, win.top, win.left, win.height, win.width, size_, size_);
}

std::string RandomResizedCrop::repr() const {
  std::ostringstream os;
  os << "RandomResizedCrop(size=" << size_ << ", scale=(" << scale_min_ << ", " << scale_max_
     << "), ratio=(" << ratio_min_ << ", " << ratio_max_ << "))";
  return os.str();
}

}  // namespace qgrad::data

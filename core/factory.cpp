// Tensor creation functions. Random draws use the Philox generator counter-wise, so results do
// not depend on thread count; Box-Muller turns pairs of uniforms into normals.
#include "core/factory.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/convert.h"
#include "core/copy.h"
#include "core/strided_loop.h"

namespace qgrad {

namespace {

Tensor finish(Tensor t, const TensorOptions& opts) {
  if (opts.requires_grad_) t.set_requires_grad(true);
  return t;
}

// Fills a new CPU tensor of `dtype` with f(i) for each element (converted as copies convert:
// no undefined float -> int casts), then moves it to opts.device.
template <typename F>
Tensor generate(const Shape& shape, DType dtype, const TensorOptions& opts, F&& f) {
  Tensor t = empty(shape, TensorOptions().dtype(dtype));
  QGRAD_DISPATCH_ALL(dtype, "generate", [&] {
    scalar_t* p = t.data_ptr<scalar_t>();
    parallel_for(t.numel(), kParallelGrain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) p[i] = convert_element<scalar_t>(f(i));
    });
  });
  if (!opts.device_.is_cpu()) t = t.to(opts.device_);
  return finish(t, opts);
}

// Number of elements of a random draw; validates the shape before the generator advances.
std::uint64_t draw_count(const Shape& shape, const char* op) {
  for (auto d : shape) QGRAD_CHECK(d >= 0, ShapeError, op, ": negative dimension in shape ", shape);
  return static_cast<std::uint64_t>(checked_numel(shape, 1, op));
}

}  // namespace

Tensor empty(const Shape& shape, TensorOptions opts) {
  const DType dt = opts.dtype_or(kFloat32);
  // One checked validation: a leading 0 must not let later dims overflow the strides.
  const ShapeSize size = shape_size(shape, dtype_size(dt));
  QGRAD_CHECK(size.status != ShapeSize::Status::kNegative, ShapeError,
              "empty: negative dimension in shape ", shape);
  QGRAD_CHECK(size.ok(), ValueError, "empty: shape ", shape, " of ", dtype_name(dt),
              " is too large to allocate: it ", size.problem);
  check_device_available("empty", opts.device_);
  auto storage = std::make_shared<Storage>(static_cast<std::size_t>(size.nbytes), opts.device_);
  Tensor t(
      std::make_shared<TensorImpl>(std::move(storage), 0, shape, contiguous_strides(shape), dt));
  return finish(t, opts);
}

Tensor full(const Shape& shape, double value, TensorOptions opts) {
  bool rg = opts.requires_grad_;
  Tensor t = empty(shape, opts.requires_grad(false));
  fill_tensor(t, value);
  if (rg) t.set_requires_grad(true);
  return t;
}
Tensor zeros(const Shape& shape, TensorOptions opts) {
  return full(shape, 0.0, opts);
}
Tensor ones(const Shape& shape, TensorOptions opts) {
  return full(shape, 1.0, opts);
}
Tensor scalar_tensor(double value, TensorOptions opts) {
  return full({}, value, opts);
}

static TensorOptions like(const Tensor& t) {
  return TensorOptions().dtype(t.dtype()).device(t.device());
}
Tensor empty_like(const Tensor& t) {
  return empty(t.shape(), like(t));
}
Tensor zeros_like(const Tensor& t) {
  return zeros(t.shape(), like(t));
}
Tensor ones_like(const Tensor& t) {
  return ones(t.shape(), like(t));
}
Tensor full_like(const Tensor& t, double value) {
  return full(t.shape(), value, like(t));
}

Tensor arange(double end, TensorOptions opts) {
  return arange(0.0, end, 1.0, opts);
}

Tensor arange(double start, double end, double step, TensorOptions opts) {
  QGRAD_CHECK(step != 0 && std::isfinite(step) && std::isfinite(start) && std::isfinite(end),
              ValueError,
              "arange: expected finite start/end and a non-zero step, got start=", start,
              " end=", end, " step=", step);
  QGRAD_CHECK((end - start) / step >= 0, ValueError, "arange: step ", step,
              " has the wrong sign for start=", start, " end=", end);
  const double count = std::ceil((end - start) / step);
  QGRAD_CHECK(count < 9.0e15, ValueError, "arange: start=", start, " end=", end, " step=", step,
              " gives too many elements (", count, ")");
  // As torch.arange: int64 when every argument is integral, float32 otherwise.
  const bool integral =
      start == std::trunc(start) && end == std::trunc(end) && step == std::trunc(step);
  const DType dt = opts.dtype_or(integral ? kInt64 : kFloat32);
  return generate({static_cast<std::int64_t>(count)}, dt, opts,
                  [&](std::int64_t i) { return start + static_cast<double>(i) * step; });
}

template <typename T>
Tensor from_vector(const std::vector<T>& data, const Shape& shape, TensorOptions opts) {
  const auto count = static_cast<std::int64_t>(data.size());
  Shape sh = shape;
  // One -1 dim takes whatever the other dims leave (the default {-1} is 1-D of every value).
  std::int64_t infer = -1, known = 1;
  for (std::size_t i = 0; i < sh.size(); ++i) {
    if (sh[i] == -1) {
      QGRAD_CHECK(infer < 0, ShapeError, "from_vector: only one dim of shape ", shape,
                  " can be -1");
      infer = static_cast<std::int64_t>(i);
    } else {
      QGRAD_CHECK(sh[i] >= 0, ShapeError, "from_vector: invalid size ", sh[i], " in shape ", shape);
      if (__builtin_mul_overflow(known, sh[i], &known)) known = -1;  // matches no count
    }
  }
  if (infer >= 0) {
    QGRAD_CHECK(known > 0 && count % known == 0, ShapeError, "from_vector: shape ", shape,
                " does not fit ", count, " values");
    sh[infer] = count / known;
  }
  const std::int64_t n = checked_numel(sh, sizeof(T), "from_vector");
  QGRAD_CHECK(n == count, ShapeError, "from_vector: shape ", sh, " needs ", n, " value",
              n == 1 ? "" : "s", ", got ", count,
              sh.empty() ? " (an empty shape is 0-d: one value; pass {-1} for 1-D)" : "");
  Tensor t = empty(sh, TensorOptions().dtype(dtype_v<T>));
  std::copy(data.begin(), data.end(), t.data_ptr<T>());
  const DType target = opts.dtype_or(dtype_v<T>);
  if (target != t.dtype()) t = t.to(target);
  if (!opts.device_.is_cpu()) t = t.to(opts.device_);
  return finish(t, opts);
}
template Tensor from_vector<float>(const std::vector<float>&, const Shape&, TensorOptions);
template Tensor from_vector<double>(const std::vector<double>&, const Shape&, TensorOptions);
template Tensor from_vector<std::int8_t>(const std::vector<std::int8_t>&, const Shape&,
                                         TensorOptions);
template Tensor from_vector<std::uint8_t>(const std::vector<std::uint8_t>&, const Shape&,
                                          TensorOptions);
template Tensor from_vector<std::int16_t>(const std::vector<std::int16_t>&, const Shape&,
                                          TensorOptions);
template Tensor from_vector<std::int32_t>(const std::vector<std::int32_t>&, const Shape&,
                                          TensorOptions);
template Tensor from_vector<std::int64_t>(const std::vector<std::int64_t>&, const Shape&,
                                          TensorOptions);

Tensor tensor(std::initializer_list<double> values, TensorOptions opts) {
  if (!opts.dtype_) opts.dtype(kFloat32);
  return from_vector(std::vector<double>(values), {-1}, opts);
}

Tensor uniform(const Shape& shape, double low, double high, Generator& gen, TensorOptions opts) {
  QGRAD_CHECK(low <= high, ValueError, "uniform: expected low <= high, got ", low, " and ", high);
  const DType dt = opts.dtype_or(kFloat32);
  QGRAD_CHECK(is_floating(dt), DTypeError, "uniform: expected a floating dtype, got ",
              dtype_name(dt));
  const std::uint64_t n = draw_count(shape, "uniform");
  if (dt == kFloat32) {
    // Element i is word i % 4 of block first + i / 4: each block is computed once, for its 4.
    const std::uint64_t first = gen.reserve(n);
    Tensor t = empty(shape, TensorOptions().dtype(dt));
    float* p = t.data_ptr<float>();
    const std::int64_t total = t.numel();
    parallel_for((total + 3) / 4, kParallelGrain / 4, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t k = b; k < e; ++k) {
        const auto words = gen.block(first + static_cast<std::uint64_t>(k));
        const std::int64_t end = std::min<std::int64_t>(4, total - 4 * k);
        for (std::int64_t j = 0; j < end; ++j)
          p[4 * k + j] = static_cast<float>(
              low + (high - low) * static_cast<double>(uint_to_unit_float(words[j])));
      }
    });
    if (!opts.device_.is_cpu()) t = t.to(opts.device_);
    return finish(t, opts);
  }
  const std::uint64_t first = gen.reserve(2 * n);
  return generate(shape, dt, opts, [&](std::int64_t i) {
    auto b = gen.block(first + static_cast<std::uint64_t>(i) / 2);
    int k = static_cast<int>(i % 2) * 2;
    return low + (high - low) * uint_to_unit_double(b[k], b[k + 1]);
  });
}

Tensor rand(const Shape& shape, Generator& gen, TensorOptions opts) {
  return uniform(shape, 0.0, 1.0, gen, opts);
}

Tensor normal(const Shape& shape, double mean, double std, Generator& gen, TensorOptions opts) {
  QGRAD_CHECK(std >= 0, ValueError, "normal: expected std >= 0, got ", std);
  const DType dt = opts.dtype_or(kFloat32);
  QGRAD_CHECK(is_floating(dt), DTypeError, "normal: expected a floating dtype, got ",
              dtype_name(dt));
  // Each element uses one whole block: two 53-bit uniforms for Box-Muller.
  const std::uint64_t n = draw_count(shape, "normal");
  const std::uint64_t first = gen.reserve(4 * n);
  return generate(shape, dt, opts, [&](std::int64_t i) {
    auto b = gen.block(first + static_cast<std::uint64_t>(i));
    double u1 = 1.0 - uint_to_unit_double(b[0], b[1]);  // (0, 1]: log is finite
    double u2 = uint_to_unit_double(b[2], b[3]);
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    return mean + std * z;
  });
}

Tensor randn(const Shape& shape, Generator& gen, TensorOptions opts) {
  return normal(shape, 0.0, 1.0, gen, opts);
}

Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, Generator& gen,
               TensorOptions opts) {
  QGRAD_CHECK(low < high, ValueError, "randint: expected low < high, got ", low, " and ", high);
  const DType dt = opts.dtype_or(kInt64);
  if (!is_floating(dt)) {
    // Every value must be representable (an out-of-range integer cast is undefined behaviour).
    const double lo = QGRAD_DISPATCH_ALL(
        dt, "randint", [] { return static_cast<double>(std::numeric_limits<scalar_t>::lowest()); });
    const double hi = QGRAD_DISPATCH_ALL(
        dt, "randint", [] { return static_cast<double>(std::numeric_limits<scalar_t>::max()); });
    QGRAD_CHECK(static_cast<double>(low) >= lo && static_cast<double>(high) - 1 <= hi, ValueError,
                "randint: range [", low, ", ", high, ") does not fit in ", dtype_name(dt));
  }
  // high - low can exceed INT64_MAX; unsigned arithmetic wraps to the right count.
  const std::uint64_t range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
  const std::uint64_t n = draw_count(shape, "randint");
  const std::uint64_t first = gen.reserve(2 * n);
  return generate(shape, dt, opts, [&](std::int64_t i) {
    auto b = gen.block(first + static_cast<std::uint64_t>(i) / 2);
    int k = static_cast<int>(i % 2) * 2;
    std::uint64_t v = (static_cast<std::uint64_t>(b[k]) << 32) | b[k + 1];
    // Integer result (not double) so int64 values above 2^53 stay exact.
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + v % range);
  });
}

Tensor bernoulli(const Shape& shape, double p, Generator& gen, TensorOptions opts) {
  QGRAD_CHECK(p >= 0 && p <= 1, ValueError, "bernoulli: expected 0 <= p <= 1, got ", p);
  const std::uint64_t n = draw_count(shape, "bernoulli");
  const std::uint64_t first = gen.reserve(2 * n);
  return generate(shape, opts.dtype_or(kFloat32), opts, [&](std::int64_t i) {
    auto b = gen.block(first + static_cast<std::uint64_t>(i) / 2);
    int k = static_cast<int>(i % 2) * 2;
    return uint_to_unit_double(b[k], b[k + 1]) < p ? 1.0 : 0.0;
  });
}

Tensor randperm(std::int64_t n, Generator& gen) {
  QGRAD_CHECK(n >= 0, ValueError, "randperm: expected n >= 0, got ", n);
  Tensor t = arange(static_cast<double>(n), TensorOptions().dtype(kInt64));
  std::int64_t* p = t.data_ptr<std::int64_t>();
  // Fisher-Yates with 64-bit draws.
  for (std::int64_t i = n - 1; i > 0; --i) {
    std::uint64_t v = (static_cast<std::uint64_t>(gen.next_u32()) << 32) | gen.next_u32();
    std::swap(p[i], p[static_cast<std::int64_t>(v % static_cast<std::uint64_t>(i + 1))]);
  }
  return t;
}

}  // namespace qgrad

// Int8DirectConv2d: the spec checks, the packed weights, the per-image input plane (quantized
// here for the model's first layer) and the dispatch to the row kernels
// (int8_direct_conv2d_kernels.h), then the NHWC store.
#include "deploy/int8/int8_direct_conv2d.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "core/error.h"
#include "core/shape.h"
#include "core/strided_loop.h"
#include "deploy/int8/int8_direct_conv2d_kernels.h"
#include "deploy/int8/int8_dnnl.h"
#include "deploy/int8/int8_post_ops.h"
#include "deploy/int8/int8_quantize.h"

namespace qgrad::quant {

namespace {

using namespace direct_conv;

struct Geometry {
  std::int64_t n, c, h, w, oc, kh, kw, pad_h, pad_w, ph, pw, oh, ow, pool, out_h, out_w;
};

// The input value of storage type TI without its zero point (float32 input: quantized first, as
// Int8Quantize would).
struct InputValue {
  Int8QuantizeStep step;
  float zp;
  float operator()(std::uint8_t v) const { return static_cast<float>(v) - zp; }
  float operator()(std::int8_t v) const { return static_cast<float>(v) - zp; }
  float operator()(float v) const { return step(v) - zp; }
};

// vector(j) on 16 elements at j = 0, 16, ..., the last moved back to end at n (it may redo a few,
// with the same result); scalar(j) on each element when n < 16.
template <typename Vector, typename Scalar>
void for_each_span(std::int64_t n, Vector vector, Scalar scalar) {
  if (n < kLanes) {
    for (std::int64_t j = 0; j < n; ++j) scalar(j);
    return;
  }
  for (std::int64_t j0 = 0; j0 < n; j0 += kLanes) vector(std::min(j0, n - kLanes));
}

// One input row's values without the zero point, in `scratch` (the converter and the row are
// locals and restrict pointers: stores could otherwise alias them, which keeps the loops from
// vectorising); a contiguous float32 row is quantized 16 columns per vector.
template <typename TI>
const float* input_row(const TI* __restrict__ in, std::int64_t stride, std::int64_t width,
                       const InputValue& value, float* __restrict__ scratch) {
  const InputValue v = value;
  if constexpr (std::is_same_v<TI, float>) {
    if (stride == 1) {
      for_each_span(
          width,
          [&](std::int64_t j) {
            F16 f;
            std::memcpy(&f, in + j, sizeof f);
            const F16 q = v.step(f) - v.zp;
            std::memcpy(scratch + j, &q, sizeof q);
          },
          [&](std::int64_t j) { scratch[j] = v(in[j]); });
      return scratch;
    }
  }
  if (stride == 1) {
    for (std::int64_t j = 0; j < width; ++j) scratch[j] = v(in[j]);
  } else {
    for (std::int64_t j = 0; j < width; ++j) scratch[j] = v(in[j * stride]);
  }
  return scratch;
}

// The integer kernel's packed weights and corrections (see Work).
struct DotOperands {
  std::int64_t groups = 0;          // of four taps along kw
  std::vector<std::int32_t> quads;  // [out][in][kh][groups], four s8 taps per int32
  std::vector<float> correction;    // per output channel: zero_byte * the weight sum
  std::uint8_t zero_byte = 0;       // the input zero point as an unsigned byte: the padding's value
};

template <typename TI>
void run_images(const Geometry& g, const Tensor& x, const InputValue& value,
                const std::vector<float>& weight, const std::vector<Requant>& rq,
                const DotOperands* dot, const Tensor& y, std::int64_t n0, std::int64_t n1) {
  const bool vectors = g.out_w * g.pool >= kLanes && g.pool <= 2;
  const bool integer = dot != nullptr && vectors;
  std::vector<float> plane(integer ? 0 : static_cast<std::size_t>(g.c * g.ph * g.pw), 0.0f);
  const std::int64_t byte_pw = g.pw + 64;
  std::vector<std::uint8_t> bytes(integer ? static_cast<std::size_t>(g.c * g.ph * byte_pw) : 0,
                                  integer ? dot->zero_byte : 0);
  std::vector<std::uint8_t> pooled(static_cast<std::size_t>(kBlock * g.out_h * g.out_w));
  std::vector<float> scratch(static_cast<std::size_t>(g.w));
  // value() subtracts zp; the bytes count from the input type's lowest value.
  const float shift = value.zp - value.step.type_min;
  Work w{plane.data(), weight.data(), rq.data(), g.c,     g.ph,         g.pw,
         g.kh,         g.kw,          g.out_w,   g.out_h, pooled.data()};
  if (integer) {
    w.bytes = bytes.data();
    w.byte_pw = byte_pw;
    w.groups = dot->groups;
    w.quads = dot->quads.data();
    w.correction = dot->correction.data();
  }
  const auto* px = static_cast<const TI*>(x.raw_data());
  auto* py = static_cast<std::uint8_t*>(y.raw_data());  // uint8 or int8: bytes either way
  const Shape& xs = x.strides();
  const Shape& ys = y.strides();
  for (std::int64_t b = n0; b < n1; ++b) {
    // The input without its zero point, the padding 0 (a real zero); for the integer kernel,
    // as unsigned bytes with the zero point's byte in the padding.
    for (std::int64_t c = 0; c < g.c; ++c)
      for (std::int64_t i = 0; i < g.h; ++i) {
        const TI* in = px + b * xs[0] + c * xs[1] + i * xs[2];
        const float* values = input_row(in, xs[3], g.w, value, scratch.data());
        if (integer) {
          std::uint8_t* row = bytes.data() + (c * g.ph + i + g.pad_h) * byte_pw + g.pad_w;
          for_each_span(
              g.w,
              [&](std::int64_t j) {
                F16 f;
                std::memcpy(&f, values + j, sizeof f);
                store_bytes(f + shift, row + j, kLanes);
              },
              [&](std::int64_t j) {
                row[j] = static_cast<std::uint8_t>(static_cast<std::int32_t>(values[j] + shift));
              });
        } else {
          std::memcpy(plane.data() + (c * g.ph + i + g.pad_h) * g.pw + g.pad_w, values,
                      static_cast<std::size_t>(g.w) * sizeof(float));
        }
      }
    for (std::int64_t oc0 = 0; oc0 < g.oc; oc0 += kBlock) {
      const int nb = static_cast<int>(std::min<std::int64_t>(kBlock, g.oc - oc0));
      const RowKernel row =
          vectors ? (integer ? dot_row_kernel(nb, g.pool) : float_row_kernel(nb, g.pool)) : nullptr;
      for (std::int64_t i = 0; i < g.out_h; ++i) {
        if (!vectors)
          float_row_scalar(w, oc0, nb, i, g.pool);
        else
          row(w, oc0, i);
      }
      // The block's channels into the output (NHWC from new_activation: a pixel's channels
      // side by side). Strides in locals: the byte stores could otherwise alias them.
      const std::int64_t area = g.out_h * g.out_w, sc = ys[1], sh = ys[2], sw = ys[3];
      std::uint8_t* __restrict__ out = py + b * ys[0] + oc0 * sc;
      const std::uint8_t* __restrict__ in = pooled.data();
      for (std::int64_t i = 0; i < g.out_h; ++i)
        for (std::int64_t k = 0; k < g.out_w; ++k) {
          std::uint8_t* px_out = out + i * sh + k * sw;
          const std::uint8_t* px_in = in + i * g.out_w + k;
          for (int j = 0; j < nb; ++j) px_out[j * sc] = px_in[j * area];
        }
    }
  }
}

}  // namespace

// Everything forward() reads that the spec fixes, built once by the constructor.
struct Int8DirectConv2d::Impl {
  std::vector<float> weight;  // [out, in, kh, kw] as float (the float32 kernel)
  std::vector<Requant> rq;    // per output channel
  InputValue value;           // the input grid (and its quantization, for a float32 input)
  bool integer = false;       // the int8 dot-product kernel runs
  DotOperands dot;            // its operands
};

bool Int8DirectConv2d::supports(const Int8Conv2dSpec& s) {
  return s.groups == 1 && s.relu_max == 0 && s.stride == std::array<std::int64_t, 2>{1, 1} &&
         s.dilation == std::array<std::int64_t, 2>{1, 1} && s.output.has_value() &&
         !s.residual.has_value() && s.padding[0] >= 0 && s.padding[1] >= 0 &&
         s.in_channels * s.kernel[0] * s.kernel[1] <= kMaxInputsPerOutput;
}

bool Int8DirectConv2d::preferred(const Int8Conv2dSpec& s) {
  return supports(s) && s.out_channels <= kPreferredMaxOutChannels;
}

bool Int8DirectConv2d::supports_pool(const Int8MaxPool2dSpec& p) {
  return p.kernel[0] == p.kernel[1] && p.kernel[0] >= 1 && p.stride == p.kernel &&
         p.padding == std::array<std::int64_t, 2>{0, 0} &&
         p.dilation == std::array<std::int64_t, 2>{1, 1} && !p.ceil_mode;
}

bool Int8DirectConv2d::has_integer_kernel() {
  return direct_conv::has_dot_kernel();
}

Int8DirectConv2d::Int8DirectConv2d(Int8Conv2dSpec spec, std::optional<Int8MaxPool2dSpec> pool,
                                   Int8DirectConv2dOptions options)
    : spec_(std::move(spec)), pool_(std::move(pool)), options_(options) {
  check_int8_conv_spec(spec_);
  QGRAD_CHECK(supports(spec_), ValueError, "int8 direct conv2d: ", spec_.name,
              ": needs groups 1, stride 1, dilation 1, an int8 output, no residual and at most ",
              kMaxInputsPerOutput, " inputs per output (in_channels * kh * kw = ",
              spec_.in_channels * spec_.kernel[0] * spec_.kernel[1], ")");
  QGRAD_CHECK(!pool_ || supports_pool(*pool_), ValueError,
              "int8 direct conv2d: ", pool_ ? pool_->name : std::string(),
              ": only a max pool with kernel = stride, no padding or dilation and floor mode can "
              "be fused");
  const Int8Conv2dSpec& s = spec_;
  impl_ = std::make_unique<Impl>(
      Impl{std::vector<float>(s.weight.begin(), s.weight.end()),
           {},
           InputValue{Int8QuantizeStep(s.input), static_cast<float>(s.input.zero_point)},
           options_.integer_kernel && has_integer_kernel(),
           {}});
  Impl& m = *impl_;
  // Per output channel: oneDNN's scale and bias, and the clip of requantize_post_ops.
  const Int8ConvRequant r = int8_conv_requant(s);
  const Int8Grid& out = *s.output;
  const std::optional<GridClip> clip = output_clip(out, s.relu);
  for (std::int64_t c = 0; c < s.out_channels; ++c) {
    Requant q;
    q.bias = r.bias_acc[static_cast<std::size_t>(c)];
    q.scale = r.out_scale[static_cast<std::size_t>(c)];
    q.increasing = q.scale >= 0;
    q.zp = static_cast<float>(out.zero_point);
    q.clip = clip.has_value();  // relative to the zero point, which is added after it
    if (clip) {
      q.lo = static_cast<float>(clip->lo - out.zero_point);
      q.hi = static_cast<float>(clip->hi - out.zero_point);
    }
    q.type_min = static_cast<float>(out.type_min());
    q.type_max = static_cast<float>(out.type_max());
    m.rq.push_back(q);
  }
  if (m.integer) {
    const std::int64_t o = s.out_channels, c = s.in_channels, kh = s.kernel[0], kw = s.kernel[1];
    DotOperands& d = m.dot;
    d.groups = (kw + 3) / 4;
    d.quads.assign(static_cast<std::size_t>(o * c * kh * d.groups), 0);
    d.zero_byte = static_cast<std::uint8_t>(s.input.zero_point - s.input.type_min());
    for (std::int64_t j = 0; j < o; ++j) {
      std::int64_t sum = 0;
      for (std::int64_t ci = 0; ci < c; ++ci)
        for (std::int64_t y = 0; y < kh; ++y)
          for (std::int64_t x = 0; x < kw; ++x) {
            const std::int8_t v =
                s.weight[static_cast<std::size_t>(((j * c + ci) * kh + y) * kw + x)];
            sum += v;
            // Byte x % 4 of group x / 4, little-endian: vpdpbusd's order within a dword.
            auto& q = d.quads[static_cast<std::size_t>(((j * c + ci) * kh + y) * d.groups + x / 4)];
            q = static_cast<std::int32_t>(
                static_cast<std::uint32_t>(q) |
                (static_cast<std::uint32_t>(static_cast<std::uint8_t>(v)) << (8 * (x % 4))));
          }
      d.correction.push_back(static_cast<float>(d.zero_byte * sum));  // |.| < 2^24: exact
    }
  }
  impl_info_ = std::string("qgrad direct conv, ") + std::to_string(kLanes) + " columns per vector" +
               (m.integer ? ", int8 dot products (VNNI)" : ", float32 multiply-adds") +
               (options_.quantize_input ? ", input quantized in the pass" : "") +
               (pool_ ? ", fused max pool" : "");
}

Int8DirectConv2d::~Int8DirectConv2d() = default;

std::string Int8DirectConv2d::describe() const {
  const Int8Conv2dSpec& s = spec_;
  std::ostringstream os;
  os << s.name << ": int8 direct conv " << s.in_channels << "->" << s.out_channels << " k"
     << s.kernel[0] << "x" << s.kernel[1] << ", "
     << (options_.quantize_input ? "float32 quantized to " : "") << dtype_name(s.input.dtype())
     << " -> " << dtype_name(s.output->dtype()) << (s.relu ? ", fused ReLU" : "");
  if (pool_)
    os << ", fused " << pool_->name << ": max pool k" << pool_->kernel[0] << "x"
       << pool_->kernel[1];
  return os.str();
}

Tensor Int8DirectConv2d::forward(const Tensor& x) {
  const Int8Conv2dSpec& s = spec_;
  QGRAD_CHECK(x.dim() == 4 && x.size(1) == s.in_channels, ShapeError,
              "int8 direct conv2d: ", s.name, ": input must be [N, ", s.in_channels,
              ", H, W], got ", shape_str(x.shape()));
  const DType in_dtype = options_.quantize_input ? DType::Float32 : s.input.dtype();
  QGRAD_CHECK(x.dtype() == in_dtype, DTypeError, "int8 direct conv2d: ", s.name, ": input must be ",
              dtype_name(in_dtype), " (its grid: ", s.input.str(),
              options_.quantize_input ? ", quantized here" : "", "), got ", dtype_name(x.dtype()));
  Geometry g{};
  g.n = x.size(0);
  g.c = s.in_channels;
  g.h = x.size(2);
  g.w = x.size(3);
  g.oc = s.out_channels;
  g.kh = s.kernel[0];
  g.kw = s.kernel[1];
  g.pad_h = s.padding[0];
  g.pad_w = s.padding[1];
  g.ph = g.h + 2 * g.pad_h;
  g.pw = g.w + 2 * g.pad_w;
  QGRAD_CHECK(g.ph >= g.kh && g.pw >= g.kw, ShapeError, "int8 direct conv2d: ", s.name, ": input ",
              shape_str(x.shape()), " is smaller than the kernel");
  g.oh = g.ph - g.kh + 1;
  g.ow = g.pw - g.kw + 1;
  g.pool = pool_ ? pool_->kernel[0] : 1;
  g.out_h = g.oh / g.pool;
  g.out_w = g.ow / g.pool;
  QGRAD_CHECK(g.out_h > 0 && g.out_w > 0, ShapeError, "int8 direct conv2d: ", s.name, ": the ",
              g.oh, "x", g.ow, " output is smaller than the fused pool's ", g.pool, "x", g.pool,
              " window");

  Tensor y = int8_dnnl::new_activation({g.n, g.oc, g.out_h, g.out_w}, s.output->dtype());
  const Impl& m = *impl_;
  const DotOperands* d = m.integer ? &m.dot : nullptr;
  parallel_for(g.n, 2, [&](std::int64_t n0, std::int64_t n1) {
    if (options_.quantize_input)
      run_images<float>(g, x, m.value, m.weight, m.rq, d, y, n0, n1);
    else if (s.input.is_uint8())
      run_images<std::uint8_t>(g, x, m.value, m.weight, m.rq, d, y, n0, n1);
    else
      run_images<std::int8_t>(g, x, m.value, m.weight, m.rq, d, y, n0, n1);
  });
  return y;
}

}  // namespace qgrad::quant

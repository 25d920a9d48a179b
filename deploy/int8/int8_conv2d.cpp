// Int8Conv2d: oneDNN int8 convolution with requantisation, zero points and fused post-ops.
#include "deploy/int8/int8_conv2d.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/common/layer_geometry.h"
#include "deploy/int8/int8_dnnl.h"
#include "deploy/int8/int8_post_ops.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad::quant {

namespace dn = int8_dnnl;
using md = dnnl::memory::desc;

namespace {

// x [N, C, H, W] (any layout) copied into a new NHWC tensor of `channels` >= C channels, the
// extra ones zero.
Tensor pad_channels(const Tensor& x, std::int64_t channels) {
  Tensor y = dn::new_activation({x.size(0), channels, x.size(2), x.size(3)}, x.dtype());
  auto* out = static_cast<std::uint8_t*>(y.raw_data());  // 1-byte elements (uint8 or int8)
  const auto* in = static_cast<const std::uint8_t*>(x.raw_data());
  std::fill(out, out + y.numel(), std::uint8_t{0});
  const std::int64_t c = x.size(1), h = x.size(2), w = x.size(3);
  const Shape& st = x.strides();
  for (std::int64_t n = 0; n < x.size(0); ++n)
    for (std::int64_t i = 0; i < h; ++i)
      for (std::int64_t j = 0; j < w; ++j) {
        std::uint8_t* px = out + ((n * h + i) * w + j) * channels;
        for (std::int64_t k = 0; k < c; ++k)
          px[k] = in[n * st[0] + k * st[1] + i * st[2] + j * st[3]];
      }
  return y;
}

}  // namespace

struct Int8Conv2d::Impl {
  struct Entry {
    dnnl::convolution_forward prim;
    md src_md, dst_md;
    dnnl::memory weights, bias;
    std::string impl;
    std::int64_t channels = 0;  // input channels the primitive reads (zero-padded beyond spec's)
  };
  std::vector<float> out_scales, bias_acc;   // per output channel, as oneDNN applies them
  dnnl_backend::PrimitiveCache entries{64};  // by input shape, strides and dtype
};

void check_int8_conv_spec(const Int8Conv2dSpec& s) {
  const std::int64_t o = s.out_channels;
  QGRAD_CHECK(s.in_channels > 0 && o > 0 && s.groups > 0 && s.in_channels % s.groups == 0 &&
                  o % s.groups == 0,
              ValueError, "int8 conv2d: ", s.name, ": channels ", s.in_channels, " -> ", o,
              " must be positive multiples of groups ", s.groups);
  const std::int64_t per = s.in_channels / s.groups * s.kernel[0] * s.kernel[1];
  QGRAD_CHECK(static_cast<std::int64_t>(s.weight.size()) == o * per, ValueError,
              "int8 conv2d: ", s.name, ": ", s.weight.size(), " weights, expected ", o * per);
  QGRAD_CHECK(static_cast<std::int64_t>(s.weight_scale.size()) == o, ValueError,
              "int8 conv2d: ", s.name, ": ", s.weight_scale.size(), " weight scales for ", o,
              " output channels");
  QGRAD_CHECK(s.bias.empty() || static_cast<std::int64_t>(s.bias.size()) == o, ValueError,
              "int8 conv2d: ", s.name, ": ", s.bias.size(), " biases for ", o, " output channels");
  QGRAD_CHECK(!s.residual || s.output, ValueError, "int8 conv2d: ", s.name,
              ": a residual (sum post-op) needs an int8 output grid");
  QGRAD_CHECK(s.relu_max == 0 || (s.relu && s.relu_max > 0), ValueError, "int8 conv2d: ", s.name,
              ": relu_max ", s.relu_max, " needs a fused ReLU and must be positive");
  for (std::int64_t c = 0; c < o; ++c) {
    const double ws = s.weight_scale[c];
    QGRAD_CHECK(std::isfinite(ws) && ws != 0, ValueError, "int8 conv2d: ", s.name,
                ": weight scale of channel ", c, " is ", ws, " (must be finite and nonzero)");
  }
}

Int8ConvRequant int8_conv_requant(const Int8Conv2dSpec& s) {
  Int8ConvRequant r;
  const double out_scale = s.output ? s.output->scale : 1.0;
  for (std::int64_t c = 0; c < s.out_channels; ++c) {
    // real = s_in * s_w[c] * (acc + bias_acc[c]); the grid value is real / s_out.
    const double acc_unit = double(s.input.scale) * s.weight_scale[c];
    r.out_scale.push_back(static_cast<float>(acc_unit / out_scale));
    r.bias_acc.push_back(s.bias.empty() ? 0.0f : static_cast<float>(s.bias[c] / acc_unit));
  }
  return r;
}

Int8Conv2d::Int8Conv2d(Int8Conv2dSpec spec)
    : spec_(std::move(spec)), impl_(std::make_unique<Impl>()) {
  check_int8_conv_spec(spec_);
  Int8ConvRequant r = int8_conv_requant(spec_);
  impl_->out_scales = std::move(r.out_scale);
  impl_->bias_acc = std::move(r.bias_acc);
}

Int8Conv2d::~Int8Conv2d() = default;

std::string Int8Conv2d::describe() const {
  const Int8Conv2dSpec& s = spec_;
  std::ostringstream os;
  os << s.name << ": int8 conv " << s.in_channels << "->" << s.out_channels << " k" << s.kernel[0]
     << "x" << s.kernel[1] << ", " << dtype_name(s.input.dtype()) << " -> "
     << (s.output ? dtype_name(s.output->dtype()) : "float32")
     << (s.residual ? ", fused residual sum" : "")
     << (s.relu ? (s.relu_max == 6 ? ", fused ReLU6" : ", fused ReLU") : "");
  return os.str();
}

Tensor Int8Conv2d::forward(const Tensor& x) {
  QGRAD_CHECK(!spec_.residual, ValueError, "int8 conv2d: ", spec_.name,
              " adds a residual: call forward(x, residual)");
  return run(x, nullptr);
}

Tensor Int8Conv2d::forward(const Tensor& x, const Tensor& residual) {
  QGRAD_CHECK(spec_.residual, ValueError, "int8 conv2d: ", spec_.name,
              " has no residual input (its spec has no residual grid)");
  return run(x, &residual);
}

Tensor Int8Conv2d::run(const Tensor& x, const Tensor* residual) {
  const Int8Conv2dSpec& s = spec_;
  QGRAD_CHECK(x.dim() == 4 && x.size(1) == s.in_channels, ShapeError, "int8 conv2d: ", s.name,
              ": input must be [N, ", s.in_channels, ", H, W], got ", shape_str(x.shape()));
  QGRAD_CHECK(x.dtype() == s.input.dtype(), DTypeError, "int8 conv2d: ", s.name, ": input must be ",
              dtype_name(s.input.dtype()), " (its grid: ", s.input.str(), "), got ",
              dtype_name(x.dtype()));
  std::array<std::int64_t, 2> out{}, pad_r{};
  for (int d = 0; d < 2; ++d) {
    const deploy::WindowExtent e =
        deploy::window_extent(x.size(2 + d), s.kernel[d], s.stride[d], s.padding[d], s.dilation[d]);
    QGRAD_CHECK(e.valid, ShapeError, "int8 conv2d: ", s.name, ": input ", shape_str(x.shape()),
                " is smaller than the kernel");
    out[d] = e.out;
    pad_r[d] = e.pad_right;
  }
  const DType out_dtype = s.output ? s.output->dtype() : DType::Float32;
  Tensor y = dn::new_activation({x.size(0), s.out_channels, out[0], out[1]}, out_dtype);
  if (residual != nullptr) {
    QGRAD_CHECK(residual->shape() == y.shape() && residual->dtype() == s.residual->dtype(),
                ShapeError, "int8 conv2d: ", s.name, ": the residual must be ",
                dtype_name(s.residual->dtype()), " ", shape_str(y.shape()), ", got ",
                dtype_name(residual->dtype()), " ", shape_str(residual->shape()));
    // The sum post-op accumulates into the output: it starts as the residual's bytes, read
    // back as the residual's type (uint8 and int8 have the same size).
    dn::guarded(describe(), [&] {
      const md as_residual(dn::dims(y.shape()), dn::data_type(residual->dtype()),
                           dn::dims(y.strides()));
      dnnl::memory from = dn::wrap(dn::desc_of(*residual), *residual);
      dnnl::memory to = dn::wrap(as_residual, y);
      dnnl::reorder(from, to).execute(dn::stream(), from, to);
    });
  }

  std::ostringstream key;
  key << shape_str(x.shape()) << shape_str(x.strides()) << dtype_name(x.dtype());
  // Built once per input layout, in this layer's own bounded, thread-safe cache. oneDNN 2.6 has
  // no fast int8 convolution for an input channel count that is not a multiple of 4 (one
  // channel, a grey image: its reference kernel is about 200 times slower), so there the input
  // is zero-padded to a multiple of 4 channels, with zero weights: the same integer sums.
  const auto build = [&](std::int64_t c, const md& src_md) {
    return dn::guarded(describe(), [&] {
      Impl::Entry n;
      n.channels = c;
      n.src_md = src_md;
      n.dst_md = dn::desc_of(y);
      const std::int64_t o = s.out_channels, g = s.groups;
      const dnnl::memory::dims wdims =
          g == 1 ? dnnl::memory::dims{o, c, s.kernel[0], s.kernel[1]}
                 : dnnl::memory::dims{g, o / g, c / g, s.kernel[0], s.kernel[1]};
      const md w_any(wdims, dnnl::memory::data_type::s8, dnnl::memory::format_tag::any);
      const md b_md({o}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
      const dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, n.src_md, w_any,
          b_md, n.dst_md, {s.stride[0], s.stride[1]}, {s.dilation[0] - 1, s.dilation[1] - 1},
          {s.padding[0], s.padding[1]}, {pad_r[0], pad_r[1]});
      dnnl::primitive_attr attr;
      attr.set_output_scales(1 << 1, impl_->out_scales);
      if (s.input.zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {s.input.zero_point});
      if (s.output && s.output->zero_point != 0)
        attr.set_zero_points(DNNL_ARG_DST, 0, {s.output->zero_point});
      attr.set_post_ops(requantize_post_ops(s.output, s.relu, /*add_zero_point=*/false, 0,
                                            s.residual ? &*s.residual : nullptr, s.relu_max));
      const dnnl::convolution_forward::primitive_desc pd(d, attr, dn::engine());
      n.prim = dnnl::convolution_forward(pd);
      n.impl = pd.impl_info_str();
      // The weights, reordered once into the layout this implementation chose.
      std::vector<std::int8_t> w = s.weight;
      if (c != s.in_channels) {  // zero weights for the padded channels (groups == 1 here)
        const std::int64_t k = s.kernel[0] * s.kernel[1];
        w.assign(static_cast<std::size_t>(o * c * k), 0);
        for (std::int64_t oc = 0; oc < o; ++oc)
          std::copy_n(s.weight.begin() + oc * s.in_channels * k, s.in_channels * k,
                      w.begin() + oc * c * k);
      }
      n.weights = dn::reorder_weights(
          md(wdims, dnnl::memory::data_type::s8,
             g == 1 ? dnnl::memory::format_tag::oihw : dnnl::memory::format_tag::goihw),
          w.data(), pd.weights_desc());
      n.bias = dn::bias_memory(b_md, impl_->bias_acc);
      return n;
    });
  };
  const std::shared_ptr<Impl::Entry> cached = impl_->entries.get<Impl::Entry>(key.str(), [&] {
    Impl::Entry plain = build(s.in_channels, dn::desc_of(x));
    const std::int64_t padded = (s.in_channels + 3) / 4 * 4;
    if (plain.impl.rfind("ref", 0) == 0 && s.groups == 1 && padded != s.in_channels) {
      const Tensor probe = dn::new_activation({x.size(0), padded, x.size(2), x.size(3)}, x.dtype());
      Impl::Entry wide = build(padded, dn::desc_of(probe));
      if (wide.impl.rfind("ref", 0) != 0) return std::make_shared<Impl::Entry>(std::move(wide));
    }
    return std::make_shared<Impl::Entry>(std::move(plain));
  });
  Impl::Entry& e = *cached;
  const Tensor src = e.channels == s.in_channels ? x : pad_channels(x, e.channels);
  dn::run_weighted(describe(), e.prim, e.src_md, src, e.weights, e.bias, e.dst_md, y);
  impl_info_ = e.impl;
  return y;
}

}  // namespace qgrad::quant

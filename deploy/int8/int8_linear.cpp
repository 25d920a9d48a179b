// Int8Linear: oneDNN int8 inner product, input zero point folded into the bias.
#include "deploy/int8/int8_linear.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/int8/int8_dnnl.h"
#include "deploy/int8/int8_post_ops.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad::quant {

namespace dn = int8_dnnl;
using md = dnnl::memory::desc;

struct Int8Linear::Impl {
  struct Entry {
    dnnl::inner_product_forward prim;
    md src_md, dst_md;
    dnnl::memory weights, bias;
    std::string impl;
  };
  std::vector<float> out_scales, bias_acc;
  dnnl_backend::PrimitiveCache entries{64};  // by input shape, strides and dtype
};

Int8Linear::Int8Linear(Int8LinearSpec spec)
    : spec_(std::move(spec)), impl_(std::make_unique<Impl>()) {
  const Int8LinearSpec& s = spec_;
  const std::int64_t o = s.out_features, k = s.in_features;
  QGRAD_CHECK(o > 0 && k > 0, ValueError, "int8 linear: ", s.name, ": features ", k, " -> ", o,
              " must be positive");
  QGRAD_CHECK(static_cast<std::int64_t>(s.weight.size()) == o * k, ValueError,
              "int8 linear: ", s.name, ": ", s.weight.size(), " weights, expected ", o * k);
  QGRAD_CHECK(static_cast<std::int64_t>(s.weight_scale.size()) == o, ValueError,
              "int8 linear: ", s.name, ": ", s.weight_scale.size(), " weight scales for ", o,
              " output features");
  QGRAD_CHECK(s.bias.empty() || static_cast<std::int64_t>(s.bias.size()) == o, ValueError,
              "int8 linear: ", s.name, ": ", s.bias.size(), " biases for ", o, " output features");
  const double out_scale = s.output ? s.output->scale : 1.0;
  for (std::int64_t c = 0; c < o; ++c) {
    const double ws = s.weight_scale[c];
    QGRAD_CHECK(std::isfinite(ws) && ws != 0, ValueError, "int8 linear: ", s.name,
                ": weight scale of output ", c, " is ", ws, " (must be finite and nonzero)");
    const double acc_unit = double(s.input.scale) * ws;
    std::int64_t row_sum = 0;
    for (std::int64_t i = 0; i < k; ++i) row_sum += s.weight[c * k + i];
    const double b = s.bias.empty() ? 0.0 : s.bias[c] / acc_unit;
    impl_->out_scales.push_back(static_cast<float>(acc_unit / out_scale));
    impl_->bias_acc.push_back(static_cast<float>(b - double(s.input.zero_point) * row_sum));
  }
}

Int8Linear::~Int8Linear() = default;

std::string Int8Linear::describe() const {
  const Int8LinearSpec& s = spec_;
  std::ostringstream os;
  os << s.name << ": int8 linear " << s.in_features << "->" << s.out_features << ", "
     << dtype_name(s.input.dtype()) << " -> "
     << (s.output ? dtype_name(s.output->dtype()) : "float32") << (s.relu ? ", fused ReLU" : "");
  return os.str();
}

Tensor Int8Linear::forward(const Tensor& x) {
  const Int8LinearSpec& s = spec_;
  const bool flat = x.dim() == 2, image = x.dim() == 4;
  QGRAD_CHECK((flat || image) && x.numel() == x.size(0) * s.in_features, ShapeError,
              "int8 linear: ", s.name, ": input must be [N, ", s.in_features,
              "] or [N, C, H, W] with C*H*W = ", s.in_features, ", got ", shape_str(x.shape()));
  QGRAD_CHECK(x.dtype() == s.input.dtype(), DTypeError, "int8 linear: ", s.name, ": input must be ",
              dtype_name(s.input.dtype()), " (its grid: ", s.input.str(), "), got ",
              dtype_name(x.dtype()));
  const DType out_dtype = s.output ? s.output->dtype() : DType::Float32;
  Tensor y = dn::new_activation({x.size(0), s.out_features}, out_dtype);
  // An NHWC image (what the int8 convolutions and pooling write) is a contiguous [N, H*W*C]
  // matrix in (h, w, c) order: read it so, with the weights' columns permuted to that order, and
  // oneDNN runs its fast 2-D kernel (given the 4-D form it took a slower GEMM path).
  const bool nhwc = image && x.strides() == Shape{x.size(1) * x.size(2) * x.size(3), 1,
                                                  x.size(3) * x.size(1), x.size(1)};
  const Tensor src = nhwc ? x.permute({0, 2, 3, 1}).reshape({x.size(0), s.in_features}) : x;

  std::ostringstream key;
  key << shape_str(x.shape()) << shape_str(x.strides()) << dtype_name(x.dtype());
  // Built once per input layout, in this layer's own bounded, thread-safe cache.
  const std::shared_ptr<Impl::Entry> cached = impl_->entries.get<Impl::Entry>(key.str(), [&] {
    return std::make_shared<Impl::Entry>(dn::guarded(describe(), [&] {
      Impl::Entry n;
      n.src_md = dn::desc_of(src);
      n.dst_md = dn::desc_of(y);
      const std::int64_t o = s.out_features;
      const bool as_image = image && !nhwc;
      const dnnl::memory::dims wdims = as_image
                                           ? dnnl::memory::dims{o, x.size(1), x.size(2), x.size(3)}
                                           : dnnl::memory::dims{o, s.in_features};
      const md w_any(wdims, dnnl::memory::data_type::s8, dnnl::memory::format_tag::any);
      const md b_md({o}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
      const dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, n.src_md, w_any,
                                                b_md, n.dst_md);
      dnnl::primitive_attr attr;
      attr.set_output_scales(1 << 1, impl_->out_scales);
      attr.set_post_ops(requantize_post_ops(s.output, s.relu, /*add_zero_point=*/true));
      const dnnl::inner_product_forward::primitive_desc pd(d, attr, dn::engine());
      n.prim = dnnl::inner_product_forward(pd);
      n.impl = pd.impl_info_str();
      // Row-major [out, in] is oihw when the input is an image (PyTorch's flatten order); for
      // the NHWC matrix its columns go to (h, w, c) order.
      std::vector<std::int8_t> w = s.weight;
      if (nhwc) {
        const std::int64_t c = x.size(1), h = x.size(2), wd = x.size(3), k = s.in_features;
        for (std::int64_t oo = 0; oo < o; ++oo)
          for (std::int64_t ci = 0; ci < c; ++ci)
            for (std::int64_t hi = 0; hi < h; ++hi)
              for (std::int64_t wi = 0; wi < wd; ++wi)
                w[static_cast<std::size_t>(oo * k + (hi * wd + wi) * c + ci)] =
                    s.weight[static_cast<std::size_t>(oo * k + (ci * h + hi) * wd + wi)];
      }
      n.weights = dn::reorder_weights(
          md(wdims, dnnl::memory::data_type::s8,
             as_image ? dnnl::memory::format_tag::oihw : dnnl::memory::format_tag::oi),
          w.data(), pd.weights_desc());
      n.bias = dn::bias_memory(b_md, impl_->bias_acc);
      return n;
    }));
  });
  Impl::Entry& e = *cached;
  dn::run_weighted(describe(), e.prim, e.src_md, src, e.weights, e.bias, e.dst_md, y);
  impl_info_ = e.impl;
  return y;
}

}  // namespace qgrad::quant

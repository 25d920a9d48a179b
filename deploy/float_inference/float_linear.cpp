// FloatLinear: oneDNN float32 inner product on the previous layer's layout.
#include "deploy/float_inference/float_linear.h"

#include <sstream>

#include "core/error.h"
#include "deploy/common/relu_post_op.h"
#include "deploy/float_inference/float_dnnl.h"

namespace qgrad::deploy {

namespace fd = float_dnnl;
using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

FloatLinear::FloatLinear(FloatLinearSpec spec)
    : spec_(std::move(spec)),
      cache_(std::make_unique<FloatPrimitiveCache<FloatWeightedPrimitive>>()) {
  const FloatLinearSpec& s = spec_;
  const std::int64_t o = s.out_features, k = s.in_features;
  QGRAD_CHECK(o > 0 && k > 0, ValueError, "float linear: ", s.name, ": features ", k, " -> ", o,
              " must be positive");
  QGRAD_CHECK(static_cast<std::int64_t>(s.weight.size()) == o * k, ValueError,
              "float linear: ", s.name, ": ", s.weight.size(), " weights, expected ", o * k);
  QGRAD_CHECK(s.bias.empty() || static_cast<std::int64_t>(s.bias.size()) == o, ValueError,
              "float linear: ", s.name, ": ", s.bias.size(), " biases for ", o, " output features");
}

FloatLinear::~FloatLinear() = default;

std::string FloatLinear::describe() const {
  std::ostringstream os;
  os << spec_.name << ": linear " << spec_.in_features << "->" << spec_.out_features
     << (spec_.relu ? ", fused ReLU" : "");
  return os.str();
}

FloatActivation FloatLinear::forward(const FloatActivation& x) {
  const FloatLinearSpec& s = spec_;
  const md x_md = x.mem.get_desc();
  const dnnl::memory::dims in = x_md.dims();
  std::int64_t features = 1;
  for (std::size_t d = 1; d < in.size(); ++d) features *= in[d];
  QGRAD_CHECK((in.size() == 2 || in.size() == 4) && features == s.in_features, ShapeError,
              "float linear: ", s.name, ": input must be [N, ", s.in_features,
              "] or [N, C, H, W] with C*H*W = ", s.in_features);
  FloatWeightedPrimitive& e = cache_->get(x_md, [&] {
    return fd::guarded(describe(), [&] {
      const std::int64_t o = s.out_features;
      const bool image = in.size() == 4;
      const dnnl::memory::dims wdims =
          image ? dnnl::memory::dims{o, in[1], in[2], in[3]} : dnnl::memory::dims{o, in[1]};
      const md w_any(wdims, dt::f32, tag::any), b_md({o}, dt::f32, tag::x),
          dst_any({in[0], o}, dt::f32, tag::any);
      dnnl::post_ops po;
      if (s.relu) append_relu(po);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      // The input as it is laid out; a layout the inner product cannot pair with its weights
      // gets oneDNN's choice (and a reorder per call).
      auto make_pd = [&](const md& src) {
        const dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, src, w_any,
                                                  b_md, dst_any);
        return dnnl::inner_product_forward::primitive_desc(d, attr, fd::engine());
      };
      dnnl::inner_product_forward::primitive_desc pd;
      try {
        pd = make_pd(x_md);
      } catch (const dnnl::error&) {
        pd = make_pd(md(in, dt::f32, tag::any));
      }
      FloatWeightedPrimitive n;
      n.prim = dnnl::inner_product_forward(pd);
      n.src_md = pd.src_desc();
      n.dst_md = pd.dst_desc();
      n.impl = pd.impl_info_str();
      const md w_user(wdims, dt::f32, image ? tag::oihw : tag::oi);
      n.weights = fd::weights_memory(w_user, s.weight, pd.weights_desc());
      n.bias = fd::bias_memory(b_md, s.bias);
      return n;
    });
  });
  return fd::guarded(describe(), [&] {
    const dnnl::memory dst(e.dst_md, fd::engine());
    fd::execute_weighted(e, x.mem, dst);
    impl_info_ = e.impl;
    return FloatActivation{dst, true};
  });
}

}  // namespace qgrad::deploy

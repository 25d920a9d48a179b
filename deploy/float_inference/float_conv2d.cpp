// FloatConv2d: oneDNN float32 convolution in its preferred layouts with fused post-ops.
#include "deploy/float_inference/float_conv2d.h"

#include <sstream>

#include "core/error.h"
#include "deploy/common/layer_geometry.h"
#include "deploy/common/relu_post_op.h"
#include "deploy/float_inference/float_dnnl.h"

namespace qgrad::deploy {

namespace fd = float_dnnl;
using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

FloatConv2d::FloatConv2d(FloatConv2dSpec spec)
    : spec_(std::move(spec)),
      cache_(std::make_unique<FloatPrimitiveCache<FloatWeightedPrimitive>>()) {
  const FloatConv2dSpec& s = spec_;
  const std::int64_t o = s.out_channels;
  QGRAD_CHECK(s.in_channels > 0 && o > 0 && s.groups > 0 && s.in_channels % s.groups == 0 &&
                  o % s.groups == 0,
              ValueError, "float conv2d: ", s.name, ": channels ", s.in_channels, " -> ", o,
              " must be positive multiples of groups ", s.groups);
  const std::int64_t per = s.in_channels / s.groups * s.kernel[0] * s.kernel[1];
  QGRAD_CHECK(static_cast<std::int64_t>(s.weight.size()) == o * per, ValueError,
              "float conv2d: ", s.name, ": ", s.weight.size(), " weights, expected ", o * per);
  QGRAD_CHECK(s.bias.empty() || static_cast<std::int64_t>(s.bias.size()) == o, ValueError,
              "float conv2d: ", s.name, ": ", s.bias.size(), " biases for ", o, " output channels");
}

FloatConv2d::~FloatConv2d() = default;

std::string FloatConv2d::describe() const {
  const FloatConv2dSpec& s = spec_;
  std::ostringstream os;
  os << s.name << ": conv " << s.in_channels << "->" << s.out_channels << " k" << s.kernel[0] << "x"
     << s.kernel[1];
  if (s.groups != 1) os << " groups " << s.groups;
  os << (s.residual ? ", fused residual sum" : "")
     << (s.relu ? (s.relu_max > 0 ? ", fused ReLU6" : ", fused ReLU") : "");
  return os.str();
}

FloatActivation FloatConv2d::forward(const FloatActivation& x) {
  QGRAD_CHECK(!spec_.residual, ValueError, "float conv2d: ", spec_.name,
              " adds a residual: call forward(x, residual)");
  return run(x, nullptr);
}

FloatActivation FloatConv2d::forward(const FloatActivation& x, const FloatActivation& residual) {
  QGRAD_CHECK(spec_.residual, ValueError, "float conv2d: ", spec_.name, " has no residual input");
  return run(x, &residual);
}

FloatActivation FloatConv2d::run(const FloatActivation& x, const FloatActivation* residual) {
  const FloatConv2dSpec& s = spec_;
  const md x_md = x.mem.get_desc();
  const dnnl::memory::dims in = x_md.dims();
  QGRAD_CHECK(in.size() == 4 && in[1] == s.in_channels, ShapeError, "float conv2d: ", s.name,
              ": input must be [N, ", s.in_channels, ", H, W]");
  FloatWeightedPrimitive& e = cache_->get(x_md, [&] {
    return fd::guarded(describe(), [&] {
      std::array<std::int64_t, 2> out{}, pad_r{};
      for (int d = 0; d < 2; ++d) {
        const WindowExtent w =
            window_extent(in[2 + d], s.kernel[d], s.stride[d], s.padding[d], s.dilation[d]);
        QGRAD_CHECK(w.valid, ShapeError, "float conv2d: ", s.name,
                    ": the input is smaller than the kernel");
        out[d] = w.out;
        pad_r[d] = w.pad_right;
      }
      const std::int64_t o = s.out_channels, g = s.groups;
      const dnnl::memory::dims wdims =
          g == 1 ? dnnl::memory::dims{o, s.in_channels, s.kernel[0], s.kernel[1]}
                 : dnnl::memory::dims{g, o / g, s.in_channels / g, s.kernel[0], s.kernel[1]};
      // nChw16c wherever the channels fill its blocks: left to itself (format any) oneDNN 2.6
      // picks its brgconv kernel on NHWC here, which ran vggfm's convolutions 1.7 times and
      // resnet20's 1.2 times slower than its direct AVX-512 kernel on nChw16c (one thread,
      // 2026-11-28). Other channel counts (a grey image, lenet5bn's 6) stay oneDNN's choice.
      auto layout = [](std::int64_t channels) {
        return channels % 16 == 0 ? tag::aBcd16b : tag::any;
      };
      const md src_any(in, dt::f32, layout(s.in_channels)), w_any(wdims, dt::f32, tag::any),
          dst_any({in[0], o, out[0], out[1]}, dt::f32, layout(o)), b_md({o}, dt::f32, tag::x);
      const dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_any, w_any,
          b_md, dst_any, {s.stride[0], s.stride[1]}, {s.dilation[0] - 1, s.dilation[1] - 1},
          {s.padding[0], s.padding[1]}, {pad_r[0], pad_r[1]});
      dnnl::post_ops po;
      if (s.residual) po.append_sum(1.0f);
      if (s.relu) append_relu(po, s.relu_max);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      const dnnl::convolution_forward::primitive_desc pd(d, attr, fd::engine());
      FloatWeightedPrimitive n;
      n.prim = dnnl::convolution_forward(pd);
      n.src_md = pd.src_desc();
      n.dst_md = pd.dst_desc();
      n.impl = pd.impl_info_str();
      // The weights reordered once into the layout this implementation chose.
      const md w_user(wdims, dt::f32, g == 1 ? tag::oihw : tag::goihw);
      n.weights = fd::weights_memory(w_user, s.weight, pd.weights_desc());
      n.bias = fd::bias_memory(b_md, s.bias);
      return n;
    });
  });
  return fd::guarded(describe(), [&] {
    dnnl::memory dst;
    if (residual != nullptr) {
      // The sum post-op accumulates into the output, which starts as the residual: in place when
      // the model owns it and it is in the output's layout (the block input is dead after this).
      const bool in_place = residual->owned && residual->mem.get_desc() == e.dst_md;
      dst = in_place ? residual->mem : fd::reordered(residual->mem, e.dst_md);
    } else {
      dst = dnnl::memory(e.dst_md, fd::engine());
    }
    fd::execute_weighted(e, x.mem, dst);
    impl_info_ = e.impl;
    return FloatActivation{dst, true};
  });
}

}  // namespace qgrad::deploy

// FloatPool2d: oneDNN max / global average pooling on the input's layout.
#include "deploy/float_inference/float_pool2d.h"

#include <sstream>

#include "core/error.h"
#include "deploy/common/layer_geometry.h"
#include "deploy/float_inference/float_dnnl.h"

namespace qgrad::deploy {

namespace fd = float_dnnl;
using md = dnnl::memory::desc;

struct FloatPool2d::Entry {
  dnnl::pooling_v2_forward prim;
  md dst_md;
  std::string impl;
};

FloatPool2d::FloatPool2d(FloatPool2dSpec spec)
    : spec_(std::move(spec)), cache_(std::make_unique<FloatPrimitiveCache<Entry>>()) {
  if (spec_.global_average) return;
  for (int d = 0; d < 2; ++d)
    QGRAD_CHECK(spec_.kernel[d] > 0 && spec_.stride[d] > 0 && spec_.dilation[d] > 0 &&
                    spec_.padding[d] >= 0 && 2 * spec_.padding[d] <= spec_.kernel[d],
                ValueError, "float max_pool2d: ", spec_.name,
                ": kernel, stride and dilation must be positive and padding at most half the "
                "kernel");
}

FloatPool2d::~FloatPool2d() = default;

std::string FloatPool2d::describe() const {
  if (spec_.global_average) return spec_.name + ": global average pool";
  std::ostringstream os;
  os << spec_.name << ": max pool k" << spec_.kernel[0] << "x" << spec_.kernel[1] << " s"
     << spec_.stride[0] << "x" << spec_.stride[1];
  return os.str();
}

FloatActivation FloatPool2d::forward(const FloatActivation& x) {
  const md x_md = x.mem.get_desc();
  const dnnl::memory::dims in = x_md.dims();
  QGRAD_CHECK(in.size() == 4, ShapeError, "float pool2d: ", spec_.name,
              ": input must be [N, C, H, W]");
  Entry& e = cache_->get(x_md, [&] {
    return fd::guarded(describe(), [&] {
      FloatPool2dSpec s = spec_;
      if (s.global_average) {
        s.kernel = {in[2], in[3]};
        s.stride = {1, 1};
      }
      std::array<std::int64_t, 2> out{}, pad_r{};
      for (int d = 0; d < 2; ++d) {
        const WindowExtent w = window_extent(in[2 + d], s.kernel[d], s.stride[d], s.padding[d],
                                             s.dilation[d], s.ceil_mode);
        QGRAD_CHECK(w.valid, ShapeError, "float pool2d: ", s.name,
                    ": the input is smaller than the window");
        out[d] = w.out;
        pad_r[d] = w.pad_right;
      }
      const md dst_any({in[0], in[1], out[0], out[1]}, dnnl::memory::data_type::f32,
                       dnnl::memory::format_tag::any);
      const dnnl::pooling_v2_forward::desc d(
          dnnl::prop_kind::forward_inference,
          s.global_average ? dnnl::algorithm::pooling_avg_exclude_padding
                           : dnnl::algorithm::pooling_max,
          x_md, dst_any, {s.stride[0], s.stride[1]}, {s.kernel[0], s.kernel[1]},
          {s.dilation[0] - 1, s.dilation[1] - 1}, {s.padding[0], s.padding[1]},
          {pad_r[0], pad_r[1]});
      const dnnl::pooling_v2_forward::primitive_desc pd(d, fd::engine());
      return Entry{dnnl::pooling_v2_forward(pd), pd.dst_desc(), pd.impl_info_str()};
    });
  });
  return fd::guarded(describe(), [&] {
    dnnl::memory dst(e.dst_md, fd::engine());
    fd::execute(e.prim, {{DNNL_ARG_SRC, x.mem}, {DNNL_ARG_DST, dst}});
    impl_info_ = e.impl;
    return FloatActivation{dst, true};
  });
}

}  // namespace qgrad::deploy

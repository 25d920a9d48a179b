// Int8MaxPool2d: oneDNN pooling_v2 (max) on int8 activations.
#include "deploy/int8/int8_max_pool2d.h"

#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/common/layer_geometry.h"
#include "deploy/int8/int8_dnnl.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad::quant {

namespace dn = int8_dnnl;
using md = dnnl::memory::desc;

struct Int8MaxPool2d::Impl {
  struct Entry {
    dnnl::pooling_v2_forward prim;
    md src_md, dst_md;
    std::string impl;
  };
  dnnl_backend::PrimitiveCache entries{64};
};

Int8MaxPool2d::Int8MaxPool2d(Int8MaxPool2dSpec spec)
    : spec_(std::move(spec)), impl_(std::make_unique<Impl>()) {
  for (int d = 0; d < 2; ++d)
    QGRAD_CHECK(spec_.kernel[d] > 0 && spec_.stride[d] > 0 && spec_.dilation[d] > 0 &&
                    spec_.padding[d] >= 0 && 2 * spec_.padding[d] <= spec_.kernel[d],
                ValueError, "int8 max_pool2d: ", spec_.name,
                ": kernel, stride and dilation must be positive and padding at most half the "
                "kernel");
}

Int8MaxPool2d::~Int8MaxPool2d() = default;

std::string Int8MaxPool2d::describe() const {
  std::ostringstream os;
  os << spec_.name << ": max pool k" << spec_.kernel[0] << "x" << spec_.kernel[1] << " s"
     << spec_.stride[0] << "x" << spec_.stride[1];
  return os.str();
}

Tensor Int8MaxPool2d::forward(const Tensor& x) {
  const Int8MaxPool2dSpec& s = spec_;
  QGRAD_CHECK(x.dim() == 4, ShapeError, "int8 max_pool2d: ", s.name,
              ": input must be [N, C, H, W], got ", shape_str(x.shape()));
  std::array<std::int64_t, 2> out{}, pad_r{};
  for (int d = 0; d < 2; ++d) {
    const deploy::WindowExtent e = deploy::window_extent(x.size(2 + d), s.kernel[d], s.stride[d],
                                                         s.padding[d], s.dilation[d], s.ceil_mode);
    QGRAD_CHECK(e.valid, ShapeError, "int8 max_pool2d: ", s.name, ": input ", shape_str(x.shape()),
                " is smaller than the window");
    out[d] = e.out;
    pad_r[d] = e.pad_right;
  }
  Tensor y = dn::new_activation({x.size(0), x.size(1), out[0], out[1]}, x.dtype());
  std::ostringstream key;
  key << shape_str(x.shape()) << shape_str(x.strides()) << dtype_name(x.dtype());
  // Built once per input layout, in this layer's own bounded, thread-safe cache.
  const std::shared_ptr<Impl::Entry> cached = impl_->entries.get<Impl::Entry>(key.str(), [&] {
    return std::make_shared<Impl::Entry>(dn::guarded(describe(), [&] {
      Impl::Entry n;
      n.src_md = dn::desc_of(x);
      n.dst_md = dn::desc_of(y);
      const dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::pooling_max, n.src_md, n.dst_md,
                                             {s.stride[0], s.stride[1]}, {s.kernel[0], s.kernel[1]},
                                             {s.dilation[0] - 1, s.dilation[1] - 1},
                                             {s.padding[0], s.padding[1]}, {pad_r[0], pad_r[1]});
      const dnnl::pooling_v2_forward::primitive_desc pd(d, dn::engine());
      n.prim = dnnl::pooling_v2_forward(pd);
      n.impl = pd.impl_info_str();
      return n;
    }));
  });
  Impl::Entry& e = *cached;
  dn::guarded(describe(), [&] {
    e.prim.execute(dn::stream(),
                   {{DNNL_ARG_SRC, dn::wrap(e.src_md, x)}, {DNNL_ARG_DST, dn::wrap(e.dst_md, y)}});
    dn::stream().wait();
  });
  impl_info_ = e.impl;
  return y;
}

}  // namespace qgrad::quant

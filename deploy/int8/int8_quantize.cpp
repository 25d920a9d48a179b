// Int8Quantize: float32 -> int8 grid with oneDNN eltwise clip and a scaling reorder.
#include "deploy/int8/int8_quantize.h"

#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/factory.h"
#include "core/shape.h"
#include "deploy/int8/int8_dnnl.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad::quant {

namespace dn = int8_dnnl;
using md = dnnl::memory::desc;

struct Int8Quantize::Impl {
  struct Entry {
    std::optional<dnnl::eltwise_forward> clip;  // only for grids narrower than the type
    dnnl::reorder reorder;
    md src_md, clipped_md, dst_md;
    std::string impl;
  };
  dnnl_backend::PrimitiveCache entries{64};  // by input shape and strides
};

Int8QuantizeStep::Int8QuantizeStep(const Int8Grid& grid) {
  const double s = grid.scale, z = grid.zero_point;
  clip = grid.narrower_than_type();
  // The eltwise clip's bounds and the reorder's scale, as forward() gives them to oneDNN.
  lo = static_cast<float>((grid.quant_min - z) * s);
  hi = static_cast<float>((grid.quant_max - z) * s);
  inv_scale = 1.0f / grid.scale;
  zp = static_cast<float>(grid.zero_point);
  type_min = static_cast<float>(grid.type_min());
  type_max = static_cast<float>(grid.type_max());
}

Int8Quantize::Int8Quantize(std::string name, Int8Grid grid)
    : name_(std::move(name)), grid_(grid), impl_(std::make_unique<Impl>()) {}

Int8Quantize::~Int8Quantize() = default;

std::string Int8Quantize::describe() const {
  return name_ + ": quantize float32 -> " + dtype_name(grid_.dtype()) + " (" + grid_.str() + ")";
}

Tensor Int8Quantize::forward(const Tensor& input) {
  QGRAD_CHECK(input.dtype() == DType::Float32 && (input.dim() == 4 || input.dim() == 2), ValueError,
              "int8 quantize: ", name_, ": input must be float32 [N, C, H, W] or [N, K], got ",
              dtype_name(input.dtype()), " ", shape_str(input.shape()));
  const Tensor x = input.contiguous();
  Tensor y = dn::new_activation(x.shape(), grid_.dtype());
  Tensor clipped;
  if (grid_.narrower_than_type()) clipped = empty(x.shape());
  const std::string key = shape_str(x.shape());
  // Built once per input layout, in this layer's own bounded, thread-safe cache.
  const std::shared_ptr<Impl::Entry> cached = impl_->entries.get<Impl::Entry>(key, [&] {
    return std::make_shared<Impl::Entry>(dn::guarded(describe(), [&] {
      Impl::Entry n;
      n.src_md = dn::desc_of(x);
      n.dst_md = dn::desc_of(y);
      std::string impl;
      if (clipped.defined()) {
        n.clipped_md = dn::desc_of(clipped);
        const double s = grid_.scale, z = grid_.zero_point;
        const dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference,
                                            dnnl::algorithm::eltwise_clip, n.src_md,
                                            static_cast<float>((grid_.quant_min - z) * s),
                                            static_cast<float>((grid_.quant_max - z) * s));
        const dnnl::eltwise_forward::primitive_desc pd(d, dn::engine());
        n.clip = dnnl::eltwise_forward(pd);
        impl = std::string(pd.impl_info_str()) + " + ";
      }
      dnnl::primitive_attr attr;
      attr.set_output_scales(0, {1.0f / grid_.scale});  // torch.ao's inv_scale
      if (grid_.zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {grid_.zero_point});
      const md& from = clipped.defined() ? n.clipped_md : n.src_md;
      const dnnl::reorder::primitive_desc pd(dn::engine(), from, dn::engine(), n.dst_md, attr);
      n.reorder = dnnl::reorder(pd);
      n.impl = impl + "reorder " + pd.impl_info_str();
      return n;
    }));
  });
  Impl::Entry& e = *cached;
  dn::guarded(describe(), [&] {
    dnnl::memory src = dn::wrap(e.src_md, x);
    if (e.clip) {
      dnnl::memory c = dn::wrap(e.clipped_md, clipped);
      e.clip->execute(dn::stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, c}});
      src = c;
    }
    dnnl::memory dst = dn::wrap(e.dst_md, y);
    e.reorder.execute(dn::stream(), src, dst);
    dn::stream().wait();
  });
  impl_info_ = e.impl;
  return y;
}

}  // namespace qgrad::quant

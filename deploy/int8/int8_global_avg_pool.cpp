// Int8GlobalAvgPool: oneDNN average pooling over the whole spatial extent.
#include "deploy/int8/int8_global_avg_pool.h"

#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/int8/int8_dnnl.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad::quant {

namespace dn = int8_dnnl;
using md = dnnl::memory::desc;

struct Int8GlobalAvgPool::Impl {
  struct Entry {
    dnnl::pooling_v2_forward prim;
    md src_md, dst_md;
    std::string impl;
  };
  dnnl_backend::PrimitiveCache entries{64};
};

Int8GlobalAvgPool::Int8GlobalAvgPool(std::string name)
    : name_(std::move(name)), impl_(std::make_unique<Impl>()) {}

Int8GlobalAvgPool::~Int8GlobalAvgPool() = default;

std::string Int8GlobalAvgPool::describe() const {
  return name_ + ": global average pool";
}

Tensor Int8GlobalAvgPool::forward(const Tensor& x) {
  QGRAD_CHECK(x.dim() == 4 && x.dtype() == DType::Float32, ValueError,
              "int8 global_avg_pool: ", name_, ": input must be float32 [N, C, H, W], got ",
              dtype_name(x.dtype()), " ", shape_str(x.shape()));
  Tensor y = dn::new_activation({x.size(0), x.size(1), 1, 1}, DType::Float32);
  std::ostringstream key;
  key << shape_str(x.shape()) << shape_str(x.strides());
  // Built once per input layout, in this layer's own bounded, thread-safe cache.
  const std::shared_ptr<Impl::Entry> cached = impl_->entries.get<Impl::Entry>(key.str(), [&] {
    return std::make_shared<Impl::Entry>(dn::guarded(describe(), [&] {
      Impl::Entry n;
      n.src_md = dn::desc_of(x);
      n.dst_md = dn::desc_of(y);
      const dnnl::pooling_v2_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_avg_exclude_padding,
          n.src_md, n.dst_md, {1, 1}, {x.size(2), x.size(3)}, {0, 0}, {0, 0}, {0, 0});
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

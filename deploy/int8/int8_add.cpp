// Int8Add: oneDNN binary add of two int8 grids with requantisation.
#include "deploy/int8/int8_add.h"

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

struct Int8Add::Impl {
  struct Entry {
    dnnl::binary prim;
    md a_md, b_md, dst_md;
    std::string impl;
  };
  dnnl_backend::PrimitiveCache entries{64};
};

Int8Add::Int8Add(Int8AddSpec spec) : spec_(std::move(spec)), impl_(std::make_unique<Impl>()) {}

Int8Add::~Int8Add() = default;

std::string Int8Add::describe() const {
  return spec_.name + ": int8 add " + dtype_name(spec_.a.dtype()) + " + " +
         dtype_name(spec_.b.dtype()) + " -> " +
         (spec_.output ? dtype_name(spec_.output->dtype()) : "float32") +
         (spec_.relu ? ", fused ReLU" : "");
}

Tensor Int8Add::forward(const Tensor&) {
  throw ValueError("int8 add: " + spec_.name + " has two inputs (use add(a, b))");
}

Tensor Int8Add::add(const Tensor& a, const Tensor& b) {
  const Int8AddSpec& s = spec_;
  QGRAD_CHECK(a.shape() == b.shape() && a.dim() == 4, ShapeError, "int8 add: ", s.name,
              ": inputs must be [N, C, H, W] of the same shape, got ", shape_str(a.shape()),
              " and ", shape_str(b.shape()));
  QGRAD_CHECK(a.dtype() == s.a.dtype() && b.dtype() == s.b.dtype(), DTypeError,
              "int8 add: ", s.name, ": inputs must be ", dtype_name(s.a.dtype()), " and ",
              dtype_name(s.b.dtype()), ", got ", dtype_name(a.dtype()), " and ",
              dtype_name(b.dtype()));
  Tensor y = dn::new_activation(a.shape(), s.output ? s.output->dtype() : DType::Float32);
  std::ostringstream key;
  key << shape_str(a.shape()) << shape_str(a.strides()) << shape_str(b.strides());
  // Built once per input layout, in this layer's own bounded, thread-safe cache.
  const std::shared_ptr<Impl::Entry> cached = impl_->entries.get<Impl::Entry>(key.str(), [&] {
    return std::make_shared<Impl::Entry>(dn::guarded(describe(), [&] {
      Impl::Entry n;
      n.a_md = dn::desc_of(a);
      n.b_md = dn::desc_of(b);
      n.dst_md = dn::desc_of(y);
      const double out = s.output ? s.output->scale : 1.0;
      dnnl::primitive_attr attr;
      attr.set_scales(DNNL_ARG_SRC_0, 0, {static_cast<float>(s.a.scale / out)});
      attr.set_scales(DNNL_ARG_SRC_1, 0, {static_cast<float>(s.b.scale / out)});
      // The input zero points, in output units, come off before the ReLU and clip.
      const double shift =
          -(double(s.a.scale) * s.a.zero_point + double(s.b.scale) * s.b.zero_point) / out;
      attr.set_post_ops(requantize_post_ops(s.output, s.relu, /*add_zero_point=*/true, shift));
      const dnnl::binary::desc d(dnnl::algorithm::binary_add, n.a_md, n.b_md, n.dst_md);
      const dnnl::binary::primitive_desc pd(d, attr, dn::engine());
      n.prim = dnnl::binary(pd);
      n.impl = pd.impl_info_str();
      return n;
    }));
  });
  Impl::Entry& e = *cached;
  dn::guarded(describe(), [&] {
    e.prim.execute(dn::stream(), {{DNNL_ARG_SRC_0, dn::wrap(e.a_md, a)},
                                  {DNNL_ARG_SRC_1, dn::wrap(e.b_md, b)},
                                  {DNNL_ARG_DST, dn::wrap(e.dst_md, y)}});
    dn::stream().wait();
  });
  impl_info_ = e.impl;
  return y;
}

}  // namespace qgrad::quant

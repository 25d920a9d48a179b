// The oneDNN engine, per-thread streams, descriptor helpers and the primitive cache.
#include "ops/dnnl/dnnl_context.h"

namespace qgrad::dnnl_backend {

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream s(cpu_engine());
  return s;
}

dnnl::memory::data_type to_dnnl(DType d) {
  switch (d) {
    case DType::Float32:
      return dnnl::memory::data_type::f32;
    case DType::Int8:
      return dnnl::memory::data_type::s8;
    case DType::UInt8:
      return dnnl::memory::data_type::u8;
    case DType::Int32:
      return dnnl::memory::data_type::s32;
    default:
      throw DTypeError(std::string("oneDNN: dtype ") + dtype_name(d) +
                       " is not supported by the oneDNN kernels (use float32)");
  }
}

dnnl::memory::dims to_dims(const Shape& s) {
  return dnnl::memory::dims(s.begin(), s.end());
}

dnnl::memory::desc strided_desc(const Tensor& t) {
  return dnnl::memory::desc(to_dims(t.shape()), to_dnnl(t.dtype()), to_dims(t.strides()));
}

dnnl::memory::desc plain_desc(const Shape& shape, DType d) {
  return dnnl::memory::desc(to_dims(shape), to_dnnl(d), to_dims(contiguous_strides(shape)));
}

dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, cpu_engine(), t.raw_data());
}

PrimitiveCache& primitive_cache() {
  static PrimitiveCache cache;
  return cache;
}

}  // namespace qgrad::dnnl_backend

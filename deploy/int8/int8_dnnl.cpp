// The engine, streams and descriptor helpers of the int8 layers.
#include "deploy/int8/int8_dnnl.h"

#include "core/error.h"
#include "core/factory.h"

namespace qgrad::quant::int8_dnnl {

dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dnnl::memory::data_type data_type(DType d) {
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
      throw DTypeError(std::string("int8 inference: dtype ") + dtype_name(d) +
                       " has no oneDNN int8 form (float32, int8, uint8 or int32)");
  }
}

dnnl::memory::dims dims(const Shape& s) {
  return dnnl::memory::dims(s.begin(), s.end());
}

dnnl::memory::desc desc_of(const Tensor& t) {
  return dnnl::memory::desc(dims(t.shape()), data_type(t.dtype()), dims(t.strides()));
}

dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, engine(), t.raw_data());
}

Tensor new_activation(const Shape& nchw, DType dtype) {
  if (nchw.size() != 4) return empty(nchw, TensorOptions().dtype(dtype));
  return empty({nchw[0], nchw[2], nchw[3], nchw[1]}, TensorOptions().dtype(dtype))
      .permute({0, 3, 1, 2});
}

}  // namespace qgrad::quant::int8_dnnl

// The engine, streams and descriptor helpers of the int8 layers.
#include "deploy/int8/int8_dnnl.h"

#include "core/error.h"
#include "core/factory.h"
#include "ops/dnnl/dnnl_context.h"

#include <algorithm>

namespace qgrad::quant::int8_dnnl {

// One CPU engine and one stream per thread for the float ops and the int8 layers.
dnnl::engine& engine() {
  return dnnl_backend::cpu_engine();
}

dnnl::stream& stream() {
  return dnnl_backend::cpu_stream();
}

dnnl::memory::data_type data_type(DType d) {
  try {
    return dnnl_backend::to_dnnl(d);
  } catch (const DTypeError&) {
    throw DTypeError(std::string("int8 inference: dtype ") + dtype_name(d) +
                     " has no oneDNN int8 form (float32, int8, uint8 or int32)");
  }
}

dnnl::memory::dims dims(const Shape& s) {
  return dnnl_backend::to_dims(s);
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

dnnl::memory reorder_weights(const dnnl::memory::desc& user, const std::int8_t* data,
                             const dnnl::memory::desc& target) {
  dnnl::memory from(user, engine(), const_cast<std::int8_t*>(data));
  dnnl::memory to(target, engine());
  dnnl::reorder(from, to).execute(stream(), from, to);
  stream().wait();
  return to;
}

dnnl::memory bias_memory(const dnnl::memory::desc& md, const std::vector<float>& values) {
  dnnl::memory m(md, engine());
  std::copy(values.begin(), values.end(), static_cast<float*>(m.get_data_handle()));
  return m;
}

void run_weighted(const std::string& layer, const dnnl::primitive& prim,
                  const dnnl::memory::desc& src_md, const Tensor& x, const dnnl::memory& weights,
                  const dnnl::memory& bias, const dnnl::memory::desc& dst_md, const Tensor& y) {
  guarded(layer, [&] {
    prim.execute(stream(), {{DNNL_ARG_SRC, wrap(src_md, x)},
                            {DNNL_ARG_WEIGHTS, weights},
                            {DNNL_ARG_BIAS, bias},
                            {DNNL_ARG_DST, wrap(dst_md, y)}});
    stream().wait();
  });
}

}  // namespace qgrad::quant::int8_dnnl

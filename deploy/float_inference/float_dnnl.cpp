// The engine, stream, execution and reorder helpers of the float inference layers.
#include "deploy/float_inference/float_dnnl.h"

#include "core/error.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad::deploy::float_dnnl {

dnnl::engine& engine() {
  return dnnl_backend::cpu_engine();
}

dnnl::stream& stream() {
  return dnnl_backend::cpu_stream();
}

void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  prim.execute(stream(), args);
  stream().wait();
}

void execute_weighted(const FloatWeightedPrimitive& p, const dnnl::memory& src,
                      const dnnl::memory& dst) {
  const dnnl::memory in = src.get_desc() == p.src_md ? src
                          : p.view_input ? dnnl::memory(p.src_md, engine(), src.get_data_handle())
                                         : reordered(src, p.src_md);
  execute(p.prim, {{DNNL_ARG_SRC, in},
                   {DNNL_ARG_WEIGHTS, p.weights},
                   {DNNL_ARG_BIAS, p.bias},
                   {DNNL_ARG_DST, dst}});
}

dnnl::memory reordered(const dnnl::memory& from, const dnnl::memory::desc& to) {
  dnnl::memory out(to, engine());
  dnnl::memory src = from;  // oneDNN takes non-const handles; the reorder only reads `from`
  dnnl::reorder(src, out).execute(stream(), src, out);
  stream().wait();
  return out;
}

dnnl::memory bias_memory(const dnnl::memory::desc& md, const std::vector<float>& values) {
  dnnl::memory m(md, engine());
  float* b = static_cast<float*>(m.get_data_handle());
  const std::int64_t n = md.dims()[0];
  for (std::int64_t c = 0; c < n; ++c) b[c] = values.empty() ? 0.0f : values[c];
  return m;
}

dnnl::memory weights_memory(const dnnl::memory::desc& user, const std::vector<float>& data,
                            const dnnl::memory::desc& target) {
  return reordered(dnnl::memory(user, engine(), const_cast<float*>(data.data())), target);
}

void rethrow(const std::string& layer, const dnnl::error& e) {
  throw Error("float inference: " + layer + ": oneDNN error (status " + std::to_string(e.status) +
              "): " + e.what());
}

}  // namespace qgrad::deploy::float_dnnl

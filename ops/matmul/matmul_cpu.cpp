// Batched matrix product kernels. float32: oneDNN matmul, one cached primitive per shape/stride
// set, operands described with their own strides so transposed views and broadcast batch dims
// need no copy. float64: a row-parallel triple loop (reference quality, used by gradcheck).
#include "ops/matmul/matmul_kernels.h"

#include <algorithm>

#include "core/allocator.h"
#include "core/factory.h"
#include "core/strided_loop.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad {

namespace {

namespace dn = dnnl_backend;
using dims = dnnl::memory::dims;

// An operand as oneDNN will see it: matrix dims row- or column-major, broadcast batch dims
// (size 1 or stride 0) given size 1, and the strides of size-1 dims made canonical.
struct Operand {
  Tensor data;  // the tensor whose memory is read (a copy when the view was not describable)
  dims shape;
  dims strides;
};

bool matrix_is_describable(const Tensor& t) {
  const std::size_t n = t.shape().size();
  const std::int64_t r = t.shape()[n - 2], c = t.shape()[n - 1];
  const std::int64_t sr = t.strides()[n - 2], sc = t.strides()[n - 1];
  const bool row_major = (c == 1 || sc == 1) && (r == 1 || sr >= c);
  const bool col_major = (r == 1 || sr == 1) && (c == 1 || sc >= r);
  return row_major || col_major;
}

Operand describe(const Tensor& t) {
  Operand op;
  op.data = matrix_is_describable(t) ? t : t.contiguous();
  const Shape& sh = op.data.shape();
  const Shape& st = op.data.strides();
  const std::size_t n = sh.size();
  op.shape.assign(sh.begin(), sh.end());
  op.strides.assign(st.begin(), st.end());
  const std::int64_t r = sh[n - 2], c = sh[n - 1];
  if ((c == 1 || st[n - 1] == 1) && (r == 1 || st[n - 2] >= c)) {
    op.strides[n - 1] = 1;
    if (r == 1) op.strides[n - 2] = c;
  } else {
    op.strides[n - 2] = 1;
    if (c == 1) op.strides[n - 1] = r;
  }
  // Batch dims, innermost first: a broadcast dim becomes size 1 with a stride past the rest.
  std::int64_t extent = std::max(op.strides[n - 2] * r, op.strides[n - 1] * c);
  for (std::size_t d = n - 2; d-- > 0;) {
    if (sh[d] == 1 || st[d] == 0) {
      op.shape[d] = 1;
      op.strides[d] = extent;
    }
    extent = std::max(extent, op.strides[d] * op.shape[d]);
  }
  return op;
}

struct MatmulPrimitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

void matmul_f32(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out) {
  Operand A = describe(a), B = describe(b);
  const dims out_dims = dn::to_dims(out.shape());
  const std::size_t nd = out_dims.size();
  // oneDNN broadcasts a batch dim of one operand, not of both (both expanded views): then a
  // materialises its copy.
  for (std::size_t d = 0; d + 2 < nd; ++d)
    if (out_dims[d] > 1 && A.shape[d] == 1 && B.shape[d] == 1) {
      A = describe(a.contiguous());
      break;
    }
  const bool has_bias = bias.defined();
  Tensor bias_c = has_bias ? bias.contiguous() : Tensor();

  dn::KeyBuilder key;
  key << "matmul" << Shape(A.shape) << Shape(A.strides) << Shape(B.shape) << Shape(B.strides)
      << out.shape() << has_bias;
  const std::string k = key.str();
  auto entry = dn::guarded("matmul", k, [&] {
    return dn::primitive_cache().get<MatmulPrimitive>(k, [&] {
      using dt = dnnl::memory::data_type;
      dnnl::memory::desc a_md(A.shape, dt::f32, A.strides);
      dnnl::memory::desc b_md(B.shape, dt::f32, B.strides);
      dnnl::memory::desc o_md(out_dims, dt::f32, dn::to_dims(contiguous_strides(out.shape())));
      dnnl::memory::desc bias_md;
      if (has_bias) {
        dims bd(nd, 1);
        bd[nd - 1] = out_dims[nd - 1];
        bias_md = dnnl::memory::desc(bd, dt::f32, dn::to_dims(contiguous_strides(Shape(bd))));
      }
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::matmul::desc desc = has_bias ? dnnl::matmul::desc(a_md, b_md, bias_md, o_md)
                                         : dnnl::matmul::desc(a_md, b_md, o_md);
      dnnl::matmul::primitive_desc pd(desc, attr, dn::cpu_engine());
      return std::make_shared<MatmulPrimitive>(MatmulPrimitive{pd, dnnl::matmul(pd)});
    });
  });

  dn::guarded("matmul", k, [&] {
    auto& eng = dn::cpu_engine();
    const auto& pd = entry->pd;
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), eng, A.data.raw_data())},
        {DNNL_ARG_WEIGHTS, dnnl::memory(pd.weights_desc(), eng, B.data.raw_data())},
        {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), eng, out.raw_data())}};
    if (has_bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(pd.bias_desc(), eng, bias_c.raw_data()));
    DataPtr scratch(nullptr, nullptr);
    const dnnl::memory::desc scratch_md = pd.scratchpad_desc();
    if (scratch_md.get_size() > 0) {
      scratch = allocate(scratch_md.get_size(), kCPU);
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md, eng, scratch.get()));
    }
    entry->prim.execute(dn::cpu_stream(), args);
    dn::cpu_stream().wait();
  });
}

// out[b, i, j] = sum_k a[b, i, k] * b[b, k, j] (+ bias[j]), broadcast batch dims read with
// stride 0. Rows (b, i) are split across threads.
void matmul_f64(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out) {
  const Shape& os = out.shape();
  const std::size_t nd = os.size();
  const std::int64_t M = os[nd - 2], N = os[nd - 1], K = a.shape()[nd - 1];
  std::int64_t batch = 1;
  for (std::size_t d = 0; d + 2 < nd; ++d) batch *= os[d];
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  const double* pbias = bias.defined() ? bias.data_ptr<double>() : nullptr;
  const std::int64_t bias_st = bias.defined() ? bias.strides()[0] : 0;
  double* po = out.data_ptr<double>();
  auto bstride = [&](const Tensor& t, std::size_t d) {
    return t.shape()[d] == 1 ? std::int64_t{0} : t.strides()[d];
  };
  const std::int64_t am = a.strides()[nd - 2], ak = a.strides()[nd - 1];
  const std::int64_t bk = b.strides()[nd - 2], bn = b.strides()[nd - 1];
  parallel_for(batch * M, 64, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t bi = r / M, i = r % M;
      std::int64_t oa = 0, ob = 0, rem = bi;
      for (std::size_t d = nd - 2; d-- > 0;) {
        const std::int64_t idx = rem % os[d];
        rem /= os[d];
        oa += idx * bstride(a, d);
        ob += idx * bstride(b, d);
      }
      double* orow = po + r * N;
      for (std::int64_t j = 0; j < N; ++j) orow[j] = pbias ? pbias[j * bias_st] : 0.0;
      const double* arow = pa + oa + i * am;
      for (std::int64_t kk = 0; kk < K; ++kk) {
        const double av = arow[kk * ak];
        const double* brow = pb + ob + kk * bk;
        for (std::int64_t j = 0; j < N; ++j) orow[j] += av * brow[j * bn];
      }
    }
  });
}

void matmul_cpu(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out) {
  if (out.numel() == 0) return;
  const std::int64_t K = a.shape().back();
  if (K == 0) {  // empty sum: zeros, plus the bias
    Tensor(out).zero_();
    if (bias.defined()) Tensor(out).copy_(bias);
    return;
  }
  if (out.dtype() == DType::Float64) {
    matmul_f64(a, b, bias, out);
  } else {
    matmul_f32(a, b, bias, out);
  }
}

}  // namespace

void register_matmul_cpu_kernels(KernelRegistry& r) {
  r.table(kMatmulKernels).define(DeviceType::CPU, &matmul_cpu, kFloatingDTypes);
}

}  // namespace qgrad

// CPU where/logical kernels on the StridedLoop, with plain loops for the contiguous and
// broadcast-scalar inner cases so they vectorise.
#include "ops/where/where_kernels.h"

#include "core/strided_loop.h"
#include "ops/unary/vec_math.h"  // QGRAD_NOINLINE

namespace qgrad {

namespace {

// The vectorisable inner loops, out of line (see ops/unary/unary_cpu.cpp). Both operands are
// loaded unconditionally so the select needs no masked loads.
template <typename T>
QGRAD_NOINLINE void select_contiguous(T* o, const std::uint8_t* c, const T* x, const T* y,
                                      std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const T a = x[i], b = y[i];
    o[i] = c[i] ? a : b;
  }
}
template <typename T>
QGRAD_NOINLINE void select_scalar_other(T* o, const std::uint8_t* c, const T* x, T y,
                                        std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const T a = x[i];
    o[i] = c[i] ? a : y;
  }
}
template <typename T>
QGRAD_NOINLINE void select_scalar_input(T* o, const std::uint8_t* c, T x, const T* y,
                                        std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const T b = y[i];
    o[i] = c[i] ? x : b;
  }
}

template <typename T>
void where_typed(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  const auto* pc = static_cast<const std::uint8_t*>(cond.raw_data());
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  StridedLoop<4> loop(out.shape(), {out.strides(), cond.strides(), a.strides(), b.strides()},
                      {0, 0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 4>& off, std::int64_t n,
               const std::array<std::int64_t, 4>& st) {
    T* o = po + off[0];
    const std::uint8_t* c = pc + off[1];
    const T* x = pa + off[2];
    const T* y = pb + off[3];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
      select_contiguous(o, c, x, y, n);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 0) {
      select_scalar_other(o, c, x, *y, n);  // where(c, x, scalar): masking, as in backward
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0 && st[3] == 1) {
      select_scalar_input(o, c, *x, y, n);
    } else {
      for (std::int64_t i = 0; i < n; ++i)
        o[i * st[0]] = c[i * st[1]] ? x[i * st[2]] : y[i * st[3]];
    }
  });
}

void where_cpu(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  QGRAD_DISPATCH_ALL(out.dtype(), "where", [&] { where_typed<scalar_t>(cond, a, b, out); });
}

template <LogicalOp Op>
void logical_typed(const Tensor& a, const Tensor& b, const Tensor& out) {
  const auto* pa = static_cast<const std::uint8_t*>(a.raw_data());
  const auto* pb = static_cast<const std::uint8_t*>(b.raw_data());
  auto* po = static_cast<std::uint8_t*>(out.raw_data());
  StridedLoop<3> loop(out.shape(), {out.strides(), a.strides(), b.strides()}, {0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 3>& off, std::int64_t n,
               const std::array<std::int64_t, 3>& st) {
    for (std::int64_t i = 0; i < n; ++i) {
      const bool x = pa[off[1] + i * st[1]] != 0, y = pb[off[2] + i * st[2]] != 0;
      po[off[0] + i * st[0]] = Op == LogicalOp::And  ? (x && y)
                               : Op == LogicalOp::Or ? (x || y)
                                                     : !x;
    }
  });
}

void logical_cpu(LogicalOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (op == LogicalOp::And) return logical_typed<LogicalOp::And>(a, b, out);
  if (op == LogicalOp::Or) return logical_typed<LogicalOp::Or>(a, b, out);
  logical_typed<LogicalOp::Not>(a, b, out);
}

}  // namespace

void register_where_cpu_kernels(KernelRegistry& r) {
  r.table<WhereKernel>("where").define(DeviceType::CPU, &where_cpu, kAllDTypes);
  r.table<LogicalKernel>("logical").define(DeviceType::CPU, &logical_cpu, DTypeSet{kUInt8});
}

}  // namespace qgrad

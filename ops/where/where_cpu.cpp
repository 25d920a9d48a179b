// CPU where/logical kernels.
#include "ops/where/where_cpu.h"

#include "core/strided_loop.h"

namespace qgrad {

void where_cpu(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  QGRAD_DISPATCH_ALL(out.dtype(), "where", [&] {
    using T = scalar_t;
    const auto* pc = static_cast<const std::uint8_t*>(cond.raw_data());
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    StridedLoop<4> loop(out.shape(), {out.strides(), cond.strides(), a.strides(), b.strides()},
                        {0, 0, 0, 0});
    loop.run([&](const std::array<std::int64_t, 4>& off, std::int64_t n,
                 const std::array<std::int64_t, 4>& st) {
      for (std::int64_t i = 0; i < n; ++i)
        po[off[0] + i * st[0]] =
            pc[off[1] + i * st[1]] ? pa[off[2] + i * st[2]] : pb[off[3] + i * st[3]];
    });
  });
}

void logical_cpu(int op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const auto* pa = static_cast<const std::uint8_t*>(a.raw_data());
  const auto* pb = static_cast<const std::uint8_t*>(b.raw_data());
  auto* po = static_cast<std::uint8_t*>(out.raw_data());
  StridedLoop<3> loop(out.shape(), {out.strides(), a.strides(), b.strides()}, {0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 3>& off, std::int64_t n,
               const std::array<std::int64_t, 3>& st) {
    for (std::int64_t i = 0; i < n; ++i) {
      const bool x = pa[off[1] + i * st[1]] != 0, y = pb[off[2] + i * st[2]] != 0;
      po[off[0] + i * st[0]] = op == 0 ? (x && y) : op == 1 ? (x || y) : !x;
    }
  });
}

}  // namespace qgrad

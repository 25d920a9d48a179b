// The device-neutral copy, fill and transfer fronts (through the "copy", "fill" and "transfer"
// kernel tables) and their CPU kernels: strided copy/convert and fill on the StridedLoop, with a
// cache-blocked walk for transposed layouts. Elements convert with convert_element.
#include "core/copy.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/convert.h"
#include "core/core_kernels.h"
#include "core/strided_loop.h"

namespace qgrad {

namespace {

// The copy behind x.t().contiguous() and batched transposes: after coalescing, the last two dims
// are swapped between the operands (dst has stride 1 on the last dim, src on the one before).
// A plain row loop would read src with a large stride and miss the cache on every element, so
// this walks B x B tiles (both sides' lines stay in cache), split across threads by row blocks.
// Also used for the mirror case (a transposed destination). Returns false for other layouts.
template <typename To, typename From>
bool copy_transposed_blocked(const StridedLoop<2>& loop, To* d, const From* s) {
  const std::size_t nd = loop.shape.size();
  if (nd < 2) return false;
  Shape sh = loop.shape, dst_st = loop.strides[0], src_st = loop.strides[1];
  // Copying into a transposed destination is the same walk with the last two dims swapped.
  if (dst_st[nd - 2] == 1 && src_st[nd - 1] == 1) {
    std::swap(sh[nd - 2], sh[nd - 1]);
    std::swap(dst_st[nd - 2], dst_st[nd - 1]);
    std::swap(src_st[nd - 2], src_st[nd - 1]);
  }
  if (dst_st[nd - 1] != 1 || src_st[nd - 2] != 1 || src_st[nd - 1] == 1) return false;
  const std::int64_t rows = sh[nd - 2], cols = sh[nd - 1];
  constexpr std::int64_t B = 32;
  if (rows < B || cols < B) return false;
  std::int64_t outer = 1;
  for (std::size_t k = 0; k + 2 < nd; ++k) outer *= sh[k];
  const std::int64_t row_blocks = (rows + B - 1) / B;
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / (B * cols));
  parallel_for(outer * row_blocks, grain, [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      std::int64_t rem = u / row_blocks, doff = 0, soff = 0;
      for (std::size_t k = nd - 2; k-- > 0;) {
        const std::int64_t i = rem % sh[k];
        rem /= sh[k];
        doff += i * dst_st[k];
        soff += i * src_st[k];
      }
      const std::int64_t r0 = (u % row_blocks) * B, r1 = std::min(rows, r0 + B);
      for (std::int64_t c0 = 0; c0 < cols; c0 += B) {
        const std::int64_t c1 = std::min(cols, c0 + B);
        for (std::int64_t r = r0; r < r1; ++r) {
          To* dp = d + doff + r * dst_st[nd - 2];
          const From* sp = s + soff + r;
          for (std::int64_t c = c0; c < c1; ++c)
            dp[c] = convert_element<To>(sp[c * src_st[nd - 1]]);
        }
      }
    }
  });
  return true;
}

template <typename To, typename From>
void copy_typed(const Tensor& src, const Tensor& dst) {
  const From* s = static_cast<const From*>(src.raw_data());
  To* d = static_cast<To*>(dst.raw_data());
  if (src.is_contiguous() && dst.is_contiguous()) {
    const std::int64_t n = src.numel();
    if constexpr (std::is_same_v<To, From>) {
      parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
        std::memcpy(d + b, s + b, static_cast<std::size_t>(e - b) * sizeof(To));
      });
    } else {
      parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) d[i] = convert_element<To>(s[i]);
      });
    }
    return;
  }
  StridedLoop<2> loop(dst.shape(), {dst.strides(), src.strides()}, {0, 0});
  if (copy_transposed_blocked<To, From>(loop, d, s)) return;
  loop.run([&](const std::array<std::int64_t, 2>& off, std::int64_t n,
               const std::array<std::int64_t, 2>& st) {
    To* dp = d + off[0];
    const From* sp = s + off[1];
    if (st[0] == 1 && st[1] == 1) {
      for (std::int64_t i = 0; i < n; ++i) dp[i] = convert_element<To>(sp[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) dp[i * st[0]] = convert_element<To>(sp[i * st[1]]);
    }
  });
}

void copy_cpu(const Tensor& src, const Tensor& dst) {
  QGRAD_DISPATCH_ALL(dst.dtype(), "copy", [&] {
    using To = scalar_t;
    QGRAD_DISPATCH_ALL(src.dtype(), "copy", [&] { copy_typed<To, scalar_t>(src, dst); });
  });
}

void fill_cpu(const Tensor& dst, double value) {
  QGRAD_DISPATCH_ALL(dst.dtype(), "fill_", [&] {
    const scalar_t v = convert_element<scalar_t>(value);
    scalar_t* d = static_cast<scalar_t*>(dst.raw_data());
    StridedLoop<1> loop(dst.shape(), {dst.strides()}, {0});
    loop.run([&](const std::array<std::int64_t, 1>& off, std::int64_t n,
                 const std::array<std::int64_t, 1>& st) {
      scalar_t* p = d + off[0];
      if (st[0] == 1) {
        for (std::int64_t i = 0; i < n; ++i) p[i] = v;
      } else {
        for (std::int64_t i = 0; i < n; ++i) p[i * st[0]] = v;
      }
    });
  });
}

}  // namespace

void register_copy_cpu_kernels(KernelRegistry& r) {
  r.table(kCopyKernels).define(DeviceType::CPU, &copy_cpu, kAllDTypes);
  r.table(kFillKernels).define(DeviceType::CPU, &fill_cpu, kAllDTypes);
  r.table(kTransferKernels);  // only other devices move data to and from the CPU
}

void copy_into(const Tensor& src, const Tensor& dst) {
  QGRAD_CHECK(src.shape() == dst.shape(), ShapeError, "copy: source shape ", src.shape(),
              " differs from destination shape ", dst.shape());
  check_same_device("copy", src, dst);
  if (dst.numel() == 0) return;
  static const KernelTable<CopyKernel>& table = kernel_table(kCopyKernels);
  table("copy", dst)(src, dst);
}

void fill_tensor(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  static const KernelTable<FillKernel>& table = kernel_table(kFillKernels);
  table("fill_", dst)(dst, value);
}

void copy_between_devices(const Tensor& src, const Tensor& dst) {
  static const KernelTable<TransferKernel>& table = kernel_table(kTransferKernels);
  const Device other = src.device().is_cpu() ? dst.device() : src.device();
  if (table.find(other.type) == nullptr) check_device_available("to", other);
  table.at("to", other)(src, dst);
}

}  // namespace qgrad

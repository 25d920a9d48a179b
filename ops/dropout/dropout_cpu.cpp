// CPU dropout: one pass over the elements; each group of four consecutive elements shares one
// Philox block, generated once. The keep test is an integer compare of the draw's top 24 bits
// against ceil(p * 2^24), i.e. exactly u >= p for u = (draw >> 8) * 2^-24.
#include "ops/dropout/dropout_kernels.h"

#include "core/strided_loop.h"
#include "ops/dropout/dropout_elem.h"

namespace qgrad {

namespace {

template <typename T>
void dropout_typed(const Tensor& in, const DropoutMask& mask, const Tensor& out) {
  const T* pi = static_cast<const T*>(in.raw_data());
  T* po = out.data_ptr<T>();
  const std::uint32_t threshold = dropout_elem::threshold(mask.p);
  const T scale = dropout_elem::scale<T>(mask.p);
  StridedLoop<2> loop(out.shape(), {out.strides(), in.strides()}, {0, 0});
  loop.run([&](const std::array<std::int64_t, 2>& off, std::int64_t n,
               const std::array<std::int64_t, 2>& st) {
    // `out` is contiguous, so its offset is the element's row-major index.
    std::uint64_t cur = ~std::uint64_t{0};
    std::array<std::uint32_t, 4> blk{};
    for (std::int64_t j = 0; j < n; ++j) {
      const std::uint64_t i = static_cast<std::uint64_t>(off[0] + j * st[0]);
      const std::uint64_t c = mask.first_block + i / 4;
      if (c != cur) {
        blk = mask.gen.block(c);
        cur = c;
      }
      const bool keep = dropout_elem::keeps(blk[i % 4], threshold);
      po[off[0] + j * st[0]] = keep ? pi[off[1] + j * st[1]] * scale : T(0);
    }
  });
}

void dropout_cpu(const Tensor& in, const DropoutMask& mask, const Tensor& out) {
  if (out.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(in.dtype(), "dropout", [&] { dropout_typed<scalar_t>(in, mask, out); });
}

}  // namespace

void register_dropout_cpu_kernels(KernelRegistry& r) {
  r.table(kDropoutKernels).define(DeviceType::CPU, &dropout_cpu, kFloatingDTypes);
}

}  // namespace qgrad

// CPU concatenation. A contiguous input of out's dtype is a sequence of `outer` blocks of
// size(dim) * inner elements, each landing contiguously in out: one memcpy per block, blocks
// split across threads. Other inputs (strided views, other dtypes) go through the strided
// converting copy into their slice of out.
#include "ops/concat/concat_kernels.h"

#include <cstring>

#include "core/copy.h"
#include "core/strided_loop.h"

namespace qgrad {

namespace {

void concat_cpu(const std::vector<Tensor>& inputs, const std::vector<std::int64_t>& offsets,
                std::int64_t dim, const Tensor& out) {
  if (out.numel() == 0) return;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < dim; ++d) outer *= out.shape()[d];
  for (std::int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.shape()[d];
  const std::int64_t out_block = out.shape()[dim] * inner;
  const std::size_t esize = out.element_size();
  char* po = static_cast<char*>(out.raw_data());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& in = inputs[k];
    if (in.numel() == 0) continue;
    const std::int64_t len = in.shape()[dim];
    if (in.is_contiguous() && in.dtype() == out.dtype()) {
      const char* pi = static_cast<const char*>(in.raw_data());
      const std::int64_t block = len * inner;
      const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / block);
      parallel_for(outer, grain, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t o = b; o < e; ++o)
          std::memcpy(po + static_cast<std::size_t>(o * out_block + offsets[k] * inner) * esize,
                      pi + static_cast<std::size_t>(o * block) * esize,
                      static_cast<std::size_t>(block) * esize);
      });
    } else {
      copy_into(in, out.narrow(dim, offsets[k], len));
    }
  }
}

}  // namespace

void register_concat_cpu_kernels(KernelRegistry& r) {
  r.table(kConcatKernels).define(DeviceType::CPU, &concat_cpu, kAllDTypes);
}

}  // namespace qgrad

// Block-wide reductions for the CUDA kernels that give one thread block to one row (softmax,
// the fused cross-entropy): every thread contributes a partial value and all threads get the
// combined one back. A fixed tree over shared memory, so a given launch shape always combines
// in the same order (deterministic results). Only .cu files include this.
#pragma once

#include <cuda_runtime.h>

namespace qgrad::cuda {

// Threads per block of the row kernels; a power of two (the tree halves it).
inline constexpr int kRowThreads = 256;

// Combines `v` of every thread of the block with `op` (associative, commutative) and returns
// the result to all threads. `shared` holds kRowThreads values; every thread of the block must
// call this (it synchronises).
template <typename Acc, typename Op>
__device__ Acc block_reduce(Acc v, Acc* shared, Op op) {
  const int t = static_cast<int>(threadIdx.x);
  shared[t] = v;
  __syncthreads();
  for (int w = kRowThreads / 2; w > 0; w /= 2) {
    if (t < w) shared[t] = op(shared[t], shared[t + w]);
    __syncthreads();
  }
  const Acc r = shared[0];
  __syncthreads();  // shared[] may be reused by the next call
  return r;
}

struct SumOp {
  template <typename Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    return a + b;
  }
};
// The CPU kernels' max rule (a later value replaces the running one only when greater).
struct MaxOp {
  template <typename Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    return b > a ? b : a;
  }
};

// Blocks for `rows` rows, one block each, the grid bounded so that a row loop does the rest.
inline int row_blocks(long long rows) {
  return static_cast<int>(rows < (1 << 16) ? rows : (1 << 16));
}

}  // namespace qgrad::cuda

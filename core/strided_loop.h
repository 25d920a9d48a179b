// The strided N-operand loop every CPU elementwise kernel runs on: dimensions are coalesced
// where all operands allow it, the innermost dimension becomes a plain loop the compiler can
// vectorise, and the outer rows are split across OpenMP threads for large tensors.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "core/shape.h"

namespace qgrad {

// Below this many elements a loop runs on one thread, starting no parallel region (its fork and
// join would cost more than the second thread saves). Measured on the 2-core development VM
// (2026-11-28, `bench_call_overhead 21 crossover`, 2 threads, medians): splitting a float relu
// row over both threads took 1.14x to 1.19x the serial time at 16384 elements and 0.82x at 32768
// (0.65x at 65536); a fake-quantizing row, about twice the work per element, 0.89x at 16384 and
// 0.69x at 32768. So the cheapest element-wise loops gain from 32768 on; under load from other
// processes the gain at 32768 can vanish (relu 1.16x in one disturbed run, 0.85x at 65536).
inline constexpr std::int64_t kParallelGrain = 32768;

template <std::size_t N>
struct StridedLoop {
  Shape shape;                         // coalesced shape (at least 1-D)
  std::array<Shape, N> strides;        // per-operand element strides, coalesced
  std::array<std::int64_t, N> base{};  // per-operand element offsets

  StridedLoop(const Shape& full_shape, const std::array<Shape, N>& full_strides,
              const std::array<std::int64_t, N>& offsets)
      : base(offsets) {
    // Drop size-1 dims, then merge neighbours that are contiguous for every operand.
    Shape sh;
    std::array<Shape, N> st;
    for (std::size_t d = 0; d < full_shape.size(); ++d) {
      if (full_shape[d] == 1) continue;
      sh.push_back(full_shape[d]);
      for (std::size_t k = 0; k < N; ++k) st[k].push_back(full_strides[k][d]);
    }
    if (sh.empty()) {
      sh.push_back(1);
      for (std::size_t k = 0; k < N; ++k) st[k].push_back(0);
    }
    shape.push_back(sh[0]);
    for (std::size_t k = 0; k < N; ++k) strides[k].push_back(st[k][0]);
    for (std::size_t d = 1; d < sh.size(); ++d) {
      bool merge = true;
      for (std::size_t k = 0; k < N; ++k)
        if (strides[k].back() != st[k][d] * sh[d]) merge = false;
      if (merge) {
        shape.back() *= sh[d];
        for (std::size_t k = 0; k < N; ++k) strides[k].back() = st[k][d];
      } else {
        shape.push_back(sh[d]);
        for (std::size_t k = 0; k < N; ++k) strides[k].push_back(st[k][d]);
      }
    }
  }

  // f(std::array<int64_t,N> offsets, int64_t n, std::array<int64_t,N> inner_strides) is called
  // once per innermost row.
  template <typename F>
  void run(F&& f) const {
    const std::size_t nd = shape.size();
    const std::int64_t inner = shape[nd - 1];
    std::int64_t rows = 1;
    for (std::size_t d = 0; d + 1 < nd; ++d) rows *= shape[d];
    std::array<std::int64_t, N> inner_st;
    for (std::size_t k = 0; k < N; ++k) inner_st[k] = strides[k][nd - 1];
    if (inner == 0 || rows == 0) return;

    auto run_rows = [&](std::int64_t r0, std::int64_t r1) {
      // Multi-index of row r0 over the outer nd-1 dims.
      std::vector<std::int64_t> idx(nd, 0);
      std::int64_t rem = r0;
      for (std::size_t d = nd - 1; d-- > 0;) {
        idx[d] = rem % shape[d];
        rem /= shape[d];
      }
      std::array<std::int64_t, N> off;
      for (std::size_t k = 0; k < N; ++k) {
        off[k] = base[k];
        for (std::size_t d = 0; d + 1 < nd; ++d) off[k] += idx[d] * strides[k][d];
      }
      for (std::int64_t r = r0; r < r1; ++r) {
        f(off, inner, inner_st);
        // Increment the outer multi-index.
        for (std::size_t d = nd - 1; d-- > 0;) {
          ++idx[d];
          for (std::size_t k = 0; k < N; ++k) off[k] += strides[k][d];
          if (idx[d] < shape[d]) break;
          for (std::size_t k = 0; k < N; ++k) off[k] -= idx[d] * strides[k][d];
          idx[d] = 0;
        }
      }
    };

    const std::int64_t total = rows * inner;
    if (total < kParallelGrain) {
      run_rows(0, rows);
      return;
    }
    if (rows == 1) {
      // One long row: split it into chunks.
#pragma omp parallel
      {
        const int nt = omp_threads();
        const int tid = omp_thread();
        const std::int64_t chunk = (inner + nt - 1) / nt;
        const std::int64_t b = tid * chunk, e = std::min(inner, b + chunk);
        if (b < e) {
          std::array<std::int64_t, N> off;
          for (std::size_t k = 0; k < N; ++k) off[k] = base[k] + b * inner_st[k];
          f(off, e - b, inner_st);
        }
      }
      return;
    }
#pragma omp parallel
    {
      const int nt = omp_threads();
      const int tid = omp_thread();
      const std::int64_t chunk = (rows + nt - 1) / nt;
      const std::int64_t b = tid * chunk, e = std::min(rows, b + chunk);
      if (b < e) run_rows(b, e);
    }
  }

 private:
  static int omp_threads();
  static int omp_thread();
};

int strided_loop_num_threads();
int strided_loop_thread_id();

template <std::size_t N>
int StridedLoop<N>::omp_threads() {
  return strided_loop_num_threads();
}
template <std::size_t N>
int StridedLoop<N>::omp_thread() {
  return strided_loop_thread_id();
}

// Runs f(begin, end) over [0, n) split across threads when n is large.
template <typename F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& f) {
  if (n < grain) {
    if (n > 0) f(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const int nt = strided_loop_num_threads();
    const int tid = strided_loop_thread_id();
    const std::int64_t chunk = (n + nt - 1) / nt;
    const std::int64_t b = tid * chunk, e = std::min(n, b + chunk);
    if (b < e) f(b, e);
  }
}

}  // namespace qgrad

// CPU reductions. The input is viewed as [kept..., reduced...]; each output element reduces its
// slice with a StridedLoop over the reduced dims (the contiguous inner run is unrolled into
// several accumulators). Outputs are split across threads; a full reduction of a large tensor
// splits its range across threads instead and combines the partial results.
#include "ops/reduce/reduce_cpu.h"

#include <cmath>
#include <limits>
#include <numeric>

#include "core/strided_loop.h"

namespace qgrad {

namespace {

// Accumulator for one output element.
template <typename T>
struct Acc {
  double sum = 0;         // Sum (in double: float32 sums of millions of terms stay accurate)
  T best{};               // Max/Min value
  std::int64_t idx = -1;  // index of `best` within the reduced slice
  bool nan = false;
};

template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

template <typename T>
void accumulate_row(ReduceOp op, const T* p, std::int64_t n, std::int64_t stride,
                    std::int64_t first_index, Acc<T>& a) {
  switch (op) {
    case ReduceOp::Sum: {
      if (stride == 1) {
        double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        std::int64_t i = 0;
        for (; i + 8 <= n; i += 8)
          for (int k = 0; k < 8; ++k) s[k] += static_cast<double>(p[i + k]);
        for (; i < n; ++i) s[0] += static_cast<double>(p[i]);
        a.sum += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
      } else {
        for (std::int64_t i = 0; i < n; ++i) a.sum += static_cast<double>(p[i * stride]);
      }
      return;
    }
    case ReduceOp::Max:
    case ReduceOp::ArgMax:
      for (std::int64_t i = 0; i < n; ++i) {
        const T v = p[i * stride];
        if (a.nan) return;
        if (a.idx < 0 || v > a.best || is_nan(v)) {
          a.best = v;
          a.idx = first_index + i;
          a.nan = is_nan(v);
        }
      }
      return;
    case ReduceOp::Min:
    case ReduceOp::ArgMin:
      for (std::int64_t i = 0; i < n; ++i) {
        const T v = p[i * stride];
        if (a.nan) return;
        if (a.idx < 0 || v < a.best || is_nan(v)) {
          a.best = v;
          a.idx = first_index + i;
          a.nan = is_nan(v);
        }
      }
      return;
  }
}

// Combines partial accumulators of consecutive ranges (b after a).
template <typename T>
void combine(ReduceOp op, Acc<T>& a, const Acc<T>& b) {
  if (op == ReduceOp::Sum) {
    a.sum += b.sum;
    return;
  }
  if (b.idx < 0 || a.nan) return;
  const bool is_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
  if (a.idx < 0 || b.nan || (is_max ? b.best > a.best : b.best < a.best)) a = b;
}

template <typename T, typename R>
void store(ReduceOp op, const Acc<T>& a, R* out) {
  if (op == ReduceOp::Sum) {
    *out = static_cast<R>(a.sum);
  } else if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) {
    *out = static_cast<R>(a.idx);
  } else {
    *out = static_cast<R>(a.best);
  }
}

template <typename T, typename R>
void reduce_typed(ReduceOp op, const Tensor& x, const Shape& kept_shape, const Shape& kept_strides,
                  const Shape& red_shape, const Shape& red_strides, R* out) {
  const T* base = static_cast<const T*>(x.raw_data());
  const std::int64_t K = numel_of(kept_shape), R_n = numel_of(red_shape);
  const Shape red_index_strides = contiguous_strides(red_shape);
  // Reduces the slice of output k over reduced flat indices [r0, r1) (r1 = R_n for all).
  auto reduce_slice = [&](std::int64_t koff, Acc<T>& acc) {
    StridedLoop<2> loop(red_shape, {red_strides, red_index_strides}, {koff, 0});
    // Sequential on purpose: callers parallelise across outputs.
    const std::size_t nd = loop.shape.size();
    std::vector<std::int64_t> idx(nd, 0);
    std::int64_t rows = 1;
    for (std::size_t d = 0; d + 1 < nd; ++d) rows *= loop.shape[d];
    const std::int64_t inner = loop.shape[nd - 1];
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t off = loop.base[0], ioff = 0, rem = r;
      for (std::size_t d = nd - 1; d-- > 0;) {
        const std::int64_t i = rem % loop.shape[d];
        rem /= loop.shape[d];
        off += i * loop.strides[0][d];
        ioff += i * loop.strides[1][d];
      }
      accumulate_row(op, base + off, inner, loop.strides[0][nd - 1], ioff, acc);
    }
  };
  auto kept_offset = [&](std::int64_t k) {
    std::int64_t off = 0;
    for (std::size_t d = kept_shape.size(); d-- > 0;) {
      off += (k % kept_shape[d]) * kept_strides[d];
      k /= kept_shape[d];
    }
    return off;
  };
  if (K == 1 && R_n >= kParallelGrain && x.is_contiguous()) {
    // Full reduction of a contiguous tensor: split the flat range, then combine in order.
    const int max_threads = 64;
    std::vector<Acc<T>> partial(max_threads);
    std::vector<char> used(max_threads, 0);
#pragma omp parallel
    {
      const int nt = std::min(strided_loop_num_threads(), max_threads);
      const int tid = strided_loop_thread_id();
      if (tid < nt) {
        const std::int64_t chunk = (R_n + nt - 1) / nt;
        const std::int64_t b = tid * chunk, e = std::min(R_n, b + chunk);
        if (b < e) {
          accumulate_row(op, base + b, e - b, 1, b, partial[tid]);
          used[tid] = 1;
        }
      }
    }
    Acc<T> total;
    for (int t = 0; t < max_threads; ++t)
      if (used[t]) combine(op, total, partial[t]);
    store(op, total, out);
    return;
  }
  const std::int64_t grain =
      std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(R_n, 1));
  parallel_for(K, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t k = b; k < e; ++k) {
      Acc<T> acc;
      if (R_n > 0) reduce_slice(kept_offset(k), acc);
      store(op, acc, out + k);
    }
  });
}

}  // namespace

void reduce_cpu(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out) {
  Shape kept_shape, kept_strides, red_shape, red_strides;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (reduced[d]) {
      red_shape.push_back(x.shape()[d]);
      red_strides.push_back(x.strides()[d]);
    } else {
      kept_shape.push_back(x.shape()[d]);
      kept_strides.push_back(x.strides()[d]);
    }
  }
  QGRAD_DISPATCH_ALL(x.dtype(), "reduce", [&] {
    using T = scalar_t;
    if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) {
      reduce_typed<T, std::int64_t>(op, x, kept_shape, kept_strides, red_shape, red_strides,
                                    out.data_ptr<std::int64_t>());
    } else {
      QGRAD_DISPATCH_ALL(out.dtype(), "reduce", [&] {
        reduce_typed<T, scalar_t>(op, x, kept_shape, kept_strides, red_shape, red_strides,
                                  out.data_ptr<scalar_t>());
      });
    }
  });
}

}  // namespace qgrad

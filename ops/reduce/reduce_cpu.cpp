// CPU reductions. A ReducePlan splits the input's dims into kept dims (one per output element)
// and reduced dims, drops size-1 dims, orders both groups by stride and merges neighbours that
// are contiguous. Then one of two loop shapes runs:
//  - inner: the reduced dim with the smallest stride is innermost, so each output folds
//    contiguous runs (sums in 16 independent lanes, max/min as vector selects);
//  - outer: a kept dim has the smallest stride (e.g. a sum over dim 0 of a row-major matrix),
//    so a block of neighbouring outputs is accumulated together, one input row at a time.
// Work is split across threads by output when there are enough outputs, otherwise the reduced
// range is split and the per-thread partial results are combined in order (so argmax keeps the
// first index). Sums accumulate in double (floats) or wrapping uint64 (ints, as torch's int64).
#include "ops/reduce/reduce_cpu.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

#include "core/strided_loop.h"

namespace qgrad {

namespace {

// ---------------------------------------------------------------------------------------------
// The iteration plan.

struct ReducePlan {
  // Kept dims, outermost first, with input and output element strides.
  Shape ksize, kx, ko;
  // Reduced dims, outermost first, with input strides and strides of the flat index over the
  // reduced dims in their original order (what argmax reports).
  Shape rsize, rx, ri;
  std::int64_t K = 1, R = 1;
  bool outer = false;  // loop shape: see the file comment
};

struct PlanDim {
  std::int64_t size, a, b;  // size and two strides
};

// Sorts by descending |a| (stable: ties keep their order), then merges an outer dim into the
// next inner one when both strides allow.
std::vector<PlanDim> coalesce(std::vector<PlanDim> dims, bool sort) {
  if (sort) {
    std::stable_sort(dims.begin(), dims.end(), [](const PlanDim& l, const PlanDim& r) {
      return std::llabs(l.a) > std::llabs(r.a);
    });
  }
  std::vector<PlanDim> out;
  for (const PlanDim& d : dims) {
    if (!out.empty() && out.back().a == d.a * d.size && out.back().b == d.b * d.size) {
      out.back() = {out.back().size * d.size, d.a, d.b};
    } else {
      out.push_back(d);
    }
  }
  return out;
}

ReducePlan make_plan(const Tensor& x, const std::vector<bool>& reduced, bool keep_order) {
  ReducePlan p;
  Shape kept_shape, red_shape;
  for (std::int64_t d = 0; d < x.dim(); ++d)
    (reduced[d] ? red_shape : kept_shape).push_back(x.shape()[d]);
  const Shape out_strides = contiguous_strides(kept_shape);
  const Shape idx_strides = contiguous_strides(red_shape);
  std::vector<PlanDim> kept, red;
  std::size_t ki = 0, ri = 0;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    const std::int64_t size = x.shape()[d], stride = x.strides()[d];
    if (reduced[d]) {
      // Without index bookkeeping the second stride just follows the first.
      if (size != 1) red.push_back({size, stride, keep_order ? idx_strides[ri] : stride});
      ++ri;
    } else {
      if (size != 1) kept.push_back({size, stride, out_strides[ki]});
      ++ki;
    }
  }
  p.K = numel_of(kept_shape);
  p.R = numel_of(red_shape);
  kept = coalesce(kept, /*sort=*/true);
  red = coalesce(red, /*sort=*/!keep_order);
  if (kept.empty()) kept.push_back({1, 0, 0});
  if (red.empty()) red.push_back({1, 0, 0});
  for (const PlanDim& d : kept) {
    p.ksize.push_back(d.size);
    p.kx.push_back(d.a);
    p.ko.push_back(d.b);
  }
  for (const PlanDim& d : red) {
    p.rsize.push_back(d.size);
    p.rx.push_back(d.a);
    p.ri.push_back(d.b);
  }
  // Outer loop shape when the innermost kept dim is denser in memory than every reduced dim.
  p.outer =
      p.ksize.back() > 1 && p.rsize.back() > 1 && std::llabs(p.kx.back()) < std::llabs(p.rx.back());
  return p;
}

// The two offsets of flat position `flat` over the first `ndims` dims of `size`.
inline void offsets_of(std::int64_t flat, const Shape& size, const Shape& s0, const Shape& s1,
                       std::size_t ndims, std::int64_t& o0, std::int64_t& o1) {
  o0 = 0;
  o1 = 0;
  for (std::size_t d = ndims; d-- > 0;) {
    const std::int64_t i = flat % size[d];
    flat /= size[d];
    o0 += i * s0[d];
    o1 += i * s1[d];
  }
}

// Walks a multi-index over the first `ndims` dims of `size`, keeping two offsets in step.
class Counter {
 public:
  Counter(const Shape& size, const Shape& s0, const Shape& s1, std::size_t ndims,
          std::int64_t start)
      : size_(size), s0_(s0), s1_(s1), nd_(ndims), idx_(ndims, 0) {
    std::int64_t flat = start;
    for (std::size_t d = nd_; d-- > 0;) {
      idx_[d] = flat % size_[d];
      flat /= size_[d];
      off0 += idx_[d] * s0_[d];
      off1 += idx_[d] * s1_[d];
    }
  }
  void next() {
    for (std::size_t d = nd_; d-- > 0;) {
      ++idx_[d];
      off0 += s0_[d];
      off1 += s1_[d];
      if (idx_[d] < size_[d]) return;
      off0 -= idx_[d] * s0_[d];
      off1 -= idx_[d] * s1_[d];
      idx_[d] = 0;
    }
  }
  std::int64_t off0 = 0, off1 = 0;

 private:
  const Shape& size_;
  const Shape& s0_;
  const Shape& s1_;
  std::size_t nd_;
  std::vector<std::int64_t> idx_;
};

// ---------------------------------------------------------------------------------------------
// Reducers: Acc (the running state of one output), identity(), run (fold a run of n elements at
// `stride`, the first of which has reduced index `first`, for the output at offset `o`), combine
// (fold a later partial state into an earlier one), first_row/step_row (outer shape: start and
// update `m` neighbouring outputs, at output offsets o + j * os, from one input row), finish
// (the output value). Only SqDevReducer looks at output offsets (its per-output centre).

// NaN test as a compare (std::isnan is a call, which keeps loops scalar).
template <typename T>
inline bool nan_test(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return !(v == v);
  } else {
    (void)v;
    return false;
  }
}

template <typename T>
using sum_acc_t = std::conditional_t<std::is_floating_point_v<T>, double, std::uint64_t>;

constexpr int kLanes = 16;

template <typename T>
struct SumReducer {
  using Acc = sum_acc_t<T>;
  static Acc identity() { return Acc(0); }
  static Acc run(const T* p, std::int64_t n, std::int64_t stride, std::int64_t, std::int64_t) {
    if (stride == 1) {
      Acc s[kLanes] = {};
      std::int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes)
        for (int k = 0; k < kLanes; ++k) s[k] += static_cast<Acc>(p[i + k]);
      for (; i < n; ++i) s[0] += static_cast<Acc>(p[i]);
      for (int w = kLanes / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; ++k) s[k] += s[k + w];
      return s[0];
    }
    Acc s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<Acc>(p[i * stride]);
    return s;
  }
  static void combine(Acc& a, const Acc& b) { a += b; }
  static void first_row(Acc* acc, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                        std::int64_t, std::int64_t) {
    for (std::int64_t j = 0; j < m; ++j) acc[j] = static_cast<Acc>(p[j * stride]);
  }
  static void step_row(Acc* acc, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                       std::int64_t, std::int64_t) {
    if (stride == 1) {
      for (std::int64_t j = 0; j < m; ++j) acc[j] += static_cast<Acc>(p[j]);
    } else {
      for (std::int64_t j = 0; j < m; ++j) acc[j] += static_cast<Acc>(p[j * stride]);
    }
  }
  template <typename R>
  static R finish(const Acc& a) {
    return static_cast<R>(a);
  }
};

// max (IsMax) or min of the values; any NaN makes the result NaN.
template <typename T, bool IsMax>
struct ExtremeReducer {
  using Acc = T;
  static Acc identity() {
    if constexpr (std::is_floating_point_v<T>) {
      return IsMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    } else {
      return IsMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    }
  }
  // v replaces best: it is larger (smaller), or NaN.
  // (| rather than ||: no short-circuit branch, so the loops stay vectorisable.)
  static bool takes(T v, T best) { return (IsMax ? v > best : v < best) | nan_test(v); }
  static Acc run(const T* p, std::int64_t n, std::int64_t stride, std::int64_t, std::int64_t) {
    if (stride == 1) {
      T m[kLanes];
      for (int k = 0; k < kLanes; ++k) m[k] = identity();
      std::int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes) {
        // Kept as a loop: GCC vectorises it, but not the fully unrolled (SLP) form.
#pragma GCC unroll 1
        for (int k = 0; k < kLanes; ++k) {
          const T v = p[i + k];
          m[k] = takes(v, m[k]) ? v : m[k];
        }
      }
      for (; i < n; ++i) m[0] = takes(p[i], m[0]) ? p[i] : m[0];
      for (int k = 1; k < kLanes; ++k) m[0] = takes(m[k], m[0]) ? m[k] : m[0];
      return m[0];
    }
    T m = identity();
    for (std::int64_t i = 0; i < n; ++i) m = takes(p[i * stride], m) ? p[i * stride] : m;
    return m;
  }
  static void combine(Acc& a, const Acc& b) {
    a = takes(b, a) ? b : a;
  }
  static void first_row(Acc* acc, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                        std::int64_t, std::int64_t) {
    for (std::int64_t j = 0; j < m; ++j) acc[j] = p[j * stride];
  }
  static void step_row(Acc* acc, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                       std::int64_t, std::int64_t) {
    if (stride == 1) {
      for (std::int64_t j = 0; j < m; ++j) acc[j] = takes(p[j], acc[j]) ? p[j] : acc[j];
    } else {
      for (std::int64_t j = 0; j < m; ++j) {
        const T v = p[j * stride];
        acc[j] = takes(v, acc[j]) ? v : acc[j];
      }
    }
  }
  template <typename R>
  static R finish(const Acc& a) {
    return static_cast<R>(a);
  }
};

// Index of the first maximum (minimum), or of the first NaN when there is one, as torch.
template <typename T, bool IsMax>
struct ArgReducer {
  struct Acc {
    T best;
    std::int64_t idx;  // -1: nothing folded yet
  };
  using Values = ExtremeReducer<T, IsMax>;
  static Acc identity() { return {Values::identity(), -1}; }
  // v at a later index replaces best: strictly better, or the first NaN.
  static bool replaces(T v, T best) { return !nan_test(best) && Values::takes(v, best); }
  static Acc run(const T* p, std::int64_t n, std::int64_t stride, std::int64_t first,
                 std::int64_t) {
    if (n == 0) return identity();
    // Vectorised value pass, then a search for its first occurrence.
    const T m = Values::run(p, n, stride, 0, 0);
    std::int64_t i = 0;
    if (nan_test(m)) {
      while (i + 1 < n && !nan_test(p[i * stride])) ++i;
    } else {
      while (i + 1 < n && p[i * stride] != m) ++i;
    }
    return {m, first + i};
  }
  static void combine(Acc& a, const Acc& b) {
    if (b.idx >= 0 && (a.idx < 0 || replaces(b.best, a.best))) a = b;
  }
  static void first_row(Acc* acc, const T* p, std::int64_t m, std::int64_t stride,
                        std::int64_t index, std::int64_t, std::int64_t) {
    for (std::int64_t j = 0; j < m; ++j) acc[j] = {p[j * stride], index};
  }
  static void step_row(Acc* acc, const T* p, std::int64_t m, std::int64_t stride,
                       std::int64_t index, std::int64_t, std::int64_t) {
    for (std::int64_t j = 0; j < m; ++j) {
      const T v = p[j * stride];
      if (replaces(v, acc[j].best)) acc[j] = {v, index};
    }
  }
  template <typename R>
  static R finish(const Acc& a) {
    return static_cast<R>(a.idx);
  }
};

// Sum of squared deviations from a per-output centre (the mean: var's second pass), divided by
// `denom` at the end.
template <typename T>
struct SqDevReducer {
  using Acc = double;
  const double* centre;  // indexed by output offset
  double denom;
  static Acc identity() { return 0.0; }
  Acc run(const T* p, std::int64_t n, std::int64_t stride, std::int64_t, std::int64_t o) const {
    const double c = centre[o];
    if (stride == 1) {
      double s[kLanes] = {};
      std::int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes)
        for (int k = 0; k < kLanes; ++k) {
          const double d = static_cast<double>(p[i + k]) - c;
          s[k] += d * d;
        }
      for (; i < n; ++i) {
        const double d = static_cast<double>(p[i]) - c;
        s[0] += d * d;
      }
      for (int w = kLanes / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; ++k) s[k] += s[k + w];
      return s[0];
    }
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(p[i * stride]) - c;
      s += d * d;
    }
    return s;
  }
  static void combine(Acc& a, const Acc& b) { a += b; }
  void first_row(Acc* acc, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                 std::int64_t o, std::int64_t os) const {
    for (std::int64_t j = 0; j < m; ++j) acc[j] = 0.0;
    step_row(acc, p, m, stride, 0, o, os);
  }
  void step_row(Acc* acc, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                std::int64_t o, std::int64_t os) const {
    const double* c = centre + o;
    if (stride == 1 && os == 1) {
      for (std::int64_t j = 0; j < m; ++j) {
        const double d = static_cast<double>(p[j]) - c[j];
        acc[j] += d * d;
      }
    } else {
      for (std::int64_t j = 0; j < m; ++j) {
        const double d = static_cast<double>(p[j * stride]) - c[j * os];
        acc[j] += d * d;
      }
    }
  }
  template <typename R>
  R finish(const Acc& a) const {
    return static_cast<R>(a / denom);
  }
};

// ---------------------------------------------------------------------------------------------
// Drivers.

constexpr std::int64_t kOuterBlock = 512;  // neighbouring outputs accumulated together

int max_threads() {
  return std::max(1, omp_get_max_threads());
}

// Inner shape: folds reduced positions [a, b) of the output whose input offset is `koff`.
template <typename T, typename Red>
void fold_inner(const Red& red, const T* x, std::int64_t koff, std::int64_t ooff,
                const ReducePlan& p, std::int64_t a, std::int64_t b, typename Red::Acc& acc) {
  const std::size_t nd = p.rsize.size();
  const std::int64_t n = p.rsize[nd - 1], s = p.rx[nd - 1], si = p.ri[nd - 1];
  std::int64_t col = a % n;
  Counter rows(p.rsize, p.rx, p.ri, nd - 1, a / n);
  while (a < b) {
    const std::int64_t len = std::min(n - col, b - a);
    red.combine(acc, red.run(x + koff + rows.off0 + col * s, len, s, rows.off1 + col * si, ooff));
    a += len;
    col = 0;
    rows.next();
  }
}

// Outer shape: folds reduced positions [a, b) (a < b) into the `m` outputs starting at input
// offset koff and output offset ooff; the first row initialises acc.
template <typename T, typename Red>
void fold_outer(const Red& red, const T* x, std::int64_t koff, std::int64_t ooff, std::int64_t m,
                const ReducePlan& p, std::int64_t a, std::int64_t b, typename Red::Acc* acc) {
  const std::int64_t ks = p.kx.back(), os = p.ko.back();
  Counter pos(p.rsize, p.rx, p.ri, p.rsize.size(), a);
  red.first_row(acc, x + koff + pos.off0, m, ks, pos.off1, ooff, os);
  pos.next();
  for (std::int64_t r = a + 1; r < b; ++r) {
    red.step_row(acc, x + koff + pos.off0, m, ks, pos.off1, ooff, os);
    pos.next();
  }
}

template <typename T, typename Red, typename R>
void reduce_typed(const Tensor& x, const ReducePlan& p, R* out, const Red& red = Red{}) {
  using Acc = typename Red::Acc;
  const T* base = static_cast<const T*>(x.raw_data());
  const std::size_t nk = p.ksize.size();
  const int nt = max_threads();
  const bool big = p.K * p.R >= kParallelGrain && nt > 1;

  if (!p.outer) {
    auto one = [&](std::int64_t k, std::int64_t a, std::int64_t b, Acc& acc) {
      std::int64_t koff, ooff;
      offsets_of(k, p.ksize, p.kx, p.ko, nk, koff, ooff);
      fold_inner<T, Red>(red, base, koff, ooff, p, a, b, acc);
      return ooff;
    };
    if (!big || p.K >= 4 * nt) {
      parallel_for(p.K, std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(p.R, 1)),
                   [&](std::int64_t k0, std::int64_t k1) {
                     for (std::int64_t k = k0; k < k1; ++k) {
                       Acc acc = red.identity();
                       const std::int64_t ooff = one(k, 0, p.R, acc);
                       out[ooff] = red.template finish<R>(acc);
                     }
                   });
      return;
    }
    // Few outputs, long reductions: each thread folds a slice of every output's range.
    std::vector<Acc> partial(static_cast<std::size_t>(nt * p.K), red.identity());
#pragma omp parallel num_threads(nt)
    {
      const int t = strided_loop_thread_id(), n_threads = strided_loop_num_threads();
      const std::int64_t chunk = (p.R + n_threads - 1) / n_threads;
      const std::int64_t a = std::min(p.R, t * chunk), b = std::min(p.R, a + chunk);
      if (a < b)
        for (std::int64_t k = 0; k < p.K; ++k) one(k, a, b, partial[t * p.K + k]);
    }
    for (std::int64_t k = 0; k < p.K; ++k) {
      Acc acc = partial[k];
      for (int t = 1; t < nt; ++t) red.combine(acc, partial[t * p.K + k]);
      std::int64_t koff, ooff;
      offsets_of(k, p.ksize, p.kx, p.ko, nk, koff, ooff);
      out[ooff] = red.template finish<R>(acc);
    }
    return;
  }

  // Outer shape: items are blocks of up to kOuterBlock outputs along the innermost kept dim.
  const std::int64_t M = p.ksize.back(), ks = p.kx.back(), os = p.ko.back();
  const std::int64_t blocks = (M + kOuterBlock - 1) / kOuterBlock;
  const std::int64_t items = (p.K / M) * blocks;
  auto item_offsets = [&](std::int64_t item, std::int64_t& koff, std::int64_t& ooff,
                          std::int64_t& m) {
    const std::int64_t outer = item / blocks, j0 = (item % blocks) * kOuterBlock;
    offsets_of(outer, p.ksize, p.kx, p.ko, nk - 1, koff, ooff);
    koff += j0 * ks;
    ooff += j0 * os;
    m = std::min(kOuterBlock, M - j0);
  };
  if (!big || items >= 4 * nt) {
    const std::int64_t grain =
        std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(p.R * kOuterBlock, 1));
    parallel_for(items, grain, [&](std::int64_t i0, std::int64_t i1) {
      std::vector<Acc> acc(static_cast<std::size_t>(kOuterBlock));
      for (std::int64_t it = i0; it < i1; ++it) {
        std::int64_t koff, ooff, m;
        item_offsets(it, koff, ooff, m);
        fold_outer<T, Red>(red, base, koff, ooff, m, p, 0, p.R, acc.data());
        for (std::int64_t j = 0; j < m; ++j) out[ooff + j * os] = red.template finish<R>(acc[j]);
      }
    });
    return;
  }
  // Few outputs: split the reduced range; each thread keeps partial states for every output.
  const std::int64_t slots = items * kOuterBlock;
  std::vector<Acc> partial(static_cast<std::size_t>(nt * slots), red.identity());
#pragma omp parallel num_threads(nt)
  {
    const int t = strided_loop_thread_id(), n_threads = strided_loop_num_threads();
    const std::int64_t chunk = (p.R + n_threads - 1) / n_threads;
    const std::int64_t a = std::min(p.R, t * chunk), b = std::min(p.R, a + chunk);
    if (a < b)
      for (std::int64_t it = 0; it < items; ++it) {
        std::int64_t koff, ooff, m;
        item_offsets(it, koff, ooff, m);
        fold_outer<T, Red>(red, base, koff, ooff, m, p, a, b,
                           &partial[t * slots + it * kOuterBlock]);
      }
  }
  for (std::int64_t it = 0; it < items; ++it) {
    std::int64_t koff, ooff, m;
    item_offsets(it, koff, ooff, m);
    for (std::int64_t j = 0; j < m; ++j) {
      // Threads with an empty slice left the identity, which every combine ignores or absorbs.
      Acc acc = partial[it * kOuterBlock + j];
      for (int t = 1; t < nt; ++t) red.combine(acc, partial[t * slots + it * kOuterBlock + j]);
      out[ooff + j * os] = red.template finish<R>(acc);
    }
  }
}

template <typename T>
void dispatch_op(ReduceOp op, const Tensor& x, const ReducePlan& p, const Tensor& out) {
  const char* what = "reduce";
  switch (op) {
    case ReduceOp::Sum: {
      const DType want = is_floating(x.dtype()) ? x.dtype() : kInt64;
      QGRAD_CHECK(out.dtype() == want, DTypeError, what, ": sum of ", dtype_name(x.dtype()),
                  " writes ", dtype_name(want), ", got an output of ", dtype_name(out.dtype()));
      using R = std::conditional_t<std::is_floating_point_v<T>, T, std::int64_t>;
      return reduce_typed<T, SumReducer<T>, R>(x, p, static_cast<R*>(out.raw_data()));
    }
    case ReduceOp::Max:
    case ReduceOp::Min:
      QGRAD_CHECK(out.dtype() == x.dtype(), DTypeError, what, ": max/min output must be ",
                  dtype_name(x.dtype()), ", got ", dtype_name(out.dtype()));
      if (op == ReduceOp::Max)
        return reduce_typed<T, ExtremeReducer<T, true>, T>(x, p, static_cast<T*>(out.raw_data()));
      return reduce_typed<T, ExtremeReducer<T, false>, T>(x, p, static_cast<T*>(out.raw_data()));
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
      QGRAD_CHECK(out.dtype() == kInt64, DTypeError, what,
                  ": argmax/argmin output must be int64, got ", dtype_name(out.dtype()));
      auto* o = static_cast<std::int64_t*>(out.raw_data());
      if (op == ReduceOp::ArgMax)
        return reduce_typed<T, ArgReducer<T, true>, std::int64_t>(x, p, o);
      return reduce_typed<T, ArgReducer<T, false>, std::int64_t>(x, p, o);
    }
  }
}

template <typename T>
void var_typed(const Tensor& x, const ReducePlan& p, double denom, const Tensor& out) {
  // Two passes (mean, then squared deviations from it), both accumulating in double.
  std::vector<double> centre(static_cast<std::size_t>(p.K));
  reduce_typed<T, SumReducer<T>, double>(x, p, centre.data());
  const double n = static_cast<double>(p.R);
  for (double& c : centre) c /= n;
  reduce_typed<T, SqDevReducer<T>, T>(x, p, static_cast<T*>(out.raw_data()),
                                      SqDevReducer<T>{centre.data(), denom});
}

}  // namespace

void var_cpu(const Tensor& x, const std::vector<bool>& reduced, std::int64_t correction,
             const Tensor& out) {
  QGRAD_CHECK(static_cast<std::int64_t>(reduced.size()) == x.dim(), ValueError, "var: got ",
              reduced.size(), " dim flags for a ", x.dim(), "-d input");
  const ReducePlan p = make_plan(x, reduced, /*keep_order=*/false);
  QGRAD_CHECK(out.is_contiguous() && out.numel() == p.K && out.dtype() == x.dtype(), ValueError,
              "var: output must be contiguous ", dtype_name(x.dtype()), " with ", p.K,
              " elements, got ", dtype_name(out.dtype()), " of shape ", out.shape());
  if (p.K == 0) return;
  if (p.R == 0) {
    Tensor(out).fill_(std::numeric_limits<double>::quiet_NaN());  // as torch: mean of nothing
    return;
  }
  // Divisor max(0, N - correction): 0 gives inf or NaN, as torch.
  const double denom = static_cast<double>(std::max<std::int64_t>(0, p.R - correction));
  QGRAD_DISPATCH_FLOAT(x.dtype(), "var", [&] { var_typed<scalar_t>(x, p, denom, out); });
}

void reduce_cpu(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out) {
  QGRAD_CHECK(static_cast<std::int64_t>(reduced.size()) == x.dim(), ValueError, "reduce: got ",
              reduced.size(), " dim flags for a ", x.dim(), "-d input");
  const bool is_arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  const ReducePlan p = make_plan(x, reduced, /*keep_order=*/is_arg);
  QGRAD_CHECK(out.is_contiguous() && out.numel() == p.K, ValueError, "reduce: output must be ",
              "contiguous with ", p.K, " elements, got shape ", out.shape());
  if (p.K == 0) return;
  if (p.R == 0) {
    QGRAD_CHECK(op == ReduceOp::Sum, ValueError,
                "reduce: max/min/argmax/argmin over an empty range (input shape ", x.shape(), ")");
    Tensor(out).zero_();
    return;
  }
  QGRAD_DISPATCH_ALL(x.dtype(), "reduce", [&] { dispatch_op<scalar_t>(op, x, p, out); });
}

}  // namespace qgrad

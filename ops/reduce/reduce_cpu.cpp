// CPU reductions. A ReducePlan splits the input's dims into kept dims (one per output element)
// and reduced dims, drops size-1 dims, orders both groups by stride and merges neighbours that
// are contiguous. Then one of three loop shapes runs, each walking memory roughly in order:
//  - inner: the reduced dims are the innermost in memory, so each output folds contiguous runs
//    (sums in 16 independent lanes, max/min/argmax as vector selects);
//  - blocked: reduced dims both inside and outside the kept ones (a sum over dims {0, 2} of
//    [N, C, HW]): for each outer reduced position, every output folds its inner runs;
//  - outer: a kept dim is innermost (a sum over dim 0 of a row-major matrix): a block of
//    neighbouring outputs is accumulated together, one input row at a time.
// Work is split across threads by output when there are enough outputs, otherwise the reduced
// range is split and the per-thread partial results are combined in order (so argmax keeps the
// first index). Sums accumulate in double (floats) or wrapping uint64 (ints, as torch's int64).
#include "ops/reduce/reduce_kernels.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <type_traits>

#include "core/core_kernels.h"
#include "core/strided_loop.h"
#include "ops/reduce/reduce_elem.h"

namespace qgrad {

namespace {

// ---------------------------------------------------------------------------------------------
// The iteration plan.

// A group of dims, outermost first, with two strides each.
struct Dims {
  Shape size, s0, s1;
  std::int64_t numel() const { return numel_of(size); }
  std::size_t n() const { return size.size(); }
  Dims slice(std::size_t b, std::size_t e) const {
    return {Shape(size.begin() + b, size.begin() + e), Shape(s0.begin() + b, s0.begin() + e),
            Shape(s1.begin() + b, s1.begin() + e)};
  }
};

enum class LoopShape { Inner, Blocked, Outer };

struct ReducePlan {
  Dims kept;  // s0: input stride, s1: output stride
  // s0: input stride, s1: stride of the flat index over the reduced dims in their original
  // order (what argmax reports; only kept in order for the arg ops).
  Dims red;
  Dims red_outer, red_inner;  // the blocked shape's split of `red`
  std::int64_t K = 1, R = 1;
  LoopShape loop = LoopShape::Inner;
};

inline std::int64_t abs64(std::int64_t v) {
  return v < 0 ? -v : v;
}

struct PlanDim {
  std::int64_t size, a, b;  // size and two strides
};

// Sorts by descending |a| (stable: ties keep their order), then merges an outer dim into the
// next inner one when both strides allow.
Dims coalesce(std::vector<PlanDim> dims, bool sort) {
  if (sort) {
    std::stable_sort(dims.begin(), dims.end(),
                     [](const PlanDim& l, const PlanDim& r) { return abs64(l.a) > abs64(r.a); });
  }
  std::vector<PlanDim> merged;
  for (const PlanDim& d : dims) {
    if (!merged.empty() && merged.back().a == d.a * d.size && merged.back().b == d.b * d.size) {
      merged.back() = {merged.back().size * d.size, d.a, d.b};
    } else {
      merged.push_back(d);
    }
  }
  if (merged.empty()) merged.push_back({1, 0, 0});
  Dims out;
  for (const PlanDim& d : merged) {
    out.size.push_back(d.size);
    out.s0.push_back(d.a);
    out.s1.push_back(d.b);
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
  p.kept = coalesce(kept, /*sort=*/true);
  p.red = coalesce(red, /*sort=*/!keep_order);
  const std::int64_t kin = abs64(p.kept.s0.back()), rin = abs64(p.red.s0.back());
  if (p.kept.size.back() > 1 && p.red.size.back() > 1 && kin < rin) {
    // The innermost kept dim is denser in memory than every reduced dim.
    p.loop = LoopShape::Outer;
  } else if (!keep_order && p.K > 1) {
    // Reduced dims (sorted by stride) outside every kept dim make the blocked shape.
    std::int64_t kmax = 0;
    for (std::int64_t s : p.kept.s0) kmax = std::max(kmax, abs64(s));
    std::size_t n_outer = 0;
    while (n_outer < p.red.n() && p.red.size[n_outer] > 1 && abs64(p.red.s0[n_outer]) > kmax)
      ++n_outer;
    if (n_outer > 0 && n_outer < p.red.n()) {
      p.loop = LoopShape::Blocked;
      p.red_outer = p.red.slice(0, n_outer);
      p.red_inner = p.red.slice(n_outer, p.red.n());
    }
  }
  return p;
}

// The two offsets of flat position `flat` over the first `nd` dims of `d`.
inline void offsets_of(std::int64_t flat, const Dims& d, std::size_t nd, std::int64_t& o0,
                       std::int64_t& o1) {
  o0 = 0;
  o1 = 0;
  for (std::size_t i = nd; i-- > 0;) {
    const std::int64_t k = flat % d.size[i];
    flat /= d.size[i];
    o0 += k * d.s0[i];
    o1 += k * d.s1[i];
  }
}

// Walks a multi-index over the first `nd` dims of `d` from flat position `start`, keeping the
// two offsets in step.
class Counter {
 public:
  Counter(const Dims& d, std::size_t nd, std::int64_t start) : d_(d), nd_(nd), idx_(nd, 0) {
    std::int64_t flat = start;
    for (std::size_t i = nd_; i-- > 0;) {
      idx_[i] = flat % d_.size[i];
      flat /= d_.size[i];
      off0 += idx_[i] * d_.s0[i];
      off1 += idx_[i] * d_.s1[i];
    }
  }
  void next() {
    for (std::size_t i = nd_; i-- > 0;) {
      ++idx_[i];
      off0 += d_.s0[i];
      off1 += d_.s1[i];
      if (idx_[i] < d_.size[i]) return;
      off0 -= idx_[i] * d_.s0[i];
      off1 -= idx_[i] * d_.s1[i];
      idx_[i] = 0;
    }
  }
  std::int64_t off0 = 0, off1 = 0;

 private:
  const Dims& d_;
  std::size_t nd_;
  std::vector<std::int64_t> idx_;
};

// ---------------------------------------------------------------------------------------------
// Reducers. Each has
//   Acc                          the running state of one output;
//   identity()                   the state of an empty fold;
//   run(p, n, stride, first, o)  the state of a run of n elements at `stride`, the first with
//                                reduced index `first`, for the output at offset `o`;
//   combine(a, b)                folds state b (of later elements) into a;
//   Block, first_row/step_row    the outer shape: states of up to kOuterBlock neighbouring outputs
//                                (output offsets o + j * os), started/updated from one input row;
//   get(block, j)                the state of output j of a block;
//   store(acc, out, o)           writes the result of output o.
// Only SqDevReducer (per-output centre) and ArgReducer (optional values) use output offsets.

constexpr std::int64_t kOuterBlock = 512;  // neighbouring outputs accumulated together
constexpr int kLanes = 16;                 // independent accumulators in a contiguous run

template <typename Acc>
struct ScalarBlock {
  Acc v[kOuterBlock];
};

using reduce_elem::sum_acc_t;

template <typename T>
struct SumReducer {
  using Acc = sum_acc_t<T>;
  using Block = ScalarBlock<Acc>;
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
  static void first_row(Block& b, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                        std::int64_t, std::int64_t) {
    for (std::int64_t j = 0; j < m; ++j) b.v[j] = static_cast<Acc>(p[j * stride]);
  }
  static void step_row(Block& b, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                       std::int64_t, std::int64_t) {
    if (stride == 1) {
      for (std::int64_t j = 0; j < m; ++j) b.v[j] += static_cast<Acc>(p[j]);
    } else {
      for (std::int64_t j = 0; j < m; ++j) b.v[j] += static_cast<Acc>(p[j * stride]);
    }
  }
  static Acc get(const Block& b, std::int64_t j) { return b.v[j]; }
  template <typename R>
  static void store(const Acc& a, R* out, std::int64_t o) {
    out[o] = static_cast<R>(a);
  }
};

// max (IsMax) or min of the values; any NaN makes the result NaN.
template <typename T, bool IsMax>
struct ExtremeReducer {
  using Acc = T;
  using Block = ScalarBlock<Acc>;
  static Acc identity() { return reduce_elem::Extreme<T, IsMax>::identity(); }
  static bool takes(T v, T best) { return reduce_elem::Extreme<T, IsMax>::takes(v, best); }
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
  static void first_row(Block& b, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                        std::int64_t, std::int64_t) {
    for (std::int64_t j = 0; j < m; ++j) b.v[j] = p[j * stride];
  }
  static void step_row(Block& b, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                       std::int64_t, std::int64_t) {
    if (stride == 1) {
      for (std::int64_t j = 0; j < m; ++j) b.v[j] = takes(p[j], b.v[j]) ? p[j] : b.v[j];
    } else {
      for (std::int64_t j = 0; j < m; ++j) {
        const T v = p[j * stride];
        b.v[j] = takes(v, b.v[j]) ? v : b.v[j];
      }
    }
  }
  static Acc get(const Block& b, std::int64_t j) {
    return b.v[j];
  }
  template <typename R>
  static void store(const Acc& a, R* out, std::int64_t o) {
    out[o] = static_cast<R>(a);
  }
};

// Index of the first maximum (minimum), or of the first NaN when there is one, as torch;
// optionally also the value (max/min over a dim returns both).
template <typename T, bool IsMax>
struct ArgReducer {
  struct Acc {
    T best;
    std::int64_t idx;  // -1: nothing folded yet
  };
  struct Block {
    T best[kOuterBlock];
    std::int64_t idx[kOuterBlock];
  };
  T* values = nullptr;  // where store() also writes the value, when set

  static Acc identity() { return {ExtremeReducer<T, IsMax>::identity(), -1}; }
  static bool replaces(T v, T best) {
    return reduce_elem::Extreme<T, IsMax>::replaces_later(v, best);
  }
  static bool beats(T a, std::int64_t ia, T b, std::int64_t ib) {
    return reduce_elem::Extreme<T, IsMax>::beats(a, ia, b, ib);
  }
  static Acc run(const T* p, std::int64_t n, std::int64_t stride, std::int64_t first,
                 std::int64_t) {
    if (n == 0) return identity();
    if (stride == 1 && n >= 2 * kLanes) {
      // Lane k keeps the first best of elements k, k + kLanes, ...; lanes merge by value, then
      // by index. One vectorised pass.
      T m[kLanes];
      std::int64_t mi[kLanes];
      for (int k = 0; k < kLanes; ++k) {
        m[k] = p[k];
        mi[k] = k;
      }
      std::int64_t i = kLanes;
      for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 1
        for (int k = 0; k < kLanes; ++k) {
          const T v = p[i + k];
          const bool t = replaces(v, m[k]);
          m[k] = t ? v : m[k];
          mi[k] = t ? i + k : mi[k];
        }
      }
      Acc a{m[0], mi[0]};
      for (int k = 1; k < kLanes; ++k)
        if (beats(m[k], mi[k], a.best, a.idx)) a = {m[k], mi[k]};
      for (; i < n; ++i)
        if (replaces(p[i], a.best)) a = {p[i], i};
      a.idx += first;
      return a;
    }
    Acc a{p[0], 0};
    for (std::int64_t i = 1; i < n; ++i)
      if (replaces(p[i * stride], a.best)) a = {p[i * stride], i};
    a.idx += first;
    return a;
  }
  static void combine(Acc& a, const Acc& b) {
    if (b.idx >= 0 && (a.idx < 0 || replaces(b.best, a.best))) a = b;
  }
  static void first_row(Block& b, const T* p, std::int64_t m, std::int64_t stride,
                        std::int64_t index, std::int64_t, std::int64_t) {
    for (std::int64_t j = 0; j < m; ++j) {
      b.best[j] = p[j * stride];
      b.idx[j] = index;
    }
  }
  static void step_row(Block& b, const T* p, std::int64_t m, std::int64_t stride,
                       std::int64_t index, std::int64_t, std::int64_t) {
    if (stride == 1) {
      for (std::int64_t j = 0; j < m; ++j) {
        const T v = p[j];
        const bool t = replaces(v, b.best[j]);
        b.best[j] = t ? v : b.best[j];
        b.idx[j] = t ? index : b.idx[j];
      }
    } else {
      for (std::int64_t j = 0; j < m; ++j) {
        const T v = p[j * stride];
        const bool t = replaces(v, b.best[j]);
        b.best[j] = t ? v : b.best[j];
        b.idx[j] = t ? index : b.idx[j];
      }
    }
  }
  static Acc get(const Block& b, std::int64_t j) {
    return {b.best[j], b.idx[j]};
  }
  template <typename R>
  void store(const Acc& a, R* out, std::int64_t o) const {
    out[o] = static_cast<R>(a.idx);
    if (values) values[o] = a.best;
  }
};

// Sum of squared deviations from a per-output centre (the mean: var's second pass), divided by
// `denom` at the end.
template <typename T>
struct SqDevReducer {
  using Acc = double;
  using Block = ScalarBlock<Acc>;
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
  void first_row(Block& b, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                 std::int64_t o, std::int64_t os) const {
    for (std::int64_t j = 0; j < m; ++j) b.v[j] = 0.0;
    step_row(b, p, m, stride, 0, o, os);
  }
  void step_row(Block& b, const T* p, std::int64_t m, std::int64_t stride, std::int64_t,
                std::int64_t o, std::int64_t os) const {
    const double* c = centre + o;
    if (stride == 1 && os == 1) {
      for (std::int64_t j = 0; j < m; ++j) {
        const double d = static_cast<double>(p[j]) - c[j];
        b.v[j] += d * d;
      }
    } else {
      for (std::int64_t j = 0; j < m; ++j) {
        const double d = static_cast<double>(p[j * stride]) - c[j * os];
        b.v[j] += d * d;
      }
    }
  }
  static Acc get(const Block& b, std::int64_t j) { return b.v[j]; }
  template <typename R>
  void store(const Acc& a, R* out, std::int64_t o) const {
    out[o] = static_cast<R>(a / denom);
  }
};

// ---------------------------------------------------------------------------------------------
// Drivers.

int max_threads() {
  return std::max(1, omp_get_max_threads());
}

// Runs body(t, n_threads) on every thread of a parallel region of up to `nt` threads.
template <typename F>
void on_threads(int nt, F&& body) {
#pragma omp parallel num_threads(nt)
  body(strided_loop_thread_id(), strided_loop_num_threads());
}

// The chunk [a, b) of [0, n) that thread t of n_threads takes.
inline void chunk_of(std::int64_t n, int t, int n_threads, std::int64_t& a, std::int64_t& b) {
  const std::int64_t c = (n + n_threads - 1) / n_threads;
  a = std::min(n, t * c);
  b = std::min(n, a + c);
}

// Folds flat positions [a, b) of the reduced dims `rd` into acc: runs along the innermost dim.
template <typename T, typename Red>
void fold_runs(const Red& red, const T* x, std::int64_t base, std::int64_t ooff, const Dims& rd,
               std::int64_t a, std::int64_t b, typename Red::Acc& acc) {
  const std::size_t nd = rd.n();
  const std::int64_t n = rd.size[nd - 1], s = rd.s0[nd - 1], si = rd.s1[nd - 1];
  std::int64_t col = a % n;
  Counter rows(rd, nd - 1, a / n);
  while (a < b) {
    const std::int64_t len = std::min(n - col, b - a);
    red.combine(acc, red.run(x + base + rows.off0 + col * s, len, s, rows.off1 + col * si, ooff));
    a += len;
    col = 0;
    rows.next();
  }
}

// Outer shape: folds reduced positions [a, b) (a < b) into the `m` outputs starting at input
// offset koff and output offset ooff; the first row starts the block.
template <typename T, typename Red>
void fold_rows(const Red& red, const T* x, std::int64_t koff, std::int64_t ooff, std::int64_t m,
               const ReducePlan& p, std::int64_t a, std::int64_t b, typename Red::Block& block) {
  const std::int64_t ks = p.kept.s0.back(), os = p.kept.s1.back();
  Counter pos(p.red, p.red.n(), a);
  red.first_row(block, x + koff + pos.off0, m, ks, pos.off1, ooff, os);
  pos.next();
  for (std::int64_t r = a + 1; r < b; ++r) {
    red.step_row(block, x + koff + pos.off0, m, ks, pos.off1, ooff, os);
    pos.next();
  }
}

template <typename T, typename Red, typename R>
void reduce_inner(const Red& red, const T* base, const ReducePlan& p, R* out, int nt, bool big) {
  using Acc = typename Red::Acc;
  const std::size_t nk = p.kept.n();
  if (!big || p.K >= 4 * nt) {
    // Threads only for a big reduction (grain K + 1 keeps parallel_for sequential).
    parallel_for(p.K, big ? 1 : p.K + 1, [&](std::int64_t k0, std::int64_t k1) {
      for (std::int64_t k = k0; k < k1; ++k) {
        std::int64_t koff, ooff;
        offsets_of(k, p.kept, nk, koff, ooff);
        Acc acc = red.identity();
        fold_runs<T, Red>(red, base, koff, ooff, p.red, 0, p.R, acc);
        red.store(acc, out, ooff);
      }
    });
    return;
  }
  // Few outputs, long reductions: each thread folds a slice of every output's range.
  std::vector<Acc> partial(static_cast<std::size_t>(nt * p.K), red.identity());
  on_threads(nt, [&](int t, int n_threads) {
    std::int64_t a, b;
    chunk_of(p.R, t, n_threads, a, b);
    if (a >= b) return;
    for (std::int64_t k = 0; k < p.K; ++k) {
      std::int64_t koff, ooff;
      offsets_of(k, p.kept, nk, koff, ooff);
      fold_runs<T, Red>(red, base, koff, ooff, p.red, a, b, partial[t * p.K + k]);
    }
  });
  for (std::int64_t k = 0; k < p.K; ++k) {
    Acc acc = partial[k];
    for (int t = 1; t < nt; ++t) red.combine(acc, partial[t * p.K + k]);
    std::int64_t koff, ooff;
    offsets_of(k, p.kept, nk, koff, ooff);
    red.store(acc, out, ooff);
  }
}

template <typename T, typename Red, typename R>
void reduce_blocked(const Red& red, const T* base, const ReducePlan& p, R* out, int nt, bool big) {
  using Acc = typename Red::Acc;
  const std::size_t nk = p.kept.n();
  const std::int64_t Ro = p.red_outer.numel(), Ri = p.red_inner.numel();
  // Folds outer positions [a, b) for outputs [k0, k1) into acc[0 .. k1 - k0).
  auto fold = [&](std::int64_t k0, std::int64_t k1, std::int64_t a, std::int64_t b, Acc* acc) {
    std::vector<std::int64_t> koff(static_cast<std::size_t>(k1 - k0)), ooff(koff.size());
    for (std::int64_t k = k0; k < k1; ++k) offsets_of(k, p.kept, nk, koff[k - k0], ooff[k - k0]);
    Counter outer(p.red_outer, p.red_outer.n(), a);
    for (std::int64_t r = a; r < b; ++r) {
      for (std::int64_t k = 0; k < k1 - k0; ++k)
        fold_runs<T, Red>(red, base, koff[k] + outer.off0, ooff[k], p.red_inner, 0, Ri, acc[k]);
      outer.next();
    }
  };
  if (!big || p.K >= 4 * nt) {
    // Threads only for a big reduction (grain K + 1 keeps parallel_for sequential).
    parallel_for(p.K, big ? 1 : p.K + 1, [&](std::int64_t k0, std::int64_t k1) {
      std::vector<Acc> acc(static_cast<std::size_t>(k1 - k0), red.identity());
      fold(k0, k1, 0, Ro, acc.data());
      for (std::int64_t k = k0; k < k1; ++k) {
        std::int64_t koff, ooff;
        offsets_of(k, p.kept, nk, koff, ooff);
        red.store(acc[k - k0], out, ooff);
      }
    });
    return;
  }
  std::vector<Acc> partial(static_cast<std::size_t>(nt * p.K), red.identity());
  on_threads(nt, [&](int t, int n_threads) {
    std::int64_t a, b;
    chunk_of(Ro, t, n_threads, a, b);
    if (a < b) fold(0, p.K, a, b, &partial[t * p.K]);
  });
  for (std::int64_t k = 0; k < p.K; ++k) {
    Acc acc = partial[k];
    for (int t = 1; t < nt; ++t) red.combine(acc, partial[t * p.K + k]);
    std::int64_t koff, ooff;
    offsets_of(k, p.kept, nk, koff, ooff);
    red.store(acc, out, ooff);
  }
}

template <typename T, typename Red, typename R>
void reduce_outer(const Red& red, const T* base, const ReducePlan& p, R* out, int nt, bool big) {
  using Acc = typename Red::Acc;
  using Block = typename Red::Block;
  // Items are blocks of up to kOuterBlock outputs along the innermost kept dim.
  const std::size_t nk = p.kept.n();
  const std::int64_t M = p.kept.size.back(), ks = p.kept.s0.back(), os = p.kept.s1.back();
  const std::int64_t blocks = (M + kOuterBlock - 1) / kOuterBlock;
  const std::int64_t items = (p.K / M) * blocks;
  auto item_offsets = [&](std::int64_t item, std::int64_t& koff, std::int64_t& ooff,
                          std::int64_t& m) {
    const std::int64_t outer = item / blocks, j0 = (item % blocks) * kOuterBlock;
    offsets_of(outer, p.kept, nk - 1, koff, ooff);
    koff += j0 * ks;
    ooff += j0 * os;
    m = std::min(kOuterBlock, M - j0);
  };
  if (!big || items >= 4 * nt) {
    parallel_for(items, big ? 1 : items + 1, [&](std::int64_t i0, std::int64_t i1) {
      auto block = std::make_unique<Block>();
      for (std::int64_t it = i0; it < i1; ++it) {
        std::int64_t koff, ooff, m;
        item_offsets(it, koff, ooff, m);
        fold_rows<T, Red>(red, base, koff, ooff, m, p, 0, p.R, *block);
        for (std::int64_t j = 0; j < m; ++j) red.store(red.get(*block, j), out, ooff + j * os);
      }
    });
    return;
  }
  // Few outputs: split the reduced range; each thread keeps partial states for every output.
  const std::int64_t slots = items * kOuterBlock;
  std::vector<Acc> partial(static_cast<std::size_t>(nt * slots), red.identity());
  on_threads(nt, [&](int t, int n_threads) {
    std::int64_t a, b;
    chunk_of(p.R, t, n_threads, a, b);
    if (a >= b) return;
    auto block = std::make_unique<Block>();
    for (std::int64_t it = 0; it < items; ++it) {
      std::int64_t koff, ooff, m;
      item_offsets(it, koff, ooff, m);
      fold_rows<T, Red>(red, base, koff, ooff, m, p, a, b, *block);
      for (std::int64_t j = 0; j < m; ++j)
        partial[t * slots + it * kOuterBlock + j] = red.get(*block, j);
    }
  });
  for (std::int64_t it = 0; it < items; ++it) {
    std::int64_t koff, ooff, m;
    item_offsets(it, koff, ooff, m);
    for (std::int64_t j = 0; j < m; ++j) {
      // Threads with an empty slice left the identity, which every combine ignores or absorbs.
      Acc acc = partial[it * kOuterBlock + j];
      for (int t = 1; t < nt; ++t) red.combine(acc, partial[t * slots + it * kOuterBlock + j]);
      red.store(acc, out, ooff + j * os);
    }
  }
}

template <typename T, typename Red, typename R>
void reduce_typed(const Tensor& x, const ReducePlan& p, R* out, const Red& red = Red{}) {
  const T* base = static_cast<const T*>(x.raw_data());
  const int nt = max_threads();
  const bool big = p.K * p.R >= kParallelGrain && nt > 1;
  switch (p.loop) {
    case LoopShape::Inner:
      return reduce_inner<T, Red, R>(red, base, p, out, nt, big);
    case LoopShape::Blocked:
      return reduce_blocked<T, Red, R>(red, base, p, out, nt, big);
    case LoopShape::Outer:
      return reduce_outer<T, Red, R>(red, base, p, out, nt, big);
  }
}

template <typename T>
void dispatch_op(ReduceOp op, const Tensor& x, const ReducePlan& p, const Tensor& out,
                 const Tensor& values) {
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
      T* v = values.defined() ? static_cast<T*>(values.raw_data()) : nullptr;
      if (op == ReduceOp::ArgMax)
        return reduce_typed<T, ArgReducer<T, true>, std::int64_t>(x, p, o, {v});
      return reduce_typed<T, ArgReducer<T, false>, std::int64_t>(x, p, o, {v});
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

void reduce_cpu(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out,
                const Tensor& values) {
  QGRAD_CHECK(static_cast<std::int64_t>(reduced.size()) == x.dim(), ValueError, "reduce: got ",
              reduced.size(), " dim flags for a ", x.dim(), "-d input");
  const bool is_arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  const ReducePlan p = make_plan(x, reduced, /*keep_order=*/is_arg);
  QGRAD_CHECK(out.is_contiguous() && out.numel() == p.K, ValueError, "reduce: output must be ",
              "contiguous with ", p.K, " elements, got shape ", out.shape());
  QGRAD_CHECK(!values.defined() || (is_arg && values.is_contiguous() && values.numel() == p.K &&
                                    values.dtype() == x.dtype()),
              ValueError, "reduce: values output only for argmax/argmin, contiguous ",
              dtype_name(x.dtype()), " with ", p.K, " elements");
  if (p.K == 0) return;
  if (p.R == 0) {
    QGRAD_CHECK(op == ReduceOp::Sum, ValueError,
                "reduce: max/min/argmax/argmin over an empty range (input shape ", x.shape(), ")");
    Tensor(out).zero_();
    return;
  }
  QGRAD_DISPATCH_ALL(x.dtype(), "reduce", [&] { dispatch_op<scalar_t>(op, x, p, out, values); });
}

void sum_cpu(const Tensor& x, const std::vector<bool>& reduced, const Tensor& out) {
  reduce_cpu(ReduceOp::Sum, x, reduced, out, Tensor());
}

}  // namespace

void register_reduce_cpu_kernels(KernelRegistry& r) {
  r.table(kReduceKernels).define(DeviceType::CPU, &reduce_cpu, kAllDTypes);
  r.table(kVarKernels).define(DeviceType::CPU, &var_cpu, kFloatingDTypes);
  r.table(kSumKernels).define(DeviceType::CPU, &sum_cpu, kAllDTypes);
}

}  // namespace qgrad

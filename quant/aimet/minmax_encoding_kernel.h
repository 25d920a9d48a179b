// AIMET MinMaxEncodingAnalyzer's kernels (minmax_encoding_kernels.h) written once for every
// device: the statistics merge (in double, returned in the running statistics' dtype) and the
// statistics -> range rule (in the statistics' dtype), minmax_encoding_elem.h's elements run by
// the device's map (Map: cpu::Map or cuda::Map), both outputs in one pass. Only .cpp / .cu files
// that register a kernel include this.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>

#include "core/dtype.h"
#include "core/factory.h"
#include "core/map_outputs.h"
#include "core/tensor.h"
#include "quant/aimet/minmax_encoding_elem.h"

namespace qgrad::aimet {

inline constexpr float kMinimumScale = 1.1920928955078125e-07f;

// Returns the merged min and writes the merged max.
template <typename T>
struct MinMaxMergeOperands {
  QGRAD_HD_INLINE T operator()(T run_min, T run_max, T batch_min, T batch_max, T& max) const {
    max = static_cast<T>(
        minmax_merge_max(static_cast<double>(run_max), static_cast<double>(batch_max)));
    return static_cast<T>(
        minmax_merge_min(static_cast<double>(run_min), static_cast<double>(batch_min)));
  }
};

// Returns the range's min and writes its max.
template <typename T>
struct MinMaxEncodingOperands {
  MinMaxEncodingElem<T> e;
  QGRAD_HD_INLINE T operator()(T min, T max, T& out_max) const {
    T out_min;
    e(min, max, out_min, out_max);
    return out_min;
  }
};

template <typename Map>
std::pair<Tensor, Tensor> minmax_merge(const Tensor& run_min, const Tensor& run_max,
                                       const Tensor& batch_min, const Tensor& batch_max) {
  const TensorOptions o = TensorOptions().dtype(run_min.dtype()).device(run_min.device());
  Tensor mn = empty(run_min.shape(), o), mx = empty(run_min.shape(), o);
  QGRAD_DISPATCH_FLOAT(run_min.dtype(), "aimet.MinMaxEncodingAnalyzer", [&] {
    using T = scalar_t;
    Map::template run_outputs<Outputs<T, T>, T, T, T, T>(
        "aimet.MinMaxEncodingAnalyzer", MinMaxMergeOperands<T>{}, {mn, mx}, run_min, run_max,
        batch_min.to(run_min.dtype()), batch_max.to(run_min.dtype()));
  });
  return {mn, mx};
}

template <typename Map>
void minmax_encodings(const Tensor& min, const Tensor& max, std::int64_t num_steps, bool symmetric,
                      const Tensor& out_min, const Tensor& out_max) {
  QGRAD_DISPATCH_FLOAT(min.dtype(), "aimet.MinMaxEncodingAnalyzer.compute_encodings", [&] {
    using T = scalar_t;
    const MinMaxEncodingElem<T> e{static_cast<T>(num_steps),     static_cast<T>(kMinimumScale),
                                  std::numeric_limits<T>::max(), num_steps / 2,
                                  (num_steps + 1) / 2,           symmetric};
    Map::template run_outputs<Outputs<T, T>, T, T>("aimet.MinMaxEncodingAnalyzer.compute_encodings",
                                                   MinMaxEncodingOperands<T>{e}, {out_min, out_max},
                                                   min, max.to(min.dtype()));
  });
}

}  // namespace qgrad::aimet

// CUDA kernels of the NVIDIA calibrators, so far the max calibrator's merge of a batch's amax into
// the running one (calibrator_elem.h's amax_merge, the CPU's element); the histogram calibrator's
// statistics run on the CPU only.
#include "core/cuda_map.cuh"
#include "core/dtype.h"
#include "quant/nvidia/calibrator_elem.h"
#include "quant/nvidia/calibrator_kernels.h"

namespace qgrad::nvidia {

namespace {

template <typename T>
struct AmaxMergeElem {
  QGRAD_HD_INLINE T operator()(T acc, T a) const { return amax_merge(acc, a); }
};

void amax_merge_cuda(const Tensor& acc, const Tensor& a) {
  QGRAD_DISPATCH_FLOAT(acc.dtype(), "amax_merge_cuda", [&] {
    using T = scalar_t;
    cuda::map<T, T, T>("MaxCalibrator::collect", AmaxMergeElem<T>{}, acc, acc, a);
  });
}

}  // namespace

void register_calibrator_cuda_kernels(KernelRegistry& r) {
  r.table(kAmaxMergeKernels).define(DeviceType::CUDA, &amax_merge_cuda, kFloatingDTypes);
}

}  // namespace qgrad::nvidia

// The ops layer's kernels for each device this build has. The user-facing ops each table serves
// (what supports() answers for and what the cross-device test iterates over) are named by the
// table's key beside its signature in the family's *_kernels.h.
#include "ops/register_kernels.h"

#include "ops/batch_norm/batch_norm_kernels.h"
#include "ops/binary/binary_kernels.h"
#include "ops/concat/concat_kernels.h"
#include "ops/conv/conv_kernels.h"
#include "ops/dropout/dropout_kernels.h"
#include "ops/loss/loss_kernels.h"
#include "ops/matmul/matmul_kernels.h"
#include "ops/pad/pad_kernels.h"
#include "ops/pool/pool_kernels.h"
#include "ops/reduce/reduce_kernels.h"
#include "ops/softmax/softmax_kernels.h"
#include "ops/unary/unary_kernels.h"
#include "ops/where/where_kernels.h"

namespace qgrad {

void register_ops_kernels(KernelRegistry& r) {
  register_binary_cpu_kernels(r);
  register_reduce_cpu_kernels(r);
  register_unary_cpu_kernels(r);
  register_where_cpu_kernels(r);
  register_conv_cpu_kernels(r);
  register_pool_cpu_kernels(r);
  register_batch_norm_cpu_kernels(r);
  register_loss_cpu_kernels(r);
  register_softmax_cpu_kernels(r);
  register_matmul_cpu_kernels(r);
  register_dropout_cpu_kernels(r);
  register_concat_cpu_kernels(r);
  register_pad_cpu_kernels(r);
#ifdef QGRAD_WITH_CUDA
  register_binary_cuda_kernels(r);
  register_reduce_cuda_kernels(r);
  register_unary_cuda_kernels(r);
  register_where_cuda_kernels(r);
  register_softmax_cuda_kernels(r);
  register_matmul_cuda_kernels(r);
  register_dropout_cuda_kernels(r);
  register_concat_cuda_kernels(r);
  register_pad_cuda_kernels(r);
  register_loss_cuda_kernels(r);
  register_pool_cuda_kernels(r);  // plain CUDA
  register_batch_norm_cuda_kernels(r);
#endif
#ifdef QGRAD_WITH_CUDNN
  register_conv_cuda_kernels(r);  // cuDNN (without it, conv2d has no CUDA kernel)
#endif
}

}  // namespace qgrad

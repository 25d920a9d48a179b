// The ops layer's kernels for each device this build has, and the catalogue of user-facing ops
// with the kernel tables each runs on (what supports() answers for and what the cross-device
// test iterates over).
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

  for (const char* op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt",
                         "le", "gt", "ge"})
    r.add_op(op, {"binary"});
  for (const char* op : {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin"})
    r.add_op(op, {"reduce"});
  r.add_op("var", {"var"});
  for (const char* op : {"neg", "abs", "sign", "exp", "log", "sqrt", "relu", "relu6", "leaky_relu",
                         "hardtanh", "sigmoid", "tanh", "gelu", "clamp"})
    r.add_op(op, {"unary", "unary_backward"});
  r.add_op("where", {"where"});
  for (const char* op : {"logical_and", "logical_or", "logical_not"}) r.add_op(op, {"logical"});
  r.add_op("conv2d", {"conv2d_forward", "conv2d_backward"});
  r.add_op("max_pool2d", {"max_pool2d", "max_pool2d_backward"});
  r.add_op("avg_pool2d", {"avg_pool2d", "avg_pool2d_backward"});
  r.add_op("adaptive_avg_pool2d", {"adaptive_avg_pool2d", "adaptive_avg_pool2d_backward"});
  r.add_op("batch_norm", {"batch_norm_train", "batch_norm_eval", "batch_norm_update_running",
                          "batch_norm_backward"});
  for (const char* op : {"cross_entropy", "nll_loss"})
    r.add_op(op, {"class_loss", "class_loss_backward"});
  r.add_op("mse_loss", {"mse_loss", "mse_loss_backward"});
  for (const char* op : {"softmax", "log_softmax"}) r.add_op(op, {"softmax", "softmax_backward"});
  for (const char* op : {"matmul", "linear"}) r.add_op(op, {"matmul"});
  r.add_op("dropout", {"dropout"});
  for (const char* op : {"concat", "stack"}) r.add_op(op, {"concat"});
  r.add_op("pad", {"pad", "pad_backward"});
}

}  // namespace qgrad

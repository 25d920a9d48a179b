// The umbrella library's one source: it installs the registrars of the four library layers with
// kernels, in the order core -> ops -> nn -> quant (distributed/ has none), while the program
// loads. Registration flows down from here, the top of the stack; no layer names the ones above
// it (scripts/check_layers.sh fails the build otherwise). The CMake target that holds this file is linked whole-archive through
// qgrad::qgrad, so its initialiser is never dropped from a static link.
#include "core/dispatch.h"
#include "nn/register_kernels.h"
#include "ops/register_kernels.h"
#include "quant/register_kernels.h"

namespace qgrad {
namespace {

[[maybe_unused]] const bool kKernelLayersInstalled = [] {
  install_kernel_registrars(
      {register_core_kernels, register_ops_kernels, register_nn_kernels, register_quant_kernels});
  return true;
}();

}  // namespace
}  // namespace qgrad

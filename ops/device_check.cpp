// Argument checks shared by the ops.
#include "ops/device_check.h"

namespace qgrad {

void require_defined(const char* op, const char* arg, const Tensor& t) {
  QGRAD_CHECK(t.defined(), ValueError, op, ": argument '", arg, "' is an undefined tensor");
}

void require_floating(const char* op, const char* arg, const Tensor& t) {
  require_defined(op, arg, t);
  QGRAD_CHECK(is_floating(t.dtype()), DTypeError, op, ": argument '", arg,
              "' must be float32 or float64, got ", dtype_name(t.dtype()), " (shape ", t.shape(),
              ")");
}

}  // namespace qgrad

// CPU kernels of the unary ops and their backward rules.
#pragma once

#include "ops/unary/unary.h"

namespace qgrad {

void unary_cpu(UnaryOp op, const Tensor& x, const Tensor& out, double p0, double p1);
void unary_backward_cpu(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y,
                        const Tensor& out, double p0, double p1);

}  // namespace qgrad

// The backward engine: runs the graph below a set of roots in reverse topological order,
// iteratively (no recursion, so deep graphs cannot overflow the stack).
#pragma once

#include "core/autograd/node.h"

namespace qgrad {

void run_backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph);

}  // namespace qgrad

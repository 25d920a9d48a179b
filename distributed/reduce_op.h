/// @file
/// The reductions a collective can apply: the sum (gradients, histogram counts), and the
/// minimum and maximum (an observer's range, a calibrator's amax). Minimum and maximum propagate
/// NaN as torch.min / torch.max do, whatever the order of the ranks; a zero point is never
/// reduced (it is recomputed from the reduced range).
#pragma once

namespace qgrad::distributed {

/// A reduction over the ranks (see the file comment).
enum class ReduceOp { Sum, Min, Max };

/// "sum", "min" or "max".
const char* reduce_op_name(ReduceOp op);

}  // namespace qgrad::distributed

// Block quantization: block layout from block_sizes, per-block amax (static or dynamic), double
// quantization of the amax grid, MX and NVFP4 scales, the kernels (all through the "nvidia.*"
// kernel tables of the input's device) and the clipped-STE backward.
#include "quant/nvidia/block_quant.h"

#include <algorithm>
#include <set>

#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "ops/where/where.h"
#include "quant/nvidia/block_layout.h"
#include "quant/nvidia/block_quant_kernels.h"
#include "quant/nvidia/calibrator_kernels.h"
#include "quant/nvidia/quant_apply.h"
#include "quant/nvidia/tensor_quant.h"
#include "quant/nvidia/tensor_quant_kernels.h"

namespace qgrad::nvidia {

namespace {

using AxisSizes = std::vector<std::pair<std::int64_t, std::int64_t>>;

// Block size per axis (1 = own amax per index) from an axis -> size list; `whole` is the size
// for unlisted axes (1 for block_sizes, 0 = whole axis for scale_block_sizes' default).
Shape per_axis_blocks(const char* op, const Shape& shape, const AxisSizes& axes,
                      std::int64_t unlisted) {
  const auto rank = static_cast<std::int64_t>(shape.size());
  Shape b(shape.size(), unlisted);
  std::set<std::int64_t> seen;
  for (const auto& [axis, size] : axes) {
    QGRAD_CHECK(axis >= -rank && axis < rank, IndexError, op, ": block axis ", axis,
                " is out of range for an input of rank ", rank, " (shape ", shape, ")");
    const std::int64_t k = axis < 0 ? axis + rank : axis;
    QGRAD_CHECK(seen.insert(k).second, ValueError, op, ": block axis ", axis,
                " is listed twice for an input of rank ", rank);
    b[static_cast<std::size_t>(k)] = size;
  }
  return b;
}

// Tensor of `big_shape` whose element i is small[i / block] (per axis).
Tensor expand_blocks(const char* op, const Tensor& small, const Shape& big_shape,
                     const Shape& block) {
  static const KernelTable<ExpandBlocksKernel>& table = kernel_table(kExpandBlocksKernels);
  Tensor out = empty(big_shape, TensorOptions().dtype(small.dtype()).device(small.device()));
  table(op, small)(small, block, out);
  return out;
}

// A floating input with block kernels for its device: checked before any amax is read on the
// host.
void check_input(const char* op, const Tensor& x) {
  static const KernelTable<BlockAbsmaxKernel>& table = kernel_table(kBlockAbsmaxKernels);
  require_floating(op, "input", x);
  table(op, x);
}

enum class Mode { Int, FpScaled, DivMul };

struct BlockPlan {
  BlockLayout layout;
  Tensor xc;
  Mode mode = Mode::Int;
  IntRange range;
  MiniFloatSpec fmt;
  Tensor amax_q;  // Int / FpScaled: per-block amax after double quantization; DivMul: the scale
  Tensor eff;     // effective amax (clip bound of the backward)
  bool positive_zero = false;  // NVFP4: every zero comes out as +0
};

bool is_nvfp4(const BlockQuantSpec& spec) {
  return spec.num_bits == NumBits(2, 1) && spec.block_sizes.scale_bits &&
         *spec.block_sizes.scale_bits == NumBits(4, 3);
}
bool is_mx(const BlockQuantSpec& spec) {
  return spec.block_sizes.scale_bits && spec.block_sizes.scale_bits->is_float() &&
         spec.block_sizes.scale_bits->format().is_e8m0();
}

BlockPlan make_plan(const char* op, const Tensor& x, const BlockQuantSpec& spec,
                    const Tensor& static_amax) {
  static const KernelTable<MxScalesKernel>& mx_scales = kernel_table(kMxScalesKernels);
  static const KernelTable<Nvfp4ScalesKernel>& nvfp4_scales = kernel_table(kNvfp4ScalesKernels);
  check_input(op, x);
  const BlockSizes& bs = spec.block_sizes;
  bs.validate(op);
  BlockPlan p;
  const bool nvfp4 = is_nvfp4(spec), mx = is_mx(spec);
  if (spec.num_bits.is_float()) {
    QGRAD_CHECK(!spec.is_unsigned, ValueError, op, ": unsigned applies to integer num_bits only, ",
                "got num_bits ", spec.num_bits.str());
    p.fmt = minifloat_spec(spec.num_bits.format(), op);
    p.mode = (mx || nvfp4) ? Mode::DivMul : Mode::FpScaled;
  } else {
    QGRAD_CHECK(!mx, ValueError, op,
                ": scale_bits (8, 0) (MX) needs floating-point num_bits such as (4, 3), got ",
                spec.num_bits.str());
    p.range = int_quant_range(spec.num_bits.bits(), spec.is_unsigned, spec.narrow_range, op);
    p.mode = Mode::Int;
  }
  const Shape block = per_axis_blocks(op, x.shape(), bs.axes, 1);
  p.layout = make_block_layout(x.shape(), block);
  p.xc = x.contiguous();
  if (spec.is_unsigned) check_unsigned_input(op, p.xc);

  // Per-block amax.
  Tensor A;
  if (static_amax.defined()) {
    require_floating(op, "amax", static_amax);
    check_same_device(op, x, static_amax);  // checked where it lives (checked_amax_copy)
    QGRAD_CHECK(static_amax.shape() == p.layout.grid_shape, ShapeError, op,
                ": static block amax has shape ", static_amax.shape(), ", expected the grid ",
                p.layout.grid_shape, " of an input of shape ", x.shape());
    A = checked_amax_copy(op, static_amax, x.dtype());
  } else {
    A = block_absmax(op, p.xc, p.layout);
  }

  // Second-level layout over the grid.
  const Shape& G = p.layout.grid_shape;
  const Shape block2 = bs.scale_block_sizes.empty()
                           ? Shape(G.size(), 0)
                           : per_axis_blocks(op, G, bs.scale_block_sizes, 1);
  const BlockLayout L2 = make_block_layout(G, block2);

  const TensorOptions grid_options = TensorOptions().dtype(x.dtype()).device(x.device());
  if (mx) {
    Tensor X = empty(G, grid_options);
    Tensor eff = empty(G, grid_options);
    mx_scales(op, A)(A, p.fmt.max_value, X, eff);
    p.amax_q = X;
    p.eff = eff;
    return p;
  }

  if (nvfp4) {
    const Tensor A2 = expand_blocks(op, block_absmax(op, A, L2), G, block2);
    const MiniFloatSpec e4m3 = minifloat_spec(kE4M3, op);
    Tensor S = empty(G, grid_options);
    Tensor eff = empty(G, grid_options);
    nvfp4_scales(op, A)(A, A2, e4m3, p.fmt.max_value, S, eff);
    p.amax_q = S;
    p.eff = eff;
    p.positive_zero = true;
    return p;
  }

  // Generic: optional double quantization of A, then the element quantizer against A'.
  Tensor Aq = A;
  if (bs.scale_bits) {
    const Tensor A2 = block_absmax(op, A, L2);
    if (bs.scale_bits->is_float()) {
      Aq = apply_scaled_minifloat(op, A, L2, A2, minifloat_spec(bs.scale_bits->format(), op), true);
    } else {
      const IntRange r2 = int_quant_range(bs.scale_bits->bits(), true, false, op);
      Aq = apply_int_quant(op, A, L2, A2, r2, true);
    }
  }
  p.amax_q = Aq;
  p.eff = Aq;
  return p;
}

Tensor run_plan(const char* op, const BlockPlan& p) {
  switch (p.mode) {
    case Mode::Int:
      return apply_int_quant(op, p.xc, p.layout, p.amax_q, p.range, true);
    case Mode::FpScaled:
      return apply_scaled_minifloat(op, p.xc, p.layout, p.amax_q, p.fmt, true);
    case Mode::DivMul: {
      const Tensor out = apply_divmul_minifloat(op, p.xc, p.layout, p.amax_q, p.fmt, true);
      // modelopt's E2M1 table has one zero, +0: NVFP4 never gives -0.0 (a plain tensor here,
      // before the backward is recorded).
      return p.positive_zero ? where(eq(out, 0.0), 0.0, out) : out;
    }
  }
  return Tensor();
}

}  // namespace

bool BlockSizes::operator==(const BlockSizes& o) const {
  // Axis order carries no meaning (JSON objects do not keep it), so compare sorted lists.
  auto sorted = [](AxisSizes v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  return sorted(axes) == sorted(o.axes) && type == o.type && scale_bits == o.scale_bits &&
         sorted(scale_block_sizes) == sorted(o.scale_block_sizes);
}

void BlockSizes::validate(const char* op) const {
  QGRAD_CHECK(!axes.empty(), ValueError, op, ": block_sizes needs at least one axis: block size");
  std::set<std::int64_t> seen;
  for (const auto& [axis, size] : axes) {
    QGRAD_CHECK(size > 0, ValueError, op, ": block size for axis ", axis, " must be positive, got ",
                size);
    QGRAD_CHECK(seen.insert(axis).second, ValueError, op, ": block_sizes lists axis ", axis,
                " twice");
  }
  if (scale_bits) {
    if (scale_bits->is_float()) {
      if (!scale_bits->format().is_e8m0()) minifloat_spec(scale_bits->format(), op);
    } else {
      QGRAD_CHECK(scale_bits->bits() >= 1 && scale_bits->bits() <= 24, ValueError, op,
                  ": scale_bits ", scale_bits->bits(), " is out of range 1..24");
    }
  }
  QGRAD_CHECK(scale_block_sizes.empty() || scale_bits, ValueError, op,
              ": scale_block_sizes needs scale_bits");
  std::set<std::int64_t> seen2;
  for (const auto& [axis, size] : scale_block_sizes) {
    QGRAD_CHECK(size > 0, ValueError, op, ": scale block size for axis ", axis,
                " must be positive, got ", size);
    QGRAD_CHECK(seen2.insert(axis).second, ValueError, op, ": scale_block_sizes lists axis ", axis,
                " twice");
  }
}

Shape block_grid_shape(const Shape& x_shape, const BlockSizes& bs) {
  const char* op = "block_grid_shape";
  bs.validate(op);
  return make_block_layout(x_shape, per_axis_blocks(op, x_shape, bs.axes, 1)).grid_shape;
}

Tensor block_amax(const Tensor& x, const BlockSizes& bs) {
  const char* op = "block_amax";
  check_input(op, x);
  bs.validate(op);
  const BlockLayout L = make_block_layout(x.shape(), per_axis_blocks(op, x.shape(), bs.axes, 1));
  return block_absmax(op, x.contiguous(), L);
}

Tensor block_fake_quant(const Tensor& x, const BlockQuantSpec& spec, const Tensor& block_amax) {
  const char* op = "block_fake_quant";
  BlockPlan p = make_plan(op, x, spec, block_amax);
  Tensor out = run_plan(op, p);
  record_clip_ste("BlockFakeQuantBackward", {x}, out, p.xc, p.layout, p.eff);
  return out;
}

Tensor block_effective_amax(const Tensor& x, const BlockQuantSpec& spec, const Tensor& block_amax) {
  return make_plan("block_effective_amax", x, spec, block_amax).eff;
}

BlockQuantizer::BlockQuantizer(BlockQuantSpec spec) : spec_(std::move(spec)) {
  const char* op = "BlockQuantizer";
  spec_.block_sizes.validate(op);
  if (spec_.num_bits.is_float()) {
    minifloat_spec(spec_.num_bits.format(), op);
  } else {
    int_quant_range(spec_.num_bits.bits(), spec_.is_unsigned, spec_.narrow_range, op);
  }
}

void BlockQuantizer::calibrate(const Tensor& x) {
  static const KernelTable<AmaxMergeKernel>& merge = kernel_table(kAmaxMergeKernels);
  const char* op = "BlockQuantizer::calibrate";
  QGRAD_CHECK(spec_.block_sizes.type == BlockQuantType::Static, ValueError, op,
              ": a dynamic block quantizer computes its amax on every call; nothing to calibrate");
  check_input(op, x);
  if (amax_.defined()) {
    QGRAD_CHECK(x.shape() == shape_, ShapeError, op, ": calibrated for input shape ", shape_,
                ", got ", x.shape());
  }
  const Shape block = per_axis_blocks(op, x.shape(), spec_.block_sizes.axes, 1);
  const BlockLayout L = make_block_layout(x.shape(), block);
  bool nonfinite = false;
  Tensor a = block_absmax(op, x.contiguous(), L, &nonfinite);
  QGRAD_CHECK(!nonfinite, ValueError, op, ": calibration data contains NaN or Inf (input shape ",
              x.shape(), ")");
  if (!amax_.defined()) {
    amax_ = a;
    shape_ = x.shape();
    return;
  }
  Tensor merged = amax_.to(x.dtype()).contiguous().clone();
  merge(op, merged)(merged, a);
  amax_ = merged;
}

Tensor BlockQuantizer::operator()(const Tensor& x) const {
  const char* op = "BlockQuantizer";
  if (spec_.block_sizes.type == BlockQuantType::Dynamic) return block_fake_quant(x, spec_);
  QGRAD_CHECK(amax_.defined(), ValueError, op,
              ": static block quantizer used before calibrate() saw any data");
  QGRAD_CHECK(x.shape() == shape_, ShapeError, op, ": calibrated for input shape ", shape_,
              ", got ", x.shape());
  return block_fake_quant(x, spec_, amax_.to(x.dtype()));
}

void BlockQuantizer::reset() {
  amax_ = Tensor();
  shape_.clear();
}

}  // namespace qgrad::nvidia

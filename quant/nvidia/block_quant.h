/// @file
/// Block quantization of TensorRT Model Optimizer (`block_sizes`), differentiable, including the
/// MX and NVFP4 formats, and BlockQuantizer, which holds a statically calibrated per-block amax.
///
/// Blocks. block_sizes {axis: size, ...} cuts each listed axis into blocks of `size` (the last
/// block may be partial: the reference zero-pads it, which never changes a |x|-max); every other
/// axis keeps one amax per index. The per-block amax A lives in a grid of shape ceil(shape/block)
/// at x's rank (block_grid_shape). Static: A comes from calibration (BlockQuantizer) and the input
/// shape is fixed afterwards. Dynamic: A = max |x| per block, recomputed every call, over the
/// finite elements (NaN and +-Inf neither poison nor take part in their block's amax; they come
/// out as NaN and +-saturated values). No gradient flows into A.
///
/// Double quantization (scale_bits), on the grid A with its own blocks (scale_block_sizes, axes
/// of the tensor applied to the grid; none = one per-tensor second-level amax A2 = max A):
///   scale_bits = b (int):   A' = fake_tensor_quant(A, A2, b, unsigned=true)
///   scale_bits = (E,M):     A' = scaled minifloat of A against A2: cast(A * s2) / s2, s2 = max/A2
/// and x is then quantized per block against A' exactly as fake_tensor_quant (integer num_bits,
/// honouring unsigned and narrow_range) or scaled_e4m3 ((E,M) num_bits) would with that amax.
/// modelopt's fake-quant path ignores integer scale_bits; the spec asks for double quantization,
/// and these are the formulas qgrad defines for it.
///
/// MX (scale_bits (8,0), (E,M) elements; OCP block of 32 is the user's block size), following
/// modelopt's MXFP8QTensor: k = ceil(log2(A / maxval)) clamped to [-127, 127] (A == 0 gives
/// -127), X = 2^k, q = cast(x / X), out = q * X. log2 is rounded to x's dtype before the ceil,
/// as modelopt's float32 torch.log2: a descale just above 2^k (within half an ulp of k) gives k.
///
/// NVFP4 (num_bits (2,1) with scale_bits (4,3)), following modelopt's NVFP4QTensor:
/// gs = A2 / (6 * 448); sb = A / (6 * gs), sb == 0 -> 1, sb = max(sb, 2^-9) (no underflow to a
/// zero scale), sbq = cast_e4m3(sb) (saturating); S = sbq * gs; q = cast_e2m1(x / S); out = q * S,
/// every zero +0 (modelopt's E2M1 table has no -0). A2 <= 2^-24 (an all-zero tensor; modelopt
/// divides 0 by 0 there and gives NaN) gives x * 0.
/// NVFP4 and MX agree bit for bit with modelopt's NVFP4QTensor / MXFP8QTensor quantize-dequantize
/// on finite inputs (tests/fixtures/gen_modelopt_reference.py). With NaN or Inf in a block,
/// modelopt's block amax is NaN or Inf and the whole block is lost; qgrad leaves them out of it.
///
/// Backward everywhere: clipped STE, dx = dy where |x| <= the block's effective amax (A' for the
/// generic path, maxval * X for MX, 6 * S for NVFP4).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "quant/nvidia/num_bits.h"

namespace qgrad::nvidia {

/// Static: the per-block amax comes from calibration; Dynamic: it is recomputed from x every call.
enum class BlockQuantType { Static, Dynamic };

/// modelopt's block_sizes: the blocked axes and sizes, static or dynamic, and the optional double
/// quantization of the per-block amax (see the file comment).
struct BlockSizes {
  /// (axis, block size); axes may be negative; order does not matter (== ignores it).
  std::vector<std::pair<std::int64_t, std::int64_t>> axes;
  BlockQuantType type = BlockQuantType::Static;  ///< static (calibrated) or dynamic amax
  /// Format of the second-level quantization of the amax grid (none: not quantized).
  std::optional<NumBits> scale_bits;
  /// Blocks of the amax grid for double quantization ((axis, size); empty: one per-tensor A2).
  std::vector<std::pair<std::int64_t, std::int64_t>> scale_block_sizes;

  /// Equal axes (in any order), type, scale_bits and scale_block_sizes.
  bool operator==(const BlockSizes& o) const;
  /// !(*this == o).
  bool operator!=(const BlockSizes& o) const { return !(*this == o); }
  /// Checks what can be checked without a tensor (ValueError naming op): at least one axis,
  /// unique axes, positive sizes, valid scale_bits, scale_block_sizes only with scale_bits.
  void validate(const char* op) const;
};

/// What a block quantization does: the element format, the blocks, and the integer grid options.
struct BlockQuantSpec {
  NumBits num_bits = 8;       ///< element format: integer bits or (E,M)
  BlockSizes block_sizes;     ///< the blocks and double quantization
  bool is_unsigned = false;   ///< unsigned integer grid (integer num_bits only)
  bool narrow_range = false;  ///< the descriptor's default
};

/// The amax grid shape for a tensor shape (checks axis ranges: ValueError/IndexError naming op).
Shape block_grid_shape(const Shape& x_shape, const BlockSizes& bs);

/// Per-block max |x| over finite elements, grid-shaped, x's dtype (not differentiable).
Tensor block_amax(const Tensor& x, const BlockSizes& bs);

/// Fake block quantization. block_amax: the static per-block amax (grid-shaped, finite, >= 0);
/// undefined means dynamic (computed from x now). Differentiable with respect to x.
Tensor block_fake_quant(const Tensor& x, const BlockQuantSpec& spec,
                        const Tensor& block_amax = Tensor());

/// The effective per-block amax the quantizer uses after double quantization / MX / NVFP4
/// scaling (the clip bound of the backward), grid-shaped.
Tensor block_effective_amax(const Tensor& x, const BlockQuantSpec& spec,
                            const Tensor& block_amax = Tensor());

/// Static (or dynamic) block quantizer state: the calibrated per-block amax and the input shape
/// it was calibrated for.
class BlockQuantizer {
 public:
  /// Validates spec (its block_sizes and element format; ValueError).
  explicit BlockQuantizer(BlockQuantSpec spec);

  /// Static: folds max |x| per block into the stored amax (several batches allowed, same shape).
  /// Dynamic quantizers have nothing to calibrate (ValueError).
  void calibrate(const Tensor& x);
  /// Fake-quantizes x: static needs calibration and the calibrated shape (ValueError/ShapeError).
  Tensor operator()(const Tensor& x) const;

  /// Whether a static amax was calibrated.
  bool calibrated() const { return amax_.defined(); }
  const Tensor& amax() const { return amax_; }  ///< grid-shaped; undefined before calibration
  /// The shape calibrated for (empty before calibration).
  const Shape& input_shape() const { return shape_; }
  /// The quantization it performs.
  const BlockQuantSpec& spec() const { return spec_; }
  void reset();  ///< forgets the calibrated amax and shape

 private:
  BlockQuantSpec spec_;
  Tensor amax_;
  Shape shape_;
};

}  // namespace qgrad::nvidia

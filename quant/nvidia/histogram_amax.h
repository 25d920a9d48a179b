/// @file
/// The amax searches of pytorch_quantization's histogram calibrator, on a histogram of |x| with
/// integer counts and float32 edges, plus the float32 arithmetic of the three PyTorch 1.13 CPU ops
/// the reference builds that histogram with (torch.linspace, torch.arange, torch.histc), so that
/// qgrad's edges and counts are the reference's bit for bit. Each search returns the winning bin
/// index; the amax is histogram_edge(h, i) (entropy, percentile) or histogram_center(h, i) (mse).
///
/// entropy (_compute_amax_entropy): counts c with c[0] replaced by c[1]; N = sum c. For every
/// candidate i in start_bin, start_bin+stride, ... <= n: p = c[0..i) with the outlier mass
/// T = sum c[i..n) added to bin i-1; q = c[0..i) (without the outliers, as the reference builds it)
/// merged into nb = 2^(num_bits-1+unsigned) groups (bin j belongs to group floor(j*nb/i)), each
/// group's mass spread evenly over its non-empty bins (empty bins stay 0); both normalised;
/// KL(p||q) in natural log (inf where p > 0 = q). The winner is the LAST index of the minimum.
/// qgrad evaluates KL(i) = (sum_g U_g + E_i) / N + log(N - T) - log(N), with
/// U_g = sum_{j in g, c_j > 0} c_j log(c_j / a_g), a_g = the group's mean over non-empty bins, from
/// prefix sums (O(n * nb) instead of the reference's O(n^2) Python loops), and E_i the correction
/// of bin i-1 for the outliers. A group whose non-empty bins are all equal contributes exactly 0,
/// so histograms where p == q give exactly 0 and ties resolve as the reference's do.
///
/// mse (_compute_amax_mse): centres c_j = (e_j + e_{j+1}) / 2 in float32 from the edges; for i in
/// start_bin, ... < n: mse(i) = mean_j(count_j * (fq(c_j, c_i) - c_j)^2) with fq =
/// fake_tensor_quant(num_bits, unsigned, narrow_range=true) in float32; sums in double (the
/// reference sums float32 on the GPU). The winner is the FIRST minimiser.
///
/// percentile (_compute_amax_percentile): as the reference's NumPy code, cdf = float64 cumsum of
/// count_j / total in bin order, and the first index with cdf >= percentile / 100 (n when the
/// rounded cdf never gets there: the amax is then the last edge). The float64 rounding decides
/// exact ties: 999 of 1000 values is a cdf of 0.99899999... < 0.999, so 99.9% moves on to the
/// next non-empty bin, as the reference does. The amax is that bin's LEFT edge.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/nvidia/calibrator_elem.h"  // torch_histc_bin

namespace qgrad::nvidia {

/// A histogram of |x|: integer counts and float32 bin edges.
struct Histogram {
  std::vector<std::int64_t> counts;  ///< the count of each bin
  /// At least counts.size() + 1 edges. The reference's edges after growth come from torch.arange
  /// and its counts from torch.histc over [0, edges.back()] with counts.size() bins, which can make
  /// one edge more than counts.size() + 1; only the edges are then indexed.
  std::vector<float> edges;
};

/// A histogram with edges float32(j * bin_width) (hand-built histograms and tests).
Histogram linear_histogram(std::vector<std::int64_t> counts, double bin_width);

/// Left edge of bin i (i may equal counts.size(): the right end).
double histogram_edge(const Histogram& h, std::int64_t i);
/// Centre of bin i as the reference computes it: (edges[i] + edges[i+1]) / 2 in float32.
double histogram_center(const Histogram& h, std::int64_t i);

/// PyTorch 1.13's CPU float32 kernels, element for element, as the AVX2 build runs them (what
/// PyTorch picks on AVX2 and AVX-512 machines; its default-ISA and AVX-512 kernels round a few
/// edges differently). Sizes above 32768 are split across PyTorch's threads, which moves its
/// vector boundaries; qgrad computes them as one chunk.
/// torch.linspace(0, end, steps): step = end / (steps - 1); 16-element blocks of two 8-lane
/// vectors, each vector's base start + step*idx below steps/2, else the fused
/// fma(-step, steps - idx - 1, end), lanes base + k*step (not fused); the tail element by element
/// (the upper half fused as well).
std::vector<float> torch_linspace_f32(float end, std::int64_t steps);
/// torch.arange(0, end, step) in float32 (the arithmetic in double): ceil(end / step) elements,
/// vector bases float(step * idx), lanes float(base + k*step), tail float(step * idx).
std::vector<float> torch_arange_f32(double end, double step);
/// torch.histc's bin of a value is torch_histc_bin (calibrator_elem.h, shared with the kernels).

/// The bin of the entropy search (see the file comment); its left edge is the amax.
std::int64_t entropy_best_bin(const Histogram& h, int num_bits = 8, bool is_unsigned = false,
                              std::int64_t stride = 1, std::int64_t start_bin = 128);
/// The bin of the mse search (see the file comment); its centre is the amax.
std::int64_t mse_best_bin(const Histogram& h, int num_bits = 8, bool is_unsigned = false,
                          std::int64_t stride = 1, std::int64_t start_bin = 128);
/// The bin of the percentile method (see the file comment); its left edge is the amax.
/// ValueError unless 0 <= percentile <= 100.
std::int64_t percentile_bin(const Histogram& h, double percentile = 99.99);

}  // namespace qgrad::nvidia

// The amax searches of pytorch_quantization's histogram calibrator, on a histogram of |x| with
// integer counts and bins [i*w, (i+1)*w). Each returns the winning bin index; the amax is
// histogram_edge(h, i) (entropy, percentile) or histogram_center(h, i) (mse).
//
// entropy (_compute_amax_entropy): counts c with c[0] replaced by c[1]; N = sum c. For every
// candidate i in start_bin, start_bin+stride, ... <= n: p = c[0..i) with the outlier mass
// T = sum c[i..n) added to bin i-1; q = c[0..i) (without the outliers, as the reference builds it)
// merged into nb = 2^(num_bits-1+unsigned) groups (bin j belongs to group floor(j*nb/i)), each
// group's mass spread evenly over its non-empty bins (empty bins stay 0); both normalised;
// KL(p||q) in natural log (inf where p > 0 = q). The winner is the LAST index of the minimum.
// qgrad evaluates KL(i) = (sum_g U_g + E_i) / N + log(N - T) - log(N), with
// U_g = sum_{j in g, c_j > 0} c_j log(c_j / a_g), a_g = the group's mean over non-empty bins, from
// prefix sums (O(n * nb) instead of the reference's O(n^2) Python loops), and E_i the correction
// of bin i-1 for the outliers. A group whose non-empty bins are all equal contributes exactly 0,
// so histograms where p == q give exactly 0 and ties resolve as the reference's do.
//
// mse (_compute_amax_mse): bin edges e_j = float32(j*w), centres c_j = (e_j + e_{j+1}) / 2 in
// float32; for i in start_bin, ... < n: mse(i) = mean_j(count_j * (fq(c_j, c_i) - c_j)^2) with fq
// = fake_tensor_quant(num_bits, unsigned, narrow_range=true) in float32; sums in double. The
// winner is the FIRST minimiser.
//
// percentile (_compute_amax_percentile): the first bin whose cumulative count reaches
// percentile/100 of the total, compared exactly in integers/doubles (the reference's float cumsum
// of normalised counts can miss 100% by an ulp). The amax is that bin's LEFT edge.
#pragma once

#include <cstdint>
#include <vector>

namespace qgrad::nvidia {

struct Histogram {
  std::vector<std::int64_t> counts;
  double bin_width = 0;  // bin i covers [i * bin_width, (i + 1) * bin_width)
};

// Left edge of bin i (i may equal counts.size(): the right end), rounded to float32.
double histogram_edge(const Histogram& h, std::int64_t i);
// Centre of bin i computed as the reference does (float32 edges, float32 mean).
double histogram_center(const Histogram& h, std::int64_t i);

std::int64_t entropy_best_bin(const Histogram& h, int num_bits = 8, bool is_unsigned = false,
                              std::int64_t stride = 1, std::int64_t start_bin = 128);
std::int64_t mse_best_bin(const Histogram& h, int num_bits = 8, bool is_unsigned = false,
                          std::int64_t stride = 1, std::int64_t start_bin = 128);
std::int64_t percentile_bin(const Histogram& h, double percentile = 99.99);

}  // namespace qgrad::nvidia

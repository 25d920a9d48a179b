// CPU kernels of torch.ao's fused observer + fake quantization and of per-channel fake
// quantization with float zero points, registered in the "torch_ao.*" tables at the end. Per
// tensor the input is read twice, both passes in one parallel region (none for small tensors): a
// min/max pass (split into a size-determined number of chunks, so the result never depends on the
// thread count), then one pass that writes the output and the gradient mask. Per channel (axis 0,
// each channel one contiguous row) every row is finished in one go (min/max, running statistics,
// qparams, output and mask) while it is in cache; the per-tensor mask is packed bits
// (fused_obs_fake_quant_kernels.h). The range, the step and the element math are
// fused_obs_fake_quant_math.h's, which the CUDA kernels run too (fused_obs_fake_quant_cuda.cu), and
// the value + mask rows are the fake quantizers' shared loop (quant/value_mask_loop.h).
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "core/strided_loop.h"
#include "quant/torch_ao/fused_obs_fake_quant_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant_math.h"
#include "quant/value_mask_loop.h"

namespace qgrad::ao {

namespace {

const char* kOp = "fused_moving_avg_obs_fake_quant";

using fused::ObservedRange;

// The first element of p[0, n) that compares equal to zero, or kNoZero.
std::int64_t first_zero(const float* p, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (p[i] == 0.0f) return i;
  return fused::kNoZero;
}

// Eight float lanes in GCC / Clang vector extensions (lowered to the target's SIMD: two 128-bit
// halves on plain x86-64, one ymm register with AVX), and their integer comparison masks.
using F8 = float __attribute__((vector_size(32)));
using I8 = std::int32_t __attribute__((vector_size(32)));

// Lane-wise `m ? v : a` with m from a comparison (all bits set or clear).
inline F8 select(I8 m, F8 v, F8 a) {
  I8 vi, ai;
  std::memcpy(&vi, &v, sizeof vi);
  std::memcpy(&ai, &a, sizeof ai);
  const I8 r = (vi & m) | (ai & ~m);
  F8 out;
  std::memcpy(&out, &r, sizeof out);
  return out;
}

// The ObservedRange (fused_obs_fake_quant_math.h) of n floats, the first of which has index
// `first`. Sixteen independent lanes take every 16th element; equal floats have equal bits except
// +0.0 / -0.0, so only a zero extreme needs the position of the first zero (found at once in
// activations after a ReLU, about half of whose elements are zero); elsewhere it is left at
// kNoZero, which changes no combined result (a run whose extreme is zero has every zero of the
// whole tensor at an extreme).
QGRAD_NOINLINE ObservedRange row_min_max(const float* __restrict__ p, std::int64_t n,
                                         std::int64_t first) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  F8 a0, a1, b0, b1;
  for (int j = 0; j < 8; ++j) {
    a0[j] = a1[j] = inf;
    b0[j] = b1[j] = -inf;
  }
  I8 u = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    F8 v0, v1;
    std::memcpy(&v0, p + i, sizeof v0);
    std::memcpy(&v1, p + i + 8, sizeof v1);
    u |= (v0 != v0) | (v1 != v1);
    a0 = select(v0 < a0, v0, a0);
    a1 = select(v1 < a1, v1, a1);
    b0 = select(v0 > b0, v0, b0);
    b1 = select(v1 > b1, v1, b1);
  }
  float mn = inf, mx = -inf;
  bool has_nan = false;
  for (int j = 0; j < 8; ++j) {
    has_nan |= u[j] != 0;
    mn = a0[j] < mn ? a0[j] : mn;
    mn = a1[j] < mn ? a1[j] : mn;
    mx = b0[j] > mx ? b0[j] : mx;
    mx = b1[j] > mx ? b1[j] : mx;
  }
  for (; i < n; ++i) {
    const float v = p[i];
    has_nan |= (v != v);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  std::int64_t zero = fused::kNoZero;
  if (!has_nan && (mn == 0.0f || mx == 0.0f)) zero = first + first_zero(p, n);
  return {mn, mx, zero, has_nan};
}

// The batch min and max of a range observed over p (fused::batch_min / batch_max).
float batch_min(const ObservedRange& r, const float* p) {
  return fused::batch_min(r, r.first_zero == fused::kNoZero ? 0.0f : p[r.first_zero]);
}
float batch_max(const ObservedRange& r, const float* p) {
  return fused::batch_max(r, r.first_zero == fused::kNoZero ? 0.0f : p[r.first_zero]);
}

// The value + mask row (quant/value_mask_loop.h) with the mask as packed bits: blocks of 64
// elements write their bytes to a local array (in L1), and each 16 of them become 16 bits by one
// byte-sign movemask, so only an eighth of the byte mask's traffic reaches memory. `first`, a
// multiple of 64, is the element index of x[0], which fixes the bit position (so every block starts
// on a whole byte).
QGRAD_NOINLINE void fake_quant_row_bits(const fused::FakeQuantElem& elem,
                                        const float* __restrict__ x, float* __restrict__ y,
                                        std::uint8_t* __restrict__ bits, std::int64_t first,
                                        std::int64_t n) {
  constexpr std::int64_t kBlock = 64;
  alignas(64) std::uint8_t m[kBlock];
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const std::int64_t len = std::min(kBlock, n - b);
    quant::value_mask_row(elem, x + b, y + b, m, len);
    std::uint64_t word = 0;
#if defined(__SSE2__)
    if (len == kBlock) {
      for (int k = 0; k < 4; ++k) {
        // m holds 0 or 1: shifting each byte's bit 0 to its sign bit lets movemask read them.
        const __m128i v =
            _mm_slli_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(m) + k), 7);
        word |= static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(v)))
                << (16 * k);
      }
    } else
#endif
    {
      for (std::int64_t i = 0; i < len; ++i) word |= static_cast<std::uint64_t>(m[i]) << i;
    }
    const std::int64_t at = first + b;  // a multiple of 64: whole bytes
    std::memcpy(bits + at / 8, &word, static_cast<std::size_t>((len + 7) / 8));
  }
}

// PyTorch checks min <= max inside ChooseQuantizationParams.
void check_range(bool ok, float mn, float mx, std::size_t c, bool per_channel) {
  QGRAD_CHECK(ok, ValueError, kOp, ": the running min (", mn, ") should be <= the running max (",
              mx, ")", per_channel ? " in channel " + std::to_string(c) : std::string(),
              "; NaN in the input makes the running statistics NaN");
}

constexpr std::int64_t kMaxChunks = 64;
constexpr std::int64_t kMinChunk = 32768;

// Sets every bit of the packed mask of n elements (nothing was fake quantized).
void all_bits(std::uint8_t* bits, std::int64_t n) {
  std::memset(bits, 0xff, static_cast<std::size_t>((n + 7) / 8));
}

// The flags and the state, read and written in place (host memory).
struct HostState {
  bool observe, fake_quant;
  float *rmin, *rmax, *scale;
  std::int32_t* zp;
};

// What one thread of fused_per_tensor (or the caller alone) writes for the 64-element blocks
// [b0, b1): the fake-quantized value and its mask bits, or a copy and all bits set when not fake
// quantizing. Whole blocks, so no byte of the packed mask has two writers.
struct BlockWriter {
  const float* px;
  float* py;
  std::uint8_t* pm;  // null: no mask
  std::int64_t n;
  bool fake_quant;

  void run(const fused::FakeQuantElem& elem, std::int64_t b0, std::int64_t b1) const {
    const std::int64_t b = b0 * 64, e = std::min(n, b1 * 64);
    if (b >= e) return;
    if (!fake_quant) {
      std::memcpy(py + b, px + b, static_cast<std::size_t>(e - b) * sizeof(float));
      if (pm != nullptr) all_bits(pm + b / 8, e - b);
    } else if (pm == nullptr) {
      quant::value_mask_row(elem, px + b, py + b, nullptr, e - b);
    } else {
      fake_quant_row_bits(elem, px + b, py + b, pm, b, e - b);
    }
  }
};

// The outcome of the observe + qparams step, which every thread computes alike.
struct TensorStep {
  float rmin, rmax;
  fused::ChosenQParams q{};
  bool ok;
};

// The per-tensor op in at most one parallel region (the fixed cost of a region, a fork and a
// join, shows on small activations): each thread takes its share of the min/max chunks, and after
// one barrier every thread combines all chunks' ranges in chunk order (the same bits on any
// number of threads), takes the running-statistics step on its own copy and writes its share of
// the output and mask; thread 0 stores the statistics. Below kParallelGrain elements all of it
// runs on the calling thread.
void fused_per_tensor(const float* px, float* py, std::uint8_t* pm, std::int64_t n,
                      const FusedObsFakeQuantParams& p, const HostState& st) {
  // The chunking depends on n only, so the min/max does not depend on the thread count.
  const std::int64_t K =
      std::max<std::int64_t>(1, std::min(kMaxChunks, (n + kMinChunk - 1) / kMinChunk));
  const std::int64_t chunk = (n + K - 1) / K;
  const std::int64_t blocks = (n + 63) / 64;
  std::vector<ObservedRange> parts(st.observe ? static_cast<std::size_t>(K) : 0,
                                   fused::empty_range());
  const float rmin0 = *st.rmin, rmax0 = *st.rmax;
  const BlockWriter writer{px, py, pm, n, st.fake_quant};
  TensorStep result{rmin0, rmax0, {}, true};
  // A single chunk (at most kMinChunk elements) is observed before the region: a second thread
  // could only wait at the barrier for it.
  const bool split_observe = st.observe && K > 1;
  if (st.observe && !split_observe) parts[0] = row_min_max(px, n, 0);
  const auto body = [&](std::int64_t nt, std::int64_t tid) {
    if (split_observe) {
      const std::int64_t per = (K + nt - 1) / nt;
      for (std::int64_t k = tid * per; k < std::min(K, (tid + 1) * per); ++k) {
        const std::int64_t b = k * chunk, e = std::min(n, b + chunk);
        if (b < e) parts[static_cast<std::size_t>(k)] = row_min_max(px + b, e - b, b);
      }
      // Orphaned: a no-op when body runs outside a parallel region.
#pragma omp barrier
    }
    float bmin = 0, bmax = 0;
    if (st.observe) {
      ObservedRange t = fused::empty_range();
      for (const ObservedRange& r : parts) t = fused::combine(t, r);
      bmin = batch_min(t, px);
      bmax = batch_max(t, px);
    }
    TensorStep s{rmin0, rmax0, {}, false};
    s.ok = fused::fused_step(p, st.observe, st.fake_quant, bmin, bmax, s.rmin, s.rmax, s.q);
    if (tid == 0) result = s;
    // A failed check leaves y unwritten: the caller throws.
    if (!s.ok) return;
    const fused::FakeQuantElem elem =
        st.fake_quant
            ? fused::make_fake_quant_elem(s.q.scale, s.q.zero_point, p.quant_min, p.quant_max)
            : fused::FakeQuantElem{};
    const std::int64_t per = (blocks + nt - 1) / nt;
    writer.run(elem, tid * per, std::min(blocks, (tid + 1) * per));
  };
  if (n < kParallelGrain) {
    body(1, 0);
  } else {
#pragma omp parallel
    body(strided_loop_num_threads(), strided_loop_thread_id());
  }
  *st.rmin = result.rmin;
  *st.rmax = result.rmax;
  if (!st.fake_quant) return;
  check_range(result.ok, result.rmin, result.rmax, 0, false);
  *st.scale = result.q.scale;
  *st.zp = result.q.zero_point;
}

// dx = dy * bit over whole mask bytes, eight elements a byte: each byte's bits become eight
// lanes of 1.0f / 0.0f and multiply dy's eight values in one vector operation (the loop over a
// byte's bits with a variable length stayed scalar). dx may be dy: each group is loaded before
// it is stored.
QGRAD_NOINLINE void masked_bits_bytes(const float* g, const std::uint8_t* __restrict__ bits,
                                      float* o, std::int64_t bytes) {
  const I8 lane_bit = {1, 2, 4, 8, 16, 32, 64, 128};
  for (std::int64_t b = 0; b < bytes; ++b) {
    const I8 set = (lane_bit & static_cast<std::int32_t>(bits[b])) != 0;  // -1 or 0
    const F8 one = __builtin_convertvector(set & 1, F8);                  // 1.0f or 0.0f
    F8 v;
    std::memcpy(&v, g + 8 * b, sizeof v);
    v *= one;  // masked_bit_gradient: dy * bit
    std::memcpy(o + 8 * b, &v, sizeof v);
  }
}

void masked_gradient_bits_cpu(const Tensor& dy, const Tensor& bits, const Tensor& dx) {
  const std::int64_t n = dx.numel();
  if (n == 0) return;
  const float* pg = dy.data_ptr<float>();
  const std::uint8_t* pb = bits.data_ptr<std::uint8_t>();
  float* po = dx.data_ptr<float>();
  const std::int64_t whole = n / 8;
  parallel_for(whole, std::max<std::int64_t>(1, kParallelGrain / 8),
               [&](std::int64_t b0, std::int64_t b1) {
                 masked_bits_bytes(pg + 8 * b0, pb + b0, po + 8 * b0, b1 - b0);
               });
  // The last, partial byte.
  const unsigned last = n % 8 != 0 ? pb[whole] : 0u;
  for (std::int64_t i = whole * 8; i < n; ++i)
    po[i] = fused::masked_bit_gradient(pg[i], last, static_cast<unsigned>(i - whole * 8));
}

void fused_per_channel(const float* px, float* py, std::uint8_t* pm, std::int64_t channels,
                       std::int64_t inner, const FusedObsFakeQuantParams& p, const HostState& st) {
  std::vector<std::uint8_t> bad(static_cast<std::size_t>(channels), 0);
  const std::int64_t grain =
      std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(inner, 1));
  parallel_for(channels, grain, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const float* x = px + c * inner;
      float* y = py + c * inner;
      std::uint8_t* m = pm != nullptr ? pm + c * inner : nullptr;
      float bmin = 0, bmax = 0;
      if (st.observe) {
        const ObservedRange r = row_min_max(x, inner, 0);
        bmin = batch_min(r, x);
        bmax = batch_max(r, x);
      }
      fused::ChosenQParams q{};
      if (!fused::fused_step(p, st.observe, st.fake_quant, bmin, bmax, st.rmin[c], st.rmax[c], q)) {
        bad[static_cast<std::size_t>(c)] = 1;
        continue;
      }
      if (!st.fake_quant) {
        std::memcpy(y, x, static_cast<std::size_t>(inner) * sizeof(float));
        if (m != nullptr) std::memset(m, 1, static_cast<std::size_t>(inner));
        continue;
      }
      st.scale[c] = q.scale;
      st.zp[c] = q.zero_point;
      quant::value_mask_row(
          fused::make_fake_quant_elem(q.scale, q.zero_point, p.quant_min, p.quant_max), x, y, m,
          inner);
    }
  });
  for (std::size_t c = 0; c < bad.size(); ++c)
    check_range(!bad[c], st.rmin[c], st.rmax[c], c, true);
}

void fused_moving_avg_obs_fake_quant_cpu(const Tensor& x, const FusedObsFakeQuantParams& p,
                                         const FusedObsFakeQuantState& state, const Tensor& y,
                                         const Tensor& mask) {
  const std::int64_t n = x.numel();  // float32: the table holds no other dtype
  if (n == 0) return;
  const HostState st{*state.observer_on.data_ptr<std::int64_t>() != 0,
                     *state.fake_quant_on.data_ptr<std::int64_t>() != 0,
                     state.running_min.data_ptr<float>(),
                     state.running_max.data_ptr<float>(),
                     state.scale.data_ptr<float>(),
                     state.zero_point.data_ptr<std::int32_t>()};
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  std::uint8_t* pm = mask.defined() ? mask.data_ptr<std::uint8_t>() : nullptr;
  if (p.per_channel) {
    const std::int64_t C = x.size(0);
    fused_per_channel(px, py, pm, C, n / C, p, st);
  } else {
    fused_per_tensor(px, py, pm, n, p, st);
  }
}

template <typename T>
void float_zp_per_channel(const Tensor& x, std::int64_t axis, const std::vector<float>& scale,
                          const std::vector<float>& zp, std::int64_t qmin, std::int64_t qmax,
                          const Tensor& y, const Tensor& mask) {
  std::vector<fused::FloatZpFakeQuantElem<T>> elems(scale.size());
  for (std::size_t c = 0; c < scale.size(); ++c)
    elems[c] = {1.0f / scale[c], scale[c], zp[c], static_cast<double>(qmin),
                static_cast<double>(qmax)};
  quant::value_mask_map_channels<T>(elems, x, axis, y, mask);
}

void fake_quantize_per_channel_float_zp_cpu(const Tensor& x, std::int64_t axis,
                                            const std::vector<float>& scale,
                                            const std::vector<float>& zero_point,
                                            std::int64_t quant_min, std::int64_t quant_max,
                                            const Tensor& y, const Tensor& mask) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "fake_quantize_per_channel_affine", [&] {
    float_zp_per_channel<scalar_t>(x, axis, scale, zero_point, quant_min, quant_max, y, mask);
  });
}

}  // namespace

void register_fused_obs_fake_quant_cpu_kernels(KernelRegistry& r) {
  r.table(kFusedObsFakeQuantKernels)
      .define(DeviceType::CPU, &fused_moving_avg_obs_fake_quant_cpu, DTypeSet{kFloat32});
  r.table(kMaskedGradientBitsKernels)
      .define(DeviceType::CPU, &masked_gradient_bits_cpu, DTypeSet{kFloat32});
  r.table(kFakeQuantizePerChannelFloatZpKernels)
      .define(DeviceType::CPU, &fake_quantize_per_channel_float_zp_cpu, kFloatingDTypes);
}

}  // namespace qgrad::ao

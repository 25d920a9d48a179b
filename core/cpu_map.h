// cpu::map, the one element-wise driver of the CPU kernels: out[i] = f(in_0[i], ..., in_k[i]) over
// out's shape on the StridedLoop (dimensions coalesced, rows split across threads), with the
// inner rows that occur in practice as plain loops the compiler vectorises: every operand
// contiguous, or one input broadcast along the row (stride 0: a scalar operand, a bias, a
// broadcast upstream gradient). `f` is a QGRAD_HD functor from a <family>_elem.h header, the
// same object the CUDA twin (core/cuda_map.cuh) runs, so both devices compute the same bits.
// map_outputs writes several outputs in one pass (a value and its mask).
#pragma once

#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include "core/host_device.h"
#include "core/map_outputs.h"
#include "core/strided_loop.h"
#include "core/tensor.h"

namespace qgrad::cpu {

namespace detail {

template <typename R, typename F, typename... Ts>
QGRAD_NOINLINE void row_contiguous(const F& f, R* o, std::int64_t n, const Ts*... in) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}

// Input J is constant along the row: its value is loaded once, before the loop (a load inside
// the loop could alias `o` and keep the loop scalar).
template <bool Scalar, typename T>
QGRAD_HD_INLINE T pick(const T* p, T value, std::int64_t i) {
  if constexpr (Scalar) {
    (void)p;
    (void)i;
    return value;
  } else {
    (void)value;
    return p[i];
  }
}
template <std::size_t J, typename R, typename F, std::size_t... I, typename... Ts>
QGRAD_NOINLINE void row_one_scalar(const F& f, R* o, std::int64_t n, std::index_sequence<I...>,
                                   const Ts*... in) {
  const std::tuple<Ts...> first{in[0]...};
  for (std::int64_t i = 0; i < n; ++i) o[i] = f(pick<I == J>(in, std::get<I>(first), i)...);
}

// Tries each "input J broadcast, everything else contiguous" row; false when none matches.
template <std::size_t J, typename R, typename F, typename... Ts>
bool try_one_scalar(const F& f, R* o, std::int64_t n,
                    const std::array<std::int64_t, sizeof...(Ts)>& st, const Ts*... in) {
  if constexpr (J == sizeof...(Ts)) {
    return false;
  } else {
    bool match = st[J] == 0;
    for (std::size_t k = 0; k < sizeof...(Ts); ++k)
      if (k != J && st[k] != 1) match = false;
    if (match) {
      row_one_scalar<J>(f, o, n, std::index_sequence_for<Ts...>{}, in...);
      return true;
    }
    return try_one_scalar<J + 1>(f, o, n, st, in...);
  }
}

template <typename R, typename... Ts, typename F, std::size_t... I, typename... Tensors>
void map_impl(const F& f, const Tensor& out, std::index_sequence<I...>, const Tensors&... in) {
  constexpr std::size_t N = 1 + sizeof...(Ts);
  using InStrides = std::array<std::int64_t, sizeof...(Ts)>;  // named here: GCC 12 has an ICE
  R* po = static_cast<R*>(out.raw_data());
  const std::tuple<const Ts*...> pin{static_cast<const Ts*>(in.raw_data())...};
  StridedLoop<N> loop(out.shape(), {out.strides(), in.strides()...}, {});
  loop.run([&](const std::array<std::int64_t, N>& off, std::int64_t n,
               const std::array<std::int64_t, N>& st) {
    R* o = po + off[0];
    const InStrides ist{st[I + 1]...};
    if (st[0] == 1) {
      bool contiguous = true;
      for (std::int64_t s : ist) contiguous = contiguous && s == 1;
      if (contiguous) return row_contiguous(f, o, n, (std::get<I>(pin) + off[I + 1])...);
      if (try_one_scalar<0>(f, o, n, ist, (std::get<I>(pin) + off[I + 1])...)) return;
    }
    for (std::int64_t i = 0; i < n; ++i)
      o[i * st[0]] = f(std::get<I>(pin)[off[I + 1] + i * ist[I]]...);
  });
}

}  // namespace detail

// out[i] = f(in[i]...) for every element of out. R is out's element type, Ts... the inputs'
// (given explicitly: cpu::map<float, float, float>(f, out, a, b)); the inputs are views of out's
// shape (stride 0 on broadcast dims) and never alias out unless element-for-element.
template <typename R, typename... Ts, typename F, typename... Tensors>
void map(const F& f, const Tensor& out, const Tensors&... in) {
  static_assert(sizeof...(Ts) == sizeof...(Tensors), "one element type per input tensor");
  if (out.numel() == 0) return;
  detail::map_impl<R, Ts...>(f, out, std::index_sequence_for<Ts...>{}, in...);
}

namespace detail {

// One contiguous row of several outputs.
template <typename F, typename R0, typename... Rs, typename... Ts, std::size_t... J>
QGRAD_NOINLINE void row_outputs(const F& f, std::int64_t n, std::index_sequence<J...>, R0* o0,
                                std::tuple<Rs*...> os, const Ts*... in) {
  const F e = f;
  for (std::int64_t i = 0; i < n; ++i) o0[i] = e(in[i]..., std::get<J>(os)[i]...);
}

// The inputs' element types, as a tag (two packs cannot both be given explicitly).
template <typename... Ts>
struct InputTypes {};

template <typename R0, typename... Rs, typename... Ts, typename F, std::size_t... J,
          std::size_t... I, typename... Tensors>
void map_outputs_impl(Outputs<R0, Rs...>, InputTypes<Ts...>, const F& f,
                      const std::array<Tensor, 1 + sizeof...(Rs)>& outs,
                      std::index_sequence<J...> js, std::index_sequence<I...>,
                      const Tensors&... in) {
  constexpr std::size_t K = 1 + sizeof...(Rs), N = K + sizeof...(Ts);
  R0* p0 = static_cast<R0*>(outs[0].raw_data());
  const std::tuple<Rs*...> po{static_cast<Rs*>(outs[J + 1].raw_data())...};
  const std::tuple<const Ts*...> pin{static_cast<const Ts*>(in.raw_data())...};
  StridedLoop<N> loop(outs[0].shape(),
                      {outs[0].strides(), outs[J + 1].strides()..., in.strides()...}, {});
  loop.run([&](const std::array<std::int64_t, N>& off, std::int64_t n,
               const std::array<std::int64_t, N>& st) {
    bool contiguous = true;
    for (std::int64_t s : st) contiguous = contiguous && s == 1;
    if (contiguous)
      return row_outputs(f, n, js, p0 + off[0], std::tuple<Rs*...>{std::get<J>(po) + off[J + 1]...},
                         (std::get<I>(pin) + off[K + I])...);
    for (std::int64_t i = 0; i < n; ++i)
      p0[off[0] + i * st[0]] = f(std::get<I>(pin)[off[K + I] + i * st[K + I]]...,
                                 std::get<J>(po)[off[J + 1] + i * st[J + 1]]...);
  });
}

}  // namespace detail

// Several outputs in one pass, as PyTorch's TensorIterator writes them: for every element,
// outs[0][i] = f(in[i]..., outs[1][i], ..., outs[k][i]): the functor returns the first output and
// writes the others through references (a fake quantizer's value and its mask). Outs is
// Outputs<R0, R1, ...>, the outputs' element types, Ts... the inputs' (given explicitly:
// map_outputs<Outputs<float, std::uint8_t>, float>(f, {y, mask}, x)); every output has outs[0]'s
// shape, and the inputs are views of it (stride 0 on broadcast dims).
template <typename Outs, typename... Ts, typename F, typename... Tensors>
void map_outputs(const F& f, const std::array<Tensor, Outs::size>& outs, const Tensors&... in) {
  static_assert(sizeof...(Ts) == sizeof...(Tensors), "one element type per input tensor");
  if (outs[0].numel() == 0) return;
  detail::map_outputs_impl(Outs{}, detail::InputTypes<Ts...>{}, f, outs,
                           std::make_index_sequence<Outs::size - 1>{},
                           std::index_sequence_for<Ts...>{}, in...);
}

// f(i) for i in [0, n), split across threads for large n: the driver of kernels that update
// several contiguous arrays in place (the optimisers), whose functor holds the pointers.
template <typename F>
void for_each_index(std::int64_t n, const F& f) {
  parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) f(i);
  });
}

// The CPU driver as a type, for the <family>_elem.h kernels written once for every device:
// Map::run<R, Ts...>(op, f, out, in...) is map<R, Ts...>(f, out, in...), and
// Map::run_outputs<Outs, Ts...>(op, f, outs, in...) is map_outputs<Outs, Ts...>(f, outs, in...).
struct Map {
  static constexpr bool kHostMemory = true;  // the host may read the tensors' bytes
  template <typename R, typename... Ts, typename F, typename... Tensors>
  static void run(const char* /*op*/, const F& f, const Tensor& out, const Tensors&... in) {
    map<R, Ts...>(f, out, in...);
  }
  template <typename Outs, typename... Ts, typename F, typename... Tensors>
  static void run_outputs(const char* /*op*/, const F& f,
                          const std::array<Tensor, Outs::size>& outs, const Tensors&... in) {
    map_outputs<Outs, Ts...>(f, outs, in...);
  }
  template <typename F>
  static void for_each(const char* /*op*/, Device /*device*/, std::int64_t n, const F& f) {
    for_each_index(n, f);
  }
};

}  // namespace qgrad::cpu

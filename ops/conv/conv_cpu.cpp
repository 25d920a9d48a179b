// 2-D convolution kernels. float32: oneDNN convolution_forward / backward_data /
// backward_weights, created once per parameter set and cached; oneDNN picks the memory formats
// (format_tag::any) and tensors are reordered only where its choice differs from their layout.
// The forward keeps its reordered input and weights for the backward of the same call.
// float64: direct loops (reference quality; gradcheck only).
#include "ops/conv/conv_kernels.h"

#include <algorithm>

#include "core/factory.h"
#include "core/strided_loop.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad {

namespace dn = dnnl_backend;
using dims = dnnl::memory::dims;
using md = dnnl::memory::desc;

namespace {

// A tensor oneDNN can read through its strides (no broadcast stride 0 on a real dim).
Tensor describable(const Tensor& t) {
  for (std::size_t d = 0; d < t.shape().size(); ++d)
    if (t.shape()[d] > 1 && t.strides()[d] == 0) return t.contiguous();
  return t;
}

// A float32 descriptor of dims `d` and element strides `s`. Size-1 dims get a stride past every
// other dim: theirs is arbitrary in a view and oneDNN need not see odd values (0, say).
md strided_md(const dims& d, dims s) {
  std::int64_t extent = 1;
  for (std::size_t i = 0; i < d.size(); ++i)
    if (d[i] > 1) extent = std::max(extent, s[i] * d[i]);
  for (std::size_t i = 0; i < d.size(); ++i)
    if (d[i] == 1) s[i] = extent;
  return md(d, dnnl::memory::data_type::f32, s);
}

// The layout of `t` as a descriptor; contiguous tensors get the plain one, which compares equal
// to oneDNN's plain formats.
md user_desc(const Tensor& t) {
  if (t.is_contiguous()) return dn::plain_desc(t.shape(), t.dtype());
  return strided_md(dn::to_dims(t.shape()), dn::to_dims(t.strides()));
}

// The layout of the [o, c/g, kh, kw] weight as oneDNN's [g, o/g, c/g, kh, kw] when grouped.
md weights_user_desc(const Conv2dGeometry& g, const Tensor& w) {
  if (g.groups == 1) return user_desc(w);
  const Shape& st = w.strides();
  const std::int64_t og = g.o / g.groups;
  const dims d{g.groups, og, g.c / g.groups, g.kh, g.kw};
  if (w.is_contiguous()) return dn::plain_desc(d, DType::Float32);
  return strided_md(d, {st[0] * og, st[0], st[1], st[2], st[3]});
}

dims weights_dims(const Conv2dGeometry& g) {
  if (g.groups == 1) return {g.o, g.c, g.kh, g.kw};
  return {g.groups, g.o / g.groups, g.c / g.groups, g.kh, g.kw};
}

md any_desc(const dims& d) {
  return md(d, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

// Memory in a layout oneDNN chose. Large blocks come back from the allocator's reuse cache
// (core/allocator.h), so these temporaries do not page-fault on every call.
struct Buffer {
  std::shared_ptr<void> block;
  dnnl::memory mem;
};
Buffer make_buffer(const md& desc) {
  Buffer b;
  b.block = allocate(desc.get_size(), kCPU);
  b.mem = dnnl::memory(desc, dn::cpu_engine(), b.block.get());
  return b;
}

// A reorder from `from` to `to`, or an empty one when the layouts are the same. Reorders get a
// user scratchpad too, so a cached one can run on several threads at once.
struct Conversion {
  bool needed = false;
  dnnl::reorder::primitive_desc pd;
  dnnl::reorder prim;

  void run(const dnnl::memory& from, const dnnl::memory& to) const {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    Buffer scratch;
    const md sd = pd.scratchpad_desc();
    if (sd.get_size() > 0) {
      scratch = make_buffer(sd);
      args.emplace(DNNL_ARG_SCRATCHPAD, scratch.mem);
    }
    prim.execute(dn::cpu_stream(), args);
  }
};
Conversion make_conversion(const md& from, const md& to) {
  Conversion c;
  if (from == to) return c;
  c.needed = true;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  c.pd = dnnl::reorder::primitive_desc(dn::cpu_engine(), from, dn::cpu_engine(), to, attr);
  c.prim = dnnl::reorder(c.pd);
  return c;
}

// `user` (memory in the caller's layout) in the layout `want`: the same memory, or a buffer it
// was reordered into.
dnnl::memory convert_in(const Conversion& c, const dnnl::memory& user, const md& want,
                        Buffer& buf) {
  if (!c.needed) return user;
  buf = make_buffer(want);
  c.run(user, buf.mem);
  return buf.mem;
}

void add_scratchpad(const dnnl::primitive_desc_base& pd,
                    std::unordered_map<int, dnnl::memory>& args, Buffer& buf) {
  const md sd = pd.scratchpad_desc();
  if (sd.get_size() == 0) return;
  buf = make_buffer(sd);
  args.emplace(DNNL_ARG_SCRATCHPAD, buf.mem);
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

std::string geometry_key(const char* what, const Conv2dGeometry& g) {
  dn::KeyBuilder k;
  k << what << g.n << g.c << g.h << g.w << g.o << g.kh << g.kw << g.sh << g.sw << g.ph << g.pw
    << g.dh << g.dw << g.groups;
  return k.str();
}

// Winograd or direct (see conv2d_cpu_algorithms). PyTorch 1.13 always asks for direct;
// Winograd does about 1.5x less work on the 3x3 layers of a small CNN, at float32 error well
// inside 1e-4 relative. A Winograd request oneDNN cannot serve (no kernel for the ISA) falls
// back to direct.
template <typename PD, typename Make>
PD with_algorithm(bool winograd, Make&& make) {
  if (winograd) {
    PD pd = make(dnnl::algorithm::convolution_winograd, /*allow_empty=*/true);
    if (pd) return pd;
  }
  return make(dnnl::algorithm::convolution_direct, false);
}

struct ConvParams {
  dims strides, dilates, pad_l, pad_r;
};
ConvParams conv_params(const Conv2dGeometry& g) {
  // oneDNN counts dilation from 0 (no dilation), PyTorch from 1.
  return {{g.sh, g.sw}, {g.dh - 1, g.dw - 1}, {g.ph, g.pw}, {g.ph, g.pw}};
}

// Everything one forward parameter set needs, created once.
struct ConvForward {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  md x_user, w_user, y_user, b_user;
  Conversion x_in, w_in, y_out;
};

std::shared_ptr<ConvForward> forward_entry(const Conv2dGeometry& g, const Tensor& x,
                                           const Tensor& w, bool has_bias, std::string* key_out) {
  const md x_user = user_desc(x), w_user = weights_user_desc(g, w);
  dn::KeyBuilder k;
  k << geometry_key("conv2d_fwd", g) << (x.is_contiguous() ? Shape{} : x.strides())
    << (w.is_contiguous() ? Shape{} : w.strides()) << has_bias;
  *key_out = k.str();
  return dn::guarded("conv2d", *key_out, [&] {
    return dn::primitive_cache().get<ConvForward>(*key_out, [&] {
      const ConvParams p = conv_params(g);
      const md b_user = has_bias ? dn::plain_desc({g.o}, DType::Float32) : md();
      const md y_user = dn::plain_desc({g.n, g.o, g.oh, g.ow}, DType::Float32);
      const auto pd = with_algorithm<dnnl::convolution_forward::primitive_desc>(
          conv2d_cpu_algorithms(g).forward, [&](dnnl::algorithm alg, bool allow_empty) {
            // forward_training for inference too (as PyTorch): oneDNN 2.6 answers
            // forward_inference with brgconv in NHWC, whose conversions from and to NCHW
            // cost more than they save (measured with bench/bench_conv).
            dnnl::convolution_forward::desc desc(
                dnnl::prop_kind::forward_training, alg, any_desc({g.n, g.c, g.h, g.w}),
                any_desc(weights_dims(g)), b_user, any_desc({g.n, g.o, g.oh, g.ow}), p.strides,
                p.dilates, p.pad_l, p.pad_r);
            return dnnl::convolution_forward::primitive_desc(desc, user_scratchpad(),
                                                             dn::cpu_engine(), allow_empty);
          });
      auto e = std::make_shared<ConvForward>();
      e->pd = pd;
      e->prim = dnnl::convolution_forward(pd);
      e->x_user = x_user;
      e->w_user = w_user;
      e->y_user = y_user;
      e->b_user = b_user;
      e->x_in = make_conversion(x_user, pd.src_desc());
      e->w_in = make_conversion(w_user, pd.weights_desc());
      e->y_out = make_conversion(pd.dst_desc(), y_user);
      return e;
    });
  });
}

// Everything one backward parameter set needs, created once, with the forward pd as hint.
struct ConvBackward {
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_data data_prim;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_backward_weights weights_prim;
  md gy_user, gx_user, gw_user, gb_user;
  Conversion gy_for_data, gy_for_weights, w_for_data, gx_out, x_for_weights, gw_out;
};

}  // namespace

struct Conv2dForwardState {
  std::shared_ptr<ConvForward> fwd;
  std::string key;
  Buffer x_conv;  // the input in fwd->pd.src_desc(), when it had to be reordered
  Buffer w_conv;  // the weights in fwd->pd.weights_desc(), when they had to be reordered
};

namespace {

void forward_f32(const Conv2dGeometry& g, const Tensor& x_in, const Tensor& w_in,
                 const Tensor& bias, const Tensor& y, std::shared_ptr<Conv2dForwardState>* state,
                 bool keep_input, bool keep_weights) {
  const Tensor x = describable(x_in), w = describable(w_in);
  const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  std::string key;
  auto e = forward_entry(g, x, w, b.defined(), &key);
  dn::guarded("conv2d", key, [&] {
    auto& eng = dn::cpu_engine();
    auto& s = dn::cpu_stream();
    Buffer xb, wb, yb, scratch;
    const dnnl::memory x_user(e->x_user, eng, x.raw_data());
    const dnnl::memory w_user(e->w_user, eng, w.raw_data());
    dnnl::memory y_user(e->y_user, eng, y.raw_data());
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, convert_in(e->x_in, x_user, e->pd.src_desc(), xb)},
        {DNNL_ARG_WEIGHTS, convert_in(e->w_in, w_user, e->pd.weights_desc(), wb)}};
    if (b.defined()) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->b_user, eng, b.raw_data()));
    if (e->y_out.needed) yb = make_buffer(e->pd.dst_desc());
    args.emplace(DNNL_ARG_DST, e->y_out.needed ? yb.mem : y_user);
    add_scratchpad(e->pd, args, scratch);
    e->prim.execute(s, args);
    if (e->y_out.needed) e->y_out.run(yb.mem, y_user);
    s.wait();
    if (state) {
      auto st = std::make_shared<Conv2dForwardState>();
      st->fwd = e;
      st->key = key;
      if (keep_input) st->x_conv = std::move(xb);
      if (keep_weights) st->w_conv = std::move(wb);
      *state = std::move(st);
    }
  });
}

std::shared_ptr<ConvBackward> backward_entry(const Conv2dGeometry& g, const Tensor& gy,
                                             const Conv2dForwardState& st, bool has_bias,
                                             std::string* key_out) {
  dn::KeyBuilder k;
  k << "conv2d_bwd" << st.key << (gy.is_contiguous() ? Shape{} : gy.strides());
  *key_out = k.str();
  return dn::guarded("conv2d", *key_out, [&] {
    return dn::primitive_cache().get<ConvBackward>(*key_out, [&] {
      const ConvParams p = conv_params(g);
      const auto& fpd = st.fwd->pd;
      auto e = std::make_shared<ConvBackward>();
      e->gy_user = user_desc(gy);
      e->gx_user = dn::plain_desc({g.n, g.c, g.h, g.w}, DType::Float32);
      e->gw_user = dn::plain_desc(weights_dims(g), DType::Float32);
      e->gb_user = has_bias ? dn::plain_desc({g.o}, DType::Float32) : md();
      const dims x_dims{g.n, g.c, g.h, g.w}, y_dims{g.n, g.o, g.oh, g.ow};

      const Conv2dAlgorithms algs = conv2d_cpu_algorithms(g);
      e->data_pd = with_algorithm<dnnl::convolution_backward_data::primitive_desc>(
          algs.backward_data, [&](dnnl::algorithm alg, bool allow_empty) {
            dnnl::convolution_backward_data::desc dd(alg, any_desc(x_dims),
                                                     any_desc(weights_dims(g)), any_desc(y_dims),
                                                     p.strides, p.dilates, p.pad_l, p.pad_r);
            return dnnl::convolution_backward_data::primitive_desc(
                dd, user_scratchpad(), dn::cpu_engine(), fpd, allow_empty);
          });
      e->data_prim = dnnl::convolution_backward_data(e->data_pd);

      e->weights_pd = with_algorithm<dnnl::convolution_backward_weights::primitive_desc>(
          algs.backward_weights, [&](dnnl::algorithm alg, bool allow_empty) {
            dnnl::convolution_backward_weights::desc wd(
                alg, any_desc(x_dims), any_desc(weights_dims(g)), e->gb_user, any_desc(y_dims),
                p.strides, p.dilates, p.pad_l, p.pad_r);
            return dnnl::convolution_backward_weights::primitive_desc(
                wd, user_scratchpad(), dn::cpu_engine(), fpd, allow_empty);
          });
      e->weights_prim = dnnl::convolution_backward_weights(e->weights_pd);

      e->gy_for_data = make_conversion(e->gy_user, e->data_pd.diff_dst_desc());
      e->gy_for_weights = make_conversion(e->gy_user, e->weights_pd.diff_dst_desc());
      e->w_for_data = make_conversion(st.fwd->w_user, e->data_pd.weights_desc());
      e->gx_out = make_conversion(e->data_pd.diff_src_desc(), e->gx_user);
      e->x_for_weights = make_conversion(st.fwd->x_user, e->weights_pd.src_desc());
      e->gw_out = make_conversion(e->weights_pd.diff_weights_desc(), e->gw_user);
      return e;
    });
  });
}

void backward_f32(const Conv2dGeometry& g, const Tensor& gy_in, const Tensor& x_in,
                  const Tensor& w_in, const Conv2dForwardState& st, const Tensor& gx,
                  const Tensor& gw, const Tensor& gb) {
  const Tensor gy = describable(gy_in);
  const bool has_bias = st.fwd->b_user.get_size() > 0;
  std::string key;
  auto e = backward_entry(g, gy, st, has_bias, &key);
  dn::guarded("conv2d", key, [&] {
    auto& eng = dn::cpu_engine();
    auto& s = dn::cpu_stream();
    const dnnl::memory gy_user(e->gy_user, eng, gy.raw_data());
    // gy in the data primitive's layout; reused by the weights primitive when it wants the same.
    Buffer gy_d, gy_w;
    const md& gy_data_md = e->data_pd.diff_dst_desc();
    const md& gy_weights_md = e->weights_pd.diff_dst_desc();
    dnnl::memory gy_for_data;
    if (gx.defined()) gy_for_data = convert_in(e->gy_for_data, gy_user, gy_data_md, gy_d);

    if (gx.defined()) {
      Buffer wb, gxb, scratch;
      dnnl::memory w_mem;
      if (st.w_conv.mem && st.fwd->pd.weights_desc() == e->data_pd.weights_desc()) {
        w_mem = st.w_conv.mem;
      } else {
        const Tensor w = describable(w_in);
        w_mem = convert_in(e->w_for_data, dnnl::memory(st.fwd->w_user, eng, w.raw_data()),
                           e->data_pd.weights_desc(), wb);
      }
      dnnl::memory gx_user(e->gx_user, eng, gx.raw_data());
      if (e->gx_out.needed) gxb = make_buffer(e->data_pd.diff_src_desc());
      std::unordered_map<int, dnnl::memory> args{
          {DNNL_ARG_DIFF_DST, gy_for_data},
          {DNNL_ARG_WEIGHTS, w_mem},
          {DNNL_ARG_DIFF_SRC, e->gx_out.needed ? gxb.mem : gx_user}};
      add_scratchpad(e->data_pd, args, scratch);
      e->data_prim.execute(s, args);
      if (e->gx_out.needed) e->gx_out.run(gxb.mem, gx_user);
    }

    if (gw.defined() || gb.defined()) {
      Buffer xb, gwb, gbb, scratch;
      dnnl::memory x_mem;
      if (st.x_conv.mem && st.fwd->pd.src_desc() == e->weights_pd.src_desc()) {
        x_mem = st.x_conv.mem;
      } else {
        const Tensor x = describable(x_in);
        x_mem = convert_in(e->x_for_weights, dnnl::memory(st.fwd->x_user, eng, x.raw_data()),
                           e->weights_pd.src_desc(), xb);
      }
      dnnl::memory gy_mem;
      if (gx.defined() && gy_data_md == gy_weights_md)
        gy_mem = gy_for_data;
      else
        gy_mem = convert_in(e->gy_for_weights, gy_user, gy_weights_md, gy_w);
      // gw is always produced by the primitive; a scratch buffer takes it when not wanted.
      dnnl::memory gw_user;
      if (gw.defined()) gw_user = dnnl::memory(e->gw_user, eng, gw.raw_data());
      if (e->gw_out.needed || !gw.defined()) gwb = make_buffer(e->weights_pd.diff_weights_desc());
      std::unordered_map<int, dnnl::memory> args{
          {DNNL_ARG_SRC, x_mem},
          {DNNL_ARG_DIFF_DST, gy_mem},
          {DNNL_ARG_DIFF_WEIGHTS, gwb.mem ? gwb.mem : gw_user}};
      if (has_bias) {
        if (gb.defined()) {
          args.emplace(DNNL_ARG_DIFF_BIAS, dnnl::memory(e->gb_user, eng, gb.raw_data()));
        } else {
          gbb = make_buffer(e->gb_user);
          args.emplace(DNNL_ARG_DIFF_BIAS, gbb.mem);
        }
      }
      add_scratchpad(e->weights_pd, args, scratch);
      e->weights_prim.execute(s, args);
      if (gw.defined() && e->gw_out.needed) e->gw_out.run(gwb.mem, gw_user);
    }
    s.wait();
  });
  // A bias gradient without a bias in the forward cannot be asked for (conv2d checks it).
}

// ---- float64 reference loops ----

void forward_f64(const Conv2dGeometry& g, const Tensor& x_in, const Tensor& w_in,
                 const Tensor& bias, const Tensor& y) {
  const Tensor xc = x_in.contiguous(), wc = w_in.contiguous();
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  const double* x = xc.data_ptr<double>();
  const double* w = wc.data_ptr<double>();
  const double* b = bc.defined() ? bc.data_ptr<double>() : nullptr;
  double* out = y.data_ptr<double>();
  const std::int64_t cg = g.c / g.groups, og = g.o / g.groups;
  parallel_for(g.n * g.o, 4, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t n = r / g.o, o = r % g.o, c0 = (o / og) * cg;
      for (std::int64_t oh = 0; oh < g.oh; ++oh)
        for (std::int64_t ow = 0; ow < g.ow; ++ow) {
          double acc = b ? b[o] : 0.0;
          for (std::int64_t c = 0; c < cg; ++c)
            for (std::int64_t i = 0; i < g.kh; ++i) {
              const std::int64_t ih = oh * g.sh - g.ph + i * g.dh;
              if (ih < 0 || ih >= g.h) continue;
              for (std::int64_t j = 0; j < g.kw; ++j) {
                const std::int64_t iw = ow * g.sw - g.pw + j * g.dw;
                if (iw < 0 || iw >= g.w) continue;
                acc += x[((n * g.c + c0 + c) * g.h + ih) * g.w + iw] *
                       w[((o * cg + c) * g.kh + i) * g.kw + j];
              }
            }
          out[((n * g.o + o) * g.oh + oh) * g.ow + ow] = acc;
        }
    }
  });
}

void backward_f64(const Conv2dGeometry& g, const Tensor& gy_in, const Tensor& x_in,
                  const Tensor& w_in, const Tensor& gx, const Tensor& gw, const Tensor& gb) {
  // x is only given when gw or gb is wanted, w only when gx is.
  const Tensor gyc = gy_in.contiguous();
  const Tensor xc = x_in.defined() ? x_in.contiguous() : Tensor();
  const Tensor wc = w_in.defined() ? w_in.contiguous() : Tensor();
  const double* gy = gyc.data_ptr<double>();
  const double* x = xc.defined() ? xc.data_ptr<double>() : nullptr;
  const double* w = wc.defined() ? wc.data_ptr<double>() : nullptr;
  const std::int64_t cg = g.c / g.groups, og = g.o / g.groups;
  // Visits every (input, weight, output) triple of one output channel o and batch n.
  auto for_each_tap = [&](std::int64_t n, std::int64_t o, auto&& f) {
    const std::int64_t c0 = (o / og) * cg;
    for (std::int64_t oh = 0; oh < g.oh; ++oh)
      for (std::int64_t ow = 0; ow < g.ow; ++ow) {
        const double gv = gy[((n * g.o + o) * g.oh + oh) * g.ow + ow];
        for (std::int64_t c = 0; c < cg; ++c)
          for (std::int64_t i = 0; i < g.kh; ++i) {
            const std::int64_t ih = oh * g.sh - g.ph + i * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            for (std::int64_t j = 0; j < g.kw; ++j) {
              const std::int64_t iw = ow * g.sw - g.pw + j * g.dw;
              if (iw < 0 || iw >= g.w) continue;
              f(gv, ((n * g.c + c0 + c) * g.h + ih) * g.w + iw,
                ((o * cg + c) * g.kh + i) * g.kw + j);
            }
          }
      }
  };
  if (gx.defined()) {
    double* out = gx.data_ptr<double>();
    std::fill(out, out + gx.numel(), 0.0);
    parallel_for(g.n, 1, [&](std::int64_t n0, std::int64_t n1) {  // each n owns its gx slice
      for (std::int64_t n = n0; n < n1; ++n)
        for (std::int64_t o = 0; o < g.o; ++o)
          for_each_tap(n, o,
                       [&](double gv, std::int64_t xi, std::int64_t wi) { out[xi] += gv * w[wi]; });
    });
  }
  if (gw.defined()) {
    double* out = gw.data_ptr<double>();
    std::fill(out, out + gw.numel(), 0.0);
    parallel_for(g.o, 1, [&](std::int64_t o0, std::int64_t o1) {  // each o owns its gw slice
      for (std::int64_t o = o0; o < o1; ++o)
        for (std::int64_t n = 0; n < g.n; ++n)
          for_each_tap(n, o,
                       [&](double gv, std::int64_t xi, std::int64_t wi) { out[wi] += gv * x[xi]; });
    });
  }
  if (gb.defined()) {
    double* out = gb.data_ptr<double>();
    for (std::int64_t o = 0; o < g.o; ++o) {
      double acc = 0.0;
      for (std::int64_t n = 0; n < g.n; ++n) {
        const double* p = gy + (n * g.o + o) * g.oh * g.ow;
        for (std::int64_t i = 0; i < g.oh * g.ow; ++i) acc += p[i];
      }
      out[o] = acc;
    }
  }
}

void conv2d_forward_cpu(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                        const Tensor& bias, const Tensor& y,
                        std::shared_ptr<Conv2dForwardState>* state, bool keep_input,
                        bool keep_weights) {
  if (y.numel() == 0) return;
  if (y.dtype() == DType::Float64) {
    forward_f64(g, x, w, bias, y);
    return;
  }
  forward_f32(g, x, w, bias, y, state, keep_input, keep_weights);
}

void conv2d_backward_cpu(const Conv2dGeometry& g, const Tensor& gy, const Tensor& x,
                         const Tensor& w, const Conv2dForwardState* state, const Tensor& gx,
                         const Tensor& gw, const Tensor& gb) {
  if (gy.dtype() == DType::Float64 || gy.numel() == 0) {
    // Reference loops; an empty batch (nothing to sum) just zeroes the gradients.
    const bool f64 = gy.dtype() == DType::Float64;
    if (f64) {
      backward_f64(g, gy, x, w, gx, gw, gb);
    } else {
      for (const Tensor& t : {gx, gw, gb})
        if (t.defined()) Tensor(t).zero_();
    }
    return;
  }
  QGRAD_CHECK(state != nullptr, AutogradError,
              "conv2d: backward called without the state of the float32 forward");
  backward_f32(g, gy, x, w, *state, gx, gw, gb);
}

}  // namespace

Conv2dAlgorithms conv2d_cpu_algorithms(const Conv2dGeometry& g) {
  // Measured (process CPU time, 2 threads, batch 128, AVX-512) with oneDNN 2.6: Winograd wins
  // forward and backward data from 32->32 channels at 28x28 or 14x14 and 64->128 at 7x7, and
  // loses below 32 channels (16->32 at 28x28: 9.0 vs 5.6 ms forward) or on 32->32 at 7x7;
  // backward weights wins from 16 channels (16->16 at 28x28: 2.9 vs 4.0 ms).
  Conv2dAlgorithms a;
  const bool eligible = g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 &&
                        g.dw == 1 && g.groups == 1 && g.n >= 16;
  if (!eligible) return a;
  const std::int64_t narrow = std::min(g.c, g.o);
  const bool enough_work = g.c * g.o >= 64 * 64 || g.oh * g.ow >= 14 * 14;
  a.forward = a.backward_data = narrow >= 32 && enough_work;
  a.backward_weights = narrow >= 16;
  return a;
}

void register_conv_cpu_kernels(KernelRegistry& r) {
  r.table(kConv2dForwardKernels).define(DeviceType::CPU, &conv2d_forward_cpu, kFloatingDTypes);
  r.table(kConv2dBackwardKernels).define(DeviceType::CPU, &conv2d_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad

// FloatLinear: oneDNN float32 inner product on the previous layer's layout.
#include "deploy/float_inference/float_linear.h"

#include <array>
#include <sstream>

#include "core/error.h"
#include "deploy/common/relu_post_op.h"
#include "deploy/float_inference/float_dnnl.h"

namespace qgrad::deploy {

namespace fd = float_dnnl;
using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

// The offset of element (c, h, w) within an image of a 4-D descriptor whose images are dense
// (no padding; plain NCHW / NHWC or blocked with at most one block per dim, nChw16c with C a
// multiple of 16), in PyTorch's flatten order; empty for any other layout.
std::vector<std::int64_t> dense_image_offsets(const md& d) {
  const dnnl_memory_desc_t& c = d.data;
  if (c.format_kind != dnnl_blocked || c.offset0 != 0) return {};
  const dnnl_blocking_desc_t& b = c.format_desc.blocking;
  std::array<std::int64_t, 4> block{1, 1, 1, 1};
  for (int k = 0; k < b.inner_nblks; ++k) {
    if (block[b.inner_idxs[k]] != 1) return {};  // two blocks of one dim
    block[b.inner_idxs[k]] = b.inner_blks[k];
  }
  if (block[0] != 1) return {};
  std::int64_t image = 1;
  for (int i = 1; i < 4; ++i) {
    if (c.padded_dims[i] != c.dims[i]) return {};
    image *= c.dims[i];
  }
  if (b.strides[0] != image) return {};
  std::vector<std::int64_t> off;
  off.reserve(static_cast<std::size_t>(image));
  std::array<std::int64_t, 4> i{0, 0, 0, 0};
  for (i[1] = 0; i[1] < c.dims[1]; ++i[1])
    for (i[2] = 0; i[2] < c.dims[2]; ++i[2])
      for (i[3] = 0; i[3] < c.dims[3]; ++i[3]) {
        std::int64_t o = 0, inner = 0;
        for (int dim = 1; dim < 4; ++dim) o += i[dim] / block[dim] * b.strides[dim];
        for (int k = 0; k < b.inner_nblks; ++k)  // the inner block, row-major
          inner = inner * b.inner_blks[k] + i[b.inner_idxs[k]] % b.inner_blks[k];
        off.push_back(o + inner);
      }
  // A permutation of [0, image) only if the layout tiles the image exactly.
  std::vector<bool> seen(static_cast<std::size_t>(image), false);
  for (std::int64_t o : off) {
    if (o < 0 || o >= image || seen[static_cast<std::size_t>(o)]) return {};
    seen[static_cast<std::size_t>(o)] = true;
  }
  return off;
}

}  // namespace

FloatLinear::FloatLinear(FloatLinearSpec spec)
    : spec_(std::move(spec)),
      cache_(std::make_unique<FloatPrimitiveCache<FloatWeightedPrimitive>>()) {
  const FloatLinearSpec& s = spec_;
  const std::int64_t o = s.out_features, k = s.in_features;
  QGRAD_CHECK(o > 0 && k > 0, ValueError, "float linear: ", s.name, ": features ", k, " -> ", o,
              " must be positive");
  QGRAD_CHECK(static_cast<std::int64_t>(s.weight.size()) == o * k, ValueError,
              "float linear: ", s.name, ": ", s.weight.size(), " weights, expected ", o * k);
  QGRAD_CHECK(s.bias.empty() || static_cast<std::int64_t>(s.bias.size()) == o, ValueError,
              "float linear: ", s.name, ": ", s.bias.size(), " biases for ", o, " output features");
}

FloatLinear::~FloatLinear() = default;

std::string FloatLinear::describe() const {
  std::ostringstream os;
  os << spec_.name << ": linear " << spec_.in_features << "->" << spec_.out_features
     << (spec_.relu ? ", fused ReLU" : "");
  return os.str();
}

FloatActivation FloatLinear::forward(const FloatActivation& x) {
  const FloatLinearSpec& s = spec_;
  const md x_md = x.mem.get_desc();
  const dnnl::memory::dims in = x_md.dims();
  std::int64_t features = 1;
  for (std::size_t d = 1; d < in.size(); ++d) features *= in[d];
  QGRAD_CHECK((in.size() == 2 || in.size() == 4) && features == s.in_features, ShapeError,
              "float linear: ", s.name, ": input must be [N, ", s.in_features,
              "] or [N, C, H, W] with C*H*W = ", s.in_features);
  FloatWeightedPrimitive& e = cache_->get(x_md, [&] {
    return fd::guarded(describe(), [&] {
      const std::int64_t o = s.out_features, k = s.in_features;
      // A dense image batch is read as the matrix it is, the weight's columns moved to its order.
      const std::vector<std::int64_t> offsets =
          in.size() == 4 ? dense_image_offsets(x_md) : std::vector<std::int64_t>{};
      const bool flat = !offsets.empty(), image = in.size() == 4 && !flat;
      std::vector<float> permuted;
      if (flat) {
        permuted.resize(s.weight.size());
        for (std::int64_t oo = 0; oo < o; ++oo)
          for (std::int64_t i = 0; i < k; ++i) permuted[oo * k + offsets[i]] = s.weight[oo * k + i];
      }
      const dnnl::memory::dims wdims =
          image ? dnnl::memory::dims{o, in[1], in[2], in[3]} : dnnl::memory::dims{o, k};
      const md w_any(wdims, dt::f32, tag::any), b_md({o}, dt::f32, tag::x),
          dst_any({in[0], o}, dt::f32, tag::any);
      dnnl::post_ops po;
      if (s.relu) append_relu(po);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      auto make_pd = [&](const md& src) {
        const dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, src, w_any,
                                                  b_md, dst_any);
        return dnnl::inner_product_forward::primitive_desc(d, attr, fd::engine());
      };
      // The input as it is laid out; a layout the inner product cannot pair with its weights
      // gets oneDNN's choice (and a reorder per call).
      dnnl::inner_product_forward::primitive_desc pd;
      try {
        pd = make_pd(flat ? md({in[0], k}, dt::f32, tag::ab) : x_md);
      } catch (const dnnl::error&) {
        if (flat) throw;
        pd = make_pd(md(in, dt::f32, tag::any));
      }
      FloatWeightedPrimitive n;
      n.prim = dnnl::inner_product_forward(pd);
      n.src_md = pd.src_desc();
      n.view_input = flat;
      n.dst_md = pd.dst_desc();
      n.impl = pd.impl_info_str();
      const md w_user(wdims, dt::f32, image ? tag::oihw : tag::oi);
      n.weights = fd::weights_memory(w_user, flat ? permuted : s.weight, pd.weights_desc());
      n.bias = fd::bias_memory(b_md, s.bias);
      return n;
    });
  });
  return fd::guarded(describe(), [&] {
    const dnnl::memory dst(e.dst_md, fd::engine());
    fd::execute_weighted(e, x.mem, dst);
    impl_info_ = e.impl;
    return FloatActivation{dst, true};
  });
}

}  // namespace qgrad::deploy

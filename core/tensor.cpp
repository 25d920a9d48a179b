// Tensor handle: metadata, views (with their backward rules), copies, in-place fill/copy and the
// autograd entry points.
#include "core/tensor.h"

#include <algorithm>
#include <numeric>

#include "core/autograd/engine.h"
#include "core/autograd/function.h"
#include "core/autograd/grad_arith.h"
#include "core/copy.h"
#include "core/factory.h"

namespace qgrad {

TensorImpl::TensorImpl() = default;
TensorImpl::TensorImpl(std::shared_ptr<Storage> s, std::int64_t off, Shape sh, Shape st, DType dt)
    : storage(std::move(s)), offset(off), shape(std::move(sh)), strides(std::move(st)), dtype(dt) {}
TensorImpl::~TensorImpl() = default;

AutogradMeta& TensorImpl::autograd_meta() {
  if (!autograd) autograd = std::make_unique<AutogradMeta>();
  return *autograd;
}

void Tensor::check_defined(const char* op) const {
  QGRAD_CHECK(impl_ != nullptr, ValueError, op, ": called on an undefined tensor");
}

void Tensor::check_dtype_for_access(DType requested) const {
  check_defined("data_ptr");
  QGRAD_CHECK(requested == dtype(), DTypeError, "data_ptr: requested ", dtype_name(requested),
              " but the tensor is ", dtype_name(dtype()));
}

const Shape& Tensor::shape() const {
  check_defined("shape");
  return impl_->shape;
}
const Shape& Tensor::strides() const {
  check_defined("strides");
  return impl_->strides;
}
std::int64_t Tensor::size(std::int64_t d) const {
  QGRAD_CHECK(dim() > 0, IndexError, "size: dimension ", d, " requested but the tensor is 0-d");
  return shape()[wrap_dim(d, dim(), "size")];
}
std::int64_t Tensor::stride(std::int64_t d) const {
  QGRAD_CHECK(dim() > 0, IndexError, "stride: dimension ", d, " requested but the tensor is 0-d");
  return strides()[wrap_dim(d, dim(), "stride")];
}
std::int64_t Tensor::dim() const {
  return static_cast<std::int64_t>(shape().size());
}
std::int64_t Tensor::numel() const {
  return numel_of(shape());
}
DType Tensor::dtype() const {
  check_defined("dtype");
  return impl_->dtype;
}
Device Tensor::device() const {
  check_defined("device");
  return impl_->storage->device();
}
std::int64_t Tensor::storage_offset() const {
  check_defined("storage_offset");
  return impl_->offset;
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // no element to be out of place (as PyTorch)
  const Shape& sh = shape();
  const Shape& st = strides();
  std::int64_t expected = 1;
  for (std::size_t i = sh.size(); i-- > 0;) {
    if (sh[i] == 1) continue;
    if (st[i] != expected) return false;
    expected *= sh[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  check_defined("raw_data");
  auto* base = static_cast<unsigned char*>(impl_->storage->data());
  if (!base) return nullptr;
  return base + impl_->offset * static_cast<std::int64_t>(element_size());
}

void Tensor::check_item() const {
  check_defined("item");
  QGRAD_CHECK(numel() == 1, ValueError, "item: expected a tensor with one element, got shape ",
              shape());
}

double Tensor::item_double() const {
  check_item();
  NoGradGuard no_grad;  // reading a value records nothing
  Tensor c = device().is_cpu() ? *this : to(kCPU);
  return QGRAD_DISPATCH_ALL(c.dtype(), "item", [&] {
    return static_cast<double>(*static_cast<const scalar_t*>(c.raw_data()));
  });
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  check_defined("to_vector");
  NoGradGuard no_grad;  // reading values records nothing
  Tensor c = device().is_cpu() ? *this : to(kCPU);
  if (c.dtype() != dtype_v<T> || !c.is_contiguous()) c = c.to(dtype_v<T>).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<std::int8_t> Tensor::to_vector<std::int8_t>() const;
template std::vector<std::uint8_t> Tensor::to_vector<std::uint8_t>() const;
template std::vector<std::int16_t> Tensor::to_vector<std::int16_t>() const;
template std::vector<std::int32_t> Tensor::to_vector<std::int32_t>() const;
template std::vector<std::int64_t> Tensor::to_vector<std::int64_t>() const;

Tensor make_view(const Tensor& base, Shape shape, Shape strides, std::int64_t offset) {
  auto impl = std::make_shared<TensorImpl>(base.impl()->storage, offset, std::move(shape),
                                           std::move(strides), base.dtype());
  return Tensor(std::move(impl));
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (a.impl()->storage != b.impl()->storage || a.numel() == 0 || b.numel() == 0) return false;
  // The byte ranges [first, last] each view touches (strides are never negative).
  auto first = [](const Tensor& t) {
    return t.storage_offset() * static_cast<std::int64_t>(t.element_size());
  };
  auto last = [](const Tensor& t) {
    std::int64_t e = t.storage_offset();
    for (std::int64_t d = 0; d < t.dim(); ++d) e += (t.shape()[d] - 1) * t.strides()[d];
    return (e + 1) * static_cast<std::int64_t>(t.element_size()) - 1;
  };
  return first(a) <= last(b) && first(b) <= last(a);
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  QGRAD_CHECK(a.defined() && b.defined(), ValueError, op, ": undefined tensor argument");
  QGRAD_CHECK(a.device() == b.device(), DeviceError, op,
              ": expected all tensors on the same device, got ", a.device(), " (shape ", a.shape(),
              ") and ", b.device(), " (shape ", b.shape(), ")");
}

// ---------------------------------------------------------------------------------------------
// Views

namespace {

Shape infer_shape(const Shape& requested, std::int64_t numel, const char* op, const Shape& from) {
  Shape out = requested;
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      QGRAD_CHECK(infer < 0, ShapeError, op, ": only one dimension can be -1, got ", requested);
      infer = static_cast<int>(i);
    } else {
      QGRAD_CHECK(out[i] >= 0, ShapeError, op, ": invalid shape ", requested);
      // A product past int64 cannot match any tensor's element count.
      QGRAD_CHECK(!__builtin_mul_overflow(known, out[i], &known), ShapeError, op, ": shape ",
                  requested, " is invalid for input of shape ", from, " (too many elements)");
    }
  }
  if (infer >= 0) {
    QGRAD_CHECK(known != 0 && numel % known == 0, ShapeError, op, ": shape ", requested,
                " is invalid for input of shape ", from);
    out[infer] = numel / known;
  }
  QGRAD_CHECK(numel_of(out) == numel, ShapeError, op, ": shape ", requested,
              " is invalid for input of shape ", from, " (", numel, " elements)");
  return out;
}

// Strides for viewing (shape, strides) as new_shape without copying; empty if impossible.
// Follows the classic algorithm of grouping dims that are contiguous with each other.
bool view_strides(const Shape& shape, const Shape& strides, const Shape& new_shape, Shape& out) {
  out.assign(new_shape.size(), 0);
  if (numel_of(shape) <= 1) {
    out = contiguous_strides(new_shape);
    return true;
  }
  std::int64_t view_d = static_cast<std::int64_t>(new_shape.size()) - 1;
  std::int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  std::int64_t tensor_numel = 1, view_numel = 1;
  for (std::int64_t d = static_cast<std::int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::view(const Shape& new_shape_req) const {
  check_defined("view");
  Shape new_shape = infer_shape(new_shape_req, numel(), "view", shape());
  Shape st;
  QGRAD_CHECK(view_strides(shape(), strides(), new_shape, st), ShapeError, "view: shape ",
              new_shape, " is not compatible with the input's shape ", shape(), " and strides ",
              strides(), " (use reshape(), which copies when needed)");
  Tensor out = make_view(*this, new_shape, st, storage_offset());
  Shape in_shape = shape();
  record("ViewBackward", {*this}, {&out},
         [in_shape](const TensorList& g) { return TensorList{g[0].reshape(in_shape)}; });
  return out;
}

Tensor Tensor::reshape(const Shape& new_shape_req) const {
  check_defined("reshape");
  Shape new_shape = infer_shape(new_shape_req, numel(), "reshape", shape());
  Shape st;
  if (view_strides(shape(), strides(), new_shape, st)) return view(new_shape);
  return contiguous().view(new_shape);
}

Tensor Tensor::permute(const Shape& dims) const {
  check_defined("permute");
  const std::int64_t n = dim();
  QGRAD_CHECK(static_cast<std::int64_t>(dims.size()) == n, ShapeError, "permute: got ", dims.size(),
              " dims ", dims, " for a tensor of shape ", shape());
  Shape sh(n), st(n), inverse(n);
  std::vector<bool> seen(n, false);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t d = wrap_dim(dims[i], n, "permute");
    QGRAD_CHECK(!seen[d], ShapeError, "permute: repeated dim in ", dims);
    seen[d] = true;
    sh[i] = shape()[d];
    st[i] = strides()[d];
    inverse[d] = i;
  }
  Tensor out = make_view(*this, sh, st, storage_offset());
  record("PermuteBackward", {*this}, {&out},
         [inverse](const TensorList& g) { return TensorList{g[0].permute(inverse)}; });
  return out;
}

Tensor Tensor::transpose(std::int64_t d0, std::int64_t d1) const {
  check_defined("transpose");
  const std::int64_t a = wrap_dim(d0, dim(), "transpose");
  const std::int64_t b = wrap_dim(d1, dim(), "transpose");
  if (dim() == 0) return *this;  // transpose(0, 0) / (-1, -1) of a 0-d tensor, as PyTorch
  Shape dims(dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[a], dims[b]);
  return permute(dims);
}

Tensor Tensor::t() const {
  check_defined("t");
  QGRAD_CHECK(dim() <= 2, ShapeError, "t: expected a tensor with <= 2 dims, got shape ", shape());
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::squeeze() const {
  check_defined("squeeze");
  Shape sh;
  for (auto s : shape())
    if (s != 1) sh.push_back(s);
  return reshape(sh);
}

Tensor Tensor::squeeze(std::int64_t d) const {
  check_defined("squeeze");
  d = wrap_dim(d, dim(), "squeeze");
  if (dim() == 0 || shape()[d] != 1) return *this;
  Shape sh = shape();
  sh.erase(sh.begin() + d);
  return reshape(sh);
}

Tensor Tensor::unsqueeze(std::int64_t d) const {
  check_defined("unsqueeze");
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape sh = shape(), st = strides();
  std::int64_t new_stride = d < dim() ? sh[d] * st[d] : 1;
  sh.insert(sh.begin() + d, 1);
  st.insert(st.begin() + d, new_stride);
  Tensor out = make_view(*this, sh, st, storage_offset());
  Shape in_shape = shape();
  record("UnsqueezeBackward", {*this}, {&out},
         [in_shape](const TensorList& g) { return TensorList{g[0].reshape(in_shape)}; });
  return out;
}

Tensor Tensor::slice(std::int64_t d, std::int64_t start, std::int64_t end,
                     std::int64_t step) const {
  check_defined("slice");
  QGRAD_CHECK(dim() > 0, ShapeError, "slice: cannot slice a 0-d tensor");
  d = wrap_dim(d, dim(), "slice");
  QGRAD_CHECK(step > 0, ValueError, "slice: step must be positive, got ", step);
  const std::int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<std::int64_t>(start, 0, n);
  end = std::clamp<std::int64_t>(end, start, n);
  Shape sh = shape(), st = strides();
  sh[d] = (end - start + step - 1) / step;
  st[d] *= step;
  Tensor out = make_view(*this, sh, st, storage_offset() + start * strides()[d]);
  Shape in_shape = shape();
  DType dt = dtype();
  Device dev = device();
  record("SliceBackward", {*this}, {&out}, [=](const TensorList& g) {
    Tensor gi = zeros(in_shape, TensorOptions().dtype(dt).device(dev));
    gi.slice(d, start, end, step).copy_(g[0]);
    return TensorList{gi};
  });
  return out;
}

Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
  check_defined("narrow");
  QGRAD_CHECK(dim() > 0, ShapeError, "narrow: cannot narrow a 0-d tensor");
  std::int64_t dd = wrap_dim(d, dim(), "narrow");
  const std::int64_t n = shape()[dd];
  if (start < 0) start += n;
  QGRAD_CHECK(start >= 0 && length >= 0 && start + length <= n, IndexError, "narrow: start ", start,
              " and length ", length, " exceed dimension ", dd, " of size ", n, " (shape ", shape(),
              ")");
  return slice(dd, start, start + length, 1);
}

Tensor Tensor::select(std::int64_t d, std::int64_t index) const {
  check_defined("select");
  QGRAD_CHECK(dim() > 0, ShapeError, "select: cannot select from a 0-d tensor");
  d = wrap_dim(d, dim(), "select");
  const std::int64_t n = shape()[d];
  QGRAD_CHECK(index >= -n && index < n, IndexError, "select: index ", index,
              " out of range for dimension ", d, " of size ", n);
  if (index < 0) index += n;
  return narrow(d, index, 1).squeeze(d);
}

Tensor Tensor::expand(const Shape& new_shape) const {
  check_defined("expand");
  const std::int64_t nd = static_cast<std::int64_t>(new_shape.size());
  QGRAD_CHECK(nd >= dim(), ShapeError, "expand: target shape ", new_shape,
              " has fewer dims than the input shape ", shape());
  Shape sh(nd), st(nd);
  for (std::int64_t i = nd - 1; i >= 0; --i) {
    std::int64_t j = i - (nd - dim());
    std::int64_t target = new_shape[i];
    if (j >= 0) {
      std::int64_t cur = shape()[j];
      if (target == -1) target = cur;
      QGRAD_CHECK(target >= 0, ShapeError, "expand: invalid size ", new_shape[i], " at dim ", i,
                  " of target shape ", new_shape, " (input shape ", shape(), ")");
      QGRAD_CHECK(cur == target || cur == 1, ShapeError, "expand: the input shape ", shape(),
                  " cannot be expanded to ", new_shape, " (dim ", i, ")");
      sh[i] = target;
      st[i] = cur == target ? strides()[j] : 0;
    } else {
      QGRAD_CHECK(target >= 0, ShapeError, "expand: size ", target, " (dim ", i,
                  ") is not allowed for a new leading dim in ", new_shape, " (input shape ",
                  shape(), ")");
      sh[i] = target;
      st[i] = 0;
    }
  }
  if (sh == shape()) return *this;
  Tensor out = make_view(*this, sh, st, storage_offset());
  Shape in_shape = shape();
  record("ExpandBackward", {*this}, {&out},
         [in_shape](const TensorList& g) { return TensorList{sum_to_shape(g[0], in_shape)}; });
  return out;
}

Tensor Tensor::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
  check_defined("flatten");
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  QGRAD_CHECK(start_dim <= end_dim, ValueError, "flatten: start_dim ", start_dim,
              " is after end_dim ", end_dim);
  Shape sh(shape().begin(), shape().begin() + start_dim);
  std::int64_t m = 1;
  for (std::int64_t i = start_dim; i <= end_dim; ++i) m *= shape()[i];
  sh.push_back(m);
  sh.insert(sh.end(), shape().begin() + end_dim + 1, shape().end());
  return reshape(sh);
}

Tensor Tensor::contiguous() const {
  check_defined("contiguous");
  if (is_contiguous()) return *this;
  return clone();
}

// ---------------------------------------------------------------------------------------------
// Copies

Tensor Tensor::clone() const {
  check_defined("clone");
  Tensor out = empty(shape(), TensorOptions().dtype(dtype()).device(device()));
  copy_into(*this, out);
  record("CloneBackward", {*this}, {&out}, [](const TensorList& g) { return TensorList{g[0]}; });
  return out;
}

Tensor Tensor::to(DType dt) const {
  check_defined("to");
  if (dt == dtype()) return *this;
  Tensor out = empty(shape(), TensorOptions().dtype(dt).device(device()));
  copy_into(*this, out);
  DType in_dt = dtype();
  if (is_floating(dt))
    record("ToCopyBackward", {*this}, {&out},
           [in_dt](const TensorList& g) { return TensorList{g[0].to(in_dt)}; });
  return out;
}

Tensor Tensor::to(Device dev) const {
  check_defined("to");
  if (dev == device()) return *this;
  check_device_available("to", dev);
  Tensor src = contiguous();
  Tensor out = empty(shape(), TensorOptions().dtype(dtype()).device(dev));
  copy_between_devices(src, out);
  Device in_dev = device();
  record("ToDeviceBackward", {*this}, {&out},
         [in_dev](const TensorList& g) { return TensorList{g[0].to(in_dev)}; });
  return out;
}

Tensor& Tensor::fill_(double value) {
  check_defined("fill_");
  fill_tensor(*this, value);
  bump_version();
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_defined("copy_");
  check_same_device("copy_", *this, src);
  for (std::int64_t d = 0; d < dim(); ++d)
    QGRAD_CHECK(strides()[d] != 0 || shape()[d] <= 1, ValueError, "copy_: the destination (shape ",
                shape(), ", strides ", strides(),
                ") has several elements sharing one memory location (an expanded view); "
                "clone() it first");
  Shape b = broadcast_shapes(src.shape(), shape(), "copy_");
  QGRAD_CHECK(b == shape(), ShapeError, "copy_: source shape ", src.shape(),
              " cannot be broadcast to destination shape ", shape());
  NoGradGuard no_grad;
  Tensor s = src.shape() != shape() ? src.expand(shape()) : src;
  // A source that shares memory with the destination in another layout (x.copy_(x.t()),
  // shifted slices) would be overwritten while it is read: copy it out first.
  if (may_overlap(s, *this) &&
      !(s.storage_offset() == storage_offset() && s.strides() == strides()))
    s = s.clone();
  copy_into(s, *this);
  bump_version();
  return *this;
}

// ---------------------------------------------------------------------------------------------
// Autograd

bool Tensor::requires_grad() const {
  check_defined("requires_grad");
  return impl_->autograd && (impl_->autograd->requires_grad || impl_->autograd->grad_fn);
}

Tensor& Tensor::set_requires_grad(bool rg) {
  check_defined("set_requires_grad");
  QGRAD_CHECK(is_leaf(), AutogradError,
              "set_requires_grad: only leaf tensors can change requires_grad (use detach() "
              "for a non-leaf)");
  QGRAD_CHECK(!rg || is_floating(dtype()), DTypeError,
              "set_requires_grad: only floating tensors can require gradients, got ",
              dtype_name(dtype()));
  if (rg || impl_->autograd) impl_->autograd_meta().requires_grad = rg;
  return *this;
}

Tensor Tensor::grad() const {
  check_defined("grad");
  return impl_->autograd ? impl_->autograd->grad : Tensor();
}

void Tensor::set_grad(const Tensor& g) const {
  check_defined("set_grad");
  if (g.defined()) {
    QGRAD_CHECK(g.shape() == shape(), ShapeError, "set_grad: gradient shape ", g.shape(),
                " does not match the tensor shape ", shape());
  }
  impl_->autograd_meta().grad = g;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> kNone;
  check_defined("grad_fn");
  return impl_->autograd ? impl_->autograd->grad_fn : kNone;
}

std::uint32_t Tensor::output_nr() const {
  return impl_ && impl_->autograd ? impl_->autograd->output_nr : 0;
}

bool Tensor::is_leaf() const {
  return grad_fn() == nullptr;
}

void Tensor::retain_grad() const {
  check_defined("retain_grad");
  QGRAD_CHECK(requires_grad(), AutogradError,
              "retain_grad: can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf()) return;  // leaves keep .grad anyway
  AutogradMeta& m = impl_->autograd_meta();
  if (m.retains_grad) return;
  m.retains_grad = true;
  m.grad_fn->retained_grads.emplace_back(m.output_nr, impl_);
}

std::uint64_t Tensor::register_post_accumulate_grad_hook(
    std::function<void(const Tensor&)> hook) const {
  check_defined("register_post_accumulate_grad_hook");
  QGRAD_CHECK(is_leaf() && requires_grad(), AutogradError,
              "register_post_accumulate_grad_hook: only leaves that require grad accumulate a "
              "gradient");
  QGRAD_CHECK(hook != nullptr, ValueError, "register_post_accumulate_grad_hook: empty hook");
  AutogradMeta& m = impl_->autograd_meta();
  const std::uint64_t id = m.next_hook_id++;
  m.post_accumulate_grad_hooks.emplace_back(id, std::move(hook));
  return id;
}

void Tensor::remove_post_accumulate_grad_hook(std::uint64_t id) const {
  check_defined("remove_post_accumulate_grad_hook");
  if (!impl_->autograd) return;
  auto& hooks = impl_->autograd->post_accumulate_grad_hooks;
  for (auto it = hooks.begin(); it != hooks.end(); ++it)
    if (it->first == id) {
      hooks.erase(it);
      return;
    }
}

bool Tensor::retains_grad() const {
  check_defined("retains_grad");
  return impl_->autograd && impl_->autograd->retains_grad && !is_leaf();
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  check_defined("backward");
  QGRAD_CHECK(requires_grad(), AutogradError,
              "backward: the tensor does not require grad and has no grad_fn");
  Tensor g = gradient;
  if (!g.defined()) {
    QGRAD_CHECK(numel() == 1, AutogradError,
                "backward: grad can be implicitly created only for scalar outputs, got shape ",
                shape(), "; pass a gradient");
    g = ones(shape(), TensorOptions().dtype(dtype()).device(device()));
  } else {
    QGRAD_CHECK(g.shape() == shape(), ShapeError, "backward: gradient shape ", g.shape(),
                " does not match the output shape ", shape());
    check_same_device("backward", *this, g);
  }
  run_backward({*this}, {g}, retain_graph);
}

Tensor Tensor::detach() const {
  check_defined("detach");
  return make_view(*this, shape(), strides(), storage_offset());
}

std::uint64_t Tensor::version() const {
  check_defined("version");
  return impl_->storage->version();
}

void Tensor::bump_version() const {
  check_defined("bump_version");
  impl_->storage->bump_version();
}

}  // namespace qgrad

/// @file
/// Tensor: a cheap, copyable handle to a TensorImpl (shared storage, element offset, shape,
/// strides, dtype, device, autograd metadata). Copying a handle aliases; copying data is explicit
/// (clone, contiguous, to). View operations (reshape, permute, narrow, expand, ...) share storage
/// and are differentiable. Math lives in ops/; creation functions in core/factory.h.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "core/storage.h"

namespace qgrad {

class Node;
struct AutogradMeta;

/// The shared state behind Tensor handles: storage, element offset, shape, strides, dtype and
/// autograd metadata.
struct TensorImpl {
  std::shared_ptr<Storage> storage;        ///< the bytes, shared by every view of them
  std::int64_t offset = 0;                 ///< in elements
  Shape shape;                             ///< size of each dimension
  Shape strides;                           ///< in elements
  DType dtype = DType::Float32;            ///< element type
  std::unique_ptr<AutogradMeta> autograd;  ///< null for plain tensors

  /// An undefined tensor's state (no storage).
  TensorImpl();
  /// A view of `s` starting at element `off`, with shape `sh`, strides `st` (in elements) and dtype
  /// `dt`.
  TensorImpl(std::shared_ptr<Storage> s, std::int64_t off, Shape sh, Shape st, DType dt);
  /// Releases the autograd metadata and this reference to the storage.
  ~TensorImpl();
  AutogradMeta& autograd_meta();  ///< creates on first use
};

/// A cheap, copyable handle to a TensorImpl: copying the handle aliases the data (see the file
/// comment).
class Tensor {
 public:
  /// An undefined tensor (defined() is false).
  Tensor() = default;
  /// A handle to an existing TensorImpl.
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  /// True when this handle refers to a tensor (false for a default-constructed one).
  bool defined() const { return impl_ != nullptr; }
  /// The TensorImpl behind this handle (null when undefined).
  TensorImpl* impl() const { return impl_.get(); }
  /// The shared pointer to the TensorImpl behind this handle.
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  /// True when both handles refer to the same TensorImpl (not merely equal values).
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // ---- metadata ----
  /// The size of each dimension.
  const Shape& shape() const;
  /// The stride of each dimension, in elements.
  const Shape& strides() const;
  /// The size of dimension `dim` (negative counts from the end).
  std::int64_t size(std::int64_t dim) const;
  /// The stride of dimension `dim` in elements (negative counts from the end).
  std::int64_t stride(std::int64_t dim) const;
  /// The number of dimensions (0 for a scalar).
  std::int64_t dim() const;
  /// The number of elements (the product of the dims).
  std::int64_t numel() const;
  /// The element type.
  DType dtype() const;
  /// The device the storage lives on.
  Device device() const;
  /// The offset of element 0 into the storage, in elements.
  std::int64_t storage_offset() const;
  /// True when the elements are laid out row-major without gaps (size-1 dims and empty tensors
  /// ignore strides).
  bool is_contiguous() const;
  /// The size of one element in bytes.
  std::size_t element_size() const { return dtype_size(dtype()); }

  // ---- data access (CPU pointers; device pointers on CUDA) ----
  void* raw_data() const;  ///< address of element 0 of this view
  /// Typed address of element 0 of this view; throws DTypeError when T is not the tensor's dtype.
  template <typename T>
  T* data_ptr() const {
    check_dtype_for_access(dtype_v<T>);
    return static_cast<T*>(raw_data());
  }
  /// Value of a one-element tensor converted to T. Exact for the seven dtype types (an int64
  /// above 2^53 survives); float -> int conversion clamps to T's range and maps NaN to 0, as
  /// to(dtype) does.
  template <typename T = double>
  T item() const {
    if constexpr (has_dtype_v<T>) {
      check_item();
      return to_vector<T>()[0];
    } else {
      return static_cast<T>(item_double());
    }
  }
  /// Value of a one-element tensor as a double.
  double item_double() const;
  /// All elements in row-major order, converted to T (CPU copy).
  template <typename T>
  std::vector<T> to_vector() const;

  // ---- views (share storage; differentiable) ----
  Tensor view(const Shape& shape) const;     ///< requires compatible strides; -1 infers a dim
  Tensor reshape(const Shape& shape) const;  ///< view when possible, else copy
  /// View with the dimensions reordered: dimension i of the result is dimension dims[i].
  Tensor permute(const Shape& dims) const;
  /// View with dimensions `d0` and `d1` swapped.
  Tensor transpose(std::int64_t d0, std::int64_t d1) const;
  Tensor t() const;  ///< 2-D transpose
  /// View without the size-1 dimensions.
  Tensor squeeze() const;
  /// View without dimension `dim` when its size is 1 (otherwise the same shape).
  Tensor squeeze(std::int64_t dim) const;
  /// View with a new size-1 dimension inserted at `dim`.
  Tensor unsqueeze(std::int64_t dim) const;
  /// View of `length` elements of dimension `dim` starting at `start`.
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  /// View of the elements start, start + step, ... before `end` along `dim` (Python slicing).
  Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1) const;
  /// View of index `index` of dimension `dim`, with that dimension removed.
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor expand(const Shape& shape) const;  ///< broadcast view, stride 0 on expanded dims
  /// Merges dimensions start_dim..end_dim into one (a view when possible, else a copy).
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  Tensor contiguous() const;  ///< self when already contiguous

  // ---- copies (differentiable) ----
  /// A copy of the data into new contiguous storage (differentiable).
  Tensor clone() const;
  /// Self when the dtype already matches. Float -> integer truncates toward zero, clamps to the
  /// target's range and maps NaN to 0 (PyTorch leaves these cases undefined); integer -> narrower
  /// integer wraps around, as in PyTorch.
  Tensor to(DType dtype) const;
  /// A copy on `device`; self when it is already there.
  Tensor to(Device device) const;

  // ---- in-place (not recorded by autograd; bump the version counter) ----
  /// Sets every element to `value`.
  Tensor& fill_(double value);
  /// Sets every element to 0.
  Tensor& zero_() { return fill_(0.0); }
  /// Broadcasts src, converts dtype; src may overlap *this (it is then read before writing).
  /// The destination must not be an expanded view (several elements at one address).
  Tensor& copy_(const Tensor& src);

  // ---- autograd ----
  /// True when autograd tracks this tensor (a leaf with requires_grad set, or an op's output with a
  /// grad_fn).
  bool requires_grad() const;
  Tensor& set_requires_grad(bool requires_grad = true);  ///< leaves only
  /// The accumulated gradient (undefined until a backward pass writes one).
  Tensor grad() const;
  /// Replaces the gradient; `g` must have this tensor's shape (undefined clears it).
  void set_grad(const Tensor& g) const;
  /// The autograd node that produced this tensor (null for leaves).
  const std::shared_ptr<Node>& grad_fn() const;
  /// Which output of grad_fn() this tensor is.
  std::uint32_t output_nr() const;
  /// True when the tensor has no grad_fn (it was not produced by a recorded op).
  bool is_leaf() const;
  /// Makes this interior tensor keep its gradient in .grad() after backward() or autograd::grad
  /// (later passes add to it, as for leaves), like torch's retain_grad(). No-op on a leaf;
  /// AutogradError on a tensor that does not require grad.
  void retain_grad() const;
  bool retains_grad() const;  ///< true after retain_grad() on a non-leaf
  /// Calls `hook` with this leaf each time backward has accumulated a gradient into its .grad()
  /// (torch's register_post_accumulate_grad_hook): what data-parallel training starts its
  /// all-reduce from while backward still runs. Returns an id for
  /// remove_post_accumulate_grad_hook. Leaves that require grad only.
  std::uint64_t register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  /// Removes the hook registered under `id` (no-op when it is gone already).
  void remove_post_accumulate_grad_hook(std::uint64_t id) const;
  /// Backpropagates from this tensor. A scalar may omit `gradient` (implicitly 1).
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  Tensor detach() const;  ///< shares storage, no autograd history
  /// The version counter of the storage, bumped by every in-place write.
  std::uint64_t version() const;
  /// Bumps the storage's version counter (for in-place writes done outside Tensor's methods).
  void bump_version() const;

  std::string str() const;  ///< PyTorch-like printout

 private:
  void check_defined(const char* op) const;
  void check_dtype_for_access(DType requested) const;
  void check_item() const;  ///< defined, one element
  std::shared_ptr<TensorImpl> impl_;
};

/// Writes t.str().
std::ostream& operator<<(std::ostream& os, const Tensor& t);

/// Autograd state of a tensor, created on first use.
struct AutogradMeta {
  bool requires_grad = false;            ///< set on leaves that accumulate a gradient
  bool retains_grad = false;             ///< set by Tensor::retain_grad() on a non-leaf
  Tensor grad;                           ///< the accumulated gradient
  std::shared_ptr<Node> grad_fn;         ///< the node that produced the tensor (null for leaves)
  std::uint32_t output_nr = 0;           ///< which output of grad_fn the tensor is
  std::weak_ptr<Node> grad_accumulator;  ///< leaves: the AccumulateGrad node, created lazily
  /// Leaves: hooks run after each accumulation into grad, by id (register order).
  std::vector<std::pair<std::uint64_t, std::function<void(const Tensor&)>>>
      post_accumulate_grad_hooks;
  std::uint64_t next_hook_id = 0;  ///< the id the next hook gets
};

/// Makes a new tensor handle that views `base`'s storage with other geometry (no autograd).
Tensor make_view(const Tensor& base, Shape shape, Shape strides, std::int64_t offset);
/// True when the memory ranges of two views of one storage intersect (a conservative test).
bool may_overlap(const Tensor& a, const Tensor& b);
/// Checks that all tensors are defined and on one device; names `op` in the error.
void check_same_device(const char* op, const Tensor& a, const Tensor& b);

/// @cond
extern template std::vector<float> Tensor::to_vector<float>() const;
extern template std::vector<double> Tensor::to_vector<double>() const;
extern template std::vector<std::int8_t> Tensor::to_vector<std::int8_t>() const;
extern template std::vector<std::uint8_t> Tensor::to_vector<std::uint8_t>() const;
extern template std::vector<std::int16_t> Tensor::to_vector<std::int16_t>() const;
extern template std::vector<std::int32_t> Tensor::to_vector<std::int32_t>() const;
extern template std::vector<std::int64_t> Tensor::to_vector<std::int64_t>() const;
/// @endcond

}  // namespace qgrad

// Tensor: a cheap, copyable handle to a TensorImpl (shared storage, element offset, shape,
// strides, dtype, device, autograd metadata). Copying a handle aliases; copying data is explicit
// (clone, contiguous, to). View operations (reshape, permute, narrow, expand, ...) share storage
// and are differentiable. Math lives in ops/; creation functions in core/factory.h.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "core/storage.h"

namespace qgrad {

class Node;
struct AutogradMeta;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  std::int64_t offset = 0;  // in elements
  Shape shape;
  Shape strides;  // in elements
  DType dtype = DType::Float32;
  std::unique_ptr<AutogradMeta> autograd;  // null for plain tensors

  TensorImpl();
  TensorImpl(std::shared_ptr<Storage> s, std::int64_t off, Shape sh, Shape st, DType dt);
  ~TensorImpl();
  AutogradMeta& autograd_meta();  // creates on first use
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // ---- metadata ----
  const Shape& shape() const;
  const Shape& strides() const;
  std::int64_t size(std::int64_t dim) const;
  std::int64_t stride(std::int64_t dim) const;
  std::int64_t dim() const;
  std::int64_t numel() const;
  DType dtype() const;
  Device device() const;
  std::int64_t storage_offset() const;
  bool is_contiguous() const;
  std::size_t element_size() const { return dtype_size(dtype()); }

  // ---- data access (CPU pointers; device pointers on CUDA) ----
  void* raw_data() const;  // address of element 0 of this view
  template <typename T>
  T* data_ptr() const {
    check_dtype_for_access(dtype_v<T>);
    return static_cast<T*>(raw_data());
  }
  // Value of a one-element tensor converted to T. Exact for the seven dtype types (an int64
  // above 2^53 survives); float -> int conversion clamps to T's range and maps NaN to 0, as
  // to(dtype) does.
  template <typename T = double>
  T item() const {
    if constexpr (has_dtype_v<T>) {
      check_item();
      return to_vector<T>()[0];
    } else {
      return static_cast<T>(item_double());
    }
  }
  double item_double() const;
  // All elements in row-major order, converted to T (CPU copy).
  template <typename T>
  std::vector<T> to_vector() const;

  // ---- views (share storage; differentiable) ----
  Tensor view(const Shape& shape) const;     // requires compatible strides; -1 infers a dim
  Tensor reshape(const Shape& shape) const;  // view when possible, else copy
  Tensor permute(const Shape& dims) const;
  Tensor transpose(std::int64_t d0, std::int64_t d1) const;
  Tensor t() const;  // 2-D transpose
  Tensor squeeze() const;
  Tensor squeeze(std::int64_t dim) const;
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor expand(const Shape& shape) const;  // broadcast view, stride 0 on expanded dims
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  Tensor contiguous() const;  // self when already contiguous

  // ---- copies (differentiable) ----
  Tensor clone() const;
  // Self when the dtype already matches. Float -> integer truncates toward zero, clamps to the
  // target's range and maps NaN to 0 (PyTorch leaves these cases undefined); integer -> narrower
  // integer wraps around, as in PyTorch.
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;

  // ---- in-place (not recorded by autograd; bump the version counter) ----
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }
  // Broadcasts src, converts dtype; src may overlap *this (it is then read before writing).
  // The destination must not be an expanded view (several elements at one address).
  Tensor& copy_(const Tensor& src);

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& set_requires_grad(bool requires_grad = true);  // leaves only
  Tensor grad() const;
  void set_grad(const Tensor& g) const;
  const std::shared_ptr<Node>& grad_fn() const;
  std::uint32_t output_nr() const;
  bool is_leaf() const;
  // Makes this interior tensor keep its gradient in .grad() after backward() or autograd::grad
  // (later passes add to it, as for leaves), like torch's retain_grad(). No-op on a leaf;
  // AutogradError on a tensor that does not require grad.
  void retain_grad() const;
  bool retains_grad() const;  // true after retain_grad() on a non-leaf
  // Backpropagates from this tensor. A scalar may omit `gradient` (implicitly 1).
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  Tensor detach() const;  // shares storage, no autograd history
  std::uint64_t version() const;
  void bump_version() const;

  std::string str() const;  // PyTorch-like printout

 private:
  void check_defined(const char* op) const;
  void check_dtype_for_access(DType requested) const;
  void check_item() const;  // defined, one element
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;  // leaves: the AccumulateGrad node, created lazily
};

// Makes a new tensor handle that views `base`'s storage with other geometry (no autograd).
Tensor make_view(const Tensor& base, Shape shape, Shape strides, std::int64_t offset);
// True when the memory ranges of two views of one storage intersect (a conservative test).
bool may_overlap(const Tensor& a, const Tensor& b);
// Checks that all tensors are defined and on one device; names `op` in the error.
void check_same_device(const char* op, const Tensor& a, const Tensor& b);

extern template std::vector<float> Tensor::to_vector<float>() const;
extern template std::vector<double> Tensor::to_vector<double>() const;
extern template std::vector<std::int8_t> Tensor::to_vector<std::int8_t>() const;
extern template std::vector<std::uint8_t> Tensor::to_vector<std::uint8_t>() const;
extern template std::vector<std::int16_t> Tensor::to_vector<std::int16_t>() const;
extern template std::vector<std::int32_t> Tensor::to_vector<std::int32_t>() const;
extern template std::vector<std::int64_t> Tensor::to_vector<std::int64_t>() const;

}  // namespace qgrad

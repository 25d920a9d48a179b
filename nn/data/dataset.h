/// @file
/// Datasets: the random-access interface the DataLoader reads (size + get(i) -> Example),
/// TensorDataset, an in-memory dataset over two tensors sharing their first dimension (used by
/// tests and small experiments), and Subset, chosen examples of another dataset (PyTorch's
/// torch.utils.data.Subset; `qgrad sensitivity` measures on a fixed part of the test set). get()
/// must be safe to call from the loader's background thread while the caller's thread trains, i.e.
/// it must not mutate shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace qgrad::data {

/// One example: an input and its target.
struct Example {
  Tensor data;    ///< the input
  Tensor target;  ///< the target
};

/// A sized collection of examples, read by index.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// The number of examples.
  virtual std::size_t size() const = 0;
  /// Example `index` (0 <= index < size()); throws IndexError out of range.
  virtual Example get(std::size_t index) const = 0;
};

/// A dataset of the rows of two tensors: example i is (data[i], targets[i]).
class TensorDataset : public Dataset {
 public:
  /// data [N, ...], targets [N, ...]; throws ShapeError when N differs or either is 0-d.
  TensorDataset(Tensor data, Tensor targets);
  /// The number of rows.
  std::size_t size() const override;
  /// (data[index], targets[index]) as views.
  Example get(std::size_t index) const override;

 private:
  Tensor data_, targets_;
};

/// A dataset of selected examples of another dataset.
class Subset : public Dataset {
 public:
  /// The examples of `base` at `indices`, in that order; IndexError for an index out of range,
  /// ValueError for a null base.
  Subset(std::shared_ptr<const Dataset> base, std::vector<std::size_t> indices);
  /// The first min(count, base->size()) examples.
  static std::shared_ptr<Subset> first(std::shared_ptr<const Dataset> base, std::size_t count);
  /// The number of selected examples.
  std::size_t size() const override { return indices_.size(); }
  Example get(std::size_t index) const override;

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<std::size_t> indices_;
};

}  // namespace qgrad::data

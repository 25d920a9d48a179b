// TensorDataset: row views of two tensors; Subset: chosen examples of another dataset.
#include "nn/data/dataset.h"

#include <algorithm>

namespace qgrad::data {

TensorDataset::TensorDataset(Tensor data, Tensor targets)
    : data_(std::move(data)), targets_(std::move(targets)) {
  QGRAD_CHECK(data_.defined() && targets_.defined(), ValueError,
              "TensorDataset: data and targets must be defined");
  QGRAD_CHECK(data_.dim() >= 1 && targets_.dim() >= 1, ShapeError,
              "TensorDataset: data and targets need a leading example dim, got shapes ",
              data_.shape(), " and ", targets_.shape());
  QGRAD_CHECK(data_.size(0) == targets_.size(0), ShapeError, "TensorDataset: data has ",
              data_.size(0), " examples but targets has ", targets_.size(0), " (shapes ",
              data_.shape(), " and ", targets_.shape(), ")");
}

std::size_t TensorDataset::size() const {
  return static_cast<std::size_t>(data_.size(0));
}

Example TensorDataset::get(std::size_t index) const {
  QGRAD_CHECK(index < size(), IndexError, "TensorDataset::get: index ", index, " out of range for ",
              size(), " examples");
  const auto i = static_cast<std::int64_t>(index);
  return {data_.select(0, i), targets_.select(0, i)};
}

Subset::Subset(std::shared_ptr<const Dataset> base, std::vector<std::size_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
  QGRAD_CHECK(base_ != nullptr, ValueError, "Subset: the base dataset must not be null");
  for (std::size_t i : indices_)
    QGRAD_CHECK(i < base_->size(), IndexError, "Subset: index ", i, " out of range for ",
                base_->size(), " examples");
}

std::shared_ptr<Subset> Subset::first(std::shared_ptr<const Dataset> base, std::size_t count) {
  QGRAD_CHECK(base != nullptr, ValueError, "Subset::first: the base dataset must not be null");
  std::vector<std::size_t> idx(std::min(count, base->size()));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  return std::make_shared<Subset>(std::move(base), std::move(idx));
}

Example Subset::get(std::size_t index) const {
  QGRAD_CHECK(index < size(), IndexError, "Subset::get: index ", index, " out of range for ",
              size(), " examples");
  return base_->get(indices_[index]);
}

}  // namespace qgrad::data

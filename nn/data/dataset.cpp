// TensorDataset: row views of two tensors.
#include "nn/data/dataset.h"

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

}  // namespace qgrad::data

// The weights of gen_onnx_import.py's structure-only ONNX files (full-size torchvision models
// whose 45 MB of weights are not committed): every float initializer stored without data gets
// synthetic_values() of its index in the file and of its first reader, bit for bit the values
// PyTorch ran (gen_onnx_import.py's synthetic_values, whose comment gives the formula and why).
#pragma once

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "support/hash_unit.h"

namespace qgrad_test {

// Values of the k-th initializer of shape `dims` whose first reader is input `index` of an `op`
// node; each float32 operation is exact or one correctly rounded step, as in numpy.
inline std::vector<float> synthetic_values(std::uint64_t k, const std::vector<std::int64_t>& dims,
                                           const std::string& op, int index) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  std::vector<float> v = hash_unit(k, n);
  for (float& e : v) e = e * 2.0f - 1.0f;
  if (dims.size() >= 2) {
    const float bound = static_cast<float>(std::sqrt(3.0 / static_cast<double>(n / dims[0])));
    for (float& e : v) e = e * bound;
  } else if (op == "BatchNormalization" && index == 1) {
    for (float& e : v) e = 1.0f + 0.25f * e;
  } else if (op == "BatchNormalization" && index == 4) {
    for (float& e : v) e = 1.0f + 0.5f * e;
  } else {
    for (float& e : v) e = 0.1f * e;
  }
  return v;
}

// Fills every float initializer of `model` that holds no data (and has elements) with its
// synthetic_values(); returns how many it filled.
inline int fill_structure_only(onnx::ModelProto& model) {
  auto* graph = model.mutable_graph();
  std::map<std::string, std::pair<std::string, int>> readers;  // first reader of each value
  for (const auto& node : graph->node())
    for (int i = 0; i < node.input_size(); ++i)
      readers.emplace(node.input(i), std::pair{node.op_type(), i});
  int filled = 0;
  for (int k = 0; k < graph->initializer_size(); ++k) {
    auto* t = graph->mutable_initializer(k);
    const std::vector<std::int64_t> dims(t->dims().begin(), t->dims().end());
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    if (t->data_type() != onnx::TensorProto::FLOAT || n == 0 || t->has_raw_data() ||
        t->float_data_size() > 0)
      continue;
    const auto it = readers.find(t->name());
    if (it == readers.end())
      throw qgrad::ValueError("initializer '" + t->name() + "' is read by no node");
    const auto v =
        synthetic_values(static_cast<std::uint64_t>(k), dims, it->second.first, it->second.second);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    ++filled;
  }
  return filled;
}

// The bytes of structure-only file `path` with its weights filled in.
inline std::string filled_onnx_file(const std::string& path, int* filled = nullptr) {
  onnx::ModelProto model;
  if (!model.ParseFromString(qgrad::read_file(path, "filled_onnx_file")))
    throw qgrad::ValueError("'" + path + "' is not an ONNX model");
  const int n = fill_structure_only(model);
  if (filled != nullptr) *filled = n;
  return model.SerializeAsString();
}

}  // namespace qgrad_test

// OnnxGraph: a thin builder over onnx::GraphProto (Debian's libonnx-dev, generated protobuf
// classes; nothing is hand-encoded) for the exporter: unique value names, float / int8 / uint8
// initializers from qgrad data, nodes with integer, float and int-list attributes. It only adds
// what it is asked to; onnx::checker::check_model validates the finished model.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace qgrad::deploy {

class OnnxGraph {
 public:
  explicit OnnxGraph(onnx::GraphProto* graph) : graph_(graph) {}

  // A value name not used before: `base`, else `base_1`, `base_2`, ...
  std::string unique_name(const std::string& base);

  // Initializers (constants); each returns the unique name given to it. An empty dims means a
  // scalar.
  std::string add_float(const std::string& base, const std::vector<float>& values,
                        const std::vector<std::int64_t>& dims);
  std::string add_int8(const std::string& base, const std::vector<std::int32_t>& values,
                       const std::vector<std::int64_t>& dims);
  std::string add_uint8(const std::string& base, const std::vector<std::int32_t>& values,
                        const std::vector<std::int64_t>& dims);
  std::string add_int32(const std::string& base, const std::vector<std::int32_t>& values,
                        const std::vector<std::int64_t>& dims);

  // A node with one output named after `output_base`; returns the output's name.
  onnx::NodeProto& add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                            const std::string& output_base, std::string* output);
  std::string node(const std::string& op_type, const std::vector<std::string>& inputs,
                   const std::string& output_base);

  static void set_attr(onnx::NodeProto& node, const std::string& name, std::int64_t value);
  static void set_attr(onnx::NodeProto& node, const std::string& name, float value);
  static void set_attr(onnx::NodeProto& node, const std::string& name,
                       const std::vector<std::int64_t>& values);

  onnx::GraphProto& proto() { return *graph_; }

 private:
  onnx::TensorProto& new_initializer(const std::string& base, onnx::TensorProto_DataType type,
                                     const std::vector<std::int64_t>& dims);
  onnx::GraphProto* graph_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> next_;
};

}  // namespace qgrad::deploy

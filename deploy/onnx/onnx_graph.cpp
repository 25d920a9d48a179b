// OnnxGraph: value naming, initializers and nodes written through the generated onnx:: classes.
#include "deploy/onnx/onnx_graph.h"

#include "core/error.h"

namespace qgrad::deploy {

std::string OnnxGraph::unique_name(const std::string& base) {
  const std::string b = base.empty() ? "v" : base;
  std::string name = b;
  for (int& n = next_[b]; used_.count(name) != 0;) name = b + "_" + std::to_string(++n);
  used_.insert(name);
  return name;
}

onnx::TensorProto& OnnxGraph::new_initializer(const std::string& base,
                                              onnx::TensorProto_DataType type,
                                              const std::vector<std::int64_t>& dims) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(unique_name(base));
  t->set_data_type(type);
  for (std::int64_t d : dims) t->add_dims(d);
  return *t;
}

std::string OnnxGraph::add_float(const std::string& base, const std::vector<float>& values,
                                 const std::vector<std::int64_t>& dims) {
  onnx::TensorProto& t = new_initializer(base, onnx::TensorProto_DataType_FLOAT, dims);
  for (float v : values) t.add_float_data(v);
  return t.name();
}

std::string OnnxGraph::add_int32(const std::string& base, const std::vector<std::int32_t>& values,
                                 const std::vector<std::int64_t>& dims) {
  onnx::TensorProto& t = new_initializer(base, onnx::TensorProto_DataType_INT32, dims);
  for (std::int32_t v : values) t.add_int32_data(v);
  return t.name();
}

std::string OnnxGraph::add_int8(const std::string& base, const std::vector<std::int32_t>& values,
                                const std::vector<std::int64_t>& dims) {
  onnx::TensorProto& t = new_initializer(base, onnx::TensorProto_DataType_INT8, dims);
  for (std::int32_t v : values) {
    QGRAD_CHECK(v >= -128 && v <= 127, ValueError, "ONNX export: ", base, ": value ", v,
                " does not fit int8");
    t.add_int32_data(v);  // int8 data travels in int32_data (onnx.proto)
  }
  return t.name();
}

std::string OnnxGraph::add_uint8(const std::string& base, const std::vector<std::int32_t>& values,
                                 const std::vector<std::int64_t>& dims) {
  onnx::TensorProto& t = new_initializer(base, onnx::TensorProto_DataType_UINT8, dims);
  for (std::int32_t v : values) {
    QGRAD_CHECK(v >= 0 && v <= 255, ValueError, "ONNX export: ", base, ": value ", v,
                " does not fit uint8");
    t.add_int32_data(v);
  }
  return t.name();
}

onnx::NodeProto& OnnxGraph::add_node(const std::string& op_type,
                                     const std::vector<std::string>& inputs,
                                     const std::string& output_base, std::string* output) {
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op_type);
  const std::string out = unique_name(output_base);
  n->set_name(out);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(out);
  if (output != nullptr) *output = out;
  return *n;
}

std::string OnnxGraph::node(const std::string& op_type, const std::vector<std::string>& inputs,
                            const std::string& output_base) {
  std::string out;
  add_node(op_type, inputs, output_base, &out);
  return out;
}

void OnnxGraph::set_attr(onnx::NodeProto& node, const std::string& name, std::int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(value);
}

void OnnxGraph::set_attr(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(value);
}

void OnnxGraph::set_attr(onnx::NodeProto& node, const std::string& name,
                         const std::vector<std::int64_t>& values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (std::int64_t v : values) a->add_ints(v);
}

}  // namespace qgrad::deploy

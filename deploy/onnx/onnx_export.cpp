// build_onnx_model / export_onnx: the model's graph inputs and outputs, opset and producer, the
// ONNX checker, and the atomic write.
#include "deploy/onnx/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "core/error.h"
#include "core/version.h"
#include "deploy/onnx/atomic_file.h"
#include "deploy/onnx/module_lowering.h"
#include "deploy/onnx/onnx_graph.h"

namespace qgrad::deploy {

namespace {

void set_float_type(onnx::ValueInfoProto* vi, const std::string& name,
                    const std::vector<std::int64_t>& dims) {
  vi->set_name(name);
  onnx::TypeProto_Tensor* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  onnx::TensorShapeProto* s = t->mutable_shape();
  s->add_dim()->set_dim_param("batch");
  for (std::int64_t d : dims) s->add_dim()->set_dim_value(d);
}

}  // namespace

onnx::ModelProto build_onnx_model(const nn::Module& model, const OnnxExportOptions& options) {
  std::vector<QuantizerSite> sites;
  return build_onnx_model(model, options, sites);
}

onnx::ModelProto build_onnx_model(const nn::Module& model, const OnnxExportOptions& options,
                                  std::vector<QuantizerSite>& sites) {
  for (std::int64_t d : options.input_shape)
    QGRAD_CHECK(d > 0, ValueError, "ONNX export: input_shape entries must be positive, got ", d);
  onnx::ModelProto m;
  m.set_ir_version(onnx::IR_VERSION);
  m.set_producer_name("qgrad");
  m.set_producer_version(version_string());
  onnx::OperatorSetIdProto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  onnx::GraphProto* graph = m.mutable_graph();
  graph->set_name(options.graph_name);
  OnnxGraph g(graph);
  const std::string input = g.unique_name(options.input_name);
  set_float_type(graph->add_input(), input, options.input_shape);

  ModuleLowering lowering(g, options.qdq);
  std::string out = lowering.lower(model, "", input);
  sites = lowering.sites();
  // The last node's output takes the requested name (an Identity when the model is empty or
  // ends on its input).
  if (out == input || graph->node_size() == 0) {
    out = g.node("Identity", {out}, options.output_name);
  } else {
    onnx::NodeProto* last = graph->mutable_node(graph->node_size() - 1);
    QGRAD_CHECK(last->output(0) == out, ValueError, "ONNX export: internal error: the output ", out,
                " is not the last node's");
    const std::string name = g.unique_name(options.output_name);
    last->set_output(0, name);
    out = name;
  }
  // The output's type and shape from ONNX's own shape inference (on a copy, so the model keeps
  // no value_info of the intermediate values); strict mode also catches shape mismatches, such as
  // a Linear after a 4-D value.
  onnx::ModelProto inferred = m;
  try {
    onnx::ShapeInferenceOptions strict{/*check_type=*/true, /*error_mode=*/1};
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(), strict);
  } catch (const std::exception& e) {
    throw ValueError(std::string("ONNX export: shape inference failed on the exported graph: ") +
                     e.what());
  }
  onnx::ValueInfoProto* o = graph->add_output();
  for (const onnx::ValueInfoProto& vi : inferred.graph().value_info())
    if (vi.name() == out) *o = vi;
  QGRAD_CHECK(o->name() == out, ValueError, "ONNX export: shape inference gave no type for ", out);

  try {
    onnx::checker::check_model(m);
  } catch (const onnx::checker::ValidationError& e) {
    throw ValueError(std::string("ONNX export: the ONNX checker rejected the model: ") + e.what());
  }
  return m;
}

void export_onnx(const nn::Module& model, const std::string& path,
                 const OnnxExportOptions& options) {
  const onnx::ModelProto m = build_onnx_model(model, options);
  std::string bytes;
  QGRAD_CHECK(m.SerializeToString(&bytes), ValueError,
              "ONNX export: the model could not be serialised (over protobuf's 2 GB limit?)");
  write_file_atomically(path, bytes);
}

}  // namespace qgrad::deploy

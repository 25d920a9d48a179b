// Backward engine: dependency counting over the graph reachable from the roots, then a ready
// queue (Kahn's algorithm), so every node runs once, after all of its consumers.
#include "core/autograd/engine.h"

#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "core/autograd/function.h"
#include "core/autograd/grad_arith.h"
#include "core/autograd/grad_mode.h"

namespace qgrad {

namespace {

// Checks a gradient against the forward tensor it belongs to (`m`), naming the node that
// produced it. A gradient of another floating dtype is converted (as PyTorch's engine does), so
// a float32 parameter never ends up with a float64 .grad because some backward rule promoted.
Tensor validate_grad(const std::string& producer, const char* what, std::size_t i,
                     const OutputMeta& m, const Tensor& g) {
  QGRAD_CHECK(g.shape() == m.shape, AutogradError, producer, ": ", what, " ", i, " has shape ",
              g.shape(), " but the tensor it belongs to has shape ", m.shape);
  QGRAD_CHECK(g.device() == m.device, AutogradError, producer, ": ", what, " ", i, " is on ",
              g.device(), " but the tensor it belongs to is on ", m.device);
  QGRAD_CHECK(is_floating(g.dtype()), AutogradError, producer, ": ", what, " ", i,
              " has non-floating dtype ", dtype_name(g.dtype()));
  return g.dtype() == m.dtype ? g : g.to(m.dtype);
}

}  // namespace

void run_backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph) {
  QGRAD_CHECK(roots.size() == grad_roots.size(), AutogradError, "backward: got ", roots.size(),
              " outputs and ", grad_roots.size(), " gradients");
  // Gradient calculations do not record a graph of their own.
  NoGradGuard no_grad;

  std::unordered_map<Node*, std::size_t> deps;
  std::unordered_map<Node*, TensorList> buffers;
  std::vector<std::shared_ptr<Node>> root_nodes;

  // Seed the buffers with the root gradients.
  for (std::size_t r = 0; r < roots.size(); ++r) {
    Edge e = gradient_edge(roots[r]);
    QGRAD_CHECK(e.valid(), AutogradError, "backward: element ", r,
                " of the outputs does not require grad and has no "
                "grad_fn");
    QGRAD_CHECK(grad_roots[r].defined(), AutogradError, "backward: gradient ", r, " is undefined");
    auto& buf = buffers[e.fn.get()];
    if (buf.size() < e.fn->outputs.size() || buf.empty())
      buf.resize(std::max<std::size_t>(e.fn->outputs.size(), 1));
    Tensor g = validate_grad("backward", "gradient for output", r, e.fn->outputs.at(e.input_nr),
                             grad_roots[r]);
    if (buf[e.input_nr].defined()) g = add_grads(buf[e.input_nr], g);
    buf[e.input_nr] = g;
    root_nodes.push_back(e.fn);
  }

  // Count, for each node, how many edges point to it from the reachable graph.
  {
    std::unordered_set<Node*> seen;
    std::vector<Node*> stack;
    for (auto& n : root_nodes)
      if (seen.insert(n.get()).second) stack.push_back(n.get());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges) {
        if (!e.valid()) continue;
        ++deps[e.fn.get()];
        if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      }
    }
  }

  std::deque<std::shared_ptr<Node>> ready;
  {
    std::unordered_set<Node*> queued;
    for (auto& n : root_nodes)
      if (deps[n.get()] == 0 && queued.insert(n.get()).second) ready.push_back(n);
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.front();
    ready.pop_front();
    TensorList grads = std::move(buffers[node.get()]);
    buffers.erase(node.get());
    grads.resize(std::max<std::size_t>(node->outputs.size(), grads.size()));
    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    TensorList in_grads;
    if (any) in_grads = node->apply(std::move(grads));
    if (!retain_graph) node->release();
    QGRAD_CHECK(in_grads.empty() || in_grads.size() == node->next_edges.size(), AutogradError,
                node->name(), ": backward returned ", in_grads.size(), " gradients for ",
                node->next_edges.size(), " inputs");
    for (std::size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      if (i < in_grads.size() && in_grads[i].defined()) {
        Tensor g = validate_grad(node->name(), "gradient for input", i,
                                 e.fn->outputs.at(e.input_nr), in_grads[i]);
        auto& buf = buffers[e.fn.get()];
        if (buf.size() < std::max<std::size_t>(e.fn->outputs.size(), 1))
          buf.resize(std::max<std::size_t>(e.fn->outputs.size(), 1));
        Tensor& slot = buf[e.input_nr];
        slot = slot.defined() ? add_grads(slot, g) : g;
      }
      if (--deps[e.fn.get()] == 0) ready.push_back(e.fn);
    }
  }
}

}  // namespace qgrad

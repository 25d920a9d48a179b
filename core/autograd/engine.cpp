// Backward engine: dependency counting over the graph reachable from the roots, then a ready
// queue (Kahn's algorithm), so every node runs once, after all of its consumers.
#include "core/autograd/engine.h"

#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "core/autograd/function.h"
#include "core/autograd/grad_arith.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"

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

// Gradients that the tensors with retain_grad() receive when their grad_fn runs: the first one
// is copied, later ones are added out of place (as PyTorch's retains_grad hook).
void store_retained_grads(Node& node, const TensorList& grads) {
  for (const auto& [slot, weak] : node.retained_grads) {
    std::shared_ptr<TensorImpl> impl = weak.lock();
    if (!impl || slot >= grads.size() || !grads[slot].defined()) continue;
    AutogradMeta& m = impl->autograd_meta();
    m.grad = m.grad.defined() ? add_grads(m.grad, grads[slot]) : grads[slot].clone();
  }
}

// Runs the graph below `roots`. Without `captures`, every reachable node runs (leaves
// accumulate into .grad). With them, only the nodes on a path to a captured edge run, the
// gradient arriving at each captured (node, slot) is stored in `captured`, and AccumulateGrad
// nodes never run.
void execute(const char* op, const TensorList& roots, const TensorList& grad_roots,
             bool retain_graph, const std::vector<Edge>* captures, TensorList* captured) {
  QGRAD_CHECK(roots.size() == grad_roots.size(), AutogradError, op, ": got ", roots.size(),
              " outputs and ", grad_roots.size(), " gradients");
  // Gradient calculations do not record a graph of their own.
  NoGradGuard no_grad;

  std::unordered_map<Node*, std::size_t> deps;
  std::unordered_map<Node*, TensorList> buffers;
  std::vector<std::shared_ptr<Node>> root_nodes;

  // Seed the buffers with the root gradients.
  for (std::size_t r = 0; r < roots.size(); ++r) {
    Edge e = gradient_edge(roots[r]);
    QGRAD_CHECK(e.valid(), AutogradError, op, ": element ", r,
                " of the outputs does not require grad and has no grad_fn");
    QGRAD_CHECK(grad_roots[r].defined(), AutogradError, op, ": gradient ", r, " is undefined");
    auto& buf = buffers[e.fn.get()];
    if (buf.size() < e.fn->outputs.size() || buf.empty())
      buf.resize(std::max<std::size_t>(e.fn->outputs.size(), 1));
    Tensor g =
        validate_grad(op, "gradient for output", r, e.fn->outputs.at(e.input_nr), grad_roots[r]);
    if (buf[e.input_nr].defined()) g = add_grads(buf[e.input_nr], g);
    buf[e.input_nr] = g;
    root_nodes.push_back(e.fn);
  }

  // Count, for each node, how many edges point to it from the reachable graph. grad() also
  // keeps each node's consumers, to find the nodes above a captured edge.
  std::unordered_map<Node*, std::vector<Node*>> parents;
  {
    std::unordered_set<Node*> seen;
    std::vector<Node*> stack;
    for (auto& n : root_nodes)
      if (seen.insert(n.get()).second) stack.push_back(n.get());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (captures) parents[n];
      for (const Edge& e : n->next_edges) {
        if (!e.valid()) continue;
        ++deps[e.fn.get()];
        if (captures) parents[e.fn.get()].push_back(n);
        if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      }
    }
  }
  // Nodes that matter: all of them for backward(); for grad(), the captured nodes and every
  // node above one (a node below no captured edge cannot contribute, so it never runs, and
  // every consumer of a needed node is needed too, so the dependency counts stay exact).
  std::unordered_set<Node*> needed;
  std::unordered_map<Node*, std::vector<std::size_t>> capture_at;  // node -> capture indices
  if (captures) {
    std::vector<Node*> stack;
    for (std::size_t i = 0; i < captures->size(); ++i) {
      Node* n = (*captures)[i].fn.get();
      if (!parents.count(n)) continue;  // not reachable: its gradient stays undefined
      capture_at[n].push_back(i);
      if (needed.insert(n).second) stack.push_back(n);
    }
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (Node* p : parents[n])
        if (needed.insert(p).second) stack.push_back(p);
    }
  }
  auto is_needed = [&](Node* n) { return !captures || needed.count(n) != 0; };

  std::deque<std::shared_ptr<Node>> ready;
  {
    std::unordered_set<Node*> queued;
    for (auto& n : root_nodes)
      if (is_needed(n.get()) && deps[n.get()] == 0 && queued.insert(n.get()).second)
        ready.push_back(n);
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.front();
    ready.pop_front();
    TensorList grads = std::move(buffers[node.get()]);
    buffers.erase(node.get());
    grads.resize(std::max<std::size_t>(node->outputs.size(), grads.size()));
    if (captures) {
      auto it = capture_at.find(node.get());
      if (it != capture_at.end())
        for (std::size_t i : it->second) (*captured)[i] = grads.at((*captures)[i].input_nr);
    }
    // In grad(), a node runs only when a captured edge lies below it; AccumulateGrad never
    // does (it has no edges), so leaves' .grad stays untouched.
    bool runs = !captures;
    for (const Edge& e : node->next_edges) runs = runs || (e.valid() && is_needed(e.fn.get()));
    if (!runs) continue;
    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    if (any) store_retained_grads(*node, grads);
    TensorList in_grads;
    if (any) in_grads = node->apply(std::move(grads));
    if (!retain_graph) node->release();
    QGRAD_CHECK(in_grads.empty() || in_grads.size() == node->next_edges.size(), AutogradError,
                node->name(), ": backward returned ", in_grads.size(), " gradients for ",
                node->next_edges.size(), " inputs");
    for (std::size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid() || !is_needed(e.fn.get())) continue;
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

}  // namespace

void run_backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph) {
  execute("backward", roots, grad_roots, retain_graph, nullptr, nullptr);
}

namespace autograd {

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  constexpr const char* kOp = "autograd::grad";
  QGRAD_CHECK(!create_graph, AutogradError, kOp,
              ": create_graph=true is not supported: backward rules run with grad mode off, so "
              "gradients carry no graph (no double backward)");
  QGRAD_CHECK(!outputs.empty(), ValueError, kOp, ": outputs is empty");
  QGRAD_CHECK(!inputs.empty(), ValueError, kOp, ": inputs is empty");
  QGRAD_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), ValueError, kOp,
              ": got ", grad_outputs.size(), " grad_outputs for ", outputs.size(), " outputs");
  TensorList seeds(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    QGRAD_CHECK(out.defined(), ValueError, kOp, ": output ", i, " is undefined");
    QGRAD_CHECK(out.requires_grad(), AutogradError, kOp, ": element ", i,
                " of the outputs does not require grad and has no grad_fn");
    const Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      QGRAD_CHECK(out.numel() == 1, AutogradError, kOp,
                  ": grad can be implicitly created only for scalar outputs, output ", i,
                  " has shape ", out.shape());
      seeds[i] = ones(out.shape(), TensorOptions().dtype(out.dtype()).device(out.device()));
    } else {
      QGRAD_CHECK(g.shape() == out.shape(), ShapeError, kOp, ": mismatch in shape: grad_output[", i,
                  "] has shape ", g.shape(), " and output[", i, "] has shape ", out.shape());
      check_same_device(kOp, out, g);
      seeds[i] = g;
    }
  }
  std::vector<Edge> captures(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    QGRAD_CHECK(inputs[i].defined(), ValueError, kOp, ": input ", i, " is undefined");
    QGRAD_CHECK(inputs[i].requires_grad(), AutogradError, kOp, ": input ", i,
                " (one of the differentiated tensors) does not require grad");
    captures[i] = gradient_edge(inputs[i]);
  }
  TensorList result(inputs.size());
  execute(kOp, outputs, seeds, retain_graph.value_or(create_graph), &captures, &result);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    QGRAD_CHECK(allow_unused || result[i].defined(), AutogradError, kOp, ": input ", i,
                " (one of the differentiated tensors) appears to not have been used in the "
                "graph; pass allow_unused=true if this is the desired behavior");
  return result;
}

}  // namespace autograd

}  // namespace qgrad

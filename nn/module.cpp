// nn::Module: registration, recursive traversal, mode switching, in-place device/dtype moves,
// state dicts and printing.
#include "nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <iomanip>
#include <ostream>
#include <set>
#include <sstream>
#include <typeinfo>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"

namespace qgrad::nn {

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// The class name of `m` without namespaces ("qgrad::nn::ReLU" -> "ReLU").
std::string demangled_class_name(const Module& m) {
  const char* mangled = typeid(m).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                           std::free);
  std::string full = (status == 0 && d) ? std::string(d.get()) : std::string(mangled);
  // Strip namespaces, but not inside template arguments.
  const auto angle = full.find('<');
  const auto head = full.substr(0, angle);
  const auto colon = head.rfind("::");
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

// Moves the data of `src` into `dst`'s TensorImpl so that every handle on dst sees it.
void adopt_data(const Tensor& dst, const Tensor& src) {
  TensorImpl* d = dst.impl();
  const TensorImpl* s = src.impl();
  d->storage = s->storage;
  d->offset = s->offset;
  d->shape = s->shape;
  d->strides = s->strides;
  d->dtype = s->dtype;
  // A cached gradient accumulator recorded the old dtype/device; let autograd make a new one.
  if (d->autograd) d->autograd->grad_accumulator.reset();
}

// PyTorch's _addindent: indents every line but the first by `spaces`.
std::string add_indent(const std::string& s, int spaces) {
  std::string out;
  const std::string pad(static_cast<std::size_t>(spaces), ' ');
  for (char c : s) {
    out.push_back(c);
    if (c == '\n') out += pad;
  }
  return out;
}

std::string with_thousands(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (n > 0 && n % 3 == 0) out.push_back(',');
    out.push_back(*it);
    ++n;
  }
  if (v < 0) out.push_back('-');
  return std::string(out.rbegin(), out.rend());
}

}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {}

std::string Module::name() const {
  return name_.empty() ? demangled_class_name(*this) : name_;
}

// ---------------------------------------------------------------------------------------------
// Registration

void Module::check_new_name(const std::string& kind, const std::string& name) const {
  QGRAD_CHECK(!name.empty(), ValueError, "Module::register_", kind, ": name must not be empty");
  QGRAD_CHECK(name.find('.') == std::string::npos, ValueError, "Module::register_", kind,
              ": name '", name, "' must not contain '.'");
  QGRAD_CHECK(!parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name),
              ValueError, "Module::register_", kind, ": '", name, "' is already registered in ",
              this->name(), " (as a ",
              parameters_.contains(name) ? "parameter"
              : buffers_.contains(name)  ? "buffer"
                                         : "submodule",
              ")");
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name("parameter", name);
  if (tensor.defined()) {
    QGRAD_CHECK(tensor.is_leaf(), ValueError, "Module::register_parameter: parameter '", name,
                "' must be a leaf tensor (it has grad_fn ", tensor.grad_fn()->name(),
                "); pass tensor.detach()");
    QGRAD_CHECK(!requires_grad || is_floating(tensor.dtype()), DTypeError,
                "Module::register_parameter: parameter '", name,
                "' requires grad but has non-floating dtype ", dtype_name(tensor.dtype()));
    tensor.set_requires_grad(requires_grad);
  }
  return parameters_.insert(name, std::move(tensor));
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_new_name("buffer", name);
  if (!persistent) non_persistent_buffers_.insert(name);
  return buffers_.insert(name, std::move(tensor));
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name("module", name);
  QGRAD_CHECK(module != nullptr, ValueError, "Module::register_module: submodule '", name,
              "' is null");
  QGRAD_CHECK(module.get() != this, ValueError, "Module::register_module: cannot register ",
              this->name(), " as its own submodule '", name, "'");
  children_.insert(name, std::move(module));
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> module) {
  QGRAD_CHECK(children_.contains(name), ValueError, "Module::replace_module: ", this->name(),
              " has no submodule named '", name, "'");
  QGRAD_CHECK(module != nullptr, ValueError, "Module::replace_module: replacement for '", name,
              "' is null");
  on_replace_child(name, module);
  children_.insert_or_assign(name, std::move(module));
}

void Module::on_replace_child(const std::string&, const std::shared_ptr<Module>&) {}

// ---------------------------------------------------------------------------------------------
// Traversal

void Module::collect_parameters(const std::string& prefix, bool recurse, TensorDict& out) const {
  for (const auto& it : parameters_)
    if (it.value.defined()) out.insert(join_name(prefix, it.key), it.value);
  if (!recurse) return;
  for (const auto& c : children_) c.value->collect_parameters(join_name(prefix, c.key), true, out);
}

void Module::collect_buffers(const std::string& prefix, bool recurse, bool persistent_only,
                             TensorDict& out) const {
  for (const auto& it : buffers_) {
    if (!it.value.defined()) continue;
    if (persistent_only && non_persistent_buffers_.count(it.key)) continue;
    out.insert(join_name(prefix, it.key), it.value);
  }
  if (!recurse) return;
  for (const auto& c : children_)
    c.value->collect_buffers(join_name(prefix, c.key), true, persistent_only, out);
}

namespace {
// Keeps the first name of each tensor registered more than once (shared weights), as PyTorch's
// named_parameters/named_buffers do.
TensorDict dedupe(const TensorDict& all, const char* what) {
  TensorDict out(what);
  std::set<const TensorImpl*> seen;
  for (const auto& it : all)
    if (seen.insert(it.value.impl()).second) out.insert(it.key, it.value);
  return out;
}
}  // namespace

TensorDict Module::named_parameters(bool recurse) const {
  TensorDict out("parameter");
  collect_parameters("", recurse, out);
  return dedupe(out, "parameter");
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}

TensorDict Module::named_buffers(bool recurse) const {
  TensorDict out("buffer");
  collect_buffers("", recurse, false, out);
  return dedupe(out, "buffer");
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  return named_buffers(recurse).values();
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  return children_.values();
}

OrderedDict<std::shared_ptr<Module>> Module::named_children() const {
  return children_;
}

void Module::apply(const std::function<void(const std::string&, Module&)>& fn,
                   const std::string& prefix) {
  fn(prefix, *this);
  for (auto& c : children_) c.value->apply(fn, join_name(prefix, c.key));
}

void Module::apply(const std::function<void(const std::string&, const Module&)>& fn,
                   const std::string& prefix) const {
  fn(prefix, *this);
  for (const auto& c : children_)
    static_cast<const Module&>(*c.value).apply(fn, join_name(prefix, c.key));
}

OrderedDict<std::shared_ptr<Module>> Module::named_modules(const std::string& prefix,
                                                           bool include_self) {
  OrderedDict<std::shared_ptr<Module>> out("module");
  if (include_self) {
    std::shared_ptr<Module> self = weak_from_this().lock();
    QGRAD_CHECK(self != nullptr, ValueError, "Module::modules: ", name(),
                " is not owned by a std::shared_ptr, so it cannot list itself (create it with "
                "std::make_shared or pass include_self = false)");
    out.insert(prefix, self);
  }
  // Each module once, under its first name (a submodule may be registered in two places).
  std::set<const Module*> seen{this};
  for (auto& c : children_) {
    auto sub = c.value->named_modules(join_name(prefix, c.key), true);
    for (auto& it : sub)
      if (seen.insert(it.value.get()).second) out.insert(it.key, it.value);
  }
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) {
  return named_modules("", include_self).values();
}

// ---------------------------------------------------------------------------------------------
// Mode, device, dtype, gradients

void Module::train(bool on) {
  is_training_ = on;
  for (auto& c : children_) c.value->train(on);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  auto move = [&](const Tensor& t) {
    if (!t.defined()) return;
    if (t.device() != device) adopt_data(t, t.detach().to(device));
    Tensor g = t.grad();
    if (g.defined() && g.device() != device) t.set_grad(g.to(device));
  };
  apply([&](const std::string&, Module& m) {
    for (auto& it : m.parameters_) move(it.value);
    for (auto& it : m.buffers_) move(it.value);
  });
}

void Module::to(DType dtype) {
  QGRAD_CHECK(is_floating(dtype), DTypeError,
              "Module::to: expected a floating dtype (float32 or float64), got ",
              dtype_name(dtype));
  NoGradGuard no_grad;
  auto cast = [&](const Tensor& t) {
    if (!t.defined() || !is_floating(t.dtype())) return;
    if (t.dtype() != dtype) adopt_data(t, t.detach().to(dtype));
    Tensor g = t.grad();
    if (g.defined() && g.dtype() != dtype) t.set_grad(g.to(dtype));
  };
  apply([&](const std::string&, Module& m) {
    for (auto& it : m.parameters_) cast(it.value);
    for (auto& it : m.buffers_) cast(it.value);
  });
}

void Module::zero_grad() {
  for (auto& p : parameters())
    if (p.grad().defined()) p.set_grad(Tensor());
}

// ---------------------------------------------------------------------------------------------
// State

TensorDict Module::state_dict() const {
  TensorDict out("state dict entry");
  apply([&](const std::string& prefix, const Module& m) {
    for (const auto& it : m.parameters_)
      if (it.value.defined()) out.insert(join_name(prefix, it.key), it.value.detach());
    for (const auto& it : m.buffers_) {
      if (!it.value.defined() || m.non_persistent_buffers_.count(it.key)) continue;
      out.insert(join_name(prefix, it.key), it.value.detach());
    }
  });
  return out;
}

LoadStateDictResult Module::load_state_dict(const TensorDict& dict, bool strict) {
  const TensorDict own = state_dict();
  LoadStateDictResult result;
  std::vector<std::string> problems;
  for (const auto& it : own)
    if (!dict.contains(it.key)) result.missing_keys.push_back(it.key);
  for (const auto& it : dict) {
    const Tensor* dst = own.find(it.key);
    if (dst == nullptr) {
      result.unexpected_keys.push_back(it.key);
      continue;
    }
    if (!it.value.defined()) {
      problems.push_back("entry '" + it.key + "' is an undefined tensor");
    } else if (it.value.shape() != dst->shape()) {
      problems.push_back("size mismatch for " + it.key + ": copying a tensor with shape " +
                         shape_str(it.value.shape()) +
                         " from the state dict, the shape in the current model is " +
                         shape_str(dst->shape()));
    }
  }
  auto quoted_list = [](const std::vector<std::string>& keys) {
    std::string s;
    for (std::size_t i = 0; i < keys.size(); ++i) s += (i ? ", \"" : "\"") + keys[i] + "\"";
    return s;
  };
  const bool key_errors =
      strict && (!result.missing_keys.empty() || !result.unexpected_keys.empty());
  if (key_errors || !problems.empty()) {
    std::ostringstream msg;
    msg << "Module::load_state_dict: Error(s) in loading state_dict for " << name() << ":";
    if (strict && !result.missing_keys.empty())
      msg << "\n  Missing key(s) in state_dict: " << quoted_list(result.missing_keys) << ".";
    if (strict && !result.unexpected_keys.empty())
      msg << "\n  Unexpected key(s) in state_dict: " << quoted_list(result.unexpected_keys) << ".";
    for (const auto& p : problems) msg << "\n  " << p << ".";
    throw ValueError(msg.str());
  }
  NoGradGuard no_grad;
  for (const auto& it : dict) {
    const Tensor* dst = own.find(it.key);
    if (dst == nullptr) continue;
    Tensor dst_view = *dst;  // detached alias of the parameter or buffer
    dst_view.copy_(it.value.device() == dst_view.device() ? it.value
                                                          : it.value.to(dst_view.device()));
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Summaries and printing

std::int64_t Module::num_parameters(bool trainable_only) const {
  std::int64_t n = 0;
  for (const auto& p : parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

std::string Module::summary() const {
  const TensorDict params = named_parameters();
  std::size_t name_w = 9;
  for (const auto& it : params) name_w = std::max(name_w, it.key.size());
  std::ostringstream os;
  os << name() << " summary\n";
  os << std::left << std::setw(static_cast<int>(name_w)) << "Parameter"
     << "  " << std::setw(20) << "Shape" << std::right << std::setw(12) << "Count"
     << "  Trainable\n";
  std::int64_t total = 0, trainable = 0;
  for (const auto& it : params) {
    const std::int64_t n = it.value.numel();
    const bool tr = it.value.requires_grad();
    total += n;
    if (tr) trainable += n;
    os << std::left << std::setw(static_cast<int>(name_w)) << it.key << "  " << std::setw(20)
       << shape_str(it.value.shape()) << std::right << std::setw(12) << with_thousands(n) << "  "
       << (tr ? "yes" : "no") << "\n";
  }
  const TensorDict bufs = named_buffers();
  std::int64_t buf_elems = 0;
  for (const auto& it : bufs) buf_elems += it.value.numel();
  os << "Total params: " << with_thousands(total) << "\n";
  os << "Trainable params: " << with_thousands(trainable) << "\n";
  os << "Non-trainable params: " << with_thousands(total - trainable) << "\n";
  os << "Buffers: " << bufs.size() << " (" << with_thousands(buf_elems) << " elements)\n";
  return os.str();
}

std::string Module::repr() const {
  // PyTorch's Module.__repr__.
  std::vector<std::string> extra_lines;
  const std::string extra = extra_repr();
  if (!extra.empty()) {
    std::stringstream ss(extra);
    std::string line;
    while (std::getline(ss, line)) extra_lines.push_back(line);
  }
  std::vector<std::string> child_lines;
  for (const auto& c : children_)
    child_lines.push_back("(" + c.key + "): " + add_indent(c.value->repr(), 2));
  std::vector<std::string> lines = extra_lines;
  lines.insert(lines.end(), child_lines.begin(), child_lines.end());
  std::string s = name() + "(";
  if (!lines.empty()) {
    if (extra_lines.size() == 1 && child_lines.empty()) {
      s += extra_lines[0];
    } else {
      s += "\n  ";
      for (std::size_t i = 0; i < lines.size(); ++i) s += (i ? "\n  " : "") + lines[i];
      s += "\n";
    }
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& module) {
  return os << module.repr();
}

}  // namespace qgrad::nn

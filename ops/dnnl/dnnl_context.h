// oneDNN (2.6 API) plumbing shared by the CPU kernels built on it: the one CPU engine and
// stream, dtype/shape conversion to memory descriptors, an LRU cache of primitive descriptors
// and primitives keyed by the op's parameters, and translation of dnnl::error into qgrad errors
// naming the op. Only files under ops/, deploy/int8 and deploy/float_inference (which share the
// engine and streams) include this header: oneDNN stays an implementation detail.
#pragma once

#include <dnnl.hpp>

#include <any>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>

#include "core/tensor.h"

namespace qgrad::dnnl_backend {

dnnl::engine& cpu_engine();
// oneDNN streams are not thread-safe; each calling thread gets its own in-order CPU stream.
dnnl::stream& cpu_stream();

dnnl::memory::data_type to_dnnl(DType d);
dnnl::memory::dims to_dims(const Shape& s);
// A descriptor that describes `t` exactly as laid out (its dims and element strides).
dnnl::memory::desc strided_desc(const Tensor& t);
// A dense row-major descriptor of `shape`.
dnnl::memory::desc plain_desc(const Shape& shape, DType d);
// Wraps `t`'s data (no copy) in a dnnl::memory of descriptor `md`.
dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t);

// Builds cache keys: key << "conv" << shape << stride ...
class KeyBuilder {
 public:
  template <typename T>
  KeyBuilder& operator<<(const T& v) {
    os_ << v << '|';
    return *this;
  }
  KeyBuilder& operator<<(const Shape& s) {
    for (auto d : s) os_ << d << ',';
    os_ << '|';
    return *this;
  }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

// LRU cache of whatever an op needs to keep per parameter set (primitive descriptors,
// primitives, reorders). Thread-safe; bounded so long-running programs with many shapes do not
// grow without limit. Explicit cache: the only global state in the kernels.
class PrimitiveCache {
 public:
  explicit PrimitiveCache(std::size_t capacity = 1024) : capacity_(capacity) {}

  // Returns the cached value for `key`, creating it with `make()` on a miss.
  template <typename T>
  std::shared_ptr<T> get(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        order_.splice(order_.begin(), order_, it->second.second);
        return std::any_cast<std::shared_ptr<T>>(it->second.first);
      }
    }
    std::shared_ptr<T> value = make();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) return std::any_cast<std::shared_ptr<T>>(it->second.first);
    order_.push_front(key);
    map_.emplace(key, std::make_pair(std::any(value), order_.begin()));
    if (map_.size() > capacity_) {
      map_.erase(order_.back());
      order_.pop_back();
    }
    return value;
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }

 private:
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::string> order_;
  std::unordered_map<std::string, std::pair<std::any, std::list<std::string>::iterator>> map_;
};

PrimitiveCache& primitive_cache();

// Runs f(); a dnnl::error becomes qgrad::Error("op: oneDNN error ... (context)").
template <typename F>
auto guarded(const char* op, const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throw Error(std::string(op) + ": oneDNN error (status " + std::to_string(e.status) +
                "): " + e.what() + " [" + context + "]");
  }
}

}  // namespace qgrad::dnnl_backend

/// @file
/// OrderedDict: a string-keyed map that remembers insertion order, as torch::OrderedDict. Used
/// for everything named in nn: parameters, buffers, child modules, state dicts, optimiser and
/// scheduler state. Lookups are O(1) through a side index; iteration follows insertion order.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace qgrad {

/// Values by string key, kept in insertion order (parameters, buffers, children, state dicts).
template <typename V>
class OrderedDict {
 public:
  /// One entry.
  struct Item {
    std::string key;  ///< the key
    V value;          ///< the value
  };
  /// Iterates over the items in order.
  using iterator = typename std::vector<Item>::iterator;
  /// Iterates over the items in order.
  using const_iterator = typename std::vector<Item>::const_iterator;

  OrderedDict() = default;
  /// `what` names the contents in error messages ("parameter", "state dict entry", ...).
  explicit OrderedDict(std::string what) : what_(std::move(what)) {}

  /// Appends a new key; throws ValueError if it is already present.
  V& insert(const std::string& key, V value) {
    QGRAD_CHECK(index_.count(key) == 0, ValueError, "OrderedDict: ", what_, " '", key,
                "' is already defined");
    index_.emplace(key, items_.size());
    items_.push_back(Item{key, std::move(value)});
    return items_.back().value;
  }
  /// Replaces the value of an existing key (keeping its position) or appends a new one.
  V& insert_or_assign(const std::string& key, V value) {
    auto it = index_.find(key);
    if (it == index_.end()) return insert(key, std::move(value));
    items_[it->second].value = std::move(value);
    return items_[it->second].value;
  }

  /// True when `key` is present.
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  /// The value of `key`, or null when absent.
  V* find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value;
  }
  /// The value of `key`, or null when absent.
  const V* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value;
  }
  /// Throws IndexError naming the key when it is absent.
  V& at(const std::string& key) {
    V* v = find(key);
    QGRAD_CHECK(v != nullptr, IndexError, "OrderedDict: no ", what_, " named '", key, "'");
    return *v;
  }
  /// The value of `key`; throws IndexError naming the key when it is absent.
  const V& at(const std::string& key) const {
    const V* v = find(key);
    QGRAD_CHECK(v != nullptr, IndexError, "OrderedDict: no ", what_, " named '", key, "'");
    return *v;
  }
  /// at(key).
  V& operator[](const std::string& key) { return at(key); }
  /// at(key).
  const V& operator[](const std::string& key) const { return at(key); }

  /// Removes a key, keeping the order of the others; returns whether it was present.
  bool erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(it->second));
    index_.clear();
    for (std::size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].key, i);
    return true;
  }
  /// Removes every entry.
  void clear() {
    items_.clear();
    index_.clear();
  }

  /// The number of entries.
  std::size_t size() const { return items_.size(); }
  /// True when there is no entry.
  bool empty() const { return items_.empty(); }
  /// The items in order.
  const std::vector<Item>& items() const { return items_; }
  /// The keys in order.
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    k.reserve(items_.size());
    for (const auto& it : items_) k.push_back(it.key);
    return k;
  }
  /// The values in order.
  std::vector<V> values() const {
    std::vector<V> v;
    v.reserve(items_.size());
    for (const auto& it : items_) v.push_back(it.value);
    return v;
  }
  /// The first item.
  iterator begin() { return items_.begin(); }
  /// Past the last item.
  iterator end() { return items_.end(); }
  /// The first item.
  const_iterator begin() const { return items_.begin(); }
  /// Past the last item.
  const_iterator end() const { return items_.end(); }

 private:
  std::string what_ = "key";
  std::vector<Item> items_;
  std::unordered_map<std::string, std::size_t> index_;
};

/// Named tensors in a fixed order: state dicts, named parameters, optimiser state.
using TensorDict = OrderedDict<Tensor>;

}  // namespace qgrad

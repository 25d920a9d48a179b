/// @file
/// QuantDescriptor: how a tensor is to be quantized in the NVIDIA family (pytorch_quantization's
/// and modelopt's ScaledQuantDescriptor), validated on construction and serialised to JSON.
///
/// Fields and defaults: num_bits 8 (int, or (E,M)), name none, fake_quant true, axis none (int or
/// tuple: the axes that keep their own amax), block_sizes none, amax none (a number or an array of
/// any rank), learn_amax false, scale_amax none, calib_method "max" ("max" | "histogram"),
/// unsigned false, narrow_range false, dynamic false, fp8_recipe "pytorch_quantization"
/// ("pytorch_quantization" | "modelopt": whose FP8 arithmetic a (4, 3) num_bits runs, pq's
/// scaled_e4m3 or TensorRT Model Optimizer's modelopt_scaled_fp8; see tensor_quant.h).
///
/// Validation (ValueError naming "QuantDescriptor" and the field): integer num_bits 1..24 (2..24
/// signed); (E,M) must be a supported element format and excludes unsigned and narrow_range; axis
/// and block_sizes are mutually exclusive; axis tuples are non-empty without repeats; block_sizes
/// pass BlockSizes::validate; amax is non-empty, finite and >= 0 and excludes dynamic; learn_amax
/// is per-tensor only (no axis, no block_sizes, not dynamic); scale_amax is finite and > 0;
/// fp8_recipe "modelopt" needs num_bits (4, 3), the only format modelopt's FP8 path takes;
/// calib_method is "max" or "histogram", and histogram is per-tensor only (the reference's
/// HistogramCalibrator rejects an axis).
///
/// JSON (nlohmann): to_json() writes only non-default fields, under the reference's names
/// ("unsigned", not is_unsigned); from_json() rejects unknown keys and wrong types and restores an
/// equal descriptor; integers never wrap or truncate (num_bits 4294967304 is an error, not 8).
/// Unlike the reference (whose dict() drops narrow_range and calib_method and
/// whose YAML writer crashes on an int axis), every field round-trips; axis keeps the difference
/// between 0 and (0,), amax keeps its shape. to_dict()/from_dict() are the reference's dict()
/// format, for moving descriptors between pq and qgrad.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/shape.h"
#include "quant/nvidia/block_quant.h"
#include "quant/nvidia/num_bits.h"

namespace qgrad::nvidia {

/// How a quantizer's amax is calibrated: "max" or "histogram".
enum class CalibMethod { Max, Histogram };
const char* calib_method_name(CalibMethod m);  ///< "max" or "histogram"

/// Whose FP8 fake quant a (4, 3) descriptor runs.
enum class Fp8Recipe { PytorchQuantization, Modelopt };
const char* fp8_recipe_name(Fp8Recipe r);  ///< "pytorch_quantization" or "modelopt"

/// none, a single int, or a tuple of ints.
struct QuantAxis {
  /// Which of the three.
  enum class Kind { None, Int, Tuple };
  Kind kind = Kind::None;          ///< which form
  std::vector<std::int64_t> axes;  ///< the axes (one for Int, none for None)

  /// Axis none.
  static QuantAxis none() { return {}; }
  /// Axis a (an int).
  static QuantAxis single(std::int64_t a) { return {Kind::Int, {a}}; }
  /// Axis (a, ...) (a tuple).
  static QuantAxis tuple(std::vector<std::int64_t> a) { return {Kind::Tuple, std::move(a)}; }
  /// Whether the axis is none.
  bool is_none() const { return kind == Kind::None; }
  /// Same kind and axes.
  bool operator==(const QuantAxis& o) const { return kind == o.kind && axes == o.axes; }
  /// !(*this == o).
  bool operator!=(const QuantAxis& o) const { return !(*this == o); }
};

/// A user amax: shape {} for a plain number, else the array's shape; values row-major.
struct AmaxValue {
  Shape shape;                 ///< {} for a number, else the array's shape
  std::vector<double> values;  ///< the values, row-major
  /// Same shape and values.
  bool operator==(const AmaxValue& o) const { return shape == o.shape && values == o.values; }
  /// !(*this == o).
  bool operator!=(const AmaxValue& o) const { return !(*this == o); }
};

/// Chainable options (libtorch style): QuantDescriptorOptions().num_bits(4).axis(0).
struct QuantDescriptorOptions {
  NumBits num_bits_ = 8;                   ///< integer bits or (E,M) format
  std::optional<std::string> name_;        ///< the quantizer's name (none by default)
  bool fake_quant_ = true;                 ///< fake-quantize (true) or return the integers
  QuantAxis axis_;                         ///< the axes that keep their own amax (none: per tensor)
  std::optional<BlockSizes> block_sizes_;  ///< block quantization (see block_quant.h)
  std::optional<AmaxValue> amax_;          ///< a fixed amax (a number or an array)
  bool learn_amax_ = false;                ///< learn amax (per tensor only)
  std::optional<double> scale_amax_;       ///< a factor applied to the amax (finite, > 0)
  std::string calib_method_ = "max";       ///< "max" or "histogram"
  bool unsigned_ = false;                  ///< unsigned integer grid
  bool narrow_range_ = false;              ///< symmetric grid without the lowest value
  bool dynamic_ = false;                   ///< amax from each input (no calibration)
  std::string fp8_recipe_ = "pytorch_quantization";  ///< "pytorch_quantization" or "modelopt"

  /// Sets num_bits_.
  QuantDescriptorOptions& num_bits(NumBits v) { return set(num_bits_, v); }
  /// Sets name_.
  QuantDescriptorOptions& name(std::string v) { return set(name_, std::optional<std::string>(v)); }
  /// Sets fake_quant_.
  QuantDescriptorOptions& fake_quant(bool v) { return set(fake_quant_, v); }
  /// Sets axis_ to the int v.
  QuantDescriptorOptions& axis(std::int64_t v) { return set(axis_, QuantAxis::single(v)); }
  /// Sets axis_.
  QuantDescriptorOptions& axis(QuantAxis v) { return set(axis_, std::move(v)); }
  /// Sets block_sizes_.
  QuantDescriptorOptions& block_sizes(BlockSizes v) {
    return set(block_sizes_, std::optional<BlockSizes>(std::move(v)));
  }
  /// Sets amax_ to the number v.
  QuantDescriptorOptions& amax(double v) {
    return set(amax_, std::optional<AmaxValue>(AmaxValue{{}, {v}}));
  }
  /// Sets amax_.
  QuantDescriptorOptions& amax(AmaxValue v) {
    return set(amax_, std::optional<AmaxValue>(std::move(v)));
  }
  /// Sets learn_amax_.
  QuantDescriptorOptions& learn_amax(bool v) { return set(learn_amax_, v); }
  /// Sets scale_amax_.
  QuantDescriptorOptions& scale_amax(double v) {
    return set(scale_amax_, std::optional<double>(v));
  }
  /// Sets calib_method_.
  QuantDescriptorOptions& calib_method(std::string v) { return set(calib_method_, std::move(v)); }
  /// Sets unsigned_.
  QuantDescriptorOptions& is_unsigned(bool v) { return set(unsigned_, v); }
  /// Sets narrow_range_.
  QuantDescriptorOptions& narrow_range(bool v) { return set(narrow_range_, v); }
  /// Sets dynamic_.
  QuantDescriptorOptions& dynamic(bool v) { return set(dynamic_, v); }
  /// Sets fp8_recipe_.
  QuantDescriptorOptions& fp8_recipe(std::string v) { return set(fp8_recipe_, std::move(v)); }

 private:
  template <typename F, typename V>
  QuantDescriptorOptions& set(F& field, V&& v) {
    field = std::forward<V>(v);
    return *this;
  }
};

/// pytorch_quantization's QuantDescriptor (with modelopt's fields): validated options of an
/// NVIDIA quantizer and their JSON forms (see the file comment).
class QuantDescriptor {
 public:
  QuantDescriptor();                                             ///< all defaults
  explicit QuantDescriptor(const QuantDescriptorOptions& opts);  ///< validates

  /// Integer bits or (E,M) format.
  const NumBits& num_bits() const { return o_.num_bits_; }
  /// The name, if set.
  const std::optional<std::string>& name() const { return o_.name_; }
  /// Whether it fake-quantizes.
  bool fake_quant() const { return o_.fake_quant_; }
  /// The axes that keep their own amax.
  const QuantAxis& axis() const { return o_.axis_; }
  /// The block quantization, if any.
  const std::optional<BlockSizes>& block_sizes() const { return o_.block_sizes_; }
  /// The fixed amax, if any.
  const std::optional<AmaxValue>& amax() const { return o_.amax_; }
  /// Whether amax is learned.
  bool learn_amax() const { return o_.learn_amax_; }
  /// The amax factor, if any.
  const std::optional<double>& scale_amax() const { return o_.scale_amax_; }
  /// The calibration method.
  CalibMethod calib_method() const { return calib_; }
  /// Unsigned integer grid.
  bool is_unsigned() const { return o_.unsigned_; }
  /// Symmetric grid without the lowest value.
  bool narrow_range() const { return o_.narrow_range_; }
  /// Amax from each input.
  bool dynamic() const { return o_.dynamic_; }
  /// Whose FP8 arithmetic a (4, 3) num_bits runs.
  Fp8Recipe fp8_recipe() const { return fp8_; }
  /// All the options.
  const QuantDescriptorOptions& options() const { return o_; }

  /// The non-default fields under the reference's names (see the file comment).
  nlohmann::json to_json() const;
  /// pytorch_quantization's ScaledQuantDescriptor.dict(), key for key: always "num_bits" and
  /// "name" (null when unset); "fake_quant", "axis", "amax", "scale_amax", "learn_amax" and
  /// "unsigned" only when not default; never "calib_method" nor "narrow_range" (pq drops them);
  /// amax holds the float32 value of each element as a double (0.1 -> 0.10000000149011612), as
  /// pq stores amax in a float32 array. Fields pq does not have (modelopt's block_sizes and
  /// dynamic, qgrad's fp8_recipe) are written under their names when set, so that nothing is lost
  /// silently.
  nlohmann::json to_dict() const;
  /// Reads pq's dict() (or its constructor keyword arguments): to_json's fields, with "name"
  /// allowed to be null. from_dict(d.to_dict()).to_dict() == d.to_dict().
  static QuantDescriptor from_dict(const nlohmann::json& j);
  /// The descriptor of to_json()'s form; ValueError for an unknown key, a wrong type or invalid
  /// options.
  static QuantDescriptor from_json(const nlohmann::json& j);
  /// from_json's reading alone: each field type-checked (the same errors), the fields not yet
  /// validated together, as the constructor does. A QAT recipe's layer rules hold such partial
  /// descriptors, validated once merged over a layer's settings.
  static QuantDescriptorOptions read_options(const nlohmann::json& j);
  /// JSON text through parse_json (depth-bounded, no duplicate keys, no 1e400), then from_json;
  /// every problem is a ValueError.
  static QuantDescriptor parse(const std::string& text);

  /// Equal options.
  bool operator==(const QuantDescriptor& o) const;
  /// !(*this == o).
  bool operator!=(const QuantDescriptor& o) const { return !(*this == o); }

 private:
  QuantDescriptorOptions o_;
  CalibMethod calib_ = CalibMethod::Max;
  Fp8Recipe fp8_ = Fp8Recipe::PytorchQuantization;
};

}  // namespace qgrad::nvidia

/// @file
/// QuantRecipe: how to quantize a model for quantization-aware training, described by JSON (the
/// "quant" key of `qgrad train`'s configuration) and read once, at that edge, into a typed recipe:
/// the family, each role's typed quantizer settings (quant/recipe/quantizer_settings.h), the
/// top-level options and the per-layer rules with their typed overrides (layer_rules.h).
/// from_json() validates everything up front (every value through quant/recipe/recipe_fields.h)
/// and reports problems as ValueError naming the key ("quant recipe: \"weight.num_bits\" ...");
/// integers are never truncated (a value beyond the key's range is an error, not wrapped), and
/// parse() reads text through parse_json (depth-bounded, no duplicate keys, no 1e400).
/// to_json() writes the normalised recipe (every top-level default filled in; quantizer settings
/// as given), byte for byte what the JSON-based recipe wrote before (stored checkpoints and
/// configs hold it), which from_json() reads back to an equal recipe. quantize_model()
/// (quantize_model.h) applies it; calibrate_model() (calibrate.h) runs the calibration it asks for.
///
/// Schema:
/// {
///   "recipe":  "name",               a named recipe (named_recipes.h: "torch_ao_default",
///                                    "nvidia_int8", "lsq_w4a4", ...; `qgrad recipes` lists them)
///                                    that the other keys given override, objects merged key by
///                                    key; "family" may then be left out.
///   "family":  "nvidia" | "torch_ao" | "lsq" | "horizon" | "aimet" | "pact",    (required)
///   "weight":  {quantizer} | null,   weights of Conv2d / Linear; null: weights stay float;
///                                    absent: the family's default below. An object given
///                                    replaces the default as a whole (no merging).
///   "input":   {quantizer} | null,   inputs of Conv2d / Linear (and of Add, see "add"), per
///                                    tensor; null / absent as for "weight".
///   "add":     true | false,         residual nn::Add -> QuantAdd with an "input" quantizer on
///                                    both operands (default true; needs "input").
///   "fuse_bn": true | false,         (default false) every Conv2d followed by a BatchNorm2d
///                                    (consecutive children of a Sequential, conv1/bn1 and
///                                    conv2/bn2 of an nn::BasicBlock) -> one QuantConvBn2d
///                                    (quant_conv_bn2d.h: weight quantized as W*gamma/sigma,
///                                    torch.ao's ConvBn2d) in the conv's place and nn::Identity
///                                    in the BN's; the BN's keys move under the conv's name
///                                    ("0.bn.running_mean"). false: QuantConv2d + float BN.
///   "bias":    "float" | "int32",    (default "float") "int32": the bias of every quantized
///                                    Conv2d / Linear is fake quantized onto the int32 grid of
///                                    scale s_in * s_w (int32_bias.h), the bias an integer runtime
///                                    adds (ONNX Runtime rounds a float bias so itself); needs
///                                    "fuse_bn": false.
///   "layers":  {"pattern": {"weight": {...} | null, "input": {...} | null} | null, ...}
///              or [{"match": "pattern" | [...], "weight": ..., "input": ...}, ...]:
///                                    per-layer overrides (layer_rules.h): shell globs over
///                                    qualified names, exact names, "@first" / "@last" (the
///                                    first / last Conv2d or Linear); objects merge key by key
///                                    over the layer's settings, null keeps that role float.
///                                    The list applies in order (last match wins); the object
///                                    from the least to the most specific pattern.
///   "exclude": ["name", ...],        qualified module names (as named_modules prints them, e.g.
///                                    "0", "layer1.0.conv1", "fc") kept in float with everything
///                                    below them; a name matching no module is an error.
///   "calibration": {
///     "batches":    int 0..1e6,      batches to run before training (default: nvidia 8,
///                                    torch_ao 0, lsq 0, horizon 8, aimet 8; aimet needs >= 1);
///     "method":     "entropy" | "mse" | "percentile"   (NVIDIA histogram calibrators; default
///                                    "entropy"; max calibrators always use the max),
///     "percentile": number in (0, 100] (default 99.99), "start_bin": int >= 0 (128),
///     "stride": int >= 1 (1),
///     "strict":     bool (default true: a quantizer that saw no data is an error)
///   }
/// }
/// {quantizer} by family (keys not listed are errors; absent keys take the value in brackets):
///   nvidia:   the QuantDescriptor JSON fields (quant_descriptor.h): "num_bits" (int or [E, M]),
///             "axis", "block_sizes", "amax", "learn_amax", "scale_amax", "calib_method"
///             ("max" | "histogram"), "unsigned", "narrow_range", "dynamic", "fake_quant", "name",
///             plus "num_bins" [2048] for histogram calibration.
///             Defaults: weight {"num_bits": 8, "axis": 0}, input {"num_bits": 8}.
///   torch_ao: FakeQuantize, or FusedMovingAvgObsFakeQuantize for the fused observer:
///             "observer" ["moving_average_minmax"] | "minmax" | "histogram" |
///             "fused_moving_average_minmax" (torch.ao's fused observer + fake quant: ATen's
///             ChooseQuantizationParams, qparams chosen only while fake quantizing, per channel
///             along axis 0 only),
///             "dtype" ["quint8"] | "qint8" | "qint32", "qscheme" ["per_tensor_affine"] |
///             "per_tensor_symmetric" | "per_channel_affine" | "per_channel_symmetric",
///             "quant_min" and "quant_max" (together) [the dtype's range], "reduce_range" [false],
///             "averaging_constant" [0.01], "ch_axis" [0], "eps" [2^-23], "bins" [2048].
///             Per-channel weights are sized from the weight along ch_axis.
///             Defaults: PyTorch 1.13's get_default_qat_qconfig("fbgemm") (also "x86"):
///             weight {"observer": "fused_moving_average_minmax", "dtype": "qint8", "qscheme":
///             "per_channel_symmetric", "quant_min": -128, "quant_max": 127}
///             (default_fused_per_channel_wt_fake_quant), input {"observer":
///             "fused_moving_average_minmax", "dtype": "quint8", "qscheme": "per_tensor_affine",
///             "quant_min": 0, "quant_max": 255, "reduce_range": true} (so [0, 127]).
///   lsq:      LearnableFakeQuantize: "num_bits" [8] (2..16), "signed" (grid [-2^(b-1),
///             2^(b-1)-1], else [0, 2^b-1]), "per_channel" [false] (weights only, axis 0),
///             "learn_zero_point" [false] (true: affine LSQ+, false: symmetric LSQ),
///             "use_grad_scaling" [true], "init" ("lsq" | "minmax" | "observer"),
///             "averaging_constant" [0.01].
///             Defaults: weight {"signed": true, "init": "lsq"}, input {"signed": false,
///             "learn_zero_point": true, "init": "minmax"}.
///   horizon:  HorizonFakeQuantize: "dtype" ["qint8"] | "qint16" | "qint4" | "quint4",
///             "saturate" [true], "round_mode" ["half_to_even"] | "half_up", "per_channel"
///             (weights only, axis 0), "averaging_constant" [0.01].
///             Defaults: weight {"per_channel": true}, input {}.
///   aimet:    AimetQuantizeDequantize: "bitwidth" [8] (1..32), "symmetric", "per_channel"
///             (weights only: encoding shape [O, 1, ...]).
///             Defaults: weight {"symmetric": true, "per_channel": true}, input
///             {"symmetric": false}.
///   pact:     weights DoReFaWeightQuantizer (dorefa_weight_quantizer.h): "num_bits" [8] (1..16);
///             inputs PactActivationQuantizer (pact_activation_quantizer.h): "num_bits" [8]
///             (1..16, the PACT family's one range: quant/learnable/pact_bits.h), "alpha" [10.0]
///             (the initial clipping level, > 0). Unsigned: negative inputs become 0. Defaults:
///             weight {"num_bits": 8}, input {"num_bits": 8}.
/// Example: {"family": "nvidia", "weight": {"num_bits": 8, "axis": 0},
///           "input": {"num_bits": 8, "calib_method": "histogram"},
///           "calibration": {"method": "percentile", "percentile": 99.99, "batches": 16}}
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/shape.h"
#include "nn/unary_module.h"
#include "quant/modules/calibratable.h"
#include "quant/modules/layer_rules.h"
#include "quant/recipe/quantizer_factories.h"
#include "quant/recipe/quantizer_settings.h"

namespace qgrad::quant {

/// A QAT recipe read and validated: the family, the quantizers of each role, the layer rules, and
/// the model and calibration options (see the file comment).
class QuantRecipe {
 public:
  /// Builds a weight quantizer for a weight shape.
  using WeightQuantizerFactory = quant::WeightQuantizerFactory;
  /// Builds an input quantizer.
  using InputQuantizerFactory = quant::InputQuantizerFactory;

  /// The recipe JSON object (see the file comment); ValueError ("quant recipe: ...") naming the key
  /// for anything malformed.
  static QuantRecipe from_json(const nlohmann::json& recipe);
  /// JSON text; a syntax error is a ValueError too.
  static QuantRecipe parse(const std::string& text);
  /// The recipe as JSON, the keys given as they were written (from_json reads it back to an
  /// equal recipe).
  nlohmann::json to_json() const;

  /// Recipes that quantize every layer alike (the factories are not compared).
  bool operator==(const QuantRecipe& o) const;
  /// !(*this == o).
  bool operator!=(const QuantRecipe& o) const { return !(*this == o); }

  /// The quantizer family.
  QuantFamily family() const { return family_; }
  /// The top-level settings of each role; nullopt: that role stays float.
  const std::optional<QuantizerSettings>& weight_settings() const { return weight_; }
  /// The top-level input settings (see weight_settings()).
  const std::optional<QuantizerSettings>& input_settings() const { return input_; }
  /// Whether weights are quantized (top level).
  bool quantizes_weights() const { return static_cast<bool>(weight_factory_); }
  /// Whether inputs are quantized (top level).
  bool quantizes_inputs() const { return static_cast<bool>(input_factory_); }
  /// "add": residual Adds become QuantAdd.
  bool quantize_add() const { return add_; }
  /// "fuse_bn": Conv2d + BatchNorm2d become QuantConvBn2d.
  bool fuse_bn() const { return fuse_bn_; }
  /// "bias": "int32".
  bool int32_bias() const { return int32_bias_; }
  /// "exclude": module names kept float.
  const std::vector<std::string>& exclude() const { return exclude_; }
  /// "calibration"."batches" (or the family's default).
  std::int64_t calibration_batches() const { return calibration_batches_; }
  /// The rest of "calibration".
  const CalibrationOptions& calibration_options() const { return calibration_; }

  /// Fresh quantizer modules of the top-level settings (nullptr when that role is not quantized).
  std::shared_ptr<nn::UnaryModule> make_weight_quantizer(const Shape& weight_shape) const;
  /// A fresh input quantizer (nullptr when inputs stay float).
  std::shared_ptr<nn::UnaryModule> make_input_quantizer() const;

  /// The quantizers of one layer after the "layers" rules.
  struct LayerQuantizers {
    /// The resolved weight settings (nullopt: float); `input` likewise for the input.
    std::optional<QuantizerSettings> weight, input;  ///< resolved; nullopt: that role stays float
    WeightQuantizerFactory make_weight;              ///< empty when `weight` is nullopt
    InputQuantizerFactory make_input;                ///< empty when `input` is nullopt
    /// Whether both roles stay float.
    bool is_float() const { return !weight && !input; }
  };
  /// ValueError naming the layer for settings its family rejects, or two equally specific rules
  /// that disagree (layer_rules.h).
  LayerQuantizers layer(const std::string& name, LayerPosition pos) const;
  /// The "layers" rules.
  const LayerRules& layer_rules() const { return layer_rules_; }

 private:
  QuantRecipe() = default;

  QuantFamily family_ = QuantFamily::NVIDIA;
  std::optional<QuantizerSettings> weight_, input_;  ///< nullopt: not quantized
  WeightQuantizerFactory weight_factory_;
  InputQuantizerFactory input_factory_;
  LayerRules layer_rules_;
  bool add_ = true;
  bool fuse_bn_ = false;
  bool int32_bias_ = false;
  std::vector<std::string> exclude_;
  std::int64_t calibration_batches_ = 0;
  CalibrationOptions calibration_;
};

}  // namespace qgrad::quant

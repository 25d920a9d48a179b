// NvidiaSettings: reading the keys (through QuantDescriptor's reader) and building
// TensorQuantizers.
#include "quant/recipe/nvidia_settings.h"

#include "core/error.h"
#include "quant/modules/tensor_quantizer.h"
#include "quant/nvidia/block_quant.h"
#include "quant/recipe/recipe_fields.h"

namespace qgrad::quant {

namespace {

// The descriptor's part of the settings, as QuantDescriptor reads it.
nlohmann::json descriptor_json(const NvidiaSettings& s) {
  nlohmann::json j = settings_to_json(s);
  j.erase("num_bins");
  return j;
}

}  // namespace

NvidiaSettings NvidiaSettings::parse(const nlohmann::json& j, QuantRole, const std::string& path) {
  RecipeFields f(j, path, settings_keys<NvidiaSettings>());
  NvidiaSettings s;
  s.num_bins = f.integer("num_bins", 2, std::int64_t{1} << 24);
  nlohmann::json dj = j;
  dj.erase("num_bins");
  nvidia::QuantDescriptorOptions o;
  try {
    o = nvidia::QuantDescriptor::read_options(dj);
  } catch (const Error& e) {
    recipe_error("\"" + path + "\": " + e.what());
  }
  if (f.has("num_bits")) s.num_bits = o.num_bits_;
  if (f.has("name")) s.name = o.name_;
  if (f.has("fake_quant")) s.fake_quant = o.fake_quant_;
  if (f.has("axis")) s.axis = o.axis_;
  if (f.has("block_sizes")) s.block_sizes = f.at("block_sizes");
  if (f.has("amax")) s.amax = f.at("amax");
  if (f.has("learn_amax")) s.learn_amax = o.learn_amax_;
  if (f.has("scale_amax")) s.scale_amax = RecipeNumber::from_json(f.at("scale_amax"));
  if (f.has("calib_method")) s.calib_method = o.calib_method_;
  if (f.has("unsigned")) s.is_unsigned = o.unsigned_;
  if (f.has("narrow_range")) s.narrow_range = o.narrow_range_;
  if (f.has("dynamic")) s.dynamic = o.dynamic_;
  if (f.has("fp8_recipe")) s.fp8_recipe = o.fp8_recipe_;
  return s;
}

QuantizerFactories NvidiaSettings::factories(QuantRole role, const std::string& path) const {
  nvidia::QuantDescriptor d;
  try {
    d = nvidia::QuantDescriptor::from_json(descriptor_json(*this));
  } catch (const Error& e) {
    recipe_error("\"" + path + "\": " + e.what());
  }
  const std::int64_t bins = num_bins.value_or(2048);
  QuantizerFactories out;
  if (role == QuantRole::Input) {
    // Inputs are [N, ...]: an amax per position along axis 0 would quantize each test image with
    // the range of the calibration image at the same batch position.
    for (std::int64_t a : d.axis().axes)
      if (a == 0)
        recipe_error("\"" + path +
                     ".axis\" is 0, the batch axis of an input: inputs are quantized per "
                     "tensor or along a feature axis (1 for NCHW channels), never per image");
    out.input = [d, bins] {
      return std::make_shared<TensorQuantizer>(d, TensorQuantizerOptions().num_bins(bins));
    };
    return out;
  }
  out.weight = [d, bins, path](const Shape& ws) {
    TensorQuantizerOptions o;
    o.num_bins(bins);
    if (!d.axis().is_none()) {
      Shape s(ws.size(), 1);
      for (std::int64_t a : d.axis().axes) {
        const std::int64_t n = weight_axis(a, ws.size(), "\"" + path + ".axis\"");
        s[static_cast<std::size_t>(n)] = ws[static_cast<std::size_t>(n)];
      }
      o.amax_shape(s);
    } else if (d.block_sizes() && d.block_sizes()->type == nvidia::BlockQuantType::Static &&
               !d.dynamic()) {
      o.amax_shape(nvidia::block_grid_shape(ws, *d.block_sizes()));
    }
    return std::make_shared<TensorQuantizer>(d, o);
  };
  return out;
}

}  // namespace qgrad::quant

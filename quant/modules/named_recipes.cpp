// The named recipe table and the expansion of {"recipe": name, ...overrides}.
#include "quant/modules/named_recipes.h"

#include "core/error.h"

namespace qgrad::quant {

using json = nlohmann::json;

namespace {

// LSQ (Esser et al.): symmetric learned step for weights (signed) and layer inputs (unsigned,
// as after a ReLU), s initialised to 2 mean|x| / sqrt(Q_P), gradient scaled by 1 / sqrt(N Q_P).
// Residual adds are not quantized (the paper quantizes the inputs of matrix multiplications);
// the first and last Conv2d / Linear layers are at 8 bits, as in the paper's experiments.
json lsq(int bits) {
  return json{
      {"family", "lsq"},
      {"weight",
       {{"num_bits", bits},
        {"signed", true},
        {"per_channel", false},
        {"learn_zero_point", false},
        {"use_grad_scaling", true},
        {"init", "lsq"}}},
      {"input",
       {{"num_bits", bits},
        {"signed", false},
        {"learn_zero_point", false},
        {"use_grad_scaling", true},
        {"init", "lsq"}}},
      {"add", false},
      // The paper keeps the first and last layers at 8 bits (weights and inputs); the
      // first layer's input is the normalised image, which has negative values.
      {"layers",
       {{"@first", {{"weight", {{"num_bits", 8}}}, {"input", {{"num_bits", 8}, {"signed", true}}}}},
        {"@last", {{"weight", {{"num_bits", 8}}}, {"input", {{"num_bits", 8}}}}}}}};
}

NamedRecipe lsq_recipe(int bits) {
  const std::string b = std::to_string(bits);
  return {"lsq_w" + b + "a" + b,
          "LSQ W" + b + "A" + b +
              ": learned step size, signed per-tensor weights, unsigned inputs, " + b +
              " bits, the first and last layers at 8 bits as in the paper",
          "Esser et al., Learned Step Size Quantization, ICLR 2020 (arXiv:1902.08153)", lsq(bits)};
}

std::vector<NamedRecipe> make_table() {
  std::vector<NamedRecipe> t;
  t.push_back(
      {"torch_ao_default",
       "torch.ao QAT default: fused moving-average min/max observers, per-channel symmetric qint8 "
       "weights, quint8 inputs with reduce_range",
       "PyTorch 1.13 torch.ao.quantization.get_default_qat_qconfig(\"fbgemm\")",
       json{{"family", "torch_ao"},
            {"weight",
             {{"observer", "fused_moving_average_minmax"},
              {"dtype", "qint8"},
              {"qscheme", "per_channel_symmetric"},
              {"quant_min", -128},
              {"quant_max", 127}}},
            {"input",
             {{"observer", "fused_moving_average_minmax"},
              {"dtype", "quint8"},
              {"qscheme", "per_tensor_affine"},
              {"quant_min", 0},
              {"quant_max", 255},
              {"reduce_range", true}}}}});
  t.push_back({"nvidia_int8",
               "NVIDIA int8: per-channel weights and per-tensor inputs, max calibration on 8 "
               "batches, then QAT",
               "NVIDIA pytorch_quantization quant_modules defaults; Wu et al., Integer "
               "Quantization for Deep Learning Inference, 2020 (arXiv:2004.09602)",
               json{{"family", "nvidia"},
                    {"weight", {{"num_bits", 8}, {"axis", 0}, {"calib_method", "max"}}},
                    {"input", {{"num_bits", 8}, {"calib_method", "max"}}},
                    {"calibration", {{"batches", 8}}}}});
  for (int bits : {4, 3, 2}) t.push_back(lsq_recipe(bits));
  // PACT: learned clipping level alpha on the activations, DoReFa weights; the first layer's
  // input (the normalised image, which has negative values) stays float and the first and last
  // layers' weights are at 8 bits, the LSQ recipes' convention, so the rows compare like for
  // like. Residual adds are not quantized (PACT quantizes the inputs of the convolutions).
  t.push_back(
      {"pact_w4a4",
       "PACT W4A4: learned activation clipping (alpha, init 10) and DoReFa weights at 4 bits; the "
       "first layer's input float, the first and last layers' weights at 8 bits",
       "Choi et al., PACT: Parameterized Clipping Activation for Quantized Neural Networks, 2018 "
       "(arXiv:1805.06085); Zhou et al., DoReFa-Net, 2016 (arXiv:1606.06160)",
       json{{"family", "pact"},
            {"weight", {{"num_bits", 4}}},
            {"input", {{"num_bits", 4}, {"alpha", 10.0}}},
            {"add", false},
            {"layers",
             {{"@first", {{"weight", {{"num_bits", 8}}}, {"input", nullptr}}},
              {"@last", {{"weight", {{"num_bits", 8}}}, {"input", {{"num_bits", 8}}}}}}}}});
  t.push_back(
      {"fp8_e4m3",
       "FP8 E4M3 (max 448) per-tensor weights and inputs, scaled by max calibration on 8 batches",
       "Micikevicius et al., FP8 Formats for Deep Learning, 2022 (arXiv:2209.05433); TensorRT "
       "Model Optimizer FP8_DEFAULT_CFG",
       json{{"family", "nvidia"},
            {"weight", {{"num_bits", {4, 3}}, {"calib_method", "max"}, {"fp8_recipe", "modelopt"}}},
            {"input", {{"num_bits", {4, 3}}, {"calib_method", "max"}, {"fp8_recipe", "modelopt"}}},
            {"calibration", {{"batches", 8}}}}});
  return t;
}

std::string known_names() {
  std::string s;
  for (const NamedRecipe& r : named_recipes()) s += (s.empty() ? "" : ", ") + r.name;
  return s;
}

// A value in an error message, never dumped whole.
std::string shown(const json& v) {
  if (!v.is_string()) return std::string("(a JSON ") + v.type_name() + ")";
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 64 ? text.substr(0, 64) + "..." : text;
}

}  // namespace

void merge_recipe_json(json& base, const json& over) {
  for (auto it = over.begin(); it != over.end(); ++it) {
    json& slot = base[it.key()];
    if (slot.is_object() && it.value().is_object())
      merge_recipe_json(slot, it.value());
    else
      slot = it.value();
  }
}

const std::vector<NamedRecipe>& named_recipes() {
  static const std::vector<NamedRecipe> table = make_table();
  return table;
}

const NamedRecipe& named_recipe(const std::string& name) {
  for (const NamedRecipe& r : named_recipes())
    if (r.name == name) return r;
  throw ValueError("quant recipe: unknown recipe \"" + name + "\" (known: " + known_names() + ")");
}

json expand_named_recipe(const json& recipe) {
  if (!recipe.is_object() || !recipe.contains("recipe")) return recipe;
  const json& name = recipe.at("recipe");
  if (!name.is_string())
    throw ValueError("quant recipe: \"recipe\" must be the name of a recipe (one of " +
                     known_names() + "), got a JSON " + std::string(name.type_name()));
  const NamedRecipe& named = named_recipe(name.get<std::string>());
  json overrides = recipe;
  overrides.erase("recipe");
  if (overrides.contains("family") && overrides.at("family") != named.recipe.at("family"))
    throw ValueError("quant recipe: \"family\" " + shown(overrides.at("family")) +
                     " differs from the family of recipe \"" + named.name + "\" (" +
                     named.recipe.at("family").dump() +
                     "); leave \"recipe\" out to write a recipe of another family");
  json out = named.recipe;
  merge_recipe_json(out, overrides);
  return out;
}

}  // namespace qgrad::quant

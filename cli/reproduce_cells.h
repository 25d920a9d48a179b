// The cells of `qgrad reproduce`'s paper table, defined in one place: for each, a short id (its
// run folder's name), the label of the table row, how the model is obtained (float training,
// PTQ of the float model, or QAT fine-tuning from it, as the papers do), the recipe (a named
// recipe of `qgrad recipes` with overrides), the bit widths for results.json, and the numbers the
// papers report for the same setting (ImageNet ResNet-18, so a trend to compare, not a value to
// match). A row without a method is listed but not run (with not_run_why), so the table says
// why rather than leaving it out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgrad::cli {

struct ReproduceCell {
  std::string id;          // "fp32", "ptq_int8_max", "lsq_w4a4", ... (the run folder's name)
  std::string label;       // the table's row label
  std::string method;      // "float", "ptq" or "qat" (results.json's method); empty: not runnable
  std::string recipe;      // the results.json recipe label: the named recipe, "lsqplus_w4a4", or
                           // "nvidia_int8 max" / "nvidia_int8 entropy" for the two PTQ rows
  std::string family;      // the quantizer family ("" for FP32)
  nlohmann::json quant;    // the recipe JSON (null for float)
  std::string ptq_method;  // ptq: "max" or "entropy"
  std::optional<std::int64_t> weight_bits;  // for results.json
  std::optional<std::int64_t> act_bits;
  std::string paper;        // the paper's ImageNet ResNet-18 top-1, e.g. "71.1 (LSQ)", or ""
  std::string not_run_why;  // why a row without a method is in the table
};

// Every row, in table order.
const std::vector<ReproduceCell>& reproduce_cells();

// The cells named (comma-separated ids, "all" for every runnable cell). UsageError naming an
// unknown id and listing the known ones.
std::vector<ReproduceCell> select_cells(const std::string& ids);

}  // namespace qgrad::cli

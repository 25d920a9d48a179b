// The paper table's cells and their selection by id.
#include "cli/reproduce_cells.h"

#include "cli/usage_error.h"

namespace qgrad::cli {

using json = nlohmann::json;

namespace {

std::vector<ReproduceCell> make_cells() {
  std::vector<ReproduceCell> c;
  c.push_back({"fp32", "FP32", "float", "", "", nullptr, "", std::nullopt, std::nullopt,
               "70.5 (LSQ paper)", ""});
  // PTQ with pytorch_quantization's int8 recipe: per-channel max weights, inputs by max or by
  // the entropy (KL) histogram calibrator.
  c.push_back({"ptq_int8_max", "PTQ int8, max calibration", "ptq", "nvidia_int8 max", "nvidia",
               json{{"recipe", "nvidia_int8"}}, "max", 8, 8, "", ""});
  c.push_back({"ptq_int8_entropy", "PTQ int8, entropy calibration", "ptq", "nvidia_int8 entropy",
               "nvidia", json{{"recipe", "nvidia_int8"}}, "entropy", 8, 8, "", ""});
  // Jacob et al. 2018 as torch.ao implements it: moving-average min/max observers.
  c.push_back({"qat_int8", "QAT int8, moving-average observers (Jacob et al. 2018, torch.ao)",
               "qat", "torch_ao_default", "torch_ao", json{{"recipe", "torch_ao_default"}}, "", 8,
               8, "", ""});
  c.push_back({"pact_w4a4", "PACT W4A4 (DoReFa weights; first and last layer weights 8-bit)", "qat",
               "pact_w4a4", "pact", json{{"recipe", "pact_w4a4"}}, "", 4, 4, "69.2 (PACT paper)",
               ""});
  for (int bits : {4, 3, 2}) {
    const std::string b = std::to_string(bits);
    const char* paper = bits == 4   ? "71.1 (LSQ paper)"
                        : bits == 3 ? "70.2 (LSQ paper)"
                                    : "67.6 (LSQ paper)";
    c.push_back({"lsq_w" + b + "a" + b, "LSQ W" + b + "A" + b + " (first and last layer 8-bit)",
                 "qat", "lsq_w" + b + "a" + b, "lsq", json{{"recipe", "lsq_w" + b + "a" + b}}, "",
                 bits, bits, paper, ""});
  }
  // LSQ+ (Bhalgat et al. 2020): LSQ with a learned offset on the activations, min/max init.
  c.push_back(
      {"lsqplus_w4a4", "LSQ+ W4A4 (learned activation offset)", "qat", "lsqplus_w4a4", "lsq",
       json{{"recipe", "lsq_w4a4"}, {"input", {{"learn_zero_point", true}, {"init", "minmax"}}}},
       "", 4, 4, "", ""});
  return c;
}

}  // namespace

const std::vector<ReproduceCell>& reproduce_cells() {
  static const std::vector<ReproduceCell> cells = make_cells();
  return cells;
}

std::vector<ReproduceCell> select_cells(const std::string& ids) {
  if (ids == "all") return reproduce_cells();
  std::vector<ReproduceCell> out;
  std::size_t start = 0;
  while (start <= ids.size()) {
    const std::size_t comma = ids.find(',', start);
    const std::string id =
        ids.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const ReproduceCell* found = nullptr;
    for (const ReproduceCell& c : reproduce_cells())
      if (c.id == id) found = &c;
    if (found == nullptr) {
      std::string known;
      for (const ReproduceCell& c : reproduce_cells()) known += (known.empty() ? "" : ", ") + c.id;
      throw UsageError("reproduce: --cells: unknown cell '" + id + "' (known: " + known +
                       ", or all)");
    }
    out.push_back(*found);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace qgrad::cli

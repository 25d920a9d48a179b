// Model-wide calibration over every Calibratable quantizer.
#include "quant/modules/calibrate.h"

#include "core/autograd/grad_mode.h"

namespace qgrad::quant {

namespace {
void for_each_quantizer(nn::Module& model,
                        const std::function<void(const std::string&, Calibratable&)>& fn) {
  model.apply([&](const std::string& name, nn::Module& m) {
    if (auto* c = dynamic_cast<Calibratable*>(&m)) fn(name.empty() ? m.name() : name, *c);
  });
}
}  // namespace

std::vector<std::string> calibratable_names(const nn::Module& model) {
  std::vector<std::string> names;
  model.apply([&](const std::string& name, const nn::Module& m) {
    if (dynamic_cast<const Calibratable*>(&m)) names.push_back(name.empty() ? m.name() : name);
  });
  return names;
}

void start_calibration(nn::Module& model) {
  for_each_quantizer(model, [](const std::string&, Calibratable& c) { c.start_calibration(); });
}

void finish_calibration(nn::Module& model, const CalibrationOptions& options) {
  for_each_quantizer(model, [&](const std::string& name, Calibratable& c) {
    try {
      c.finish_calibration(options);
    } catch (const Error& e) {
      throw ValueError("calibrate_model: quantizer '" + name + "': " + e.what());
    }
  });
}

std::size_t calibrate_model(nn::Module& model, std::int64_t num_batches,
                            const std::function<void(std::int64_t)>& run_batch,
                            const CalibrationOptions& options) {
  QGRAD_CHECK(num_batches >= 1, ValueError, "calibrate_model: num_batches must be >= 1, got ",
              num_batches);
  QGRAD_CHECK(static_cast<bool>(run_batch), ValueError, "calibrate_model: run_batch is empty");
  const bool was_training = model.is_training();
  model.eval();
  start_calibration(model);
  try {
    NoGradGuard no_grad;
    for (std::int64_t i = 0; i < num_batches; ++i) run_batch(i);
  } catch (...) {
    CalibrationOptions lenient = options;
    lenient.strict = false;
    try {
      finish_calibration(model, lenient);
    } catch (...) {  // the batch's error is the one to report
    }
    model.train(was_training);
    throw;
  }
  try {
    finish_calibration(model, options);
  } catch (...) {
    model.train(was_training);
    throw;
  }
  model.train(was_training);
  return calibratable_names(model).size();
}

}  // namespace qgrad::quant

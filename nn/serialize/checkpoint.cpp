// Checkpoints: prefixing the sections into one safetensors file and splitting them back.
#include "nn/serialize/checkpoint.h"

#include <cerrno>
#include <cstdlib>

#include "nn/module.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/optimizer.h"
#include "nn/serialize/safetensors.h"

namespace qgrad::serialize {

namespace {

const char* const kSections[] = {"model.", "optim.", "sched.", "extra."};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::int64_t parse_int(const std::string& path, const std::string& key, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  QGRAD_CHECK(!v.empty() && end != nullptr && *end == '\0' && errno == 0, IOError,
              "load_checkpoint: '", path, "': metadata '", key, "' = '", v, "' is not an integer");
  return x;
}

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : ckpt.metadata) {
    QGRAD_CHECK(!starts_with(k, "qgrad."), ValueError, "save_checkpoint: metadata key '", k,
                "' uses the reserved prefix 'qgrad.'");
    meta[k] = v;
  }
  meta["qgrad.format"] = "checkpoint";
  meta["qgrad.version"] = "1";
  meta["qgrad.epoch"] = std::to_string(ckpt.epoch);
  meta["qgrad.step"] = std::to_string(ckpt.step);
  TensorDict all("checkpoint entry");
  const TensorDict* parts[] = {&ckpt.model, &ckpt.optimizer, &ckpt.scheduler, &ckpt.extra};
  for (int s = 0; s < 4; ++s)
    for (const auto& it : *parts[s]) all.insert(kSections[s] + it.key, it.value);
  save_safetensors(path, all, meta);
}

Checkpoint load_checkpoint(const std::string& path) {
  SafetensorsContents c = load_safetensors(path);
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = c.metadata.find(key);
    QGRAD_CHECK(it != c.metadata.end(), IOError, "load_checkpoint: '", path,
                "' is not a qgrad checkpoint (no '", key, "' in its metadata)");
    return it->second;
  };
  QGRAD_CHECK(meta("qgrad.format") == "checkpoint", IOError, "load_checkpoint: '", path,
              "' has qgrad.format '", meta("qgrad.format"), "', expected 'checkpoint'");
  QGRAD_CHECK(meta("qgrad.version") == "1", IOError, "load_checkpoint: '", path,
              "' has unsupported checkpoint version '", meta("qgrad.version"), "'");
  Checkpoint ckpt;
  ckpt.epoch = parse_int(path, "qgrad.epoch", meta("qgrad.epoch"));
  ckpt.step = parse_int(path, "qgrad.step", meta("qgrad.step"));
  for (const auto& [k, v] : c.metadata)
    if (!starts_with(k, "qgrad.")) ckpt.metadata[k] = v;
  TensorDict* parts[] = {&ckpt.model, &ckpt.optimizer, &ckpt.scheduler, &ckpt.extra};
  for (const auto& it : c.tensors) {
    bool placed = false;
    for (int s = 0; s < 4 && !placed; ++s) {
      const std::string prefix = kSections[s];
      if (starts_with(it.key, prefix)) {
        parts[s]->insert(it.key.substr(prefix.size()), it.value);
        placed = true;
      }
    }
    QGRAD_CHECK(placed, IOError, "load_checkpoint: '", path, "': tensor '", it.key,
                "' belongs to no checkpoint section (model., optim., sched., extra.)");
  }
  return ckpt;
}

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer, const optim::LRScheduler* scheduler,
                     std::int64_t epoch, std::int64_t step,
                     const std::map<std::string, std::string>& metadata, const TensorDict& extra) {
  Checkpoint ckpt;
  ckpt.model = model.state_dict();
  if (optimizer) ckpt.optimizer = optimizer->state_dict();
  if (scheduler) ckpt.scheduler = scheduler->state_dict();
  ckpt.extra = extra;
  ckpt.epoch = epoch;
  ckpt.step = step;
  ckpt.metadata = metadata;
  save_checkpoint(path, ckpt);
}

Checkpoint load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer* optimizer,
                           optim::LRScheduler* scheduler) {
  Checkpoint ckpt = load_checkpoint(path);
  QGRAD_CHECK(!optimizer || !ckpt.optimizer.empty(), IOError, "load_checkpoint: '", path,
              "' holds no optimizer state");
  QGRAD_CHECK(!scheduler || !ckpt.scheduler.empty(), IOError, "load_checkpoint: '", path,
              "' holds no scheduler state");
  // Each load is all-or-nothing on its own; a mismatch in the optimiser or scheduler state
  // throws after the model has been restored.
  model.load_state_dict(ckpt.model, /*strict=*/true);
  if (optimizer) optimizer->load_state_dict(ckpt.optimizer);
  if (scheduler) scheduler->load_state_dict(ckpt.scheduler);
  return ckpt;
}

}  // namespace qgrad::serialize

// Checkpoints: prefixing the sections into one safetensors file and splitting them back, with
// every malformed file reported as a qgrad error that names it.
#include "nn/serialize/checkpoint.h"

#include <limits>

#include "core/file_io.h"
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

// A non-negative decimal counter exactly as save_checkpoint writes it (no sign, spaces or
// leading zeros), without overflow.
std::int64_t parse_counter(const std::string& source, const std::string& key,
                           const std::string& v) {
  bool ok = !v.empty() && v.size() <= 19 && (v.size() == 1 || v[0] != '0');
  std::int64_t x = 0;
  for (char c : v) {
    ok = ok && c >= '0' && c <= '9' && !__builtin_mul_overflow(x, 10, &x) &&
         !__builtin_add_overflow(x, c - '0', &x);
    if (!ok) break;
  }
  QGRAD_CHECK(ok, IOError, "load_checkpoint: '", source, "': metadata '", key, "' = '", v,
              "' is not a non-negative integer");
  return x;
}

// Runs `f`, adding "load_checkpoint: '<path>': " to any qgrad error it throws while keeping the
// error's type (a state dict that does not fit the model stays a ShapeError/ValueError).
template <typename F>
void naming_file(const std::string& path, F&& f) {
  const std::string prefix = "load_checkpoint: '" + path + "': ";
  try {
    f();
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const DTypeError& e) {
    throw DTypeError(prefix + e.what());
  } catch (const DeviceError& e) {
    throw DeviceError(prefix + e.what());
  } catch (const IndexError& e) {
    throw IndexError(prefix + e.what());
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const IOError& e) {
    throw IOError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  }
}

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  QGRAD_CHECK(ckpt.epoch >= 0 && ckpt.step >= 0, ValueError, "save_checkpoint: epoch ", ckpt.epoch,
              " and step ", ckpt.step, " must be non-negative");
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

Checkpoint parse_checkpoint(const std::string& bytes, const std::string& source) {
  SafetensorsContents c = deserialize_safetensors(bytes, source);
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = c.metadata.find(key);
    QGRAD_CHECK(it != c.metadata.end(), IOError, "load_checkpoint: '", source,
                "' is not a qgrad checkpoint (no '", key, "' in its metadata)");
    return it->second;
  };
  QGRAD_CHECK(meta("qgrad.format") == "checkpoint", IOError, "load_checkpoint: '", source,
              "' has qgrad.format '", meta("qgrad.format"), "', expected 'checkpoint'");
  QGRAD_CHECK(meta("qgrad.version") == "1", IOError, "load_checkpoint: '", source,
              "' has unsupported checkpoint version '", meta("qgrad.version"), "'");
  Checkpoint ckpt;
  ckpt.epoch = parse_counter(source, "qgrad.epoch", meta("qgrad.epoch"));
  ckpt.step = parse_counter(source, "qgrad.step", meta("qgrad.step"));
  for (const auto& [k, v] : c.metadata)
    if (!starts_with(k, "qgrad.")) ckpt.metadata[k] = v;
  TensorDict* parts[] = {&ckpt.model, &ckpt.optimizer, &ckpt.scheduler, &ckpt.extra};
  for (const auto& it : c.tensors) {
    bool placed = false;
    for (int s = 0; s < 4 && !placed; ++s) {
      const std::string prefix = kSections[s];
      if (starts_with(it.key, prefix)) {
        QGRAD_CHECK(it.key.size() > prefix.size(), IOError, "load_checkpoint: '", source,
                    "': tensor '", it.key, "' has an empty name after its section prefix");
        // Names are unique in the file (duplicate keys are rejected), so unique per section.
        parts[s]->insert(it.key.substr(prefix.size()), it.value);
        placed = true;
      }
    }
    QGRAD_CHECK(placed, IOError, "load_checkpoint: '", source, "': tensor '", it.key,
                "' belongs to no checkpoint section (model., optim., sched., extra.)");
  }
  return ckpt;
}

Checkpoint load_checkpoint(const std::string& path) {
  return parse_checkpoint(read_file(path, "load_checkpoint"), path);
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
  naming_file(path, [&] { model.load_state_dict(ckpt.model, /*strict=*/true); });
  if (optimizer) naming_file(path, [&] { optimizer->load_state_dict(ckpt.optimizer); });
  if (scheduler) naming_file(path, [&] { scheduler->load_state_dict(ckpt.scheduler); });
  return ckpt;
}

}  // namespace qgrad::serialize

// The qgrad half of train_parity.py: trains a zoo model on real Fashion-MNIST batches for a few
// SGD steps exactly as `qgrad train` does (its DataLoader with seeded shuffling and Normalize,
// cross_entropy, zero_grad, backward, SGD with momentum and weight decay) and writes everything
// PyTorch needs to replay the same steps from the same weights: the initial state dict, every
// batch it trained on, the loss of every step, the gradients and state dict after the first step
// and the state dict after the last one. With --replay-steps (1-based ranges such as 1-30,465-475)
// it writes instead, for the steps in those ranges only, their batches and the whole training
// state (weights, BatchNorm statistics, momentum) after each of them and before each range, so
// PyTorch can replay each step alone anywhere in a run of several epochs. train_parity.py then
// replays the steps in PyTorch 1.13 and reports how far the two runs drift apart.
//   build/bench/train_parity <model> <out dir> [--seed 0] [--steps 50] [--lr 0.05]
//                            [--threads 2] [--data /usr/share/datasets/fashion-mnist]
//                            [--replay-steps a-b,c-d,...]
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/npy.h"
#include "nn/data/dataloader.h"
#include "nn/data/mnist.h"
#include "nn/data/transforms.h"
#include "nn/models/zoo.h"
#include "nn/optim/sgd.h"
#include "nn/serialize/safetensors.h"
#include "ops/loss/loss.h"

using namespace qgrad;

namespace {

TensorDict gradients(const nn::Module& model) {
  TensorDict grads;
  for (const auto& it : model.named_parameters()) grads.insert(it.key, it.value.grad());
  return grads;
}

// The whole training state: the state dict, and the momentum buffer of every parameter as
// "momentum.<parameter name>" (none before the first step).
TensorDict training_state(const nn::Module& model, const optim::Optimizer& optimizer) {
  TensorDict state = model.state_dict();
  for (const auto& it : model.named_parameters())
    if (const TensorDict* s = optimizer.state(it.value))
      if (const Tensor* buf = s->find("momentum_buffer")) state.insert("momentum." + it.key, *buf);
  return state;
}

// "1-30,465-475" -> {{1, 30}, {465, 475}}; a single number is a range of one step.
std::vector<std::pair<std::int64_t, std::int64_t>> parse_ranges(const std::string& text) {
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    const std::size_t dash = part.find('-');
    const std::int64_t a = std::stoll(part.substr(0, dash));
    const std::int64_t b = dash == std::string::npos ? a : std::stoll(part.substr(dash + 1));
    if (a < 1 || b < a) throw std::invalid_argument("bad step range");
    ranges.emplace_back(a, b);
    pos = comma + 1;
  }
  return ranges;
}

}  // namespace

namespace {

int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: train_parity <model> <out dir> [--seed N] [--steps N] [--lr X] "
                 "[--threads N] [--data DIR] [--replay-steps a-b,c-d]\n");
    return 2;
  }
  const std::string model_name = argv[1];
  const std::filesystem::path out = argv[2];
  std::uint64_t seed = 0;
  std::int64_t steps = 50, threads = 2;
  double lr = 0.05;
  std::vector<std::pair<std::int64_t, std::int64_t>> replay;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    try {
      if (k == "--seed")
        seed = std::stoull(v);
      else if (k == "--steps")
        steps = std::stoll(v);
      else if (k == "--lr")
        lr = std::stod(v);
      else if (k == "--threads")
        threads = std::stoll(v);
      else if (k == "--data")
        data_dir = v;
      else if (k == "--replay-steps")
        replay = parse_ranges(v);
      else {
        std::fprintf(stderr, "train_parity: unknown option %s\n", k.c_str());
        return 2;
      }
    } catch (const std::logic_error&) {  // std::sto* and parse_ranges
      std::fprintf(stderr, "train_parity: bad value '%s' for %s\n", v.c_str(), k.c_str());
      return 2;
    }
  }
  if (steps < 1 || threads < 1) {
    std::fprintf(stderr, "train_parity: --steps and --threads must be at least 1\n");
    return 2;
  }
  omp_set_num_threads(static_cast<int>(threads));
  std::filesystem::create_directories(out);
  auto in_replay = [&](std::int64_t step) {
    for (const auto& [a, b] : replay)
      if (step >= a && step <= b) return true;
    return false;
  };
  auto path = [&](const std::string& stem, std::int64_t step, const char* ext) {
    return (out / (stem + std::to_string(step) + ext)).string();
  };

  auto train_set = std::make_shared<data::MNIST>(data_dir, data::Split::Train);
  data::DataLoader loader(train_set,
                          data::DataLoaderOptions().batch_size(128).shuffle(true).seed(seed),
                          {std::make_shared<data::Normalize>(std::vector<double>{0.2860},
                                                             std::vector<double>{0.3530})});
  auto model = nn::make_model(model_name, seed);
  model->train();
  serialize::save_safetensors((out / "init.safetensors").string(), model->state_dict());
  optim::SGD sgd(model->parameters(), optim::SGDOptions(lr).momentum(0.9).weight_decay(5e-4));

  const bool free_run = replay.empty();
  std::ofstream losses(out / "losses.txt");
  for (std::int64_t step = 1; step <= steps; ++step) {
    std::optional<data::Batch> b = loader.next();
    if (!b) b = loader.next();  // the epoch ended: on into the next one
    const bool replayed = !free_run && in_replay(step);
    if (free_run || replayed) {
      save_npy(path("x", step, ".npy"), b->data);
      save_npy(path("y", step, ".npy"), b->target);
    }
    // A replayed range starts from the state before its first step (init.safetensors for step 1).
    if (replayed && step > 1 && !in_replay(step - 1))
      serialize::save_safetensors(path("state", step - 1, ".safetensors"),
                                  training_state(*model, sgd));
    Tensor loss = cross_entropy(model->forward(b->data), b->target);
    sgd.zero_grad();
    loss.backward();
    if (free_run && step == 1)
      serialize::save_safetensors((out / "grads1.safetensors").string(), gradients(*model));
    sgd.step();
    if (free_run && step == 1)
      serialize::save_safetensors((out / "step1.safetensors").string(), model->state_dict());
    if (replayed)
      serialize::save_safetensors(path("state", step, ".safetensors"), training_state(*model, sgd));
    char line[64];
    std::snprintf(line, sizeof line, "%.9g\n", loss.item<double>());
    losses << line;
  }
  serialize::save_safetensors((out / "final.safetensors").string(), model->state_dict());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // missing data, a failed write
    std::fprintf(stderr, "train_parity: %s\n", e.what());
    return 1;
  }
}

// Checkpoints: a model + Adam + scheduler training run saved mid-way and resumed in fresh
// objects continues bit-exactly; layout, metadata and error handling (every malformed file a
// qgrad error naming it; checksums catch flipped bits).
#include <catch2/catch.hpp>

#include "core/factory.h"
#include "nn/module.h"
#include "nn/optim/adam.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/sgd.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"
#include "nn_test_helpers.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "tiny_module.h"

using namespace qgrad;
using qgrad_test::TempDir;
using qgrad_test::Tiny;

namespace {

void train_steps(Tiny& m, optim::Optimizer& opt, optim::LRScheduler& sched, int from, int to) {
  for (int s = from; s < to; ++s) {
    Generator g(100 + static_cast<std::uint64_t>(s));
    Tensor x = randn({4, 3}, g);
    opt.zero_grad();
    m.loss(x).backward();
    opt.step();
    sched.step();
    m.seen.fill_(static_cast<double>(s + 1));
  }
}

}  // namespace

TEST_CASE("checkpoint: resume after save reproduces the uninterrupted run bit for bit") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");

  Tiny ref(1);
  optim::Adam ref_opt(ref.parameters(), optim::AdamOptions(0.05).amsgrad(true));
  optim::CosineAnnealingLR ref_sched(ref_opt, 4, 0.001);
  train_steps(ref, ref_opt, ref_sched, 0, 6);

  Tiny a(1);
  optim::Adam a_opt(a.parameters(), optim::AdamOptions(0.05).amsgrad(true));
  optim::CosineAnnealingLR a_sched(a_opt, 4, 0.001);
  train_steps(a, a_opt, a_sched, 0, 3);
  TensorDict extra;
  extra.insert("loader.position", scalar_tensor(17, TensorOptions().dtype(kInt64)));
  serialize::save_checkpoint(path, a, &a_opt, &a_sched, /*epoch=*/1, /*step=*/3,
                             {{"run", "unit-test"}}, extra);

  Tiny b(999);  // different initial weights, all overwritten by the load
  optim::Adam b_opt(b.parameters(), optim::AdamOptions(0.05).amsgrad(true));
  optim::CosineAnnealingLR b_sched(b_opt, 4, 0.001);
  auto ck = serialize::load_checkpoint(path, b, &b_opt, &b_sched);
  REQUIRE(ck.epoch == 1);
  REQUIRE(ck.step == 3);
  REQUIRE(ck.metadata == std::map<std::string, std::string>{{"run", "unit-test"}});
  REQUIRE(ck.extra["loader.position"].item<std::int64_t>() == 17);
  REQUIRE(b.seen.item<std::int64_t>() == 3);
  REQUIRE(b_sched.last_epoch() == 3);
  REQUIRE(b_sched.get_last_lr() == a_sched.get_last_lr());

  train_steps(b, b_opt, b_sched, 3, 6);
  REQUIRE(b.w.to_vector<float>() == ref.w.to_vector<float>());
  REQUIRE(b.b.to_vector<float>() == ref.b.to_vector<float>());
  REQUIRE(b_sched.get_last_lr() == ref_sched.get_last_lr());
}

TEST_CASE("checkpoint: file layout uses section prefixes and qgrad metadata") {
  TempDir dir;
  const std::string path = dir.file("c.safetensors");
  Tiny m(2);
  optim::SGD opt(m.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  serialize::save_checkpoint(path, m, &opt, nullptr, 4, 40);
  auto raw = serialize::load_safetensors(path);
  REQUIRE(raw.tensors.contains("model.w"));
  REQUIRE(raw.tensors.contains("model.seen"));
  REQUIRE(raw.tensors.contains("optim.param_groups.0.lr"));
  REQUIRE(raw.metadata.at("qgrad.format") == "checkpoint");
  REQUIRE(raw.metadata.at("qgrad.version") == "1");
  REQUIRE(raw.metadata.at("qgrad.epoch") == "4");
  REQUIRE(raw.metadata.at("qgrad.step") == "40");
  auto ck = serialize::load_checkpoint(path);
  REQUIRE(ck.scheduler.empty());
  // File order: by descending dtype alignment (int64 first), then name.
  REQUIRE(ck.model.keys() == std::vector<std::string>{"seen", "b", "w"});
}

TEST_CASE("checkpoint: errors") {
  TempDir dir;
  Tiny m(3);
  optim::SGD opt(m.parameters(), optim::SGDOptions(0.1));
  REQUIRE_THROWS_WITH(
      serialize::save_checkpoint(dir.file("x"), m, &opt, nullptr, 0, 0, {{"qgrad.epoch", "9"}}),
      Catch::Contains("reserved"));
  // A plain safetensors file is not a checkpoint.
  TensorDict t;
  t.insert("model.w", zeros({3, 2}));
  serialize::save_safetensors(dir.file("plain"), t);
  REQUIRE_THROWS_AS(serialize::load_checkpoint(dir.file("plain")), IOError);
  REQUIRE_THROWS_WITH(serialize::load_checkpoint(dir.file("plain")),
                      Catch::Contains("not a qgrad checkpoint"));
  // Tensors outside the sections.
  t.insert("stray", zeros({1}));
  serialize::save_safetensors(dir.file("stray"), t,
                              {{"qgrad.format", "checkpoint"},
                               {"qgrad.version", "1"},
                               {"qgrad.epoch", "0"},
                               {"qgrad.step", "0"}});
  REQUIRE_THROWS_WITH(serialize::load_checkpoint(dir.file("stray")), Catch::Contains("'stray'"));
  // Asking for optimizer state that is not there.
  serialize::save_checkpoint(dir.file("model_only"), m, nullptr, nullptr, 0, 0);
  REQUIRE_THROWS_WITH(serialize::load_checkpoint(dir.file("model_only"), m, &opt, nullptr),
                      Catch::Contains("no optimizer state"));
  // A checkpoint of another architecture fails in load_state_dict.
  struct Other : nn::Module {
    Other() { register_parameter("w", zeros({2, 2})); }
  } other;
  serialize::save_checkpoint(dir.file("other"), other, nullptr, nullptr, 0, 0);
  REQUIRE_THROWS_WITH(serialize::load_checkpoint(dir.file("other"), m, nullptr, nullptr),
                      Catch::Contains("size mismatch for w"));
}

TEST_CASE("checkpoint: every malformed file is a qgrad error naming it") {
  TempDir dir;
  // A directory (eval --checkpoint DIR used to say "file is 0 bytes").
  REQUIRE_THROWS_AS(serialize::load_checkpoint(dir.path()), IOError);
  REQUIRE_THROWS_WITH(serialize::load_checkpoint(dir.path()),
                      Catch::Contains("load_checkpoint") && Catch::Contains(dir.path()) &&
                          Catch::Contains("is a directory"));
  REQUIRE_THROWS_WITH(serialize::load_checkpoint(dir.file("missing")),
                      Catch::Contains("missing") && Catch::Contains("no such file"));

  Tiny m(5);
  serialize::save_checkpoint(dir.file("good"), m, nullptr, nullptr, 2, 20);
  const std::string good = qgrad_test::read_bytes(dir.file("good"));
  REQUIRE(serialize::parse_checkpoint(good, "mem").step == 20);

  // Counters must be what save_checkpoint writes: non-negative decimal, no sign or spaces.
  TensorDict t;
  t.insert("model.w", zeros({1}));
  auto with_meta = [&](const std::string& epoch, const std::string& step) {
    return serialize::serialize_safetensors(t, {{"qgrad.format", "checkpoint"},
                                                {"qgrad.version", "1"},
                                                {"qgrad.epoch", epoch},
                                                {"qgrad.step", step}});
  };
  REQUIRE(serialize::parse_checkpoint(with_meta("0", "9223372036854775807"), "m").step ==
          9223372036854775807LL);
  for (const std::string bad : {"", "-1", "+1", " 1", "1 ", "01", "1.5", "abc",
                                "9223372036854775808", "99999999999999999999"}) {
    INFO("'" << bad << "'");
    REQUIRE_THROWS_AS(serialize::parse_checkpoint(with_meta(bad, "0"), "ck.safetensors"), IOError);
    REQUIRE_THROWS_WITH(serialize::parse_checkpoint(with_meta("0", bad), "ck.safetensors"),
                        Catch::Contains("'ck.safetensors'") && Catch::Contains("qgrad.step") &&
                            Catch::Contains("not a non-negative integer"));
  }
  REQUIRE_THROWS_AS(serialize::save_checkpoint(dir.file("neg"), m, nullptr, nullptr, -1, 0),
                    ValueError);

  // A tensor named only by its section prefix.
  TensorDict empty_name;
  empty_name.insert("model.", zeros({1}));
  REQUIRE_THROWS_WITH(serialize::parse_checkpoint(serialize::serialize_safetensors(
                                                      empty_name, {{"qgrad.format", "checkpoint"},
                                                                   {"qgrad.version", "1"},
                                                                   {"qgrad.epoch", "0"},
                                                                   {"qgrad.step", "0"}}),
                                                  "e.safetensors"),
                      Catch::Contains("'e.safetensors'") && Catch::Contains("empty name"));

  // A flipped bit in a tensor's data is caught by its checksum.
  std::string flipped = good;
  flipped[flipped.size() - 1] ^= 0x01;  // the last byte of the last tensor, "model.w"
  REQUIRE_THROWS_AS(serialize::parse_checkpoint(flipped, "flip.safetensors"), IOError);
  REQUIRE_THROWS_WITH(serialize::parse_checkpoint(flipped, "flip.safetensors"),
                      Catch::Contains("flip.safetensors") && Catch::Contains("'model.w'") &&
                          Catch::Contains("CRC32"));
  // Garbage and a truncated file.
  REQUIRE_THROWS_AS(serialize::parse_checkpoint("not a checkpoint", "g"), IOError);
  REQUIRE_THROWS_WITH(serialize::parse_checkpoint(good.substr(0, good.size() / 2), "half"),
                      Catch::Contains("'half'"));

  // A state that does not fit the model keeps its error type and names the file.
  struct Other : nn::Module {
    Other() { register_parameter("w", zeros({2, 2})); }
  } other;
  REQUIRE_THROWS_WITH(serialize::load_checkpoint(dir.file("good"), other, nullptr, nullptr),
                      Catch::Contains(dir.file("good")) && Catch::Contains("size mismatch for w"));
  REQUIRE_THROWS_AS(serialize::load_checkpoint(dir.file("good"), other, nullptr, nullptr),
                    ValueError);
}

// `"data": {"format": ...}` end to end: train (float and QAT), eval and ptq on a tiny synthetic
// CIFAR-10 in the real binary format, CIFAR-100 coarse labels and NHWC .npy arrays sizing the
// model, and the config keys of each format (parsed, checked, written back by to_json). No real
// CIFAR data is used: the build machines have none.
#include <catch2/catch.hpp>

#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command_dispatch.h"
#include "cli/train_config.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/npy.h"
#include "nn/serialize/checkpoint.h"
#include "support/cifar_files.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::TempDir;

namespace {

json tiny(const TempDir& tmp, const json& data, const std::string& run, const std::string& model) {
  return json{{"model", model},
              {"epochs", 1},
              {"batch_size", 32},
              {"eval_batch_size", 64},
              {"threads", 2},
              {"data", data},
              {"output", {{"progress", "off"}, {"dir", tmp.file(run)}}}};
}

// Runs a qgrad command line; returns its exit status, with stdout and stderr in INFO.
int run(const std::vector<std::string>& args, std::string* out_text = nullptr) {
  std::ostringstream out, err;
  const int status = run_command_line(args, out, err);
  INFO(out.str() << err.str());
  if (out_text) *out_text = out.str();
  CHECK(err.str().empty());
  return status;
}

int train(const TempDir& tmp, const json& config, std::string* out = nullptr) {
  const std::string path =
      tmp.file("config_" + std::to_string(std::hash<std::string>()(config.dump())) + ".json");
  qgrad_cli_test::write_text(path, config.dump());
  return run({"train", "--config", path}, out);
}

Shape weight_shape(const std::string& checkpoint, const std::string& key) {
  const serialize::Checkpoint c = serialize::load_checkpoint(checkpoint);
  const Tensor* t = c.model.find(key);
  REQUIRE(t != nullptr);
  return t->shape();
}

}  // namespace

TEST_CASE("data formats: lenet5bn trains on synthetic CIFAR-10, then eval and ptq", "[cli]") {
  TempDir tmp;
  qgrad_test::write_synthetic_cifar10(tmp.file("cifar"), 40, 64);
  const json data{{"format", "cifar10"}, {"dir", tmp.file("cifar")}};
  std::string out;
  REQUIRE(train(tmp, tiny(tmp, data, "float", "lenet5bn"), &out) == 0);
  CHECK_THAT(out, Catch::Contains("(cifar10): 200 train / 64 test images"));
  const std::string ckpt = tmp.file("float/last.safetensors");
  CHECK(weight_shape(ckpt, "0.weight") == Shape{6, 3, 5, 5});
  CHECK(weight_shape(ckpt, "9.weight") == Shape{120, 400});
  const json stored = json::parse(qgrad_cli_test::slurp(tmp.file("float/config.json")));
  CHECK(stored["data"]["format"] == "cifar10");
  CHECK(stored["data"]["normalize"]["mean"] == json{0.4914, 0.4822, 0.4465});

  CHECK(run({"eval", "--checkpoint", ckpt, "--threads", "2"}, &out) == 0);
  CHECK_THAT(out, Catch::Contains("64"));
  CHECK(run({"ptq", "--checkpoint", ckpt, "--recipe", "torch_ao_default", "--threads", "2",
             "--calibration-batches", "1", "--out", tmp.file("ptq")},
            &out) == 0);
  CHECK(run({"eval", "--checkpoint", tmp.file("ptq/last_ptq.safetensors"), "--threads", "2"}) == 0);
}

TEST_CASE("data formats: QAT on synthetic CIFAR-10 with a recipe, then eval", "[cli]") {
  TempDir tmp;
  qgrad_test::write_synthetic_cifar10(tmp.file("cifar"), 40, 64);
  json config = tiny(tmp, {{"format", "cifar10"}, {"dir", tmp.file("cifar")}}, "qat", "lenet5bn");
  config["quant"] = {{"family", "torch_ao"}};
  config["data"]["augment"] = {{"random_crop_padding", 4}, {"hflip", true}};
  REQUIRE(train(tmp, config) == 0);
  CHECK(run({"eval", "--checkpoint", tmp.file("qat/last.safetensors"), "--threads", "2"}) == 0);
}

TEST_CASE("data formats: CIFAR-100 coarse labels and NHWC npy arrays size the model", "[cli]") {
  TempDir tmp;
  qgrad_test::write_synthetic_cifar100(tmp.file("c100"), 64, 32);
  const json c100{{"format", "cifar100"}, {"dir", tmp.file("c100")}, {"label", "coarse"}};
  REQUIRE(train(tmp, tiny(tmp, c100, "c100", "resnet20")) == 0);
  CHECK(weight_shape(tmp.file("c100/last.safetensors"), "fc.weight") == Shape{20, 64});
  CHECK(weight_shape(tmp.file("c100/last.safetensors"), "conv1.weight") == Shape{16, 3, 3, 3});

  // 2-channel 20x24 NHWC uint8 images, int32 labels 0..4; paths relative to data.dir.
  Generator gen(3);
  for (const auto& [name, n] :
       std::vector<std::pair<std::string, std::int64_t>>{{"train", 48}, {"test", 16}}) {
    std::filesystem::create_directories(tmp.file("npy"));
    save_npy(tmp.file("npy/" + name + "_x.npy"), randint(0, 256, {n, 20, 24, 2}, gen).to(kUInt8));
    save_npy(tmp.file("npy/" + name + "_y.npy"), randint(0, 5, {n}, gen).to(kInt32));
  }
  const json npy{{"format", "npy"},
                 {"dir", tmp.file("npy")},
                 {"train_images", "train_x.npy"},
                 {"train_labels", "train_y.npy"},
                 {"test_images", "test_x.npy"},
                 {"test_labels", "test_y.npy"},
                 {"layout", "nhwc"},
                 {"num_classes", 5}};
  REQUIRE(train(tmp, tiny(tmp, npy, "npy", "lenet5bn")) == 0);
  CHECK(weight_shape(tmp.file("npy/last.safetensors"), "0.weight") == Shape{6, 2, 5, 5});
  CHECK(weight_shape(tmp.file("npy/last.safetensors"), "13.weight") == Shape{5, 84});
  CHECK(run({"eval", "--checkpoint", tmp.file("npy/last.safetensors"), "--threads", "2"}) == 0);

  // A label beyond num_classes is an error naming the file.
  json few = npy;
  few["num_classes"] = 2;
  std::ostringstream o, e;
  const std::string path = tmp.file("few.json");
  qgrad_cli_test::write_text(path, tiny(tmp, few, "few", "lenet5bn").dump());
  CHECK(run_command_line({"train", "--config", path}, o, e) != 0);
  CHECK_THAT(e.str(), Catch::Contains("train_y.npy") && Catch::Contains("outside 0..1"));
}

TEST_CASE("data formats: the keys of each format are checked and written back", "[cli]") {
  const auto error = qgrad_cli_test::data_config_error;
  CHECK_THAT(error({{"format", "cifar"}}), Catch::Contains("data.format"));
  CHECK_THAT(error({{"format", "cifar10"}}), Catch::Contains("data.dir is required"));
  CHECK_THAT(error({{"format", "cifar10"}, {"dir", "d"}, {"label", "coarse"}}),
             Catch::Contains("data.label applies only to data.format \"cifar100\""));
  CHECK_THAT(error({{"format", "cifar100"}, {"dir", "d"}, {"label", "middle"}}),
             Catch::Contains("data.label"));
  CHECK_THAT(error({{"layout", "nhwc"}}),
             Catch::Contains("data.layout applies only to data.format \"npy\", not \"mnist\""));
  const json npy{{"format", "npy"},
                 {"train_images", "a.npy"},
                 {"train_labels", "b.npy"},
                 {"test_images", "c.npy"},
                 {"test_labels", "d.npy"}};
  for (const char* k : {"train_images", "train_labels", "test_images", "test_labels"}) {
    json d = npy;
    d.erase(k);
    CHECK_THAT(error(d), Catch::Contains(std::string("data.") + k + " is required"));
  }
  json bad = npy;
  bad["num_classes"] = 0;
  CHECK_THAT(error(bad), Catch::Contains("data.num_classes"));
  bad = npy;
  bad["normalize"] = true;
  CHECK_THAT(error(bad), Catch::Contains("data.normalize"));

  // Defaults per format, and to_json round trips.
  const TrainConfig mnist = parse_train_config(json::object());
  CHECK(mnist.data.format == "mnist");
  CHECK(mnist.data.normalize.mean == std::vector<double>{0.2860});
  CHECK_FALSE(to_json(mnist)["data"].contains("label"));
  CHECK_FALSE(to_json(mnist)["data"].contains("layout"));
  const TrainConfig c100 =
      parse_train_config(json{{"data", {{"format", "cifar100"}, {"dir", "d"}}}});
  CHECK(c100.data.normalize.mean == std::vector<double>{0.5071, 0.4865, 0.4409});
  CHECK(c100.data.normalize.std == std::vector<double>{0.2673, 0.2564, 0.2762});
  CHECK(c100.data.label == "fine");
  const TrainConfig n = parse_train_config(json{{"data", npy}});
  CHECK_FALSE(n.data.normalize.enabled);
  CHECK(n.data.dir == ".");
  CHECK(n.data.layout == "nchw");
  CHECK(n.data.num_classes == 10);
  for (const TrainConfig* c : {&mnist, &c100, &n})
    CHECK(to_json(parse_train_config(to_json(*c))) == to_json(*c));
}

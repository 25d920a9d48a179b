// `"data": {"format": "image_folder"}` end to end: train for an epoch on a tiny folder of real
// JPEG and PNG files with several loader workers, then eval and ptq; the format's keys checked
// and written back; a corrupt image stops training with an error naming the file.
#include <catch2/catch.hpp>

#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command_dispatch.h"
#include "cli/train_config.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "nn/serialize/checkpoint.h"
#include "support/image_files.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::TempDir;

namespace {

json tiny_run(const TempDir& tmp, const json& data, const std::string& run) {
  return json{{"model", "lenet5bn"},
              {"epochs", 1},
              {"batch_size", 8},
              {"eval_batch_size", 16},
              {"threads", 2},
              {"data", data},
              {"output", {{"progress", "off"}, {"dir", tmp.file(run)}}}};
}

int run(const std::vector<std::string>& args, std::string* out_text = nullptr,
        std::string* err_text = nullptr) {
  std::ostringstream out, err;
  const int status = run_command_line(args, out, err);
  INFO(out.str() << err.str());
  if (out_text) *out_text = out.str();
  if (err_text) *err_text = err.str();
  return status;
}

int train(const TempDir& tmp, const json& config, const std::string& name,
          std::string* out = nullptr, std::string* err = nullptr) {
  const std::string path = tmp.file(name + ".json");
  qgrad_cli_test::write_text(path, config.dump());
  return run({"train", "--config", path}, out, err);
}

}  // namespace

TEST_CASE("image folder: lenet5bn trains an epoch on JPEG and PNG files, then eval and ptq",
          "[cli]") {
  TempDir tmp;
  qgrad_test::write_image_folder(tmp.file("imgs"), 3, 12, 40, 50);
  const json data{{"format", "image_folder"},
                  {"dir", tmp.file("imgs")},
                  {"image_size", 32},
                  {"val_fraction", 0.25},
                  {"workers", 2},
                  {"augment", {{"hflip", true}}}};
  std::string out;
  REQUIRE(train(tmp, tiny_run(tmp, data, "run"), "run", &out) == 0);
  CHECK_THAT(out, Catch::Contains("(image_folder): 27 train / 9 test images"));
  const std::string ckpt = tmp.file("run/last.safetensors");
  const serialize::Checkpoint c = serialize::load_checkpoint(ckpt);
  REQUIRE(c.model.find("0.weight") != nullptr);
  CHECK(c.model.find("0.weight")->shape() == Shape{6, 3, 5, 5});
  CHECK(c.model.find("13.weight")->shape() == Shape{3, 84});  // 3 classes
  const json stored = json::parse(qgrad_cli_test::slurp(tmp.file("run/config.json")));
  CHECK(stored["data"]["resize"] == 37);  // round(32 x 256 / 224)
  CHECK(stored["data"]["normalize"]["mean"] == json{0.485, 0.456, 0.406});
  CHECK(stored["data"]["augment"]["random_resized_crop"] == true);

  CHECK(run({"eval", "--checkpoint", ckpt, "--threads", "2"}, &out) == 0);
  CHECK(run({"ptq", "--checkpoint", ckpt, "--recipe", "torch_ao_default", "--threads", "2",
             "--calibration-batches", "1", "--out", tmp.file("ptq")}) == 0);

  // Grey, without random crops, train/ and val/ folders.
  qgrad_test::write_image_folder(tmp.file("tv/train"), 2, 4, 36, 36);
  qgrad_test::write_image_folder(tmp.file("tv/val"), 2, 2, 36, 36);
  json grey{{"format", "image_folder"},
            {"dir", tmp.file("tv")},
            {"image_size", 28},
            {"resize", 30},
            {"channels", 1},
            {"augment", {{"random_resized_crop", false}}}};
  std::string err;
  const int status = train(tmp, tiny_run(tmp, grey, "grey"), "grey", &out, &err);
  INFO(err);
  REQUIRE(status == 0);
  CHECK_THAT(out, Catch::Contains("8 train / 4 test images"));
  CHECK(serialize::load_checkpoint(tmp.file("grey/last.safetensors"))
            .model.find("0.weight")
            ->shape() == Shape{6, 1, 5, 5});

  // A corrupt image stops the run, naming the file.
  qgrad_test::write_bytes(tmp.file("imgs/c1/img3.png"), "\x89PNG\r\n\x1a\n truncated");
  CHECK(train(tmp, tiny_run(tmp, data, "bad"), "bad", &out, &err) != 0);
  CHECK_THAT(err, Catch::Contains("c1/img3.png"));
}

TEST_CASE("image folder: the format's keys are checked and written back", "[cli]") {
  const auto error = qgrad_cli_test::data_config_error;
  CHECK_THAT(error({{"format", "image_folder"}}), Catch::Contains("data.dir is required"));
  const json ok{{"format", "image_folder"}, {"dir", "d"}};
  json bad = ok;
  bad["resize"] = 100;
  CHECK_THAT(error(bad), Catch::Contains("data.resize must be at least data.image_size (224)"));
  bad = ok;
  bad["channels"] = 2;
  CHECK_THAT(error(bad), Catch::Contains("data.channels"));
  bad = ok;
  bad["val_fraction"] = 1;
  CHECK_THAT(error(bad), Catch::Contains("data.val_fraction"));
  bad = ok;
  bad["workers"] = 3;
  bad["prefetch"] = false;
  CHECK_THAT(error(bad), Catch::Contains("data.workers is 3 but data.prefetch is false"));
  CHECK_THAT(error({{"format", "cifar10"}, {"dir", "d"}, {"image_size", 32}}),
             Catch::Contains("data.image_size applies only to data.format \"image_folder\""));
  CHECK_THAT(error({{"format", "npy"},
                    {"train_images", "a"},
                    {"train_labels", "b"},
                    {"test_images", "c"},
                    {"test_labels", "d"},
                    {"augment", {{"random_resized_crop", true}}}}),
             Catch::Contains("random_resized_crop applies only"));

  const TrainConfig c = parse_train_config(json{{"data", ok}});
  CHECK(c.data.image_size == 224);
  CHECK(c.data.resize == 256);
  CHECK(c.data.channels == 3);
  CHECK(c.data.workers == 1);
  CHECK(c.data.augment.random_resized_crop);
  CHECK(c.data.normalize.std == std::vector<double>{0.229, 0.224, 0.225});
  CHECK(to_json(parse_train_config(to_json(c))) == to_json(c));
  json grey = ok;
  grey["channels"] = 1;
  CHECK(parse_train_config(json{{"data", grey}}).data.normalize.mean == std::vector<double>{0.449});
  grey["normalize"] = {{"mean", {0.5, 0.5, 0.5}}};
  CHECK_THAT(error(grey), Catch::Contains("data.normalize.mean has 3 values for data.channels 1"));
  // A folder without images is an error naming it, before any training.
  TempDir tmp;
  std::filesystem::create_directories(tmp.file("empty"));
  json cfg{{"data", {{"format", "image_folder"}, {"dir", tmp.file("empty")}}},
           {"output", {{"dir", tmp.file("out")}, {"progress", "off"}}}};
  std::string out, err;
  CHECK(train(tmp, cfg, "empty", &out, &err) != 0);
  CHECK_THAT(err, Catch::Contains(tmp.file("empty")) && Catch::Contains("no class folders"));
}

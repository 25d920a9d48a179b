// ImageFolder and the resizing transforms: class and file order as torchvision's ImageFolder,
// the train/val folders and the deterministic split, errors naming the folder or file, the loader
// with several workers, and the decoded and transformed tensors against fixtures that
// torchvision 0.14 / PIL 9.4 wrote (tests/fixtures/gen_image_folder.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/factory.h"
#include "nn/data/dataloader.h"
#include "nn/data/image_folder.h"
#include "nn/data/resize_transforms.h"
#include "support/fixtures.h"
#include "support/image_files.h"
#include "support/scratch_files.h"

using namespace qgrad;
using namespace qgrad::data;
using qgrad_test::TempDir;
namespace fs = std::filesystem;

namespace {

void small_png(const std::string& path, int seed = 0) {
  fs::create_directories(fs::path(path).parent_path());
  qgrad_test::write_png(path, qgrad_test::gradient_image(6, 5, 3, seed));
}

std::vector<std::string> relative_files(const ImageFolder& f, const std::string& root) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < f.size(); ++i) out.push_back(fs::relative(f.file(i), root).string());
  return out;
}

// The image folder that tests/fixtures/gen_image_folder.py wrote, every image in one split.
std::string fixture_root() {
  return qgrad_test::fixture_path("image_folder", "folder");
}
ImageFolder fixture_folder() {
  ImageFolderOptions all;
  all.val_fraction = 0;
  return ImageFolder(fixture_root(), Split::Train, all);
}

std::string error_of(const std::function<void()>& f) {
  return qgrad_test::io_error_of(f);
}

}  // namespace

TEST_CASE("image folder: classes and files in torchvision's order, other files ignored") {
  TempDir tmp;
  const std::string root = tmp.file("data");
  for (const char* f :
       {"b/2.png", "b/10.PNG", "a/z.jpg", "a/sub/y.jpeg", "a/sub/x.png", "C/q.Jpg", "a/m.png"})
    if (std::string(f).find(".png") != std::string::npos ||
        std::string(f).find(".PNG") != std::string::npos)
      small_png(root + "/" + f);
    else {
      fs::create_directories(fs::path(root + "/" + f).parent_path());
      qgrad_test::write_jpeg(root + "/" + f, qgrad_test::gradient_image(6, 5, 3, 0));
    }
  qgrad_test::write_bytes(root + "/a/notes.txt", "not an image");
  qgrad_test::write_bytes(root + "/a/image.png.bak", "not an image");
  qgrad_test::write_bytes(root + "/README", "top-level files are not classes");

  ImageFolderOptions all;
  all.val_fraction = 0;
  const ImageFolder f(root, Split::Train, all);
  // Byte order: upper case first; each folder's files before its sub-folders' (os.walk).
  CHECK(f.classes() == std::vector<std::string>{"C", "a", "b"});
  CHECK(relative_files(f, root) == std::vector<std::string>{"C/q.Jpg", "a/m.png", "a/z.jpg",
                                                            "a/sub/x.png", "a/sub/y.jpeg",
                                                            "b/10.PNG", "b/2.png"});
  CHECK(f.label(0) == 0);
  CHECK(f.label(1) == 1);
  CHECK(f.label(4) == 1);
  CHECK(f.label(6) == 2);
  CHECK(image_folder_classes(root) == f.classes());
  const Example e = f.get(1);
  CHECK(e.data.shape() == Shape{3, 6, 5});
  CHECK(e.data.dtype() == kFloat32);
  CHECK(e.target.item<std::int64_t>() == 1);
  ImageFolderOptions grey = all;
  grey.channels = 1;
  CHECK(ImageFolder(root, Split::Train, grey).get(0).data.shape() == Shape{1, 6, 5});
}

TEST_CASE("image folder: the same order and labels as torchvision's ImageFolder (fixture)") {
  const nlohmann::json cases = qgrad_test::read_fixture_json("image_folder", "cases.json");
  const std::string root = fixture_root();
  const ImageFolder f = fixture_folder();
  CHECK(f.classes() == cases["classes"].get<std::vector<std::string>>());
  REQUIRE(f.size() == cases["samples"].size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    CHECK(fs::relative(f.file(i), root).string() == cases["samples"][i][0].get<std::string>());
    CHECK(f.label(i) == cases["samples"][i][1].get<std::int64_t>());
  }
}

TEST_CASE("image folder: decoding, Resize, CenterCrop, resized_crop and Normalize as torchvision") {
  const nlohmann::json cases = qgrad_test::read_fixture_json("image_folder", "cases.json");
  const std::string root = fixture_root();
  const ImageFolder f = fixture_folder();
  Generator gen(0);
  const Resize resize40(40), resize64(64);
  const CenterCrop crop32(32);
  const Normalize normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225});
  for (std::size_t i = 0; i < f.size(); ++i) {
    const auto& c = cases["cases"][i];
    const std::string stem = c["stem"];
    REQUIRE(fs::relative(f.file(i), root).string() == c["file"].get<std::string>());
    const Tensor x = f.get(i).data;
    // Decoding: PNG is lossless; PIL decodes JPEG with the same libjpeg-turbo (ISLOW IDCT).
    qgrad_test::require_equal(x, qgrad_test::load_fixture("image_folder", stem + "_decoded"),
                              stem + " decoded");
    // Resampling: PIL rounds to 8 bits after each of its two passes, qgrad keeps float32: at
    // most 2/255 apart before Normalize (divided by the smallest std after it).
    const double tol = 2.0 / 255.0 + 1e-6;
    qgrad_test::require_close(normalize(crop32(resize40(x, gen), gen), gen),
                              qgrad_test::load_fixture("image_folder", stem + "_eval"), 0,
                              tol / 0.225, stem + " Resize(40) CenterCrop(32) Normalize");
    const auto w = c["window"].get<std::vector<std::int64_t>>();
    qgrad_test::require_close(resized_crop(x, w[0], w[1], w[2], w[3], 24, 24),
                              qgrad_test::load_fixture("image_folder", stem + "_crop"), 0, tol,
                              stem + " resized_crop");
    qgrad_test::require_close(resize64(x, gen),
                              qgrad_test::load_fixture("image_folder", stem + "_upscale"), 0, tol,
                              stem + " Resize(64), enlarging");
  }
}

TEST_CASE("image folder: train/ and val/ folders, or a fixed split of one folder") {
  TempDir tmp;
  const std::string tv = tmp.file("tv");
  for (const char* f : {"train/cat/1.png", "train/cat/2.png", "train/dog/1.png", "val/cat/3.png",
                        "val/dog/2.png", "val/dog/3.png"})
    small_png(tv + "/" + f);
  const ImageFolder train(tv, Split::Train), val(tv, Split::Test);
  CHECK(train.size() == 3);
  CHECK(val.size() == 3);
  CHECK(relative_files(val, tv) ==
        std::vector<std::string>{"val/cat/3.png", "val/dog/2.png", "val/dog/3.png"});
  CHECK(image_folder_classes(tv) == std::vector<std::string>{"cat", "dog"});

  // One folder: round(n x fraction) of each class held out, the same every time.
  const std::string one = tmp.file("one");
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 10 + k; ++i)
      small_png(one + "/k" + std::to_string(k) + "/" + std::to_string(i) + ".png");
  ImageFolderOptions o;
  o.val_fraction = 0.2;
  const ImageFolder a(one, Split::Train, o), b(one, Split::Test, o);
  CHECK(b.size() == 2 + 2 + 2);  // round(10 x 0.2), round(11 x 0.2), round(12 x 0.2)
  CHECK(a.size() + b.size() == 33);
  std::set<std::string> seen;
  for (const auto* s : {&a, &b})
    for (std::size_t i = 0; i < s->size(); ++i) CHECK(seen.insert(s->file(i)).second);
  CHECK(seen.size() == 33);
  CHECK(relative_files(ImageFolder(one, Split::Test, o), one) == relative_files(b, one));
  CHECK(relative_files(ImageFolder(one, Split::Train, o), one) == relative_files(a, one));
  // The held-out files are not simply the last ones of each class.
  CHECK(relative_files(b, one) != std::vector<std::string>{"k0/8.png", "k0/9.png", "k1/8.png",
                                                           "k1/9.png", "k2/10.png", "k2/11.png"});
  // A class of one image keeps it for training.
  small_png(one + "/k3/only.png");
  CHECK(ImageFolder(one, Split::Test, o).size() == 6);
}

TEST_CASE("image folder: every problem with the folder names it") {
  TempDir tmp;
  CHECK_THAT(error_of([&] { ImageFolder(tmp.file("missing"), Split::Train); }),
             Catch::Contains("missing") && Catch::Contains("does not exist"));
  fs::create_directories(tmp.file("none"));
  qgrad_test::write_bytes(tmp.file("none/a.png"), "x");
  CHECK_THAT(error_of([&] { ImageFolder(tmp.file("none"), Split::Train); }),
             Catch::Contains("none") && Catch::Contains("no class folders"));
  small_png(tmp.file("emptycls/a/1.png"));
  fs::create_directories(tmp.file("emptycls/b/sub"));
  qgrad_test::write_bytes(tmp.file("emptycls/b/readme.txt"), "x");
  CHECK_THAT(error_of([&] { ImageFolder(tmp.file("emptycls"), Split::Train); }),
             Catch::Contains("emptycls/b") && Catch::Contains("no .jpg, .jpeg or .png"));
  small_png(tmp.file("half/train/a/1.png"));
  CHECK_THAT(error_of([&] { ImageFolder(tmp.file("half"), Split::Train); }),
             Catch::Contains("half") && Catch::Contains("train/ but no val/"));
  small_png(tmp.file("differ/train/a/1.png"));
  small_png(tmp.file("differ/val/b/1.png"));
  CHECK_THAT(error_of([&] { ImageFolder(tmp.file("differ"), Split::Test); }),
             Catch::Contains("differ") && Catch::Contains("same classes"));
  ImageFolderOptions none;
  none.val_fraction = 0;
  small_png(tmp.file("one/a/1.png"));
  small_png(tmp.file("one/a/2.png"));
  CHECK_THAT(error_of([&] { ImageFolder(tmp.file("one"), Split::Test, none); }),
             Catch::Contains("validation split is empty"));
  ImageFolderOptions bad;
  bad.channels = 4;
  CHECK_THROWS_AS(ImageFolder(tmp.file("one"), Split::Train, bad), ValueError);

  // A corrupt file fails when read, naming it, through a loader with several workers too.
  qgrad_test::write_bytes(tmp.file("one/a/3.png"),
                          qgrad_test::read_bytes(tmp.file("one/a/1.png")).substr(0, 40));
  auto f = std::make_shared<ImageFolder>(tmp.file("one"), Split::Train, none);
  CHECK_THAT(error_of([&] { f->get(2); }), Catch::Contains("one/a/3.png"));
  DataLoader loader(f, DataLoaderOptions().batch_size(1).workers(3),
                    {std::make_shared<CenterCrop>(4)});
  CHECK(loader.next()->data.shape() == Shape{1, 3, 4, 4});
  CHECK(loader.next());
  CHECK_THAT(error_of([&] { loader.next(); }), Catch::Contains("one/a/3.png"));
  CHECK_FALSE(loader.next());
}

TEST_CASE("image folder: Resize, CenterCrop and RandomResizedCrop geometry") {
  Generator gen(1);
  const Tensor img = rand({3, 375, 500}, gen);
  CHECK(Resize(256)(img, gen).shape() == Shape{3, 256, 341});  // int(256 * 500 / 375)
  CHECK(Resize(256)(img.transpose(1, 2), gen).shape() == Shape{3, 341, 256});
  CHECK(Resize(100)(rand({7, 7}, gen), gen).shape() == Shape{100, 100});
  // The same size is the same image.
  const Tensor same = Resize(375)(img, gen);
  CHECK(same.to_vector<float>() == img.to_vector<float>());
  // A constant image stays constant, whatever the scaling.
  const Tensor grey = full({1, 31, 45}, 0.25f);
  for (float v : Resize(7)(grey, gen).to_vector<float>()) REQUIRE(v == Approx(0.25f).margin(1e-6));
  // Centre crop: round((h - size) / 2) with Python's half-to-even rounding.
  const Tensor rows = arange(0, 9, 1).to(kFloat32).view({1, 9, 1}).expand({1, 9, 9}).contiguous();
  CHECK(CenterCrop(4)(rows, gen).to_vector<float>()[0] == 2);  // (9 - 4) / 2 = 2.5 -> 2
  const Tensor rows8 = rows.narrow(1, 0, 8).contiguous();
  CHECK(CenterCrop(5)(rows8, gen).to_vector<float>()[0] == 2);  // 1.5 -> 2
  CHECK_THROWS_AS(CenterCrop(10)(rows, gen), ShapeError);

  const RandomResizedCrop rrc(224);
  std::set<std::int64_t> tops;
  for (int i = 0; i < 200; ++i) {
    const auto w = rrc.window(375, 500, gen);
    REQUIRE(w.top >= 0);
    REQUIRE(w.left >= 0);
    REQUIRE(w.top + w.height <= 375);
    REQUIRE(w.left + w.width <= 500);
    const double area = static_cast<double>(w.height * w.width) / (375.0 * 500.0);
    REQUIRE(area >= 0.07);
    REQUIRE(area <= 1.0);
    tops.insert(w.top);
  }
  CHECK(tops.size() > 20);
  // Same generator state, same window and image.
  Generator g1(5), g2(5);
  CHECK(rrc(img, g1).to_vector<float>() == rrc(img, g2).to_vector<float>());
  CHECK(rrc(img, g1).shape() == Shape{3, 224, 224});
  // A long thin image defeats the 10 attempts: the centre crop of ratio 4/3.
  const auto fallback = RandomResizedCrop(8, 0.9, 1.0).window(10, 1000, gen);
  CHECK(fallback.height == 10);
  CHECK(fallback.width == 13);  // round(10 * 4 / 3)
  CHECK(fallback.left == (1000 - 13) / 2);
  CHECK_THROWS_AS(RandomResizedCrop(8, 0.5, 0.2), ValueError);
  CHECK_THROWS_AS(resized_crop(img, 300, 0, 100, 10, 5, 5), ShapeError);
}

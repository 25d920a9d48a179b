// Loading speed of the image_folder format: decoded and augmented images per second through an
// ImageFolder and a DataLoader with N workers, one epoch after a first batch (workers started,
// files in the page cache). bench_image_folder.py runs it beside torchvision's ImageFolder and
// DataLoader with the same transforms, workers and batch size, and prints the ratios.
//   bench_image_folder DIR train|eval WORKERS BATCH [EPOCHS]
//   train: RandomResizedCrop(224), RandomHorizontalFlip, Normalize
//   eval:  Resize(256), CenterCrop(224), Normalize
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "nn/data/dataloader.h"
#include "nn/data/image_folder.h"
#include "nn/data/resize_transforms.h"

using namespace qgrad;
using namespace qgrad::data;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_image_folder DIR train|eval WORKERS BATCH [EPOCHS]\n");
    return 2;
  }
  const std::string dir = argv[1], mode = argv[2];
  const int workers = std::atoi(argv[3]);
  const std::int64_t batch = std::atoll(argv[4]);
  const int epochs = argc > 5 ? std::atoi(argv[5]) : 1;
  ImageFolderOptions o;
  o.val_fraction = 0;  // every image
  auto folder = std::make_shared<ImageFolder>(dir, Split::Train, o);
  std::vector<std::shared_ptr<const Transform>> t;
  if (mode == "train") {
    t.push_back(std::make_shared<RandomResizedCrop>(224));
    t.push_back(std::make_shared<RandomHorizontalFlip>(0.5));
  } else {
    t.push_back(std::make_shared<Resize>(256));
    t.push_back(std::make_shared<CenterCrop>(224));
  }
  t.push_back(std::make_shared<Normalize>(std::vector<double>{0.485, 0.456, 0.406},
                                          std::vector<double>{0.229, 0.224, 0.225}));
  DataLoader loader(
      folder, DataLoaderOptions().batch_size(batch).shuffle(true).workers(workers).queue(2), t);
  // The first batch starts the clock, as in the Python twin.
  loader.next();
  const auto start = std::chrono::steady_clock::now();
  std::int64_t images = 0;
  for (int e = 0; e < epochs; ++e) {
    while (auto b = loader.next()) images += b->data.size(0);
    if (e + 1 < epochs) {
      auto b = loader.next();  // the next epoch's first batch counts too
      if (b) images += b->data.size(0);
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"images\": %lld, \"seconds\": %.4f, \"images_per_s\": %.1f}\n",
              static_cast<long long>(images), s, static_cast<double>(images) / s);
  return 0;
}

// ImageFolder: listing class folders and their images in torchvision's order, the deterministic
// train / validation split, and decoding an example on demand.
#include "nn/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <utility>

#include "core/factory.h"
#include "core/file_io.h"
#include "nn/data/image_decode.h"

namespace qgrad::data {

namespace fs = std::filesystem;

namespace {

// Fixed seed of the per-class split permutations: the split never depends on the training seed,
// so a checkpoint evaluated later sees the same validation images.
constexpr std::uint64_t kSplitSeed = 0x696D675F666F6C64ULL;  // "img_fold"

bool is_image_name(const std::string& name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* ext : {".jpg", ".jpeg", ".png"}) {
    const std::string e(ext);
    if (lower.size() > e.size() && lower.compare(lower.size() - e.size(), e.size(), e) == 0)
      return true;
  }
  return false;
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The sorted names of the sub-folders of `dir` (symbolic links to folders included).
std::vector<std::string> class_folders(const fs::path& dir) {
  QGRAD_CHECK(is_dir(dir), IOError, "image folder '", dir.string(),
              "' does not exist or is not a folder");
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (is_dir(e.path())) names.push_back(e.path().filename().string());
  QGRAD_CHECK(!ec, IOError, "image folder '", dir.string(), "': cannot list it: ", ec.message());
  std::sort(names.begin(), names.end());
  QGRAD_CHECK(!names.empty(), IOError, "image folder '", dir.string(),
              "' holds no class folders (expected one sub-folder of images per class, or train/ "
              "and val/ holding them)");
  return names;
}

// The images under `dir`, folder by folder in sorted order, each folder's files sorted (as
// torchvision's sorted(os.walk(dir, followlinks=True)) with sorted file names).
std::vector<std::string> class_images(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> found;  // (folder, file name)
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(
           dir, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (!is_dir(p) && is_image_name(p.filename().string()))
      found.emplace_back(p.parent_path().string(), p.filename().string());
  }
  QGRAD_CHECK(!ec, IOError, "image folder '", dir.string(), "': cannot list it: ", ec.message());
  QGRAD_CHECK(!found.empty(), IOError, "class folder '", dir.string(),
              "' holds no .jpg, .jpeg or .png file");
  std::sort(found.begin(), found.end());
  std::vector<std::string> files;
  files.reserve(found.size());
  for (const auto& [folder, name] : found) files.push_back((fs::path(folder) / name).string());
  return files;
}

// Where the splits are: root/train and root/val, or (empty) root itself.
bool has_split_folders(const fs::path& root) {
  const bool train = is_dir(root / "train"), val = is_dir(root / "val");
  QGRAD_CHECK(train == val, IOError, "image folder '", root.string(), "' has ",
              train ? "train/ but no val/" : "val/ but no train/",
              " (give both, or only class folders, which are then split by val_fraction)");
  return train;
}

}  // namespace

std::vector<std::string> image_folder_classes(const std::string& root) {
  const fs::path r(root);
  QGRAD_CHECK(is_dir(r), IOError, "image folder '", root, "' does not exist or is not a folder");
  return class_folders(has_split_folders(r) ? r / "train" : r);
}

ImageFolder::ImageFolder(const std::string& root, Split split, ImageFolderOptions options)
    : options_(options) {
  QGRAD_CHECK(options.channels == 1 || options.channels == 3, ValueError,
              "ImageFolder: channels must be 1 or 3, got ", options.channels);
  QGRAD_CHECK(options.val_fraction >= 0 && options.val_fraction < 1, ValueError,
              "ImageFolder: val_fraction must be in [0, 1), got ", options.val_fraction);
  const fs::path r(root);
  QGRAD_CHECK(is_dir(r), IOError, "image folder '", root, "' does not exist or is not a folder");
  if (has_split_folders(r)) {
    classes_ = class_folders(r / "train");
    const std::vector<std::string> val = class_folders(r / "val");
    QGRAD_CHECK(val == classes_, IOError, "image folder '", root, "': train/ has ", classes_.size(),
                " class folders and val/ has ", val.size(),
                val.size() == classes_.size() ? ", with different names" : "",
                " (both need the same classes)");
    const fs::path dir = r / (split == Split::Train ? "train" : "val");
    for (std::size_t k = 0; k < classes_.size(); ++k)
      for (std::string& f : class_images(dir / classes_[k])) {
        files_.push_back(std::move(f));
        labels_.push_back(static_cast<std::int64_t>(k));
      }
    return;
  }
  classes_ = class_folders(r);
  for (std::size_t k = 0; k < classes_.size(); ++k) {
    const std::vector<std::string> all = class_images(r / classes_[k]);
    const auto n = static_cast<std::int64_t>(all.size());
    const std::int64_t held =
        std::min(n - 1, static_cast<std::int64_t>(std::llround(n * options.val_fraction)));
    Generator gen(kSplitSeed + k);
    const std::vector<std::int64_t> perm = randperm(n, gen).to_vector<std::int64_t>();
    std::vector<bool> in_val(static_cast<std::size_t>(n), false);
    for (std::int64_t i = 0; i < held; ++i) in_val[static_cast<std::size_t>(perm[i])] = true;
    for (std::int64_t i = 0; i < n; ++i)
      if (in_val[static_cast<std::size_t>(i)] == (split == Split::Test)) {
        files_.push_back(all[static_cast<std::size_t>(i)]);
        labels_.push_back(static_cast<std::int64_t>(k));
      }
  }
  QGRAD_CHECK(!files_.empty(), IOError, "image folder '", root,
              "': the validation split is empty (val_fraction ", options.val_fraction,
              " of its classes' images rounds to none)");
}

Example ImageFolder::get(std::size_t index) const {
  QGRAD_CHECK(index < size(), IndexError, "ImageFolder::get: index ", index, " out of range for ",
              size(), " images");
  const std::string& path = files_[index];
  const DecodedImage img = decode_image(read_file(path, "image_folder"), options_.channels, path);
  const std::int64_t C = img.channels, plane = img.height * img.width;
  Tensor x = empty({C, img.height, img.width});
  float* dst = x.data_ptr<float>();
  const std::uint8_t* src = img.pixels.data();
  // HWC bytes to CHW floats, x / 255 as torchvision's ToTensor (a division, not x * (1 / 255));
  // the channel count spelled out so that the loops vectorise.
  if (C == 3) {
    float* d1 = dst + plane;
    float* d2 = dst + 2 * plane;
    for (std::int64_t i = 0; i < plane; ++i) {
      dst[i] = static_cast<float>(src[3 * i]) / 255.0f;
      d1[i] = static_cast<float>(src[3 * i + 1]) / 255.0f;
      d2[i] = static_cast<float>(src[3 * i + 2]) / 255.0f;
    }
  } else {
    for (std::int64_t i = 0; i < plane; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
  }
  return {x, scalar_tensor(static_cast<double>(labels_[index]), TensorOptions().dtype(kInt64))};
}

}  // namespace qgrad::data

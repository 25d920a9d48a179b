// CIFAR-10/100 binary files: locating the files of a split, parsing and validating records.
#include "nn/data/cifar.h"

#include <cstring>
#include <filesystem>
#include <vector>

#include "core/factory.h"
#include "core/file_io.h"

namespace qgrad::data {

namespace {

constexpr std::int64_t kImageBytes = 3 * 32 * 32;

const char* variant_name(CIFARVariant v) {
  return v == CIFARVariant::CIFAR10 ? "CIFAR-10" : "CIFAR-100";
}

// The folder the binary archive extracts to.
const char* archive_folder(CIFARVariant v) {
  return v == CIFARVariant::CIFAR10 ? "cifar-10-batches-bin" : "cifar-100-binary";
}

std::vector<std::string> split_files(CIFARVariant v, Split s) {
  if (v == CIFARVariant::CIFAR100) return {s == Split::Train ? "train.bin" : "test.bin"};
  if (s == Split::Test) return {"test_batch.bin"};
  std::vector<std::string> names;
  for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  return names;
}

bool all_present(const std::filesystem::path& dir, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(dir / n, ec)) return false;
  }
  return true;
}

// The folder holding all of `names`: root, or root/<archive folder>; empty when neither does.
std::string find_folder(const std::string& root, CIFARVariant v,
                        const std::vector<std::string>& names) {
  for (const std::filesystem::path& dir :
       {std::filesystem::path(root), std::filesystem::path(root) / archive_folder(v)})
    if (all_present(dir, names)) return dir.string();
  return "";
}

}  // namespace

std::int64_t CIFAR::num_classes(CIFARVariant variant, CIFARLabel label) {
  if (variant == CIFARVariant::CIFAR10) return 10;
  return label == CIFARLabel::Fine ? 100 : 20;
}

CIFARRecords parse_cifar(const std::string& bytes, CIFARVariant variant, CIFARLabel label,
                         const std::string& source) {
  const std::int64_t label_bytes = variant == CIFARVariant::CIFAR10 ? 1 : 2;
  const std::int64_t record = label_bytes + kImageBytes;
  const auto size = static_cast<std::int64_t>(bytes.size());
  QGRAD_CHECK(size > 0, IOError, variant_name(variant), ": '", source, "' is empty");
  QGRAD_CHECK(size % record == 0, IOError, variant_name(variant), ": '", source, "' holds ", size,
              " bytes, not a whole number of ", record, "-byte records (", label_bytes,
              " label byte", label_bytes == 1 ? "" : "s",
              " + 3072 image bytes); truncated, or not the binary version?");
  const std::int64_t n = size / record;
  // CIFAR-100 records: coarse label first, then fine.
  const std::int64_t label_at =
      variant == CIFARVariant::CIFAR100 && label == CIFARLabel::Fine ? 1 : 0;
  const std::int64_t classes = CIFAR::num_classes(variant, label);
  CIFARRecords r{empty({n, 3, 32, 32}, TensorOptions().dtype(kUInt8)),
                 empty({n}, TensorOptions().dtype(kInt64))};
  auto* img = r.images.data_ptr<std::uint8_t>();
  auto* lbl = r.labels.data_ptr<std::int64_t>();
  const auto* src = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::int64_t i = 0; i < n; ++i) {
    const unsigned char* rec = src + i * record;
    const int l = rec[label_at];
    QGRAD_CHECK(l < classes, IOError, variant_name(variant), ": '", source, "': ",
                variant == CIFARVariant::CIFAR10 ? "" : (label_at == 1 ? "fine " : "coarse "),
                "label ", l, " of record ", i, " is outside 0..", classes - 1);
    lbl[i] = l;
    std::memcpy(img + i * kImageBytes, rec + label_bytes, static_cast<std::size_t>(kImageBytes));
  }
  return r;
}

bool cifar_files_present(const std::string& root, CIFARVariant variant) {
  for (Split s : {Split::Train, Split::Test})
    if (find_folder(root, variant, split_files(variant, s)).empty()) return false;
  return true;
}

CIFAR::CIFAR(const std::string& root, Split split, CIFARVariant variant, CIFARLabel label)
    : num_classes_(num_classes(variant, label)) {
  const std::vector<std::string> names = split_files(variant, split);
  const std::string dir = find_folder(root, variant, names);
  if (dir.empty()) {
    std::string listed;
    for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
    throw IOError(std::string(variant_name(variant)) + ": '" + root + "' (or '" + root + "/" +
                  archive_folder(variant) + "') does not hold " + listed +
                  " (the binary version: download " +
                  (variant == CIFARVariant::CIFAR10
                       ? "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
                       : "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz") +
                  ", extract it and pass the folder; Debian does not package CIFAR)");
  }
  std::vector<CIFARRecords> parts;
  std::int64_t n = 0;
  for (const std::string& name : names) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    parts.push_back(parse_cifar(read_file(path, variant_name(variant)), variant, label, path));
    n += parts.back().labels.size(0);
  }
  if (parts.size() == 1) {
    images_ = parts[0].images;
    targets_ = parts[0].labels;
    return;
  }
  images_ = empty({n, 3, 32, 32}, TensorOptions().dtype(kUInt8));
  targets_ = empty({n}, TensorOptions().dtype(kInt64));
  std::int64_t at = 0;
  for (const CIFARRecords& p : parts) {
    const std::int64_t m = p.labels.size(0);
    std::memcpy(images_.data_ptr<std::uint8_t>() + at * kImageBytes,
                p.images.data_ptr<std::uint8_t>(), static_cast<std::size_t>(m * kImageBytes));
    std::memcpy(targets_.data_ptr<std::int64_t>() + at, p.labels.data_ptr<std::int64_t>(),
                static_cast<std::size_t>(m) * sizeof(std::int64_t));
    at += m;
  }
}

std::size_t CIFAR::size() const {
  return static_cast<std::size_t>(images_.size(0));
}

Example CIFAR::get(std::size_t index) const {
  QGRAD_CHECK(index < size(), IndexError, "CIFAR::get: index ", index, " out of range for ", size(),
              " examples");
  Tensor x = empty({3, 32, 32});
  const std::uint8_t* src =
      images_.data_ptr<std::uint8_t>() + static_cast<std::int64_t>(index) * kImageBytes;
  float* dst = x.data_ptr<float>();
  for (std::int64_t i = 0; i < kImageBytes; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
  return {x, targets_.select(0, static_cast<std::int64_t>(index))};
}

}  // namespace qgrad::data

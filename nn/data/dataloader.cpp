// DataLoader: deterministic batch construction and the producer/consumer queue between the
// background worker and the training thread.
#include "nn/data/dataloader.h"

#include <omp.h>

#include <cstring>
#include <limits>

#include "core/factory.h"

namespace qgrad::data {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Seeds of independent streams: one per epoch for the shuffle, one per example for transforms.
std::uint64_t epoch_seed(std::uint64_t seed, std::int64_t epoch) {
  return splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(epoch) + 0x5851F42D4C957F2DULL));
}
std::uint64_t example_seed(std::uint64_t seed, std::int64_t epoch, std::int64_t position) {
  return splitmix64(epoch_seed(seed, epoch) ^
                    splitmix64(static_cast<std::uint64_t>(position) + 0x14057B7EF767814FULL));
}

Tensor scalar_i64(std::int64_t v) {
  return scalar_tensor(static_cast<double>(v), TensorOptions().dtype(kInt64));
}

// Stacks same-shaped, same-dtype CPU tensors into [n, ...].
Tensor stack_examples(const std::vector<Tensor>& parts, const char* what) {
  const Tensor& first = parts.front();
  Shape shape = first.shape();
  shape.insert(shape.begin(), static_cast<std::int64_t>(parts.size()));
  Tensor out = empty(shape, TensorOptions().dtype(first.dtype()));
  const std::size_t bytes = static_cast<std::size_t>(first.numel()) * first.element_size();
  auto* dst = static_cast<char*>(out.raw_data());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    QGRAD_CHECK(p.defined(), ValueError, "DataLoader: example ", i,
                " of the batch has an undefined ", what);
    QGRAD_CHECK(p.shape() == first.shape() && p.dtype() == first.dtype(), ShapeError,
                "DataLoader: cannot batch ", what, " of shape ", p.shape(), " ",
                dtype_name(p.dtype()), " with ", what, " of shape ", first.shape(), " ",
                dtype_name(first.dtype()), " (example ", i, " of the batch)");
    Tensor c = p.device().is_cpu() ? p.detach().contiguous() : p.detach().to(kCPU).contiguous();
    if (bytes) std::memcpy(dst + i * bytes, c.raw_data(), bytes);
  }
  return out;
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options,
                       std::vector<std::shared_ptr<const Transform>> transforms)
    : dataset_(std::move(dataset)), options_(options), transforms_(std::move(transforms)) {
  QGRAD_CHECK(dataset_ != nullptr, ValueError, "DataLoader: dataset is null");
  QGRAD_CHECK(options_.batch_size_ > 0, ValueError, "DataLoader: batch_size must be positive, got ",
              options_.batch_size_);
  QGRAD_CHECK(options_.queue_ > 0, ValueError, "DataLoader: queue must be at least 1");
  QGRAD_CHECK(options_.workers_ >= 1 && options_.workers_ <= 1024, ValueError,
              "DataLoader: workers must be in [1, 1024], got ", options_.workers_);
  QGRAD_CHECK(options_.shards_ >= 1 && options_.shard_ >= 0 && options_.shard_ < options_.shards_,
              ValueError, "DataLoader: shard ", options_.shard_, " of ", options_.shards_,
              " (expected 0 <= shard < shards)");
  for (std::size_t i = 0; i < transforms_.size(); ++i)
    QGRAD_CHECK(transforms_[i] != nullptr, ValueError, "DataLoader: transform ", i, " is null");
  const auto n = static_cast<std::int64_t>(dataset_->size());
  const std::int64_t shards = options_.shards_;
  QGRAD_CHECK(options_.batch_size_ <= std::numeric_limits<std::int64_t>::max() / shards, ValueError,
              "DataLoader: batch_size ", options_.batch_size_, " x ", shards, " shards overflows");
  const std::int64_t b = options_.batch_size_ * shards;  // the global batch
  // Not (n + b - 1) / b: with b near INT64_MAX that sum overflows and an epoch had 0 batches.
  // A last global batch too small to give every shard an example is left out.
  batches_per_epoch_ = n / b + (!options_.drop_last_ && (n % b) / shards != 0 ? 1 : 0);
  if (options_.prefetch_ && batches_per_epoch_ > 0) {
    try {
      for (int i = 0; i < options_.workers_; ++i) workers_.emplace_back([this] { worker_loop(); });
    } catch (...) {
      stop_workers();  // a thread that could not start: join those that did
      throw;
    }
  }
}

DataLoader::~DataLoader() {
  stop_workers();
}

void DataLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lk(mutex_);
    stop_ = true;
  }
  worker_cv_.notify_all();
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
}

LoaderState DataLoader::advance(LoaderState s) const {
  if (++s.batch >= batches_per_epoch_) s = {s.epoch + 1, 0};
  return s;
}

std::vector<std::int64_t> DataLoader::epoch_order(std::int64_t epoch) const {
  const auto n = static_cast<std::int64_t>(dataset_->size());
  std::vector<std::int64_t> order;
  if (!options_.shuffle_) {
    order.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    return order;
  }
  Generator g(epoch_seed(options_.seed_, epoch));
  return randperm(n, g).to_vector<std::int64_t>();
}

Batch DataLoader::make_batch(const LoaderState& at) const {
  QGRAD_CHECK(at.epoch >= 0 && at.batch >= 0 && at.batch < batches_per_epoch_, IndexError,
              "DataLoader::make_batch: batch ", at.batch, " of epoch ", at.epoch,
              " does not exist (", batches_per_epoch_, " batches per epoch)");
  const auto n = static_cast<std::int64_t>(dataset_->size());
  // batch < batches_per_epoch, so start < n; the global batch is clamped without forming
  // start + batch_size. This shard's part: shard x (the global batch / shards).
  const std::int64_t shards = options_.shards_;
  const std::int64_t start = at.batch * options_.batch_size_ * shards;
  const std::int64_t part = std::min(n - start, options_.batch_size_ * shards) / shards;
  const std::int64_t begin = start + options_.shard_ * part;
  const std::int64_t end = begin + part;
  std::vector<std::int64_t> indices;
  {
    std::lock_guard<std::mutex> lk(order_mutex_);
    // Epoch e's order lives in cache entry e % 2.
    const auto k = static_cast<std::size_t>(at.epoch % 2);
    if (order_epoch_[k] != at.epoch) {
      order_[k] = epoch_order(at.epoch);
      order_epoch_[k] = at.epoch;
    }
    indices.assign(order_[k].begin() + begin, order_[k].begin() + end);
  }
  std::vector<Tensor> data, targets;
  data.reserve(indices.size());
  targets.reserve(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    Example e = dataset_->get(static_cast<std::size_t>(indices[i]));
    if (!transforms_.empty()) {
      Generator g(example_seed(options_.seed_, at.epoch, begin + static_cast<std::int64_t>(i)));
      for (const auto& t : transforms_) e.data = (*t)(e.data, g);
    }
    data.push_back(std::move(e.data));
    targets.push_back(std::move(e.target));
  }
  return {stack_examples(data, "data"), stack_examples(targets, "target")};
}

void DataLoader::worker_loop() {
  // One OpenMP thread for what this worker runs (Dataset::get, the transforms, the batch copy):
  // the workers are the parallelism, and a team of all cores per worker would oversubscribe the
  // cores that training's OpenMP threads use (as PyTorch's loader workers set_num_threads(1)).
  omp_set_num_threads(1);
  // Batches in the works or ready: the queue a single worker keeps, plus one per extra worker.
  const std::size_t limit = options_.queue_ + static_cast<std::size_t>(options_.workers_) - 1;
  std::unique_lock<std::mutex> lk(mutex_);
  for (;;) {
    worker_cv_.wait(lk, [&] { return stop_ || queue_.size() < limit; });
    if (stop_) return;
    // Take the next position: its slot holds its place in the order while the batch is made.
    auto slot = std::make_shared<Slot>();
    slot->at = worker_cursor_;
    worker_cursor_ = advance(worker_cursor_);
    queue_.push_back(slot);
    lk.unlock();
    std::optional<Batch> batch;
    std::exception_ptr error;
    try {
      batch = make_batch(slot->at);
    } catch (...) {
      error = std::current_exception();
    }
    lk.lock();
    if (stop_) return;
    // A slot that set_state() dropped meanwhile is no longer in the queue: nobody reads it.
    slot->batch = std::move(batch);
    slot->error = error;
    slot->ready = true;
    consumer_cv_.notify_all();
  }
}

std::optional<Batch> DataLoader::next() {
  std::unique_lock<std::mutex> lk(mutex_);
  if (state_.batch >= batches_per_epoch_) {
    state_ = {state_.epoch + 1, 0};
    return std::nullopt;
  }
  const LoaderState want = state_;
  if (workers_.empty()) {
    ++state_.batch;
    lk.unlock();
    return make_batch(want);
  }
  consumer_cv_.wait(lk, [&] { return !queue_.empty() && queue_.front()->ready; });
  std::shared_ptr<Slot> slot = std::move(queue_.front());
  queue_.pop_front();
  QGRAD_CHECK(slot->at == want, ValueError, "DataLoader: internal error: prepared batch ",
              slot->at.batch, " of epoch ", slot->at.epoch, " but batch ", want.batch, " of epoch ",
              want.epoch, " is due");
  ++state_.batch;
  lk.unlock();
  worker_cv_.notify_one();
  if (slot->error) std::rethrow_exception(slot->error);
  return std::move(slot->batch);
}

std::int64_t DataLoader::epoch() const {
  return state().epoch;
}

LoaderState DataLoader::state() const {
  std::lock_guard<std::mutex> lk(mutex_);
  return state_;
}

void DataLoader::set_state(LoaderState s) {
  QGRAD_CHECK(s.epoch >= 0 && s.batch >= 0 && s.batch <= batches_per_epoch_, ValueError,
              "DataLoader::set_state: batch ", s.batch, " of epoch ", s.epoch,
              " is not a position of this loader (", batches_per_epoch_, " batches per epoch)");
  {
    std::lock_guard<std::mutex> lk(mutex_);
    state_ = s;
    worker_cursor_ = s.batch == batches_per_epoch_ ? LoaderState{s.epoch + 1, 0} : s;
    queue_.clear();
  }
  worker_cv_.notify_all();
}

TensorDict DataLoader::state_dict() const {
  const LoaderState s = state();
  TensorDict out("data loader state entry");
  out.insert("epoch", scalar_i64(s.epoch));
  out.insert("batch", scalar_i64(s.batch));
  out.insert("seed", scalar_i64(static_cast<std::int64_t>(options_.seed_)));
  out.insert("batch_size", scalar_i64(options_.batch_size_));
  out.insert("dataset_size", scalar_i64(static_cast<std::int64_t>(dataset_->size())));
  out.insert("shards", scalar_i64(options_.shards_));
  return out;
}

void DataLoader::load_state_dict(const TensorDict& dict) {
  std::string problems;
  auto get = [&](const char* key) -> std::int64_t {
    const Tensor* t = dict.find(key);
    if (t == nullptr || !t->defined() || t->numel() != 1) {
      problems += std::string("\n  missing or malformed '") + key + "'";
      return 0;
    }
    return t->item<std::int64_t>();
  };
  const std::int64_t epoch = get("epoch"), batch = get("batch"), seed = get("seed");
  const std::int64_t bs = get("batch_size"), size = get("dataset_size");
  if (problems.empty()) {
    if (seed != static_cast<std::int64_t>(options_.seed_))
      problems += "\n  seed " + std::to_string(seed) + " differs from this loader's " +
                  std::to_string(options_.seed_);
    if (bs != options_.batch_size_)
      problems += "\n  batch_size " + std::to_string(bs) + " differs from this loader's " +
                  std::to_string(options_.batch_size_);
    const Tensor* sh = dict.find("shards");
    const std::int64_t shards = sh != nullptr && sh->numel() == 1 ? sh->item<std::int64_t>() : 1;
    if (shards != options_.shards_)
      problems += "\n  it was read by " + std::to_string(shards) +
                  " data-parallel ranks, this loader is one of " +
                  std::to_string(options_.shards_) + " (resume with the same number of ranks)";
    if (size != static_cast<std::int64_t>(dataset_->size()))
      problems += "\n  dataset_size " + std::to_string(size) + " differs from this dataset's " +
                  std::to_string(dataset_->size());
  }
  QGRAD_CHECK(problems.empty(), ValueError,
              "DataLoader::load_state_dict: the state does not fit this loader:", problems);
  set_state({epoch, batch});
}

DataLoader::Iterator::Iterator(DataLoader* loader) : loader_(loader), current_(loader->next()) {}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  current_ = loader_->next();
  return *this;
}

}  // namespace qgrad::data

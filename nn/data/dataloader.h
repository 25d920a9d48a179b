/// @file
/// DataLoader: batches of a Dataset with seeded shuffling, per-example transforms and background
/// worker threads that prepare the next batches while the current one trains.
///
/// Determinism: epoch e visits the examples in the order of a permutation drawn from
/// Generator(mix(seed, e)) (identity without shuffle), and the transforms of the example at
/// position k of epoch e draw from Generator(mix(seed, e, k)). Every batch is therefore a pure
/// function of (seed, epoch, batch index): the same seed gives the same batches, the order
/// changes from epoch to epoch, and restoring a saved LoaderState resumes bit-exactly,
/// whether or not the background thread is used.
///
/// Sharding (DataLoaderOptions::shard) splits every global batch among data-parallel ranks.
///
/// Iteration: next() returns the batches of the current epoch, then std::nullopt once, after
/// which the loader is at batch 0 of the next epoch. A range-for (`for (Batch& b : loader)`)
/// runs over the rest of the current epoch. Batches are {data [B, ...example shape],
/// target [B, ...target shape]}; the last batch is smaller unless drop_last.
///
/// The worker threads (DataLoaderOptions::workers, one by default) are started on construction
/// (when prefetch is on) and stopped and joined in the destructor, which waits at most for the
/// batches being prepared. Each worker takes the next batch position, prepares the whole batch and
/// puts it in its slot of an ordered queue, so next() returns the batches in order however the
/// workers finish (decoding images, one worker is seldom enough: PyTorch's num_workers). An
/// exception thrown while preparing a batch (by the dataset or a transform) is rethrown by next()
/// for that batch. Dataset::get and the transforms run on the workers, several at once, and must
/// not mutate shared state.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "nn/data/dataset.h"
#include "nn/data/transforms.h"
#include "nn/ordered_dict.h"

namespace qgrad::data {

/// One batch: the stacked inputs and their targets.
struct Batch {
  Tensor data;    ///< inputs [B, ...]
  Tensor target;  ///< targets [B, ...]
};

/// Options of a DataLoader, with chainable setters.
struct DataLoaderOptions {
  std::int64_t batch_size_ = 64;  ///< examples per batch
  bool shuffle_ = false;          ///< draw a new permutation of the examples each epoch
  bool drop_last_ = false;        ///< leave out the last, incomplete batch
  std::uint64_t seed_ = 0;        ///< seed of the shuffling and the transforms' randomness
  bool prefetch_ = true;          ///< prepare batches on background threads
  std::size_t queue_ = 2;         ///< batches prepared ahead (with prefetch)
  int workers_ = 1;               ///< background threads (with prefetch)
  int shard_ = 0;                 ///< this loader's shard (data-parallel rank)
  int shards_ = 1;                ///< the number of shards (data-parallel ranks)

  /// Sets the batch size.
  DataLoaderOptions& batch_size(std::int64_t v) {
    batch_size_ = v;
    return *this;
  }
  /// Sets whether each epoch shuffles.
  DataLoaderOptions& shuffle(bool v) {
    shuffle_ = v;
    return *this;
  }
  /// Sets whether an incomplete last batch is left out.
  DataLoaderOptions& drop_last(bool v) {
    drop_last_ = v;
    return *this;
  }
  /// Sets the seed.
  DataLoaderOptions& seed(std::uint64_t v) {
    seed_ = v;
    return *this;
  }
  /// Sets whether batches are prepared ahead on a background thread.
  DataLoaderOptions& prefetch(bool v) {
    prefetch_ = v;
    return *this;
  }
  /// Sets how many batches are prepared ahead.
  DataLoaderOptions& queue(std::size_t v) {
    queue_ = v;
    return *this;
  }
  /// Sets how many threads prepare batches (with prefetch); up to queue + workers - 1 batches
  /// are then in the works or ready at once.
  DataLoaderOptions& workers(int v) {
    workers_ = v;
    return *this;
  }
  /// Reads shard `index` of `count` (data-parallel training, torch's DistributedSampler): the
  /// `count` loaders of one seed split each global batch of count x batch_size examples of the
  /// epoch's permutation into consecutive equal parts, part `index` for this loader, so that
  /// step k of the N loaders together sees exactly batch k of one loader with batch N x B. A
  /// last global batch of m < N x B examples gives each shard m / N of them; the m mod N left
  /// over (fewer than N) are not seen that epoch (the next permutation differs), and with
  /// drop_last the incomplete global batch is left out altogether.
  DataLoaderOptions& shard(int index, int count) {
    shard_ = index;
    shards_ = count;
    return *this;
  }
};

/// Where a loader is: the next batch to produce is batch `batch` of epoch `epoch`.
struct LoaderState {
  std::int64_t epoch = 0;  ///< the epoch of the next batch
  std::int64_t batch = 0;  ///< the index of the next batch in its epoch
  friend bool operator==(const LoaderState& a, const LoaderState& b) {
    return a.epoch == b.epoch && a.batch == b.batch;
  }
};

/// Batches from a Dataset, optionally shuffled, transformed and prefetched; iterable over one
/// epoch.
class DataLoader {
 public:
  /// A loader over `dataset`, applying `transforms` in order to each example's input.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options,
             std::vector<std::shared_ptr<const Transform>> transforms = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// The next batch of the current epoch, or std::nullopt at its end (then the loader moves to
  /// the next epoch).
  std::optional<Batch> next();

  /// The number of batches in one epoch.
  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }
  /// The epoch of the next batch.
  std::int64_t epoch() const;
  /// The options the loader was made with.
  const DataLoaderOptions& options() const { return options_; }

  /// Where the loader is: the epoch and batch index of the next batch.
  LoaderState state() const;
  /// Jumps to `state` (for resuming); batches already prepared ahead are discarded.
  void set_state(LoaderState state);
  /// {"epoch", "batch", "seed", "batch_size", "dataset_size", "shards"} as int64 scalars, for
  /// checkpoints.
  TensorDict state_dict() const;
  /// Restores epoch and batch; throws ValueError when seed, batch size, dataset size or the
  /// number of shards differ (the resumed sequence would not be the same; a state without
  /// "shards" was written by one loader).
  void load_state_dict(const TensorDict& dict);

  /// The batch at any position, computed directly (what next() returns there).
  Batch make_batch(const LoaderState& at) const;

  /// Input iterator over the batches of the current epoch (range-for).
  class Iterator {
   public:
    /// Iterator traits.
    using iterator_category = std::input_iterator_tag;
    /// Iterator traits.
    using value_type = Batch;
    /// Iterator traits.
    using difference_type = std::ptrdiff_t;
    /// Iterator traits.
    using pointer = Batch*;
    /// Iterator traits.
    using reference = Batch&;
    Iterator() = default;
    /// An iterator at the loader's next batch.
    explicit Iterator(DataLoader* loader);
    /// The current batch.
    Batch& operator*() { return *current_; }
    /// The current batch.
    Batch* operator->() { return &*current_; }
    /// Moves to the next batch (the end at the end of the epoch).
    Iterator& operator++();
    /// True when both are at the end.
    bool operator==(const Iterator& o) const { return !current_ && !o.current_; }
    /// False when both are at the end.
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    DataLoader* loader_ = nullptr;
    std::optional<Batch> current_;
  };
  /// An iterator at the next batch of the current epoch.
  Iterator begin() { return Iterator(this); }
  /// The end of the epoch.
  Iterator end() { return Iterator(); }

 private:
  // A batch position a worker has taken: filled (ready) when the batch or its error is made.
  struct Slot {
    LoaderState at;
    bool ready = false;
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  LoaderState advance(LoaderState s) const;
  std::vector<std::int64_t> epoch_order(std::int64_t epoch) const;
  void worker_loop();
  void stop_workers();

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  std::vector<std::shared_ptr<const Transform>> transforms_;
  std::int64_t batches_per_epoch_ = 0;

  /// The orders of the last two epochs, cached for the threads that build batches (the workers
  /// with prefetch, the caller without; around an epoch's end, workers build batches of both);
  /// guarded by order_mutex_.
  mutable std::mutex order_mutex_;
  mutable std::int64_t order_epoch_[2] = {-1, -1};
  mutable std::vector<std::int64_t> order_[2];

  mutable std::mutex mutex_;
  std::condition_variable worker_cv_, consumer_cv_;
  LoaderState state_;          ///< what the consumer gets next
  LoaderState worker_cursor_;  ///< what the worker makes next
  /// Taken positions in order; shared with the worker filling each (set_state may drop them).
  std::deque<std::shared_ptr<Slot>> queue_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace qgrad::data

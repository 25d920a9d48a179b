// DataLoader: batching, shuffling determinism, epoch semantics, background prefetch (one worker
// or several) equal to synchronous loading, bit-exact resume, exception propagation and clean
// shutdown.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "core/factory.h"
#include "nn/data/dataloader.h"
#include "nn/data/idx.h"
#include "nn/data/mnist.h"
#include "support/scratch_files.h"

using namespace qgrad;
using namespace qgrad::data;
using qgrad_test::TempDir;

namespace {

// N examples; example i has data filled with i (shape [1, 2, 2]) and target i.
std::shared_ptr<TensorDataset> numbered(std::int64_t n) {
  std::vector<float> d;
  for (std::int64_t i = 0; i < n; ++i)
    for (int k = 0; k < 4; ++k) d.push_back(static_cast<float>(i));
  std::vector<std::int64_t> t;
  for (std::int64_t i = 0; i < n; ++i) t.push_back(i);
  return std::make_shared<TensorDataset>(from_vector<float>(d, {n, 1, 2, 2}), from_vector(t));
}

std::vector<std::int64_t> targets_of(const Batch& b) {
  return b.target.to_vector<std::int64_t>();
}

// All batches of one epoch as their data and targets.
std::vector<std::pair<std::vector<float>, std::vector<std::int64_t>>> run_epoch(DataLoader& l) {
  std::vector<std::pair<std::vector<float>, std::vector<std::int64_t>>> out;
  while (auto b = l.next()) out.push_back({b->data.to_vector<float>(), targets_of(*b)});
  return out;
}

// Makes example 1 bigger than the others, so its batch cannot be stacked.
class ReshapeOne : public Transform {
 public:
  Tensor operator()(const Tensor& image, Generator&) const override {
    return image.to_vector<float>()[0] == 1.0f ? zeros({1, 3, 3}) : image;
  }
  std::string repr() const override { return "ReshapeOne()"; }
};

class ThrowingDataset : public Dataset {
 public:
  explicit ThrowingDataset(std::size_t bad) : inner_(numbered(10)), bad_(bad) {}
  std::size_t size() const override { return inner_->size(); }
  Example get(std::size_t i) const override {
    QGRAD_CHECK(i != bad_, IOError, "ThrowingDataset: example ", i, " is unreadable");
    return inner_->get(i);
  }

 private:
  std::shared_ptr<TensorDataset> inner_;
  std::size_t bad_;
};

// numbered(n), each example taking a while that depends on its index (so that several workers
// finish their batches out of order).
class SlowDataset : public Dataset {
 public:
  explicit SlowDataset(std::int64_t n) : inner_(numbered(n)) {}
  std::size_t size() const override { return inner_->size(); }
  Example get(std::size_t i) const override {
    std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 5 * 300));
    return inner_->get(i);
  }

 private:
  std::shared_ptr<TensorDataset> inner_;
};

}  // namespace

TEST_CASE("dataloader: batches in order without shuffle, smaller last batch or dropped") {
  for (bool prefetch : {false, true}) {
    DataLoader l(numbered(10), DataLoaderOptions().batch_size(3).prefetch(prefetch));
    REQUIRE(l.batches_per_epoch() == 4);
    auto b = l.next();
    REQUIRE(b);
    REQUIRE(b->data.shape() == Shape{3, 1, 2, 2});
    REQUIRE(b->target.shape() == Shape{3});
    REQUIRE(b->target.dtype() == kInt64);
    REQUIRE(targets_of(*b) == std::vector<std::int64_t>{0, 1, 2});
    REQUIRE(b->data.to_vector<float>()[4] == 1.0f);
    REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{3, 4, 5});
    REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{6, 7, 8});
    REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{9});
    REQUIRE(l.epoch() == 0);
    REQUIRE_FALSE(l.next());
    REQUIRE(l.epoch() == 1);
    REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{0, 1, 2});

    DataLoader d(numbered(10),
                 DataLoaderOptions().batch_size(3).drop_last(true).prefetch(prefetch));
    REQUIRE(d.batches_per_epoch() == 3);
    REQUIRE(run_epoch(d).size() == 3);
  }
}

TEST_CASE("dataloader: range-for covers the rest of the current epoch") {
  DataLoader l(numbered(7), DataLoaderOptions().batch_size(2));
  std::vector<std::int64_t> seen;
  for (Batch& b : l)
    for (auto t : targets_of(b)) seen.push_back(t);
  REQUIRE(seen == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6});
  REQUIRE(l.epoch() == 1);
  int batches = 0;
  for (auto it = l.begin(); it != l.end(); ++it) ++batches;
  REQUIRE(batches == 4);
}

TEST_CASE("dataloader: shuffling is a seeded permutation that changes with the epoch") {
  auto ds = numbered(50);
  DataLoader a(ds, DataLoaderOptions().batch_size(8).shuffle(true).seed(42));
  DataLoader b(ds, DataLoaderOptions().batch_size(8).shuffle(true).seed(42).prefetch(false));
  DataLoader c(ds, DataLoaderOptions().batch_size(8).shuffle(true).seed(43));
  auto a0 = run_epoch(a), a1 = run_epoch(a);
  auto b0 = run_epoch(b), b1 = run_epoch(b);
  auto c0 = run_epoch(c);
  REQUIRE(a0 == b0);  // same seed, with and without the worker thread
  REQUIRE(a1 == b1);
  REQUIRE(a0 != a1);  // another epoch, another order
  REQUIRE(a0 != c0);  // another seed, another order
  for (const auto* epoch : {&a0, &a1}) {
    std::multiset<std::int64_t> all;
    for (const auto& batch : *epoch) all.insert(batch.second.begin(), batch.second.end());
    REQUIRE(all.size() == 50);
    REQUIRE(std::set<std::int64_t>(all.begin(), all.end()).size() == 50);
  }
  // Data and targets stay paired.
  for (const auto& batch : a0)
    for (std::size_t i = 0; i < batch.second.size(); ++i)
      REQUIRE(batch.first[i * 4] == static_cast<float>(batch.second[i]));
}

TEST_CASE("dataloader: random transforms are reproducible and identical with prefetch") {
  auto ds = numbered(20);
  std::vector<std::shared_ptr<const Transform>> tf = {
      std::make_shared<RandomCrop>(2, 1), std::make_shared<RandomHorizontalFlip>(0.5),
      std::make_shared<Normalize>(std::vector<double>{0.5}, std::vector<double>{2.0})};
  DataLoader a(ds, DataLoaderOptions().batch_size(6).shuffle(true).seed(5), tf);
  DataLoader b(ds, DataLoaderOptions().batch_size(6).shuffle(true).seed(5).prefetch(false), tf);
  auto a0 = run_epoch(a), a1 = run_epoch(a);
  REQUIRE(a0 == run_epoch(b));
  REQUIRE(a1 == run_epoch(b));
  // The crops differ between examples (padding zeros appear in some, not all).
  std::set<std::vector<float>> distinct;
  for (const auto& batch : a0) distinct.insert(batch.first);
  REQUIRE(distinct.size() == a0.size());
}

TEST_CASE("dataloader: several workers give exactly one worker's batches, in order") {
  auto ds = std::make_shared<SlowDataset>(47);
  std::vector<std::shared_ptr<const Transform>> tf = {std::make_shared<RandomCrop>(2, 1),
                                                      std::make_shared<RandomHorizontalFlip>(0.5)};
  const auto options = DataLoaderOptions().batch_size(4).shuffle(true).seed(3);
  DataLoader one(ds, DataLoaderOptions(options).prefetch(false), tf);
  const auto e0 = run_epoch(one), e1 = run_epoch(one), e2 = run_epoch(one);
  for (int workers : {2, 3, 8})
    for (std::size_t queue : {std::size_t{1}, std::size_t{3}}) {
      INFO(workers << " workers, queue " << queue);
      DataLoader many(ds, DataLoaderOptions(options).workers(workers).queue(queue), tf);
      REQUIRE(run_epoch(many) == e0);
      REQUIRE(run_epoch(many) == e1);
      // Jumping back while workers are busy drops their batches and restarts there.
      many.next();
      many.set_state({1, 0});
      REQUIRE(run_epoch(many) == e1);
      REQUIRE(run_epoch(many) == e2);
    }
  REQUIRE_THROWS_AS(DataLoader(ds, DataLoaderOptions().workers(0)), ValueError);
}

TEST_CASE("dataloader: several workers forward errors and stop cleanly at any point") {
  DataLoader l(std::make_shared<ThrowingDataset>(4),
               DataLoaderOptions().batch_size(2).workers(4).queue(2));
  REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{0, 1});
  REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{2, 3});
  REQUIRE_THROWS_WITH(l.next(), Catch::Contains("example 4 is unreadable"));
  REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{6, 7});
  auto slow = std::make_shared<SlowDataset>(200);
  for (int consumed = 0; consumed < 3; ++consumed) {
    const auto start = std::chrono::steady_clock::now();
    {
      DataLoader d(slow, DataLoaderOptions().batch_size(5).workers(6).queue(4));
      for (int i = 0; i < consumed; ++i) d.next();
    }
    // The destructor waits only for the batches in the works (5 examples of at most 1.2 ms).
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  }
}

TEST_CASE("dataloader: resuming from a saved state continues bit-exactly") {
  auto ds = numbered(23);
  std::vector<std::shared_ptr<const Transform>> tf = {std::make_shared<RandomCrop>(2, 1)};
  auto opts = DataLoaderOptions().batch_size(4).shuffle(true).seed(77);
  DataLoader ref(ds, opts, tf);
  auto e0 = run_epoch(ref), e1 = run_epoch(ref);

  DataLoader first(ds, opts, tf);
  first.next();
  first.next();
  first.next();
  const TensorDict saved = first.state_dict();
  REQUIRE(saved.at("epoch").item<std::int64_t>() == 0);
  REQUIRE(saved.at("batch").item<std::int64_t>() == 3);

  for (bool prefetch : {true, false}) {
    DataLoader resumed(ds, DataLoaderOptions(opts).prefetch(prefetch), tf);
    resumed.next();  // whatever it did before is discarded by the load
    resumed.load_state_dict(saved);
    auto rest = run_epoch(resumed);
    REQUIRE(rest.size() == e0.size() - 3);
    for (std::size_t i = 0; i < rest.size(); ++i) REQUIRE(rest[i] == e0[i + 3]);
    REQUIRE(run_epoch(resumed) == e1);
  }
  // Direct positions agree with the sequence.
  Batch direct = ref.make_batch({1, 2});
  REQUIRE(direct.target.to_vector<std::int64_t>() == e1[2].second);

  // A state from another configuration is refused.
  DataLoader other(ds, DataLoaderOptions().batch_size(5).shuffle(true).seed(78));
  try {
    other.load_state_dict(saved);
    FAIL("accepted a foreign state");
  } catch (const ValueError& e) {
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("seed 77") && Catch::Contains("batch_size 4"));
  }
  REQUIRE_THROWS_AS(other.set_state({0, 99}), ValueError);
}

TEST_CASE("dataloader: an exception while preparing a batch is rethrown for that batch") {
  for (bool prefetch : {true, false}) {
    DataLoader l(std::make_shared<ThrowingDataset>(7),
                 DataLoaderOptions().batch_size(3).prefetch(prefetch));
    REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{0, 1, 2});
    REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{3, 4, 5});
    REQUIRE_THROWS_AS(l.next(), IOError);  // batch {6, 7, 8}
    // The loader moves on past the failed batch.
    REQUIRE(targets_of(*l.next()) == std::vector<std::int64_t>{9});
    REQUIRE_FALSE(l.next());
    // Next epoch, same failure, same message.
    l.next();
    l.next();
    REQUIRE_THROWS_WITH(l.next(), Catch::Contains("example 7 is unreadable"));
  }
  // Examples that cannot be batched together.
  std::vector<std::shared_ptr<const Transform>> tf = {std::make_shared<ReshapeOne>()};
  DataLoader mixed(numbered(4), DataLoaderOptions().batch_size(2), tf);
  try {
    mixed.next();  // batch {0, 1}
    FAIL("stacked examples of different shapes");
  } catch (const ShapeError& e) {
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("DataLoader") && Catch::Contains("[1, 3, 3]"));
  }
  REQUIRE(mixed.next()->data.shape() == Shape{2, 1, 2, 2});  // batch {2, 3}
  REQUIRE_FALSE(mixed.next());
}

TEST_CASE("dataloader: destruction stops the worker at any point") {
  auto ds = numbered(100);
  { DataLoader idle(ds, DataLoaderOptions().batch_size(10)); }  // never consumed, queue full
  {
    DataLoader mid(ds, DataLoaderOptions().batch_size(10).queue(4));
    mid.next();
    mid.next();
  }
  {
    DataLoader empty_loader(numbered(3), DataLoaderOptions().batch_size(5).drop_last(true));
    REQUIRE(empty_loader.batches_per_epoch() == 0);
    REQUIRE_FALSE(empty_loader.next());
    REQUIRE(empty_loader.epoch() == 1);
  }
  REQUIRE_THROWS_AS(DataLoader(ds, DataLoaderOptions().batch_size(0)), ValueError);
  REQUIRE_THROWS_AS(DataLoader(nullptr, DataLoaderOptions()), ValueError);
}

TEST_CASE("dataloader: MNIST batches are [B, 1, H, W] float and [B] int64") {
  TempDir dir;
  std::vector<std::uint8_t> px(10 * 28 * 28);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint8_t>(i % 251);
  std::vector<std::uint8_t> lb = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  write_idx(dir.file("train-images-idx3-ubyte.gz"), from_vector(px, {10, 28, 28}), true);
  write_idx(dir.file("train-labels-idx1-ubyte.gz"), from_vector(lb), true);
  auto ds = std::make_shared<MNIST>(dir.file(""), Split::Train);
  DataLoader l(ds, DataLoaderOptions().batch_size(4).shuffle(true).seed(1));
  auto b = l.next();
  REQUIRE(b->data.shape() == Shape{4, 1, 28, 28});
  REQUIRE(b->data.dtype() == kFloat32);
  REQUIRE(b->target.shape() == Shape{4});
  REQUIRE(b->target.dtype() == kInt64);
}

TEST_CASE("dataloader: N shards of batch B together read what one loader of batch N x B reads") {
  auto ds = numbered(23);
  for (bool shuffle : {false, true})
    for (int n : {1, 2, 3}) {
      INFO("shuffle " << shuffle << ", " << n << " shards");
      DataLoader whole(ds, DataLoaderOptions().batch_size(4 * n).shuffle(shuffle).seed(5));
      std::vector<std::unique_ptr<DataLoader>> shards;
      for (int r = 0; r < n; ++r)
        shards.push_back(std::make_unique<DataLoader>(
            ds, DataLoaderOptions().batch_size(4).shuffle(shuffle).seed(5).shard(r, n)));
      for (int epoch = 0; epoch < 2; ++epoch) {
        std::int64_t batches = 0;
        while (auto w = whole.next()) {
          // Shard r's batch k is part r of global batch k; a last global batch of m examples
          // gives each shard m / N of them (the m mod N at its end are left out).
          std::vector<std::int64_t> joined;
          std::int64_t part = -1;
          for (auto& s : shards) {
            auto b = s->next();
            REQUIRE(b);
            const std::vector<std::int64_t> t = targets_of(*b);
            if (part < 0) part = static_cast<std::int64_t>(t.size());
            CHECK(static_cast<std::int64_t>(t.size()) == part);
            joined.insert(joined.end(), t.begin(), t.end());
          }
          std::vector<std::int64_t> expected = targets_of(*w);
          expected.resize(joined.size());
          CHECK(joined == expected);
          ++batches;
        }
        for (auto& s : shards) CHECK_FALSE(s->next());
        // 23 examples: 2 full global batches of 8 (n = 2) and 7 left, 3 each; for n = 3, one of
        // 12 and 11 left, 3 each (2 unseen).
        CHECK(batches == whole.batches_per_epoch());
        CHECK(shards[0]->batches_per_epoch() == whole.batches_per_epoch());
      }
    }
}

TEST_CASE("dataloader: a last global batch too small for every shard is left out") {
  // 9 examples, 2 shards of 4: global batch 8, then 1 example, which cannot be split in two.
  auto ds = numbered(9);
  DataLoader s0(ds, DataLoaderOptions().batch_size(4).shard(0, 2));
  DataLoader s1(ds, DataLoaderOptions().batch_size(4).shard(1, 2));
  CHECK(s0.batches_per_epoch() == 1);
  CHECK(targets_of(*s0.next()) == std::vector<std::int64_t>{0, 1, 2, 3});
  CHECK(targets_of(*s1.next()) == std::vector<std::int64_t>{4, 5, 6, 7});
  // drop_last leaves out an incomplete global batch even when it could be split.
  DataLoader d(numbered(11), DataLoaderOptions().batch_size(4).shard(1, 2).drop_last(true));
  CHECK(d.batches_per_epoch() == 1);
  CHECK_THROWS_AS(DataLoader(ds, DataLoaderOptions().shard(2, 2)), ValueError);
  CHECK_THROWS_AS(DataLoader(ds, DataLoaderOptions().shard(0, 0)), ValueError);
}

TEST_CASE("dataloader: a state saved by N shards resumes only with N shards") {
  auto ds = numbered(20);
  DataLoader a(ds, DataLoaderOptions().batch_size(2).shard(1, 2).prefetch(false));
  a.next();
  const TensorDict saved = a.state_dict();
  CHECK(saved.find("shards")->item<std::int64_t>() == 2);
  DataLoader same(ds, DataLoaderOptions().batch_size(2).shard(0, 2).prefetch(false));
  same.load_state_dict(saved);
  CHECK(same.state() == a.state());
  DataLoader single(ds, DataLoaderOptions().batch_size(2).prefetch(false));
  CHECK_THROWS_WITH(single.load_state_dict(saved),
                    Catch::Contains("2 data-parallel ranks") && Catch::Contains("same number"));
  // A state without "shards" was written by one loader.
  TensorDict old;
  for (const auto& it : single.state_dict())
    if (it.key != "shards") old.insert(it.key, it.value);
  CHECK_NOTHROW(single.load_state_dict(old));
  CHECK_THROWS(same.load_state_dict(old));
}

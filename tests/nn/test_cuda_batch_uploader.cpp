// BatchUploader on a GPU (part of test_gpu): every batch arrives intact, including a smaller last
// batch and batches consumed only after later uploads (within the slot guarantee), while the
// compute stream keeps working on earlier ones.
#include <catch2/catch.hpp>

#include "core/device.h"
#include "core/factory.h"
#include "nn/data/batch_uploader.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"

using namespace qgrad;

TEST_CASE("cuda batch uploader: batches reach the GPU intact, the copies beside queued work") {
  data::BatchUploader up(kCUDA, 3);
  Generator gen(3);
  Tensor busy = randn({512, 512}, gen).to(kCUDA);
  for (int i = 0; i < 12; ++i) {
    const std::int64_t n = i % 5 == 4 ? 7 : 32;  // now and then a short batch
    data::Batch b{randn({n, 1, 28, 28}, gen), randint(0, 10, {n}, gen)};
    // Queue compute work first, so that the copy has something to run beside.
    for (int k = 0; k < 4; ++k) busy = tanh(busy * 1.0001);
    const data::Batch d = up.upload(b);
    REQUIRE(d.data.device() == kCUDA);
    REQUIRE(d.target.device() == kCUDA);
    REQUIRE(d.data.shape() == b.data.shape());
    REQUIRE(d.target.dtype() == kInt64);
    // Consumed on the compute stream after the upload, read back bit for bit.
    CHECK((d.data * 1.0).to(kCPU).to_vector<float>() == b.data.to_vector<float>());
    CHECK(d.target.to(kCPU).to_vector<std::int64_t>() == b.target.to_vector<std::int64_t>());
  }
  // Two batches uploaded back to back are both valid until the third slot is reused.
  data::Batch a{full({4, 3}, 1.0), zeros({4}, TensorOptions().dtype(kInt64))};
  data::Batch c{full({4, 3}, 2.0), zeros({4}, TensorOptions().dtype(kInt64))};
  const data::Batch da = up.upload(a), dc = up.upload(c);
  CHECK(sum(da.data).item<double>() == 12.0);
  CHECK(sum(dc.data).item<double>() == 24.0);
  synchronize(kCUDA);
}

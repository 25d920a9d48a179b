// BatchUploader's CPU behaviour and its argument checks (the GPU path: test_cuda_batch_uploader).
#include <catch2/catch.hpp>

#include "core/factory.h"
#include "nn/data/batch_uploader.h"

using namespace qgrad;

TEST_CASE("batch uploader: for the CPU the batch is handed back as it is") {
  data::BatchUploader up(kCPU);
  data::Batch b{ones({2, 3}), zeros({2}, TensorOptions().dtype(kInt64))};
  const data::Batch d = up.upload(b);
  CHECK(d.data.raw_data() == b.data.raw_data());
  CHECK(d.target.raw_data() == b.target.raw_data());
}

TEST_CASE("batch uploader: bad arguments are errors naming it") {
  CHECK_THROWS_WITH(data::BatchUploader(kCPU, 1),
                    Catch::Contains("BatchUploader") && Catch::Contains("at least 2"));
  data::BatchUploader up(kCPU);
  CHECK_THROWS_WITH(up.upload(data::Batch{}),
                    Catch::Contains("BatchUploader::upload") && Catch::Contains("defined"));
  if (!cuda_is_available())
    CHECK_THROWS_WITH(data::BatchUploader(Device(DeviceType::CUDA, 0)),
                      Catch::Contains("BatchUploader"));
}

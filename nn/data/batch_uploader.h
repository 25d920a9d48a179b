// BatchUploader: moves training batches to the GPU without the host waiting for the copy, and
// with the copy overlapping the previous step's kernels. Each batch is staged in page-locked
// (pinned) host memory, copied by the GPU's copy engine on a stream of its own, and the compute
// stream (core/cuda_stream.h) is made to wait for that copy only. The device tensors handed out
// live in `slots` buffers owned by the uploader and reused in turn: a batch stays valid until
// `slots - 1` further uploads (the training loop uses each batch within its step). For the CPU,
// upload() returns the batch itself.
#pragma once

#include <cstdint>
#include <memory>

#include "core/device.h"
#include "nn/data/dataloader.h"

namespace qgrad::data {

class BatchUploader {
 public:
  // `slots` >= 2: with 2, the copy of batch k+1 waits for step k-1's kernels and overlaps
  // step k's.
  explicit BatchUploader(Device device, int slots = 3);
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // The batch on the device (contiguous data and target of the batch's shapes and dtypes).
  Batch upload(const Batch& batch);

  Device device() const { return device_; }

 private:
  struct Impl;  // the CUDA state (pinned buffers, device buffers, events, the copy stream)
  Device device_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgrad::data

// The datasets a DataConfig describes (mnist, cifar10, cifar100, npy, image_folder), and the input
// shape and class count the model is built for: the one place the CLI turns "data" into
// data::Dataset objects, used by train, eval, ptq, sensitivity, autoquant and verify-deploy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cli/train_config.h"
#include "nn/data/dataset.h"
#include "nn/data/mnist.h"
#include "nn/models/zoo.h"

namespace qgrad::cli {

// What the model takes and predicts for this data.
struct DataShape {
  nn::ImageShape image;  // mnist: 1x28x28 (as always); cifar: 3x32x32; npy: the test images';
                         // image_folder: channels x image_size x image_size
  std::int64_t num_classes = 10;
};

// The split of the configured data. IOError naming the file when it is missing or malformed.
std::shared_ptr<data::Dataset> make_dataset(const DataConfig& config, data::Split split);

// The model input and class count of the configured data, without loading it (npy reads the
// test images file for its shape; image_folder lists the class folders).
DataShape data_shape(const DataConfig& config);

// Where the data comes from, for messages: the folder, or the npy files.
std::string data_source(const DataConfig& config);

// Throws UsageError unless example 0 of `dataset` is a [C, H, W] image of `shape` (a training
// set whose images differ from the test set's, which sized the model).
void check_example_shape(const data::Dataset& dataset, const DataShape& shape,
                         const std::string& what);

}  // namespace qgrad::cli

// Tensor printing. Every expected string below was written out from what PyTorch 1.13 prints for
// the same tensor (repr), with our two deliberate differences: the dtype suffix reads
// "dtype=float64" (not "torch.float64") and backward nodes are named without the trailing 0
// ("MulBackward").
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>

#include "tensor_testing.h"

using namespace qgrad;

namespace {

Tensor f32(const std::vector<float>& v, const Shape& shape = {-1}) {
  return from_vector(v, shape);
}

}  // namespace

TEST_CASE("print: float vectors and matrices", "[core][print]") {
  CHECK(f32({0.1f, 0.25f, 3.0f}).str() == "tensor([0.1000, 0.2500, 3.0000])");
  CHECK(f32({1.5f, -2.25f, 3.0f, -10.125f, 0.5f, 100.75f}, {2, 3}).str() ==
        "tensor([[  1.5000,  -2.2500,   3.0000],\n"
        "        [-10.1250,   0.5000, 100.7500]])");
  // A transposed (non-contiguous) view prints in its logical order.
  CHECK(f32({1.5f, -2.25f, 3.0f, -10.125f, 0.5f, 100.75f}, {2, 3}).t().str() ==
        "tensor([[  1.5000, -10.1250],\n"
        "        [ -2.2500,   0.5000],\n"
        "        [  3.0000, 100.7500]])");
  CHECK(f32({-0.0f, 1.5f}).str() == "tensor([-0.0000, 1.5000])");
  std::vector<float> twelve;
  for (int i = 0; i < 12; ++i) twelve.push_back(static_cast<float>(i) / 4.0f);
  CHECK(f32(twelve, {2, 2, 3}).str() ==
        "tensor([[[0.0000, 0.2500, 0.5000],\n"
        "         [0.7500, 1.0000, 1.2500]],\n"
        "\n"
        "        [[1.5000, 1.7500, 2.0000],\n"
        "         [2.2500, 2.5000, 2.7500]]])");
  std::ostringstream os;
  os << f32({0.5f});
  CHECK(os.str() == "tensor([0.5000])");
}

TEST_CASE("print: integral floats", "[core][print]") {
  CHECK(f32({1, 2}).str() == "tensor([1., 2.])");
  CHECK(f32({1, -2, 30, 4}, {2, 2}).str() ==
        "tensor([[ 1., -2.],\n"
        "        [30.,  4.]])");
  CHECK(zeros({2, 2}).str() ==
        "tensor([[0., 0.],\n"
        "        [0., 0.]])");
  CHECK(f32({1, 22, 333}, {3, 1}).str() ==
        "tensor([[  1.],\n"
        "        [ 22.],\n"
        "        [333.]])");
}

TEST_CASE("print: integer dtypes", "[core][print]") {
  CHECK(from_vector(std::vector<std::int64_t>{1, -20, 300}).str() == "tensor([  1, -20, 300])");
  CHECK(from_vector(std::vector<std::int32_t>{1, -20, 300, 4}, {2, 2}).str() ==
        "tensor([[  1, -20],\n"
        "        [300,   4]], dtype=int32)");
  CHECK(from_vector(std::vector<std::uint8_t>{0, 7, 255}).str() ==
        "tensor([  0,   7, 255], dtype=uint8)");
  CHECK(from_vector(std::vector<std::int8_t>{-128, 5}).str() == "tensor([-128,    5], dtype=int8)");
  // int16, as torch prints torch.int16 tensors.
  CHECK(from_vector(std::vector<std::int16_t>{1, -20, 300, 4}, {2, 2}).str() ==
        "tensor([[  1, -20],\n"
        "        [300,   4]], dtype=int16)");
  CHECK(from_vector(std::vector<std::int16_t>{-32768, 32767, 0}).str() ==
        "tensor([-32768,  32767,      0], dtype=int16)");
  CHECK(arange(1200.0, TensorOptions().dtype(kInt16)).str() ==
        "tensor([   0,    1,    2,  ..., 1197, 1198, 1199], dtype=int16)");
  CHECK(scalar_tensor(7, TensorOptions().dtype(kInt16)).str() == "tensor(7, dtype=int16)");
  CHECK(zeros({0}, TensorOptions().dtype(kInt16)).str() == "tensor([], dtype=int16)");
  std::vector<std::int64_t> v16(16);
  for (int i = 0; i < 16; ++i) v16[i] = i;
  CHECK(from_vector(v16, {2, 2, 2, 2}).str() ==
        "tensor([[[[ 0,  1],\n"
        "          [ 2,  3]],\n"
        "\n"
        "         [[ 4,  5],\n"
        "          [ 6,  7]]],\n"
        "\n"
        "\n"
        "        [[[ 8,  9],\n"
        "          [10, 11]],\n"
        "\n"
        "         [[12, 13],\n"
        "          [14, 15]]]])");
  // int64 values print exactly, beyond double precision.
  CHECK(from_vector(std::vector<std::int64_t>{(1LL << 62) + 1}).str() ==
        "tensor([4611686018427387905])");
}

TEST_CASE("print: dtype, requires_grad and grad_fn suffixes", "[core][print]") {
  CHECK(from_vector(std::vector<double>{0.5, 1.25}).str() ==
        "tensor([0.5000, 1.2500], dtype=float64)");
  CHECK(f32({0.5f, 1.25f}).set_requires_grad(true).str() ==
        "tensor([0.5000, 1.2500], requires_grad=True)");
  Tensor x = f32({1, 2}).set_requires_grad(true);
  CHECK(mul(x, 2.0).str() == "tensor([2., 4.], grad_fn=<MulBackward>)");
  Tensor xd = from_vector(std::vector<double>{1.5, 2}).set_requires_grad(true);
  CHECK(mul(xd, 2.0).str() == "tensor([3., 4.], dtype=float64, grad_fn=<MulBackward>)");
  // Suffixes move to their own line when the last line would pass 80 columns.
  std::vector<double> thirds;
  for (int i = 0; i < 8; ++i) thirds.push_back(i / 3.0);
  CHECK(from_vector(thirds).set_requires_grad(true).str() ==
        "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333],\n"
        "       dtype=float64, requires_grad=True)");
}

TEST_CASE("print: 0-d and empty tensors", "[core][print]") {
  CHECK(scalar_tensor(3.5).str() == "tensor(3.5000)");
  CHECK(scalar_tensor(3).str() == "tensor(3.)");
  CHECK(scalar_tensor(0).str() == "tensor(0.)");
  CHECK(scalar_tensor(7, TensorOptions().dtype(kInt64)).str() == "tensor(7)");
  CHECK(scalar_tensor(-2.5, TensorOptions().dtype(kFloat64)).str() ==
        "tensor(-2.5000, dtype=float64)");
  CHECK(zeros({0}).str() == "tensor([])");
  CHECK(zeros({0, 3}).str() == "tensor([], size=(0, 3))");
  // No elements to show int64-ness, so it is spelled out.
  CHECK(zeros({0}, TensorOptions().dtype(kInt64)).str() == "tensor([], dtype=int64)");
  CHECK(zeros({2, 0, 1}, TensorOptions().dtype(kFloat64)).str() ==
        "tensor([], size=(2, 0, 1), dtype=float64)");
  CHECK(Tensor().str() == "tensor(undefined)");
}

TEST_CASE("print: scientific notation, nan and inf", "[core][print]") {
  CHECK(f32({1e-5f, 1.0f, 1e5f}).str() == "tensor([1.0000e-05, 1.0000e+00, 1.0000e+05])");
  CHECK(f32({1e10f, 1.0f}).str() == "tensor([1.0000e+10, 1.0000e+00])");
  // Integral values with a ratio above 1000 also switch to scientific notation.
  CHECK(f32({1, 2000}).str() == "tensor([1.0000e+00, 2.0000e+03])");
  CHECK(f32({-1.5e-7f, 2.0f, 0.0f, 3e3f}, {2, 2}).str() ==
        "tensor([[-1.5000e-07,  2.0000e+00],\n"
        "        [ 0.0000e+00,  3.0000e+03]])");
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(f32({nan, 1.5f, inf, -inf}).str() == "tensor([   nan, 1.5000,    inf,   -inf])");
  CHECK(f32({nan, 1.0f, -inf}).str() == "tensor([nan, 1., -inf])");
  CHECK(f32({nan, nan}).str() == "tensor([nan, nan])");
  CHECK(f32({-nan}).str() == "tensor([nan])");  // never "-nan"
}

TEST_CASE("print: long rows wrap at 80 columns", "[core][print]") {
  std::vector<float> v;
  for (int i = 0; i < 20; ++i) v.push_back(static_cast<float>(i) / 3.0f);
  CHECK(f32(v).str() ==
        "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n"
        "        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,\n"
        "        6.0000, 6.3333])");
  std::vector<std::int64_t> w;
  for (int i = 0; i < 30; ++i) w.push_back(i * 1000);
  CHECK(from_vector(w).str() ==
        "tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,\n"
        "        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,\n"
        "        20000, 21000, 22000, 23000, 24000, 25000, 26000, 27000, 28000, 29000])");
}

TEST_CASE("print: tensors over 1000 elements are summarised with ...", "[core][print]") {
  CHECK(arange(2000).reshape({40, 50}).str() ==
        "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n"
        "        [  50,   51,   52,  ...,   97,   98,   99],\n"
        "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
        "        ...,\n"
        "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
        "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
        "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])");
  // Only the shown values decide the format (here: scientific, from the max/min ratio).
  CHECK(arange(2000, TensorOptions().dtype(kFloat32)).reshape({40, 50}).str() ==
        "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.7000e+01, 4.8000e+01,\n"
        "         4.9000e+01],\n"
        "        [5.0000e+01, 5.1000e+01, 5.2000e+01,  ..., 9.7000e+01, 9.8000e+01,\n"
        "         9.9000e+01],\n"
        "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.4700e+02, 1.4800e+02,\n"
        "         1.4900e+02],\n"
        "        ...,\n"
        "        [1.8500e+03, 1.8510e+03, 1.8520e+03,  ..., 1.8970e+03, 1.8980e+03,\n"
        "         1.8990e+03],\n"
        "        [1.9000e+03, 1.9010e+03, 1.9020e+03,  ..., 1.9470e+03, 1.9480e+03,\n"
        "         1.9490e+03],\n"
        "        [1.9500e+03, 1.9510e+03, 1.9520e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
        "         1.9990e+03]])");
  CHECK(arange(1001, TensorOptions().dtype(kFloat32)).str() ==
        "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])");
  std::vector<double> sevenths;
  for (int i = 0; i <= 1000; ++i) sevenths.push_back(i / 7.0);
  CHECK(from_vector(sevenths).str() ==
        "tensor([0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 1.4257e+02, 1.4271e+02,\n"
        "        1.4286e+02], dtype=float64)");
  std::vector<float> cube;
  for (int i = 0; i < 1400; ++i) cube.push_back(static_cast<float>(i - 700) / 8.0f);
  const std::string block_a =
      "tensor([[[-87.5000, -87.3750, -87.2500,  ..., -86.6250, -86.5000, -86.3750],\n"
      "         [-86.2500, -86.1250, -86.0000,  ..., -85.3750, -85.2500, -85.1250],\n"
      "         [-85.0000, -84.8750, -84.7500,  ..., -84.1250, -84.0000, -83.8750],\n"
      "         ...,\n"
      "         [-73.7500, -73.6250, -73.5000,  ..., -72.8750, -72.7500, -72.6250],\n"
      "         [-72.5000, -72.3750, -72.2500,  ..., -71.6250, -71.5000, -71.3750],\n"
      "         [-71.2500, -71.1250, -71.0000,  ..., -70.3750, -70.2500, -70.1250]],\n"
      "\n"
      "        [[-70.0000, -69.8750, -69.7500,  ..., -69.1250, -69.0000, -68.8750],\n"
      "         [-68.7500, -68.6250, -68.5000,  ..., -67.8750, -67.7500, -67.6250],\n"
      "         [-67.5000, -67.3750, -67.2500,  ..., -66.6250, -66.5000, -66.3750],\n"
      "         ...,\n"
      "         [-56.2500, -56.1250, -56.0000,  ..., -55.3750, -55.2500, -55.1250],\n"
      "         [-55.0000, -54.8750, -54.7500,  ..., -54.1250, -54.0000, -53.8750],\n"
      "         [-53.7500, -53.6250, -53.5000,  ..., -52.8750, -52.7500, -52.6250]],\n"
      "\n"
      "        [[-52.5000, -52.3750, -52.2500,  ..., -51.6250, -51.5000, -51.3750],\n"
      "         [-51.2500, -51.1250, -51.0000,  ..., -50.3750, -50.2500, -50.1250],\n"
      "         [-50.0000, -49.8750, -49.7500,  ..., -49.1250, -49.0000, -48.8750],\n"
      "         ...,\n"
      "         [-38.7500, -38.6250, -38.5000,  ..., -37.8750, -37.7500, -37.6250],\n"
      "         [-37.5000, -37.3750, -37.2500,  ..., -36.6250, -36.5000, -36.3750],\n"
      "         [-36.2500, -36.1250, -36.0000,  ..., -35.3750, -35.2500, -35.1250]],\n"
      "\n"
      "        ...,\n"
      "\n";
  const std::string block_b =
      "        [[ 35.0000,  35.1250,  35.2500,  ...,  35.8750,  36.0000,  36.1250],\n"
      "         [ 36.2500,  36.3750,  36.5000,  ...,  37.1250,  37.2500,  37.3750],\n"
      "         [ 37.5000,  37.6250,  37.7500,  ...,  38.3750,  38.5000,  38.6250],\n"
      "         ...,\n"
      "         [ 48.7500,  48.8750,  49.0000,  ...,  49.6250,  49.7500,  49.8750],\n"
      "         [ 50.0000,  50.1250,  50.2500,  ...,  50.8750,  51.0000,  51.1250],\n"
      "         [ 51.2500,  51.3750,  51.5000,  ...,  52.1250,  52.2500,  52.3750]],\n"
      "\n"
      "        [[ 52.5000,  52.6250,  52.7500,  ...,  53.3750,  53.5000,  53.6250],\n"
      "         [ 53.7500,  53.8750,  54.0000,  ...,  54.6250,  54.7500,  54.8750],\n"
      "         [ 55.0000,  55.1250,  55.2500,  ...,  55.8750,  56.0000,  56.1250],\n"
      "         ...,\n"
      "         [ 66.2500,  66.3750,  66.5000,  ...,  67.1250,  67.2500,  67.3750],\n"
      "         [ 67.5000,  67.6250,  67.7500,  ...,  68.3750,  68.5000,  68.6250],\n"
      "         [ 68.7500,  68.8750,  69.0000,  ...,  69.6250,  69.7500,  69.8750]],\n"
      "\n"
      "        [[ 70.0000,  70.1250,  70.2500,  ...,  70.8750,  71.0000,  71.1250],\n"
      "         [ 71.2500,  71.3750,  71.5000,  ...,  72.1250,  72.2500,  72.3750],\n"
      "         [ 72.5000,  72.6250,  72.7500,  ...,  73.3750,  73.5000,  73.6250],\n"
      "         ...,\n"
      "         [ 83.7500,  83.8750,  84.0000,  ...,  84.6250,  84.7500,  84.8750],\n"
      "         [ 85.0000,  85.1250,  85.2500,  ...,  85.8750,  86.0000,  86.1250],\n"
      "         [ 86.2500,  86.3750,  86.5000,  ...,  87.1250,  87.2500,  87.3750]]])";
  CHECK(f32(cube, {10, 14, 10}).str() == block_a + block_b);
}

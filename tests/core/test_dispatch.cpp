// The kernel tables: an empty device slot and an unsupported dtype are clear errors, a second
// registration and a signature mismatch are refused, supports() answers per op, device and dtype,
// and the build's registry catalogues every op with CPU kernels.
#include <catch2/catch.hpp>

#include "core/dispatch.h"
#include "core/factory.h"

using namespace qgrad;

namespace {
using Kernel = int(int);
int plus_one(int v) {
  return v + 1;
}
int times_two(int v) {
  return v * 2;
}
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("dispatch: a table calls the kernel of the tensor's device and dtype") {
  KernelRegistry r;
  r.table<Kernel>("demo").define(DeviceType::CPU, &plus_one, kFloatingDTypes);
  const KernelTable<Kernel>& t = r.get<Kernel>("demo");
  const Tensor x = zeros({2, 3});
  CHECK(t("demo_op", x)(41) == 42);
  CHECK(t.supports(DeviceType::CPU, kFloat64));
  CHECK_FALSE(t.supports(DeviceType::CPU, kInt32));
  CHECK_FALSE(t.supports(DeviceType::CUDA, kFloat32));
  CHECK(t.find(DeviceType::CUDA) == nullptr);
}

TEST_CASE("dispatch: an unsupported dtype is a DTypeError naming the op and the dtypes taken") {
  KernelRegistry r;
  r.table<Kernel>("demo").define(DeviceType::CPU, &plus_one, kFloatingDTypes);
  const Tensor xi = zeros({4}, TensorOptions().dtype(kInt32));
  CHECK_THROWS_AS(r.get<Kernel>("demo")("demo_op", xi), DTypeError);
  const std::string m = message_of([&] { r.get<Kernel>("demo")("demo_op", xi); });
  CHECK(m.find("demo_op: the cpu kernel takes {float32, float64}, got int32") != std::string::npos);
}

TEST_CASE("dispatch: a device without a kernel is a DeviceError naming the op and the device") {
  KernelRegistry r;
  r.table<Kernel>("demo").define(DeviceType::CUDA, &plus_one, kAllDTypes);
  const Tensor x = zeros({2});
  CHECK_THROWS_AS(r.get<Kernel>("demo")("demo_op", x), DeviceError);
  const std::string m = message_of([&] { r.get<Kernel>("demo")("demo_op", x); });
  CHECK(m.find("demo_op: no cpu kernel in this build") != std::string::npos);
  CHECK(m.find("shape [2]") != std::string::npos);
  CHECK_THROWS_AS(r.get<Kernel>("demo").at("demo_alloc", kCPU), DeviceError);
}

TEST_CASE("dispatch: registration refuses a second kernel, a null one and another signature") {
  KernelRegistry r;
  r.table<Kernel>("demo").define(DeviceType::CPU, &plus_one, kAllDTypes);
  CHECK_THROWS_AS(r.table<Kernel>("demo").define(DeviceType::CPU, &times_two, kAllDTypes), Error);
  CHECK_THROWS_AS(r.table<Kernel>("demo").define(DeviceType::CUDA, nullptr, kAllDTypes), Error);
  CHECK_THROWS_AS(r.table<double(double)>("demo"), Error);
  CHECK_THROWS_AS(r.get<double(double)>("demo"), Error);
  CHECK_THROWS_AS(r.get<Kernel>("missing"), Error);
}

TEST_CASE("dispatch: supports() needs every table an op names, for that device and dtype") {
  KernelRegistry r;
  r.table<Kernel>("fwd").define(DeviceType::CPU, &plus_one, kAllDTypes);
  r.table<Kernel>("bwd").define(DeviceType::CPU, &times_two, kFloatingDTypes);
  r.add_op("both", {"fwd", "bwd"});
  r.add_op("forward_only", {"fwd"});
  CHECK(r.supports("both", kCPU, kFloat32));
  CHECK_FALSE(r.supports("both", kCPU, kInt64));
  CHECK(r.supports("forward_only", kCPU, kInt64));
  CHECK_FALSE(r.supports("both", kCUDA, kFloat32));
  CHECK_FALSE(r.supports("no_such_op", kCPU, kFloat32));
  CHECK_THROWS_AS(r.add_op("both", {"fwd"}), Error);
  CHECK_THROWS_AS(r.add_op("dangling", {"never_registered"}), Error);
  CHECK(r.ops() == std::vector<std::string>{"both", "forward_only"});
}

TEST_CASE("dispatch: every op of this build has CPU kernels for float32 (or uint8 masks)") {
  const KernelRegistry& r = kernel_registry();
  const std::vector<std::string> ops = r.ops();
  REQUIRE(ops.size() >= 40);
  for (const std::string& op : ops) {
    INFO(op);
    // The logical ops' kernels take the uint8 masks their fronts make of any input.
    CHECK((supports(op, kCPU, kFloat32) || supports(op, kCPU, kUInt8)));
  }
  for (const char* op : {"add", "conv2d", "matmul", "cross_entropy", "batch_norm", "max_pool2d"})
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
  // The tables core/ itself dispatches on are there too.
  for (const char* t : {"allocator", "copy", "fill", "transfer", "add", "sum"}) {
    const auto names = r.table_names();
    CHECK(std::find(names.begin(), names.end(), t) != names.end());
  }
}

TEST_CASE("dispatch: a CUDA build has CUDA kernels for pooling and batch_norm (float32, float64)") {
#ifdef QGRAD_WITH_CUDA
  for (const char* op : {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm"})
    for (DType d : {kFloat32, kFloat64}) {
      INFO(op << " " << dtype_name(d));
      CHECK(supports(op, kCUDA, d));
    }
  // conv2d's CUDA kernels need cuDNN (QGRAD_CUDNN); either way the answer is per op, not per
  // table: both of its tables, or neither.
  const KernelRegistry& r = kernel_registry();
  CHECK(r.find_table("conv2d_forward").supports(DeviceType::CUDA, kFloat32) ==
        r.find_table("conv2d_backward").supports(DeviceType::CUDA, kFloat32));
#else
  CHECK_FALSE(supports("max_pool2d", kCUDA, kFloat32));
#endif
}

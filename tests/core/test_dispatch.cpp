// The kernel tables: an empty device slot and an unsupported dtype are clear errors, a second
// registration and a second key (another signature) for one name are refused, supports() answers
// per op, device and dtype from the catalogue the keys make, and the build's registry catalogues
// every op with CPU kernels.
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
constexpr KernelTableKey<Kernel> kDemo{"demo", "demo_op"};
// The same name with another signature, and another key of the first one's signature.
constexpr KernelTableKey<double(double)> kDemoOtherSignature{"demo", ""};
constexpr KernelTableKey<Kernel> kDemoSecondKey{"demo", ""};
constexpr KernelTableKey<Kernel> kMissing{"missing", ""};
constexpr KernelTableKey<Kernel> kForward{"fwd", "both forward_only"};
constexpr KernelTableKey<Kernel> kBackward{"bwd", "both"};
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
  r.table(kDemo).define(DeviceType::CPU, &plus_one, kFloatingDTypes);
  const KernelTable<Kernel>& t = r.get(kDemo);
  const Tensor x = zeros({2, 3});
  CHECK(t("demo_op", x)(41) == 42);
  CHECK(t.supports(DeviceType::CPU, kFloat64));
  CHECK_FALSE(t.supports(DeviceType::CPU, kInt32));
  CHECK_FALSE(t.supports(DeviceType::CUDA, kFloat32));
  CHECK(t.find(DeviceType::CUDA) == nullptr);
}

TEST_CASE("dispatch: an unsupported dtype is a DTypeError naming the op and the dtypes taken") {
  KernelRegistry r;
  r.table(kDemo).define(DeviceType::CPU, &plus_one, kFloatingDTypes);
  const Tensor xi = zeros({4}, TensorOptions().dtype(kInt32));
  CHECK_THROWS_AS(r.get(kDemo)("demo_op", xi), DTypeError);
  const std::string m = message_of([&] { r.get(kDemo)("demo_op", xi); });
  CHECK(m.find("demo_op: the cpu kernel takes {float32, float64}, got int32") != std::string::npos);
}

TEST_CASE("dispatch: a device without a kernel is a DeviceError naming the op and the device") {
  KernelRegistry r;
  r.table(kDemo).define(DeviceType::CUDA, &plus_one, kAllDTypes);
  const Tensor x = zeros({2});
  CHECK_THROWS_AS(r.get(kDemo)("demo_op", x), DeviceError);
  const std::string m = message_of([&] { r.get(kDemo)("demo_op", x); });
  CHECK(m.find("demo_op: no cpu kernel in this build") != std::string::npos);
  CHECK(m.find("shape [2]") != std::string::npos);
  CHECK_THROWS_AS(r.get(kDemo).at("demo_alloc", kCPU), DeviceError);
}

TEST_CASE("dispatch: registration refuses a second kernel, a null one and another signature") {
  KernelRegistry r;
  r.table(kDemo).define(DeviceType::CPU, &plus_one, kAllDTypes);
  CHECK_THROWS_AS(r.table(kDemo).define(DeviceType::CPU, &times_two, kAllDTypes), Error);
  CHECK_THROWS_AS(r.table(kDemo).define(DeviceType::CUDA, nullptr, kAllDTypes), Error);
  CHECK_THROWS_AS(r.table(kDemoOtherSignature), Error);
  CHECK_THROWS_AS(r.get(kDemoOtherSignature), Error);
  CHECK_THROWS_AS(r.get(kDemoSecondKey), Error);
  CHECK_THROWS_AS(r.get(kMissing), Error);
}

TEST_CASE("dispatch: supports() needs every table an op names, for that device and dtype") {
  KernelRegistry r;
  r.table(kForward).define(DeviceType::CPU, &plus_one, kAllDTypes);
  r.table(kBackward).define(DeviceType::CPU, &times_two, kFloatingDTypes);
  // The catalogue comes from the keys: "both" runs on fwd and bwd, "forward_only" on fwd.
  CHECK(r.supports("both", kCPU, kFloat32));
  CHECK_FALSE(r.supports("both", kCPU, kInt64));
  CHECK(r.supports("forward_only", kCPU, kInt64));
  CHECK_FALSE(r.supports("both", kCUDA, kFloat32));
  CHECK_FALSE(r.supports("no_such_op", kCPU, kFloat32));
  CHECK(r.ops() == std::vector<std::string>{"both", "forward_only"});
  CHECK(r.tables("both") == std::vector<std::string>{"fwd", "bwd"});
  CHECK(r.tables("no_such_op").empty());
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

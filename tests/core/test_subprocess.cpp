// run_subprocess (cli/subprocess.h): exit statuses (the program's own, 127 when it cannot start,
// 128 + the signal that killed it), the output bounded however much the program writes, and a
// program that runs past its time limit killed and reported as 124, also one that closed its
// output first.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <string>

#include "core/error.h"
#include "core/subprocess.h"

using qgrad::run_subprocess;
using qgrad::SubprocessLimits;
using qgrad::SubprocessResult;

namespace {

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("run_subprocess: exit statuses and the interleaved output", "[cli]") {
  const SubprocessResult r = run_subprocess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(r.status == 3);
  CHECK(r.output == "out\nerr\n");
  CHECK_FALSE(r.timed_out);
  const SubprocessResult missing = run_subprocess({"/nonexistent/qgrad-no-such-program"});
  CHECK(missing.status == 127);
  CHECK_THAT(missing.output, Catch::Contains("cannot run '/nonexistent/qgrad-no-such-program'"));
  CHECK(run_subprocess({"sh", "-c", "kill -TERM $$"}).status == 128 + 15);
  CHECK_THROWS_AS(run_subprocess({}), qgrad::ValueError);
}

TEST_CASE("run_subprocess: the output kept is bounded, the rest drained and counted", "[cli]") {
  SubprocessLimits limits;
  limits.max_output = 1000;
  // 4 MB through a 1000-byte bound: the program still runs to its end (nothing blocks it).
  const SubprocessResult r =
      run_subprocess({"sh", "-c", "head -c 4000000 /dev/zero; echo done >&2; exit 5"}, limits);
  CHECK(r.status == 5);
  CHECK(r.output.substr(0, 1000) == std::string(1000, '\0'));
  CHECK_THAT(r.output, Catch::Contains("3999005 more bytes of output were dropped"));
  CHECK(r.output.size() < 1100);
}

TEST_CASE("run_subprocess: a program past its time limit is killed and reported as 124", "[cli]") {
  SubprocessLimits limits;
  limits.timeout_s = 0.3;
  SubprocessResult r;
  const double s = seconds_of([&] { r = run_subprocess({"sleep", "30"}, limits); });
  CHECK(r.timed_out);
  CHECK(r.status == qgrad::kSubprocessTimeoutStatus);
  CHECK_THAT(r.output, Catch::Contains("'sleep' was killed after 0.3 s"));
  CHECK(s < 10);
  // One that closes its output and goes on running is waited for to the same limit.
  const double s2 = seconds_of([&] {
    r = run_subprocess({"sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, limits);
  });
  CHECK(r.timed_out);
  CHECK(r.status == 124);
  CHECK(s2 < 10);
  limits.timeout_s = 0;
  CHECK_THROWS_AS(run_subprocess({"true"}, limits), qgrad::ValueError);
}

// Catch2's main for the tests that run on several ranks (test_mpi, started by ctest through
// mpirun): joins the job first, so every test case sees the same group, and finalises MPI at
// the end. Started without mpirun (one rank) it exits 77, which ctest reports as Skipped.
// Every rank runs every test case in the same order, so their collectives match; the checks
// compare what was gathered from all ranks, so all ranks pass or fail together (a check that
// failed on one rank only would leave the others waiting in the next collective).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "distributed/init.h"

int main(int argc, char** argv) {
  std::shared_ptr<qgrad::distributed::ProcessGroup> world =
      qgrad::distributed::init_process_group();
  if (world->size() < 2) {
    std::printf("test_mpi: needs 2 or more ranks (run it with mpirun -np 2): skipped\n");
    return 77;
  }
  Catch::Session session;
  const int rc = session.applyCommandLine(argc, argv);
  if (rc != 0) return rc;
  // Only rank 0 reports, the checks giving the same outcome on every rank; a rank whose outcome
  // differs still fails the job (its exit status), and QGRAD_TEST_ALL_RANKS=1 shows its report.
  if (world->rank() != 0 && std::getenv("QGRAD_TEST_ALL_RANKS") == nullptr)
    session.configData().outputFilename = "/dev/null";
  const int failed = session.run();
  world->barrier();
  return failed == 0 ? 0 : 1;
}

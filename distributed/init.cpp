// Joining the job: the MPI world when mpirun started this process, else the world of one.
#include "distributed/init.h"

#include <cstdlib>
#include <initializer_list>
#include <mutex>

#include "core/error.h"
#include "distributed/single_process_group.h"

#ifdef QGRAD_WITH_MPI
#include "distributed/mpi_process_group.h"
#endif

namespace qgrad::distributed {

namespace {
// The size a launcher announces: Open MPI's mpirun, PMIx launchers (srun, prterun), MPICH's
// Hydra (PMI).
constexpr std::initializer_list<const char*> kSizeVariables = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE",
                                                               "PMI_SIZE"};

// The first of the launcher's variables `names` that is set to an integer >= `minimum`, else
// `fallback` (different launchers name the same number differently).
int launcher_value(std::initializer_list<const char*> names, int minimum, int fallback) {
  for (const char* v : names)
    if (const char* s = std::getenv(v)) {
      const int n = std::atoi(s);
      if (n >= minimum) return n;
    }
  return fallback;
}
}  // namespace

int launched_world_size() {
  return launcher_value(kSizeVariables, 1, 1);
}

int launched_rank() {
  return launcher_value({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, 0, 0);
}

int launched_local_rank() {
  return launcher_value({"OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK", "MPI_LOCALRANKID"}, 0, 0);
}

int launched_local_size() {
  return launcher_value({"OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 1, 1);
}

bool launched_by_mpi() {
  for (const char* v : kSizeVariables)
    if (std::getenv(v)) return true;
  // Open MPI sets OMPI_COMM_WORLD_SIZE; a PMIx launcher that does not still sets PMIX_RANK.
  return std::getenv("PMIX_RANK") != nullptr;
}

bool mpi_available() {
#ifdef QGRAD_WITH_MPI
  return true;
#else
  return false;
#endif
}

bool nccl_available() {
#ifdef QGRAD_WITH_NCCL
  return true;
#else
  return false;
#endif
}

std::shared_ptr<ProcessGroup> init_process_group(Backend backend) {
  // An explicit cache: MPI has one world per process, and MPI_Init may run once.
  static std::mutex mutex;
  static std::weak_ptr<ProcessGroup> live;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto g = live.lock()) {
    const bool is_nccl = g->backend() == "mpi+nccl";
    QGRAD_CHECK(g->size() == 1 || is_nccl == (backend == Backend::Nccl), Error,
                "distributed: this process joined its job with the ", g->backend(),
                " back end already; one process has one");
    return g;
  }
  std::shared_ptr<ProcessGroup> group;
  if (!launched_by_mpi()) {
    group = std::make_shared<SingleProcessGroup>();
  } else {
#ifdef QGRAD_WITH_MPI
    group = make_mpi_world(backend == Backend::Nccl);
#else
    throw Error("distributed: this process was started by mpirun (" +
                std::to_string(launched_world_size()) +
                " ranks) but this qgrad was built without MPI, so the ranks cannot work "
                "together; install Open MPI (Debian: libopenmpi-dev openmpi-bin) and rebuild "
                "(QGRAD_MPI=AUTO finds it), or run without mpirun");
#endif
  }
  live = group;
  return group;
}

void abort_job(int code) {
#ifdef QGRAD_WITH_MPI
  mpi_abort_if_running(code);
#else
  (void)code;
#endif
}

}  // namespace qgrad::distributed

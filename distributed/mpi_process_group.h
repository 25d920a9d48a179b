/// @file
/// The MPI back end of ProcessGroup (builds with QGRAD_WITH_MPI; the definitions are in
/// mpi_process_group_mpi.cpp). Collectives run on MPI_COMM_WORLD: all-reduce with MPI_Allreduce
/// / MPI_Iallreduce (minimum and maximum of floating types through NaN-propagating user ops),
/// broadcast, all-gather and barrier. MPI is initialised with MPI_THREAD_FUNNELED: only the
/// thread that made the group calls MPI (qgrad's OpenMP threads never do).
#pragma once

#include <memory>

#include "distributed/process_group.h"

namespace qgrad::distributed {

/// Initialises MPI (unless it is already) and returns the world group; the group finalises MPI
/// when destroyed, unless an exception is unwinding (a failed rank ends the job with abort_job
/// instead: MPI_Finalize would wait for the other ranks). With `nccl` (builds with NCCL), sums
/// of GPU tensors go through NCCL on the GPUs (one communicator per device, made at the first
/// such sum); minima and maxima, whose NaN rule NCCL does not share, and everything else stay on
/// MPI.
std::shared_ptr<ProcessGroup> make_mpi_world(bool nccl = false);

/// MPI_Abort(MPI_COMM_WORLD, code) when MPI is initialised and not finalised.
void mpi_abort_if_running(int code);

}  // namespace qgrad::distributed

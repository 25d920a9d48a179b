/// @file
/// Joining the job a process was started in. init_process_group() returns the group of every
/// rank mpirun started (the MPI back end) or, for a process started on its own, the world of one
/// process; a process started by mpirun in a build without MPI is an error rather than N
/// independent runs writing over each other's files. MPI is initialised by the first call and
/// finalised when the last handle to the group goes; the live group is cached (one MPI world per
/// process), so later calls return it.
#pragma once

#include <memory>
#include <string>

#include "distributed/process_group.h"

namespace qgrad::distributed {

/// True when this process was started by an MPI launcher (mpirun / mpiexec / srun with PMIx):
/// its environment names a world size.
bool launched_by_mpi();
/// The world size the launcher gave this process (1 without one).
int launched_world_size();
/// This process's rank as the launcher gave it (0 without one), known before MPI starts.
int launched_rank();
/// This process's rank among those the launcher started on this machine (0 without one): which
/// GPU it takes.
int launched_local_rank();
/// The number of ranks the launcher started on this machine (1 without one): what shares its
/// cores.
int launched_local_size();
/// True when this build has the MPI back end (QGRAD_MPI found Open MPI).
bool mpi_available();

/// How a job's ranks reduce GPU tensors: through host memory on MPI (any machine, also ranks
/// that share a GPU), or on the GPUs with NCCL (one rank per GPU, builds with NCCL).
enum class Backend { Mpi, Nccl };

/// True when this build has the NCCL path (QGRAD_NCCL found NCCL).
bool nccl_available();

/// The group of the job this process belongs to (see the file comment). Throws Error when the
/// process was started by mpirun but this build has no MPI (or no NCCL for Backend::Nccl), when
/// a live group has another back end, or when MPI was finalised already. A process started on
/// its own gets the world of one whatever `backend` says.
std::shared_ptr<ProcessGroup> init_process_group(Backend backend = Backend::Mpi);

/// Ends every rank of the job at once with exit status `code` after a fatal error on this rank
/// (MPI_Abort), so that no rank waits forever in a collective for this one; returns (doing
/// nothing) when this process is not part of an MPI job.
void abort_job(int code);

}  // namespace qgrad::distributed

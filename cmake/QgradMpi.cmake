# QGRAD_MPI = AUTO | ON | OFF -> QGRAD_WITH_MPI: data-parallel training across processes and
# machines on MPI (distributed/, launched with `mpirun`). AUTO builds it when an MPI library is
# found (Debian: libopenmpi-dev, which scripts/install_deps.sh installs), ON fails without one,
# OFF never looks. Without it everything still builds: the process group is then the world of
# one process, and a `qgrad` started by mpirun says that this build cannot join it.
# MPIEXEC_EXECUTABLE (mpirun) runs the multi-process tests; they are Skipped without it.
set(QGRAD_WITH_MPI OFF)
if(NOT QGRAD_MPI STREQUAL "OFF")
  # The C API from C++ (the CXX component, without the deprecated C++ bindings): the project
  # enables no C compiler.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
    set(QGRAD_WITH_MPI ON)
    message(STATUS "qgrad: MPI enabled (MPI ${MPI_CXX_VERSION}, ${MPIEXEC_EXECUTABLE})")
  elseif(QGRAD_MPI STREQUAL "ON")
    message(FATAL_ERROR "QGRAD_MPI=ON but no MPI library with mpirun was found "
                        "(Debian: apt-get install libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "qgrad: MPI not found, building without data-parallel training "
                   "(Debian: libopenmpi-dev openmpi-bin)")
  endif()
else()
  message(STATUS "qgrad: MPI disabled (QGRAD_MPI=OFF)")
endif()

# QGRAD_NCCL = AUTO | ON | OFF -> QGRAD_WITH_NCCL: the NCCL path of the MPI process group
# (distributed/nccl_communicator*), which all-reduces gradient buckets on the GPUs directly instead
# of staging them through host memory; chosen at run time ("distributed.backend": "nccl"). Needs
# CUDA and MPI (MPI starts the ranks and hands out NCCL's unique id); AUTO uses it when nccl.h and
# libnccl are found next to the CUDA toolkit or in the system's paths.
set(QGRAD_WITH_NCCL OFF)
if(QGRAD_WITH_MPI AND QGRAD_WITH_CUDA AND NOT QGRAD_NCCL STREQUAL "OFF")
  find_path(QGRAD_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(QGRAD_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(QGRAD_NCCL_INCLUDE_DIR AND QGRAD_NCCL_LIBRARY)
    set(QGRAD_WITH_NCCL ON)
    message(STATUS "qgrad: NCCL enabled (${QGRAD_NCCL_LIBRARY})")
  elseif(QGRAD_NCCL STREQUAL "ON")
    message(FATAL_ERROR "QGRAD_NCCL=ON but nccl.h / libnccl were not found")
  endif()
elseif(QGRAD_NCCL STREQUAL "ON")
  message(FATAL_ERROR "QGRAD_NCCL=ON needs a build with CUDA and MPI")
endif()

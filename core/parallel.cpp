// Thread queries for the CPU loops (OpenMP, the same runtime oneDNN uses, so both share one pool).
#include <omp.h>

#include "core/strided_loop.h"

namespace qgrad {

int strided_loop_num_threads() {
  return omp_get_num_threads();
}
int strided_loop_thread_id() {
  return omp_get_thread_num();
}

}  // namespace qgrad

# QGRAD_CUDA = AUTO | ON | OFF -> QGRAD_WITH_CUDA. AUTO enables CUDA when a toolkit (nvcc) is
# found, e.g. in /usr/local/cuda; ON fails without one; OFF never looks.
set(QGRAD_WITH_CUDA OFF)
if(NOT QGRAD_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(QGRAD_WITH_CUDA ON)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    message(STATUS "qgrad: CUDA enabled (${CMAKE_CUDA_COMPILER})")
  elseif(QGRAD_CUDA STREQUAL "ON")
    message(FATAL_ERROR "QGRAD_CUDA=ON but no CUDA compiler was found")
  else()
    message(STATUS "qgrad: CUDA toolkit not found, building CPU only")
  endif()
else()
  message(STATUS "qgrad: CUDA disabled (QGRAD_CUDA=OFF)")
endif()

# QGRAD_CUDNN = AUTO | ON | OFF -> QGRAD_WITH_CUDNN (CUDA builds only). cuDNN carries the CUDA
# kernels of conv2d (ops/conv/conv_cuda.cu, ops/cudnn/); the pooling and batch_norm kernels are
# plain CUDA and need no cuDNN. AUTO uses it when cudnn.h and libcudnn are found (looked for next
# to the CUDA toolkit first, then in the system's paths), ON fails without it, OFF never looks.
# Without it a CUDA build still works, but conv2d has no CUDA kernel (a call on a GPU tensor
# throws DeviceError naming the op and the device).
set(QGRAD_WITH_CUDNN OFF)
if(QGRAD_WITH_CUDA AND NOT QGRAD_CUDNN STREQUAL "OFF")
  find_path(QGRAD_CUDNN_INCLUDE_DIR cudnn.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
  find_library(QGRAD_CUDNN_LIBRARY cudnn
    HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64)
  if(QGRAD_CUDNN_INCLUDE_DIR AND QGRAD_CUDNN_LIBRARY)
    set(QGRAD_WITH_CUDNN ON)
    message(STATUS "qgrad: cuDNN enabled (${QGRAD_CUDNN_LIBRARY})")
  elseif(QGRAD_CUDNN STREQUAL "ON")
    message(FATAL_ERROR "QGRAD_CUDNN=ON but cuDNN was not found (cudnn.h: "
                        "${QGRAD_CUDNN_INCLUDE_DIR}, libcudnn: ${QGRAD_CUDNN_LIBRARY})")
  endif()
endif()
if(QGRAD_WITH_CUDA AND NOT QGRAD_WITH_CUDNN)
  if(QGRAD_CUDNN STREQUAL "OFF")
    set(qgrad_cudnn_why "disabled (QGRAD_CUDNN=OFF)")
  else()
    set(qgrad_cudnn_why "not found")
  endif()
  message(STATUS "qgrad: cuDNN ${qgrad_cudnn_why}: conv2d has NO CUDA kernel in this build "
                 "(it throws DeviceError on GPU tensors)")
endif()

# Finds oneDNN (target DNNL::dnnl) and, when it cannot be loaded, says which Debian package is
# missing. Debian's libdnnl-dev ships a CMake package built with the OpenCL GPU runtime, so its
# dnnl-config.cmake runs find_package(OpenCL REQUIRED); the OpenCL headers and loader come from
# ocl-icd-opencl-dev, which libdnnl-dev only recommends, and without them CMake's own message is
# a bare "Could NOT find OpenCL".
find_file(QGRAD_DNNL_CONFIG_FILE NAMES dnnl-config.cmake DNNLConfig.cmake
          PATH_SUFFIXES lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/dnnl lib/cmake/dnnl lib64/cmake/dnnl)
if(NOT QGRAD_DNNL_CONFIG_FILE AND NOT dnnl_DIR)
  message(FATAL_ERROR
    "qgrad needs oneDNN 2.x and found no dnnl-config.cmake. On Debian or Ubuntu install it with\n"
    "  sudo apt-get install libdnnl-dev ocl-icd-opencl-dev\n"
    "or run bash scripts/install_deps.sh; elsewhere pass -Ddnnl_DIR=<prefix>/lib/cmake/dnnl.")
endif()
if(QGRAD_DNNL_CONFIG_FILE)
  file(STRINGS ${QGRAD_DNNL_CONFIG_FILE} qgrad_dnnl_ocl REGEX "DNNL_GPU_RUNTIME \"OCL\"")
  if(qgrad_dnnl_ocl)
    find_package(OpenCL QUIET)
    if(NOT OpenCL_FOUND)
      message(FATAL_ERROR
        "oneDNN's CMake package (${QGRAD_DNNL_CONFIG_FILE}) was built with the OpenCL GPU "
        "runtime and needs the OpenCL headers and ICD loader, which are missing. On Debian or "
        "Ubuntu install them with\n"
        "  sudo apt-get install ocl-icd-opencl-dev\n"
        "(libdnnl-dev only recommends it, so apt-get --no-install-recommends leaves it out), or "
        "run bash scripts/install_deps.sh.")
    endif()
  endif()
endif()
find_package(dnnl REQUIRED)

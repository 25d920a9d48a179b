# QGRAD_ONNX (AUTO | ON | OFF): whether to build the ONNX exporter (deploy/onnx) against Debian's
# libonnx-dev and libprotobuf-dev. ONNX's CMake package (ONNXConfig.cmake) names the imported
# target protobuf::libprotobuf without finding it, so Protobuf is found first. Sets
# QGRAD_WITH_ONNX. AUTO builds the exporter when both packages are found; ON fails naming the
# missing Debian packages; OFF skips it (qgrad export then says qgrad was built without ONNX).
set(QGRAD_ONNX AUTO CACHE STRING "Build the ONNX exporter: AUTO (when libonnx-dev is found), ON, OFF")
set_property(CACHE QGRAD_ONNX PROPERTY STRINGS AUTO ON OFF)

set(QGRAD_WITH_ONNX OFF)
if(NOT QGRAD_ONNX STREQUAL "OFF")
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX CONFIG QUIET)
  endif()
  if(Protobuf_FOUND AND ONNX_FOUND AND TARGET onnx AND TARGET onnx_proto)
    set(QGRAD_WITH_ONNX ON)
    message(STATUS "qgrad: ONNX export enabled (ONNX ${ONNX_VERSION}, protobuf ${Protobuf_VERSION})")
  elseif(QGRAD_ONNX STREQUAL "ON")
    message(FATAL_ERROR "QGRAD_ONNX=ON but ONNX or protobuf was not found: install the Debian "
                        "packages libonnx-dev and libprotobuf-dev (scripts/install_deps.sh does)")
  else()
    message(STATUS "qgrad: ONNX export disabled (libonnx-dev / libprotobuf-dev not found)")
  endif()
endif()

# QGRAD_IMAGES = AUTO | ON | OFF -> QGRAD_WITH_IMAGES: the "image_folder" data format
# (nn/data/image_decode.cpp, nn/data/image_folder.cpp), which decodes JPEG with libjpeg-turbo
# (Debian: libjpeg62-turbo-dev) and PNG with libpng (libpng-dev); scripts/install_deps.sh installs
# both. AUTO builds it when both are found, ON fails without them, OFF never looks. Optional, as
# MPI and ONNX are, so that a machine without them still builds everything else: such a build
# says, when a config asks for "image_folder", which packages it lacks.
set(QGRAD_WITH_IMAGES OFF)
if(NOT QGRAD_IMAGES STREQUAL "OFF")
  find_package(JPEG QUIET)
  find_package(PNG QUIET)
  if(JPEG_FOUND AND PNG_FOUND)
    set(QGRAD_WITH_IMAGES ON)
    message(STATUS "qgrad: image_folder enabled (libjpeg ${JPEG_VERSION}, libpng ${PNG_VERSION_STRING})")
  elseif(QGRAD_IMAGES STREQUAL "ON")
    message(FATAL_ERROR "QGRAD_IMAGES=ON but libjpeg or libpng was not found: install the Debian "
                        "packages libjpeg62-turbo-dev and libpng-dev (scripts/install_deps.sh does)")
  else()
    message(STATUS "qgrad: image_folder disabled (libjpeg62-turbo-dev / libpng-dev not found)")
  endif()
else()
  message(STATUS "qgrad: image_folder disabled (QGRAD_IMAGES=OFF)")
endif()

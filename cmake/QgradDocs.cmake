# The API reference (issue 26): `cmake --build build --target docs` runs Doxygen over the public
# headers (qgrad.h and the headers it includes from core/ ops/ nn/ quant/, followed transitively)
# and writes HTML to build/docs/html. cmake/QgradDoxygen.cmake does the work, so that the target
# and the tests in tests/CMakeLists.txt run the same steps: it collects the headers, configures
# cmake/Doxyfile.in and runs Doxygen; with CHECK=ON it fails on any Doxygen warning (an
# undocumented entity, a malformed comment) about the headers under QGRAD_DOCS_CHECKED.
# Without Doxygen there is no `docs` target and the tests are Skipped.
find_package(Doxygen QUIET)
# The headers whose documentation the test holds at zero warnings: every public header.
set(QGRAD_DOCS_CHECKED qgrad.h core/ ops/ nn/ quant/)
string(REPLACE ";" "," qgrad_docs_checked "${QGRAD_DOCS_CHECKED}")  # one argument
set(QGRAD_DOCS_SCRIPT_ARGS
  -DDOXYGEN=${DOXYGEN_EXECUTABLE} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
  -DVERSION=${PROJECT_VERSION} -DCHECKED=${qgrad_docs_checked})
if(DOXYGEN_FOUND)
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} ${QGRAD_DOCS_SCRIPT_ARGS} -DOUTPUT_DIR=${PROJECT_BINARY_DIR}/docs
            -P ${PROJECT_SOURCE_DIR}/cmake/QgradDoxygen.cmake
    COMMENT "API reference (Doxygen): ${PROJECT_BINARY_DIR}/docs/html/index.html"
    VERBATIM)
else()
  message(STATUS "Doxygen not found: no 'docs' target, and the API documentation tests are "
                 "skipped (apt-get install doxygen)")
endif()

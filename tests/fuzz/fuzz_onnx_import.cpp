// libFuzzer target: deploy::import_onnx_bytes on arbitrary bytes (protobuf parsing, then the
// node mapping and weight loading). Any outcome but a model or a qgrad::Error is a finding. In a
// build without ONNX support the target does nothing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#ifdef QGRAD_WITH_ONNX
#include "deploy/onnx/onnx_import.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#ifdef QGRAD_WITH_ONNX
  try {
    qgrad::deploy::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size),
                                     "fuzz.onnx");
  } catch (const qgrad::Error&) {
  }
#else
  (void)data;
  (void)size;
#endif
  return 0;
}

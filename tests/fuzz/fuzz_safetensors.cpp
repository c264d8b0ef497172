// Fuzz target: the safetensors reader (pev::io::parse_safetensors). Accepted files must write back
// (safetensors_bytes) into bytes that parse to the same tensors and metadata.
#include "fuzz_target.h"
#include "pev/core/error.h"
#include "pev/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pev::io::tensor_file t;
  try {
    t = pev::io::parse_safetensors(pev::fuzz::as_text(data, size), "fuzz");
  } catch (const pev::error&) {
    return 0;
  }
  const pev::io::tensor_file back =
      pev::io::parse_safetensors(pev::io::safetensors_bytes(t), "fuzz round trip");
  PEV_FUZZ_CHECK(back.metadata == t.metadata);
  PEV_FUZZ_CHECK(back.tensors.size() == t.tensors.size());
  for (const auto& [name, a] : t.tensors) {
    const pev::io::array& b = back.at(name);
    PEV_FUZZ_CHECK(a.type == b.type && a.shape == b.shape && a.data == b.data);
  }
  return 0;
}

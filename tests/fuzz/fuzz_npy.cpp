// Fuzz target: the npy reader (pev::io::parse_npy), with '<u2' read as uint16 and as bfloat16.
// Accepted files must write back (npy_bytes) into bytes that parse to the same array.
#include "fuzz_target.h"
#include "pev/core/error.h"
#include "pev/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const bool u2_is_bf16 : {false, true}) {
    pev::io::array a;
    try {
      a = pev::io::parse_npy(pev::fuzz::as_text(data, size), "fuzz", u2_is_bf16);
    } catch (const pev::error&) {
      continue;
    }
    const pev::io::array b = pev::io::parse_npy(pev::io::npy_bytes(a), "fuzz round trip",
                                                a.type == pev::io::dtype::bf16);
    PEV_FUZZ_CHECK(a.type == b.type && a.shape == b.shape && a.data == b.data);
  }
  return 0;
}

// Fuzz target: the npz reader (pev::io::parse_npz), plain and with every npy_options
// interpretation ('<u2' as bfloat16, complex as (real, imag) pairs). Accepted archives must write
// back (npz_bytes, stored and deflated) into bytes that parse to the same arrays.
#include "fuzz_target.h"
#include "pev/core/error.h"
#include "pev/io/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const pev::io::npy_options o :
       {pev::io::npy_options{}, pev::io::npy_options{/*u2_is_bf16=*/true, /*complex=*/true}}) {
    std::vector<pev::io::npz_member> a;
    try {
      a = pev::io::parse_npz(pev::fuzz::as_text(data, size), "fuzz", o);
    } catch (const pev::error&) {
      continue;
    }
    for (const bool compress : {false, true}) {
      const auto b = pev::io::parse_npz(pev::io::npz_bytes(a, compress), "fuzz round trip", o);
      PEV_FUZZ_CHECK(a.size() == b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        // A complex array is written back as its (real, imag) pairs of floats.
        PEV_FUZZ_CHECK(a[i].name == b[i].name && a[i].a.type == b[i].a.type &&
                       a[i].a.shape == b[i].a.shape && a[i].a.data == b[i].a.data);
      }
    }
  }
  return 0;
}

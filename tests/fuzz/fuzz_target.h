#pragma once
// Shared helpers of pev's fuzz targets (tests/fuzz). Each target defines LLVMFuzzerTestOneInput:
// built with clang's -fsanitize=fuzzer (PEV_FUZZ=ON, scripts/fuzz.sh) it is a libFuzzer target; in
// the normal build it is linked with replay_main.cpp and replays its seed corpus as a ctest test,
// so every corpus file (and every crash found and added to it) is a regression case of `make test`.
//
// Contract checked on every input: the parser either returns a value or throws pev::error (bad
// input → exit 2 in the CLI). Any other exception escapes and aborts (a finding), as do the
// invariants the targets check on accepted inputs with PEV_FUZZ_CHECK (which also aborts in release
// builds).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define PEV_FUZZ_CHECK(cond)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "pev fuzz: invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

namespace pev::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace pev::fuzz

// Fuzz target: SPEC strings (pev::spec::parse_spec). An accepted spec must validate, and its
// canonical string (to_spec_string) must parse back to an equal encoding.
#include <string>

#include "fuzz_target.h"
#include "pev/core/error.h"
#include "pev/spec/parse.h"
#include "pev/spec/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto ignore = [](std::string_view) {};
  pev::spec::encoding e;
  try {
    e = pev::spec::parse_spec(pev::fuzz::as_text(data, size), ignore);
  } catch (const pev::error&) {
    return 0;
  }
  pev::spec::validate(e);  // must not throw for what the parser accepted
  std::string canonical;
  try {
    canonical = pev::spec::to_spec_string(e);
  } catch (const pev::error&) {
    return 0;  // documented: a learned table filled by hand cannot be written (not reachable here)
  }
  const pev::spec::encoding back = pev::spec::parse_spec(canonical, ignore);
  PEV_FUZZ_CHECK(back == e);
  return 0;
}

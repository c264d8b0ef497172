// Fuzz target: Hugging Face config.json text (pev::spec::parse_config_text). An accepted config
// must give a spec that validates; its canonical SPEC string either parses back to an equal spec or
// is refused with pev::error (SPEC strings are strict where config.json only warns, as transformers
// does: e.g. llama3 with original_max_position_embeddings = max_position_embeddings).
#include <string>

#include "fuzz_target.h"
#include "pev/core/error.h"
#include "pev/spec/config.h"
#include "pev/spec/parse.h"
#include "pev/spec/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto ignore = [](std::string_view) {};
  pev::spec::rope r;
  try {
    r = pev::spec::parse_config_text(pev::fuzz::as_text(data, size), "fuzz", {}, ignore);
  } catch (const pev::error&) {
    return 0;
  }
  const pev::spec::encoding e = r;
  pev::spec::validate(e);
  pev::spec::encoding back;
  try {
    back = pev::spec::parse_spec(pev::spec::to_spec_string(e), ignore);
  } catch (const pev::error&) {
    return 0;
  }
  PEV_FUZZ_CHECK(back == e);
  return 0;
}

// Fuzz target: the config.json reader at scale (pev::spec::parse_config_text). The input does not
// hold a config; it describes a large one, so that every execution reads thousands of entries: a
// reader that is not linear (the per-layer-type lookup that made 10^5 groups take minutes) shows
// as a libFuzzer timeout (that lookup took 9 s for 3·10^4 groups in a release build; the linear
// reader takes about 1 s there under the fuzzer's sanitizers). Layout of the input:
//   bytes 0-1  n − 1 = value / 2 (little-endian, n ≤ 2^15);
//   byte 2     the shape: even — rope_parameters with n layer-type groups, each the text below,
//              with `layer_types` listing them (bit 1: also one unknown name; bit 2: no
//              full_attention group); odd — a longrope config with short_factor and long_factor
//              lists of n numbers (bit 1: one list a number short);
//   the rest   the JSON text of each group's value (even shapes; any bytes, at most 128), or a
//              number written
//              in every list (odd shapes).
// Checked: the reader returns or throws pev::error; an accepted config gives a spec that
// validates.
#include <algorithm>
#include <cstdint>
#include <string>

#include "fuzz_target.h"
#include "pev/core/error.h"
#include "pev/spec/config.h"
#include "pev/spec/parse.h"
#include "pev/spec/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::size_t n = 1 + (data[0] | (std::size_t{data[1]} << 8)) / 2;
  const int shape = data[2];
  const std::string text(reinterpret_cast<const char*>(data + 3),
                         std::min<std::size_t>(size - 3, 256));
  std::string config;
  if (shape % 2 == 0) {
    std::string groups, names;
    for (std::size_t k = 0; k < n; ++k) {
      const std::string name =
          k == 0 && !(shape & 4) ? "full_attention" : "group_" + std::to_string(k);
      if (k) {
        groups += ',';
        names += ',';
      }
      groups += "\"" + name + "\":" + text;
      names += "\"" + name + "\"";
    }
    if (shape & 2) names += ",\"unknown_group\"";
    config = "{\"head_dim\":64,\"max_position_embeddings\":4096,\"layer_types\":[" + names +
             "],\"rope_parameters\":{" + groups + "}}";
  } else {
    const std::size_t pairs = std::min<std::size_t>(n, 32768);
    std::string list;
    const std::string number = text.empty() ? "1.0" : text.substr(0, 24);
    for (std::size_t k = 0; k < pairs; ++k) list += (k ? "," : "") + number;
    const std::string shorter = (shape & 2) && pairs > 1 ? list.substr(0, list.rfind(',')) : list;
    config = "{\"head_dim\":" + std::to_string(2 * pairs) +
             ",\"max_position_embeddings\":131072,\"rope_scaling\":{\"rope_type\":\"longrope\","
             "\"original_max_position_embeddings\":4096,\"short_factor\":[" +
             list + "],\"long_factor\":[" + shorter + "]}}";
  }
  const auto ignore = [](std::string_view) {};
  pev::spec::rope r;
  try {
    r = pev::spec::parse_config_text(config, "fuzz", {}, ignore);
  } catch (const pev::error&) {
    return 0;
  }
  pev::spec::validate(pev::spec::encoding(r));
  return 0;
}

// Fuzz target: the safetensors reader at scale (pev::io::parse_safetensors). The input does not
// hold a file; it describes one of up to 2^15 tensors, so that every execution parses a header of
// thousands of entries: a reader that is not linear in its header shows as a libFuzzer timeout
// (the O(n²) parse took 1 s for 3·10^4 tensors in a release build, tens under the fuzzer's
// sanitizers; the linear one takes 3 s there at the maximum). Layout of the input:
//   bytes 0-1  n − 1 = value / 2 (little-endian): tensors t0 … t(n−1), each F32 of shape [1],
//              contiguous;
//   byte 2     what to break, at the entry picked by bytes 3-4 (mod n): 0 nothing, 1 a duplicate
//              name, 2 a gap in the offsets, 3 an overlap, 4 a wrong size, 5 a deep value,
//              6 metadata with one key per tensor, otherwise nothing;
//   the rest   a suffix of every tensor name (any bytes: escaped in messages, refused unless
//              UTF-8).
// Accepted files must hold the n tensors (n + 1 … with the metadata) in order and write back into
// bytes that parse to the same tensors.
#include <cstdint>
#include <string>

#include "fuzz_target.h"
#include "pev/core/error.h"
#include "pev/io/safetensors.h"

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  const std::size_t n = 1 + (data[0] | (std::size_t{data[1]} << 8)) / 2;
  const int defect = data[2];
  const std::size_t at = (data[3] | (std::size_t{data[4]} << 8)) % n;
  const std::string suffix(reinterpret_cast<const char*>(data + 5),
                           std::min<std::size_t>(size - 5, 64));
  std::string h = "{";
  if (defect == 6) {
    h += "\"__metadata__\":{";
    for (std::size_t k = 0; k < n; ++k) {
      if (k) h += ',';
      h += "\"m" + std::to_string(k) + "\":\"v\"";
    }
    h += "},";
  }
  std::uint64_t offset = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (k) h += ',';
    const bool here = k == at;
    const std::string name =
        "t" + std::to_string(here && defect == 1 && k > 0 ? k - 1 : k) + suffix;
    std::uint64_t begin = offset;
    if (here && defect == 2) begin += 4;
    if (here && defect == 3 && begin >= 4) begin -= 4;
    const std::uint64_t end = begin + (here && defect == 4 ? 8 : 4);
    h += json_string(name) + ":{\"dtype\":\"F32\",\"shape\":[" +
         (here && defect == 5 ? std::string(40, '[') + "1" + std::string(40, ']') : "1") +
         "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  h += "}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((h.size() >> (8 * i)) & 0xFF);
  file += h;
  file.append(offset, '\0');

  pev::io::tensor_file t;
  try {
    t = pev::io::parse_safetensors(file, "fuzz");
  } catch (const pev::error&) {
    return 0;
  }
  PEV_FUZZ_CHECK(t.names.size() == n);
  for (std::size_t k = 0; k < n; k += n / 7 + 1) {
    PEV_FUZZ_CHECK(t.names[k] == "t" + std::to_string(k) + suffix);
  }
  const pev::io::tensor_file back =
      pev::io::parse_safetensors(pev::io::safetensors_bytes(t), "fuzz round trip");
  PEV_FUZZ_CHECK(back.names == t.names && back.metadata == t.metadata);
  return 0;
}

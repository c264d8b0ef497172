// Fuzz target: the --exec protocol's messages (pev::impl::protocol). The input is one header line
// and the payload bytes after it, read both ways: as an answer (what pev reads from a third-party
// process) and as a request (what `pev serve` reads). Checked on accepted messages: they write back
// (answer_line, request_line) into lines that parse to the same message; no declared size beyond
// the payload limit is accepted; a well-formed request carries exactly the payload it needs, and
// `expect_tensors` accepts an answer only when it lists exactly the tensors asked for.
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "pev/core/error.h"
#include "pev/impl/exec_protocol.h"

namespace {

namespace protocol = pev::impl::protocol;
using pev::dtype;

void check_answer(std::string_view line) {
  protocol::answer a;
  try {
    a = protocol::parse_answer(line);
  } catch (const pev::error&) {
    return;
  }
  for (const auto& t : a.tensors) PEV_FUZZ_CHECK(t.bytes() <= protocol::max_payload_bytes);
  const protocol::answer b = protocol::parse_answer(protocol::answer_line(a));
  PEV_FUZZ_CHECK(b.ok == a.ok && b.unsupported == a.unsupported && b.error == a.error &&
                 b.name == a.name && b.outputs == a.outputs && b.tensors == a.tensors);
  // What pev asks for in the seed corpus's answers (and in some others).
  const std::array<std::vector<protocol::tensor>, 4> wants = {{
      {{"cos", dtype::fp32, {3, 4}}, {"sin", dtype::fp32, {3, 4}}},
      {{"inv_freq", dtype::fp32, {4}}},
      {{"out", dtype::bf16, {3, 2, 8}}},
      {},
  }};
  for (const auto& want : wants) {
    try {
      const std::size_t n = protocol::expect_tensors(a, "fuzz", want);
      PEV_FUZZ_CHECK(a.tensors == want);
      std::size_t sum = 0;
      for (const auto& t : want) sum += t.bytes();
      PEV_FUZZ_CHECK(n == sum);
    } catch (const pev::error&) {
      PEV_FUZZ_CHECK(a.tensors != want);
    }
  }
}

void check_request(std::string_view line, std::string_view payload) {
  protocol::parsed_request p;
  try {
    p = protocol::parse_request(line);
  } catch (const pev::error&) {
    return;
  }
  PEV_FUZZ_CHECK(p.r.payload_bytes <= protocol::max_payload_bytes);
  if (!p.problem.empty()) return;
  PEV_FUZZ_CHECK(protocol::request_payload_bytes(p.r) == p.r.payload_bytes);
  const protocol::parsed_request q = protocol::parse_request(protocol::request_line(p.r));
  PEV_FUZZ_CHECK(q.problem.empty() && q.r == p.r);
  // What `pev serve` does with a complete payload: the positions and the input it holds.
  if (payload.size() >= p.r.payload_bytes && p.r.positions > 0 && p.r.what != "inv_freq") {
    std::vector<std::int64_t> pos(static_cast<std::size_t>(p.r.positions));
    std::memcpy(pos.data(), payload.data(), pos.size() * sizeof(std::int64_t));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = pev::fuzz::as_text(data, size);
  const std::size_t nl = in.find('\n');
  const std::string_view line = in.substr(0, nl);
  const std::string_view payload = nl == std::string_view::npos ? "" : in.substr(nl + 1);
  check_answer(line);
  check_request(line, payload);
  return 0;
}

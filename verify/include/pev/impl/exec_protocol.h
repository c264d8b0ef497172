#pragma once
// The messages of pev's subprocess protocol (`pev certify --exec`, docs/exec-protocol.md,
// version 1), apart from any I/O: the client (live_exec.cpp), the reference server (`pev serve`)
// and the fuzz target (tests/fuzz/fuzz_exec.cpp) share this one parser. A message is one JSON
// header line followed by `payload_bytes` bytes. Nothing here trusts a declared size: every count
// is checked against the limits below (before anything is allocated) and against the payload the
// request needs. Every function throws pev::error for a message that breaks the protocol, naming
// the field.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pev/impl/implementation.h"

namespace pev::impl::protocol {

/// Longest header line (without its '\n').
inline constexpr std::size_t max_header_bytes = std::size_t{1} << 16;
/// Largest payload of one message, either way (2 GiB).
inline constexpr std::size_t max_payload_bytes = std::size_t{1} << 31;

/// Bytes of one element (fp32: 4; fp16, bf16: 2).
std::size_t element_bytes(dtype t);

/// A tensor of an answer, as its header lists it.
struct tensor {
  std::string name;
  dtype type = dtype::fp32;
  std::vector<std::int64_t> shape;

  /// Its payload bytes; throws pev::error when they exceed max_payload_bytes.
  std::size_t bytes() const;
  bool operator==(const tensor&) const = default;
};

/// A request (pev → implementation).
struct request {
  std::string what;  // hello, rope_table, inv_freq, rope_rotate, sinusoidal_pe (or unknown)
  std::string spec;  // canonical SPEC string (computing requests)
  dtype type = dtype::fp32;
  std::int64_t seq_len = -1;  // −1: none
  std::int64_t positions = 0;
  std::int64_t heads = 0;  // rope_rotate
  std::int64_t head_dim = 0;
  std::size_t payload_bytes = 0;

  bool computes() const;  // a request other than hello
  bool operator==(const request&) const = default;
};

/// The header line of a request (without '\n').
std::string request_line(const request& r);

/// The payload a request must carry: positions (int64 each), then for rope_rotate the input
/// [positions, heads, head_dim] in its dtype. Throws when it would exceed max_payload_bytes.
std::size_t request_payload_bytes(const request& r);

/// A request header parsed as far as the protocol allows.
struct parsed_request {
  request r;
  /// Empty when the request is well formed. Otherwise what is wrong with it; r.payload_bytes is
  /// still valid, so that a server can skip the payload and answer with the error.
  std::string problem;
};

/// Parses a request header line (without '\n'). Throws pev::error when not even payload_bytes can
/// be read (the stream cannot be resynchronised); reports anything else in `problem`.
parsed_request parse_request(std::string_view line);

/// An answer (implementation → pev).
struct answer {
  bool ok = false;
  bool unsupported = false;
  std::string error;                 // {"ok": false, "error": ...}
  std::string name;                  // the greeting's name (empty when absent)
  std::vector<std::string> outputs;  // the greeting's outputs
  std::vector<tensor> tensors;       // a successful computing answer's tensors
};

/// Parses an answer's header line (without '\n').
answer parse_answer(std::string_view line);

/// Checks that a successful answer lists exactly `want`, in that order; throws pev::error naming
/// the first difference (`what` is the request, for the message). Returns the payload bytes that
/// follow.
std::size_t expect_tensors(const answer& a, std::string_view what, std::span<const tensor> want);

/// The header line of an answer (without '\n'), as `pev serve` writes it.
std::string answer_line(const answer& a);

}  // namespace pev::impl::protocol

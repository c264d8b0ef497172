#pragma once
// report.json: the results as JSON (schema kSchemaVersion), and back. Doubles are written in the
// shortest form that reads back to the same double; non-finite values as the strings "inf", "-inf",
// "nan". Keys keep a fixed order, so equal results give byte-identical text.
//
// Timestamp fields (documented; they differ between otherwise identical runs):
// provenance.generated_at.

#include <cstdint>
#include <string>
#include <string_view>

#include "pev/report/result.h"

namespace pev::report {

std::string to_json(const results& r);

/// The largest certificate.json `pev merge` and `pev verify` read (docs/certify.md §6). A shard
/// certificate's size grows with its checks' indices (head_dim, or heads × head_dim of q/k) times
/// their octaves: 16 MB for q/k of 32 + 8 heads × 128 at positions up to 2^62. Parsing a hostile
/// 64 MiB of numbers peaks at 1.7 GB; a larger file is refused unread, naming this limit.
inline constexpr std::uint64_t max_certificate_bytes = std::uint64_t{64} << 20;

/// Parses report.json text; throws pev::error naming `source` and the field when it is not a
/// report of this schema version.
results from_json(std::string_view text, const std::string& source);

}  // namespace pev::report

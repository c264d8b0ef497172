#pragma once
// Positions of a request, as both front ends read them (docs/design.md §5.3): ranges A:B[:STEP],
// lists (a positions file; pev's Python module), and the sequence length of stateful rope types.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pev::app {

/// Parses A:B[:STEP] (half-open, STEP > 0) or a single integer N; throws pev::error naming the
/// flag.
std::vector<std::int64_t> parse_position_range(const std::string& text, bool allow_negative);

/// Checks positions given as a list (a positions file; pev's Python module): at least one, at most
/// 2^24 (one request), none negative unless `allow_negative`; pev::error naming `source`.
void check_positions(const std::vector<std::int64_t>& v, bool allow_negative,
                     const std::string& source);

/// At most this many positions per request (2^24): beyond it the exact reference takes hours and
/// memory grows without bound; sweeps belong to `pev report`.
inline constexpr std::int64_t kMaxPositions = std::int64_t(1) << 24;

/// Sequence length of a stateful rope type: --seq-len, else max(position) + 1 (transformers).
std::int64_t stateful_seq_len(const std::vector<std::int64_t>& pos,
                              std::optional<std::int64_t> seq_len);

}  // namespace pev::app

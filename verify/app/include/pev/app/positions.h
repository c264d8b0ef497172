#pragma once
// Positions of a request, as both front ends read them (docs/design.md §5.3): ranges A:B[:STEP],
// lists (a positions file; pev's Python module), and the sequence length of stateful rope types.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pev/spec/spec.h"

namespace pev::app {

/// Parses A:B[:STEP] (half-open, STEP > 0) or a single integer N; throws pev::error naming the
/// flag.
std::vector<std::int64_t> parse_position_range(const std::string& text, bool allow_negative,
                                               const std::string& flag = "--positions");

/// Checks positions given as a list (a positions file; pev's Python module): at least one, at most
/// 2^24 (one request), none negative unless `allow_negative`; pev::error naming `source`.
void check_positions(const std::vector<std::int64_t>& v, bool allow_negative,
                     const std::string& source);

/// At most this many positions per request (2^24): beyond it the exact reference takes hours and
/// memory grows without bound; sweeps belong to `pev report`.
inline constexpr std::int64_t kMaxPositions = std::int64_t(1) << 24;

/// The positions of every MRoPE stream (docs/encodings.md §4.6), [S, T] flattened, from positions
/// read for `e`: a range means text tokens (every stream equal: the range once per stream);
/// explicit positions (a file, a list) hold the S streams one after another, so their count must be
/// a multiple of S. `source` names them in errors ("--positions-file F", "positions"). Encodings
/// with one stream: `v` unchanged.
std::vector<std::int64_t> stream_positions(const spec::encoding& e, std::vector<std::int64_t> v,
                                           bool from_range, const std::string& source);

/// Sequence length of a stateful rope type: --seq-len, else max(position) + 1 (transformers).
std::int64_t stateful_seq_len(const std::vector<std::int64_t>& pos,
                              std::optional<std::int64_t> seq_len);

}  // namespace pev::app

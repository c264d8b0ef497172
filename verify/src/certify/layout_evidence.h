#pragma once
// What the layout readers (layout.h) share: the dump's tensors of other roles, shapes without
// their leading 1s, and the evidence of the data — how many samples of a reading agree with what a
// rotation implies (docs/certify.md §4).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pev::certify::detail {

/// Tensors of the dump's other roles (docs/design.md §6.1): never read as a table.
bool is_role_name(const std::string& n);

/// The shape without its size-1 dimensions before the last `keep` ones: [1, P, rot] → [P, rot],
/// [B, 1, P, rot] (unsqueezed for the heads) → [B, P, rot]; the last `keep` stay, even of size 1.
std::vector<std::int64_t> drop_ones(const std::vector<std::int64_t>& shape, std::size_t keep);

/// How many samples of a reading agree with what a rotation implies, and how many do not. A reading
/// fits when at most one sample in a thousand disagrees (none should: the tolerance of each test is
/// 16 to 32 times the rounding error of a 16-bit output, docs/certify.md §4).
struct agreement {
  std::uint64_t samples = 0, off = 0;
  bool fits() const { return off * 1000 <= samples; }
  agreement& operator+=(const agreement& o) {
    samples += o.samples;
    off += o.off;
    return *this;
  }
};

/// The norms of rotated pairs: a rotation by an angle and a common factor m keeps |pair|² / |input
/// pair|² (or, for a table, cos² + sin²) the same for every pair and position, up to the output's
/// rounding (relative 2^−7 for bf16). `ratios` agree when within 1/8 of their median; a reading
/// whose pairs are not the data's mixes two pairs and spreads them by O(1).
agreement ratio_agreement(std::vector<double> ratios);

}  // namespace pev::certify::detail

#pragma once
// Whether rotated fp32 q/k follow vLLM's 16-bit cos/sin cache (docs/numerics.md §13.8). The
// recipe:vllm rungs of a rotation admit what a rotation by the cache can produce; a rotation in
// fp32 keeps the cos/sin it applied readable — (x·y)/|x|², (x × y)/|x|² of each pair, within
// 2^−21 of them relative — so, as the rungs demand of a table (values in the 16-bit format), they
// hold for fp32 q/k only when every rotation applied values of that format, each within the
// table-fp16/bf16 contract (the hf table rounded to the cache's format) of the exact m·cos, m·sin.
// Where not, the check's vLLM rung adds nothing: its own bound is the exact rung's (one ulp).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detail.h"
#include "layout.h"
#include "pev/metric/libm.h"

namespace pev::certify::detail {

/// The vLLM rungs a cache reading decides, in the order of its arrays (fp16, bf16).
inline constexpr std::array<const char*, 2> kCacheRungs = {"vllm-fp16", "vllm-bf16"};

/// What the rotations of one fp32 (or fp64) q/k show of a 16-bit cache, per format of
/// kCacheRungs: the rotations read back (token, head, pair with |x| > 0 and finite values), those
/// whose cos or sin is no value of the format, and those whose values are, but lie beyond the
/// table contract of the cache; the first token position of either.
struct cache_reading {
  std::uint64_t read = 0;
  std::array<std::uint64_t, 2> off_grid{}, beyond{};
  std::array<std::int64_t, 2> first{-1, -1};
  bool follows(std::size_t k) const { return off_grid[k] == 0 && beyond[k] == 0; }
  /// Adds a later chunk's counts (its first positions count where this one has none).
  void merge(const cache_reading& o);
};

/// The cache reading of q's every token (every shard reads every token: the same in each), at
/// positions `pos` ([S, tokens] for MRoPE), for the table contracts of library class `lib`; on
/// `threads` threads. T: q's dtype, fp32 or fp64.
template <class T>
cache_reading read_cache(const compare::rope_reference& ref, const metric::libm& lib,
                         std::optional<std::int64_t> seq, const qk_source& q,
                         const std::vector<std::int64_t>& pos, int threads);

/// The certificate's note of a check whose rotations do not follow some cache: what was read and
/// why each rung adds nothing. Empty when both are followed.
std::string cache_note(const cache_reading& r);

}  // namespace pev::certify::detail

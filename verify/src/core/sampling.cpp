#include "pev/core/sampling.h"

#include <algorithm>
#include <bit>

#include "pev/core/splitmix.h"

namespace pev {

std::vector<std::int64_t> octave_positions(const octave_sampling& s, splitmix* from) {
  std::vector<std::int64_t> p;
  const std::int64_t top = s.end;
  for (std::int64_t i = 0; i < std::min(s.dense_below, top); ++i) p.push_back(i);
  splitmix own(s.seed);
  splitmix& rng = from ? *from : own;
  for (int k = 0; k < 63; ++k) {
    const std::int64_t lo = std::int64_t{1} << k;
    if (lo >= top) break;
    // The last octave [2^62, 2^63) ends at `top`: 2^63 does not fit in int64.
    const std::int64_t hi = k == 62 ? top : std::min(lo << 1, top);
    if (hi <= s.dense_below) continue;
    p.push_back(lo);
    if (s.edges) {
      p.push_back(std::min(lo + 1, hi - 1));
      p.push_back(hi - 1);
    }
    for (int j = 0; j < s.per_octave; ++j) p.push_back(rng.in(lo, hi));
  }
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

int octave_of(std::int64_t p) {
  return p < 2 ? 0 : std::bit_width(static_cast<std::uint64_t>(p)) - 1;
}

}  // namespace pev

#pragma once
// The hf recipe's fp32 frequencies of a table's replay (docs/numerics.md §13.7): the dump's own
// inv_freq where it lies within the recipe's bound, else per pair the candidate that fits the rows
// best, chosen on the rows of the largest positions and checked on every row (docs/numerics.md
// §13.9).

#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "detail.h"
#include "layout.h"
#include "pev/impl/contract.h"
#include "replay.h"

namespace pev::certify::detail {

/// The value at row r, column j of a plane of `t`, as a double.
template <class T>
double value_at(const plane& pl, std::size_t r, std::int64_t j) {
  return scalar_traits<T>::to_double(element<T>(*pl.a, pl.at(static_cast<std::int64_t>(r), j)));
}

/// The rows of `pos` from the largest position down (ties in row order), at most `rows` of them
/// (0: every row).
inline std::vector<std::size_t> largest_first(const std::vector<std::int64_t>& pos,
                                              std::size_t rows) {
  std::vector<std::size_t> order(pos.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return pos[a] > pos[b]; });
  if (rows > 0 && order.size() > rows) order.resize(rows);
  return order;
}

/// The hf frequencies of plan `p` (p.lib and p.hf_m set; theta: the exact ones): the dump's fp32
/// inv_freq, else per pair the best candidate on the `rows` rows of the largest positions (0: every
/// row), chosen again on every row for a pair whose choice leaves a value beyond every rung there —
/// a check left to the caller (p.every_row_deferred) with `defer`: the replay of every row tells it
/// (pairs_beyond_every_rung, choose_again_on_every_row).
template <class T>
void choose_frequencies(replay_plan& p, const impl::rope_contract& hf,
                        const std::vector<double>& theta, float own0, bool own0_fixed,
                        const table_source& t, const std::vector<std::int64_t>& pos,
                        const io::array* inv_freq, std::size_t rows, tbb::task_arena& arena,
                        bool defer);

}  // namespace pev::certify::detail

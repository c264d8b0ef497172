// The hf recipe's fp32 frequencies of a table's replay (replay_choice.h; docs/numerics.md §13.7,
// §13.9).

#include "replay_choice.h"

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "replay_interval.h"

namespace pev::certify::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// fp32 frequencies tried per side of the exact one.
constexpr int kMaxCandidates = 32;

/// Per pair, the fp32 frequencies within the recipe's bound of the exact one, nearest first.
/// Pair 0's exponent fl(0/d) is 0, and pow(x, ±0) = 1 in every conforming library (C99 F.9.4.4):
/// its frequency is what the recipe's exact operations make of 1 — pev's hf kernel's, alone.
std::vector<std::vector<float>> candidates_of(const impl::rope_contract& hf,
                                              const std::vector<double>& theta, float own0,
                                              bool own0_fixed) {
  const std::size_t pairs = theta.size();
  std::vector<std::vector<float>> cand(pairs);
  if (pairs > 0 && own0_fixed) cand[0].push_back(own0);
  for (std::size_t i = pairs > 0 && own0_fixed ? 1 : 0; i < pairs; ++i) {
    const double eps = hf.inv_freq_bound(static_cast<std::int64_t>(i)).value_or(0) * (1 + 0x1p-40);
    const float f0 = static_cast<float>(theta[i]);
    cand[i].push_back(f0);
    float dn = f0, up = f0;
    for (int k = 0; k < kMaxCandidates; ++k) {
      dn = std::nextafter(dn, -std::numeric_limits<float>::infinity());
      up = std::nextafter(up, std::numeric_limits<float>::infinity());
      const bool d_in = std::fabs(double(dn) - theta[i]) <= eps;
      const bool u_in = std::fabs(double(up) - theta[i]) <= eps;
      if (d_in) cand[i].push_back(dn);
      if (u_in) cand[i].push_back(up);
      if (!d_in && !u_in) break;
    }
  }
  return cand;
}

/// The dump's own fp32 inv_freq, where every pair's is a candidate (within the contract).
std::optional<std::vector<float>> dump_frequencies(const io::array* inv_freq,
                                                   const std::vector<std::vector<float>>& cand) {
  const std::size_t pairs = cand.size();
  if (!inv_freq || inv_freq->type != dtype::fp32 ||
      static_cast<std::size_t>(inv_freq->elements()) != pairs) {
    return std::nullopt;
  }
  std::vector<float> f(pairs);
  for (std::size_t i = 0; i < pairs; ++i) {
    f[i] = element<float>(*inv_freq, i);
    if (std::find(cand[i].begin(), cand[i].end(), f[i]) == cand[i].end()) return std::nullopt;
  }
  return f;
}

/// The vLLM caches the choice weighs: those whose format holds every value of the table, and
/// that differ from hf's rung (a cache in the output's own format is the output's rounding).
template <class T>
std::array<bool, 2> caches_followed(const table_source& t, std::size_t rows) {
  constexpr format out = format_of<T>();
  std::array<bool, 2> cache{};
  for (std::size_t k = 0; k < 2; ++k) {
    cache[k] = !(kStorage[k] == out);
    for (std::size_t r = 0; r < rows && cache[k]; ++r) {
      for (std::int64_t j = 0; j < t.width && cache[k]; ++j) {
        for (const plane* pl : {&t.cos, &t.sin}) {
          const double got = value_at<T>(*pl, r, j);
          if (std::isfinite(got) && round_in(got, kStorage[k]) != got) cache[k] = false;
        }
      }
    }
  }
  return cache;
}

/// A candidate's score on a rung: how many values lie beyond it (ρ > 1), then the largest ρ —
/// so that one wild value does not decide; its score: that of the rung that fits it best.
using score_t = std::pair<std::uint64_t, double>;

void add(score_t& s, double rho) {
  s.first += rho > 1;
  s.second = std::max(s.second, rho);
}

/// Scores candidates of one pair (its columns) on rows of the table: each value replayed on the
/// hf rung and the caches the choice weighs.
template <class T>
struct scorer {
  const replay_plan& p;
  const table_source& t;
  const std::vector<std::int64_t>& pos;
  const std::array<bool, 2>& cache;
  const std::vector<std::int64_t>& columns;

  /// The exact centre and intervals of a component at an angle (replay_rows').
  struct exact_rungs {
    centre z;
    span_of v0, vs[2];
  };
  exact_rungs exact(float angle, bool is_sin) const {
    constexpr format out = format_of<T>();
    exact_rungs e;
    e.z = centre_of(*p.lib, p.hf_m, angle, is_sin);
    e.v0 = interval(e.z, nullptr, out);
    for (std::size_t k = 0; k < 2; ++k) {
      if (cache[k]) e.vs[k] = interval(e.z, &kStorage[k], out);
    }
    return e;
  }

  /// One row's values of the pair into the rungs' scores.
  void row(std::array<score_t, 3>& worst, std::size_t r, float f) const {
    const float angle = hf_angle(pos[r], f);
    for (int w = 0; w < 2; ++w) {
      const plane& pl = w == 0 ? t.cos : t.sin;
      const exact_rungs ex = exact(angle, w == 1);
      for (const std::int64_t j : columns) {
        const double got = value_at<T>(pl, r, j);
        add(worst[0], interval_rho(got, ex.z.c, ex.v0));
        for (std::size_t k = 0; k < 2; ++k) {
          add(worst[1 + k], cache[k] ? interval_rho(got, ex.z.c, ex.vs[k]) : kInf);
        }
      }
    }
  }

  /// The best of `fs` on the rows `order`: the first with the
  /// least score; a candidate stops at the first row that makes it worse than the best so far.
  score_t choose_on(const std::vector<std::size_t>& order, const std::vector<float>& fs,
                    float& chosen) const {
    score_t best{std::numeric_limits<std::uint64_t>::max(), kInf};
    for (const float f : fs) {
      std::array<score_t, 3> worst{};
      const auto score = [&] { return *std::min_element(worst.begin(), worst.end()); };
      // Both parts of a score only grow: once above the best it cannot win.
      for (std::size_t q = 0; q < order.size() && score() <= best; ++q) row(worst, order[q], f);
      if (score() < best) {
        best = score();
        chosen = f;
      }
    }
    return best;
  }
};

/// Each pair's columns of the table.
std::vector<std::vector<std::int64_t>> columns_of(const table_source& t, std::size_t pairs) {
  std::vector<std::vector<std::int64_t>> columns(pairs);
  for (std::int64_t j = 0; j < t.width; ++j) {
    const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
    if (i >= 0 && static_cast<std::size_t>(i) < pairs) {
      columns[static_cast<std::size_t>(i)].push_back(j);
    }
  }
  return columns;
}

}  // namespace

template <class T>
void choose_frequencies(replay_plan& p, const impl::rope_contract& hf,
                        const std::vector<double>& theta, float own0, bool own0_fixed,
                        const table_source& t, const std::vector<std::int64_t>& pos,
                        const io::array* inv_freq, std::size_t rows, tbb::task_arena& arena,
                        bool defer) {
  const std::size_t pairs = theta.size();
  const std::vector<std::vector<float>> cand = candidates_of(hf, theta, own0, own0_fixed);
  if (auto f = dump_frequencies(inv_freq, cand)) {
    p.freq = std::move(*f);
    p.frequencies = "hf: the dump's inv_freq (fp32, within the recipe's bound of every pair)";
    return;
  }
  // Else per pair, the candidate that fits the rows best (the nearest to the exact frequency
  // first). Rows from the largest position down: a wrong frequency fails there first. The choice
  // is made on the `rows` of the largest positions; a pair whose choice leaves a value of any
  // other row beyond every rung is chosen again on every row.
  p.freq.assign(pairs, 0.0f);
  const std::vector<std::vector<std::int64_t>> columns = columns_of(t, pairs);
  std::size_t tried = 0;
  for (std::size_t i = 0; i < pairs; ++i) tried = std::max(tried, cand[i].size());
  const std::array<bool, 2> cache = caches_followed<T>(t, pos.size());
  p.caches_weighed = cache;
  const std::vector<std::size_t> top = largest_first(pos, rows);
  const std::vector<std::size_t> every = top.size() == pos.size() ? top : largest_first(pos, 0);
  const bool check_every = top.size() < every.size();
  p.every_row_deferred = check_every && defer;
  if (p.every_row_deferred) p.candidates = cand;
  const auto choose = [&](std::size_t i) {
    p.freq[i] = cand[i][0];
    if (cand[i].size() == 1) return;
    const scorer<T> s{p, t, pos, cache, columns[i]};
    s.choose_on(top, cand[i], p.freq[i]);
    if (!check_every || defer) return;
    float f = p.freq[i];
    if (s.choose_on(every, {p.freq[i]}, f).first > 0) s.choose_on(every, cand[i], p.freq[i]);
  };
  arena.execute([&] { tbb::parallel_for(std::size_t{0}, pairs, choose); });
  p.frequencies = fmt::format(
      "hf: per pair, the fp32 frequency within the recipe's bound that fits {} best (up to {} "
      "tried per pair; on every row where that choice leaves a value beyond every rung)",
      top.size() == pos.size() ? std::string("every row")
                               : fmt::format("the {} rows of the largest positions", top.size()),
      tried);
}

template <class T>
bool choose_again_on_every_row(replay_plan& p, const std::vector<std::size_t>& pairs,
                               const table_source& t, const std::vector<std::int64_t>& pos,
                               int threads) {
  const std::vector<std::vector<std::int64_t>> columns = columns_of(t, p.freq.size());
  const std::vector<std::size_t> every = largest_first(pos, 0);
  const std::vector<float> before = p.freq;
  tbb::task_arena arena(threads);
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, pairs.size(), [&](std::size_t n) {
      const std::size_t i = pairs[n];
      const scorer<T> s{p, t, pos, p.caches_weighed, columns[i]};
      s.choose_on(every, p.candidates[i], p.freq[i]);
    });
  });
  return p.freq != before;
}

#define PEV_CHOOSE(T)                                                                         \
  template void choose_frequencies<T>(replay_plan&, const impl::rope_contract&,               \
                                      const std::vector<double>&, float, bool,                \
                                      const table_source&, const std::vector<std::int64_t>&,  \
                                      const io::array*, std::size_t, tbb::task_arena&, bool); \
  template bool choose_again_on_every_row<T>(replay_plan&, const std::vector<std::size_t>&,   \
                                             const table_source&,                             \
                                             const std::vector<std::int64_t>&, int);
PEV_CHOOSE(float)
PEV_CHOOSE(double)
PEV_CHOOSE(half)
PEV_CHOOSE(bfloat16)
#undef PEV_CHOOSE

}  // namespace pev::certify::detail

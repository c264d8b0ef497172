// The recipe replay of a RoPE table (replay.h; docs/numerics.md §13.7).

#include "replay.h"

#include <fmt/format.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <utility>

#include "pev/metric/error_model.h"
#include "pev/metric/format_round.h"
#include "pev/metric/ulp.h"
#include "replay_choice.h"
#include "replay_interval.h"

namespace pev::certify::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// fp32 ratios tried per side of ggml's powf(b, −2/d) (recover.cpp's fit tries the same 17).
constexpr int kRatioSteps = 8;
/// Rows (the largest positions) ggml's ratios are ranked on.
constexpr std::size_t kRankRows = 64;
/// kReplayRungs' indices.
constexpr std::size_t kHf = 0, kGgml = 3;

/// A pipeline's attention factor from its contract.
replay_magnitude magnitude_of(const impl::rope_contract& c, double m) {
  return {m, c.attention_factor_bound()};
}

/// ggml's angles of every pair at position p (pairs past the rotating ones: 0).
void ggml_row(const kernel::ggml_angle_plan& g, std::int64_t p, std::vector<float>& out) {
  std::fill(out.begin(), out.end(), 0.0f);
  const auto n = std::min<std::size_t>(out.size(), static_cast<std::size_t>(g.rotating()));
  g.angles(p, std::span<float>(out.data(), n));
}

/// ggml's ratio and angle mix: of the 17 fp32 ratios nearest the plan's own, and of the roundings
/// a build may give YaRN's angle mix (kernel::ggml_mix: one for every value, the build's), the pair
/// whose recurrence fits the rows best. Per mix: the plan's own ratio over every row, and where it
/// does not hold the best ranked on the kRankRows rows of the largest positions (where a ratio's
/// error has grown most), the better over every row kept. The separate mix first; a fused one only
/// where it holds and the separate one does not (docs/numerics.md §8.7, §13.7).
template <class T>
void choose_ratio(replay_plan& p, const table_source& t, const std::vector<std::int64_t>& pos,
                  std::size_t rows) {
  kernel::ggml_angle_plan& g = *p.ggml;
  const float own = g.theta_scale();
  std::vector<float> cand = {own};
  float dn = own, up = own;
  for (int k = 0; k < kRatioSteps; ++k) {
    dn = std::nextafter(dn, 0.0f);
    up = std::nextafter(up, 2.0f);
    cand.push_back(dn);
    cand.push_back(up);
  }
  const std::span<const kernel::ggml_mix> mixes(kernel::kGgmlMixes, g.mixes() ? 3 : 1);
  const std::vector<std::size_t> order = largest_first(pos, rows);
  constexpr format out = format_of<T>();
  const auto pairs = static_cast<std::size_t>(g.rotating());
  // Angles for every pair a column holds (the rotating ones, and any pass-through: 0).
  std::size_t columns_pairs = pairs;
  for (const std::int64_t i : t.pair) {
    columns_pairs =
        std::max(columns_pairs, static_cast<std::size_t>(std::max<std::int64_t>(i, 0)) + 1);
  }
  struct choice {
    std::size_t ratio = 0;
    kernel::ggml_mix mix = kernel::ggml_mix::separate;
  };
  const auto evaluate = [&](choice c, std::size_t rows) {
    g.set_theta_scale(cand[c.ratio]);
    g.set_mix(c.mix);
    std::vector<float> angles(columns_pairs);
    double worst = 0;
    for (std::size_t q = 0; q < std::min(rows, order.size()); ++q) {
      const std::size_t r = order[q];
      ggml_row(g, pos[r], angles);
      for (std::int64_t j = 0; j < t.width; ++j) {
        const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
        if (i < 0) continue;
        const float angle = angles[static_cast<std::size_t>(i)];
        for (int w = 0; w < 2; ++w) {
          const centre z = centre_of(*p.lib, p.ggml_m, angle, w == 1);
          worst = std::max(worst, interval_rho(value_at<T>(w == 0 ? t.cos : t.sin, r, j), z.c,
                                               interval(z, nullptr, out)));
        }
      }
    }
    return worst;
  };
  // With one mix: the plan's own ratio over every row; where it does not hold, the best ranked on
  // the top rows, kept where it fits every row better.
  const auto fit_with = [&](kernel::ggml_mix m) {
    std::pair<choice, double> best{{0, m}, evaluate({0, m}, order.size())};
    if (best.second <= 1) return best;
    std::size_t ranked = 0;
    double rank_best = kInf;
    for (std::size_t c = 0; c < cand.size(); ++c) {
      const double s = evaluate({c, m}, kRankRows);
      if (s < rank_best) {
        rank_best = s;
        ranked = c;
      }
    }
    if (ranked != 0) {
      const double s = evaluate({ranked, m}, order.size());
      if (s < best.second) best = {{ranked, m}, s};
    }
    return best;
  };
  // Separate first (every build without FMA); a fused mix where it holds and separate does not.
  std::pair<choice, double> best = fit_with(kernel::ggml_mix::separate);
  for (std::size_t k = 1; k < mixes.size() && best.second > 1; ++k) {
    const std::pair<choice, double> fused = fit_with(mixes[k]);
    if (fused.second <= 1) best = fused;
  }
  const choice at = best.first;
  g.set_theta_scale(cand[at.ratio]);
  g.set_mix(at.mix);
  p.ratio = at.ratio == 0 ? "ggml: the recurrence with its own ratio powf(b, -2/d)"
                          : fmt::format(
                                "ggml: the recurrence with the ratio {:a} ({} fp32 steps from "
                                "powf(b, -2/d)), which fits the rows best",
                                double(cand[at.ratio]), (at.ratio + 1) / 2);
  // A fused mix is named; the separate one (every build without FMA) is left unsaid, as before.
  if (at.mix != kernel::ggml_mix::separate)
    p.ratio += fmt::format("; {}", kernel::describe(at.mix));
}

}  // namespace

void replay_acc::merge(const replay_acc& o) {
  if (beyond.size() < o.beyond.size()) beyond.resize(o.beyond.size(), 0);
  for (std::size_t i = 0; i < o.beyond.size(); ++i) beyond[i] |= o.beyond[i];
  for (std::size_t k = 0; k < rho.size(); ++k) rho[k] = std::max(rho[k], o.rho[k]);
  for (std::size_t k = 0; k < off_grid.size(); ++k) off_grid[k] += o.off_grid[k];
  trig_least = std::max(trig_least, o.trig_least);
  trig_least_ulp = std::max(trig_least_ulp, o.trig_least_ulp);
  slope_least = std::max(slope_least, o.slope_least);
  exact_least = std::max(exact_least, o.exact_least);
  exact_least_ulp = std::max(exact_least_ulp, o.exact_least_ulp);
  exact_slope_least = std::max(exact_slope_least, o.exact_slope_least);
  for (std::size_t g = 0; g < oct_bound.size(); ++g) {
    for (std::size_t k = 0; k < oct_bound[g].size(); ++k) {
      oct_bound[g][k] = std::max(oct_bound[g][k], o.oct_bound[g][k]);
      oct_rho[g][k] = std::max(oct_rho[g][k], o.oct_rho[g][k]);
    }
  }
}

template <class T>
replay_plan plan_replay(const spec::rope& s, std::optional<std::int64_t> seq,
                        const impl::rope_contract* hf, const impl::rope_contract& ggml, double m,
                        const std::vector<double>& theta, const table_source& t,
                        const std::vector<std::int64_t>& pos, const io::array* inv_freq,
                        const metric::libm& lib, int threads, std::size_t rows, bool defer) {
  replay_plan p;
  if (s.streams() > 1) return p;
  p.on = true;
  p.lib = &lib;
  tbb::task_arena arena(threads);
  if (hf) {
    p.hf_on = true;
    p.hf_m = magnitude_of(*hf, m);
    // pev's hf kernel runs the recipe's exact operations on pow(b, 0) = 1 for pair 0.
    const kernel::rope_kernel own(s, kernel::strategy::hf, seq);
    const bool fixed = !own.inv_freq().empty() && s.type != spec::rope_type::ggml;
    choose_frequencies<T>(p, *hf, theta, fixed ? own.inv_freq()[0] : 0.0f, fixed, t, pos, inv_freq,
                          rows, arena, defer);
  }
  p.ggml.emplace(s, seq);
  p.ggml_m = magnitude_of(ggml, m);
  choose_ratio<T>(p, t, pos, rows);
  return p;
}

template <class T>
void replay_rows(const replay_plan& p, const table_source& t, std::size_t r0,
                 std::span<const std::int64_t> positions, std::span<const double> exact_cos,
                 std::span<const double> exact_sin, std::int64_t pairs, replay_acc& cos,
                 replay_acc& sin) {
  constexpr format out = format_of<T>();
  constexpr bool narrow = !holds_every(out, metric::kF32);
  const auto P = static_cast<std::size_t>(pairs);
  std::vector<float> gangles(P + 1);
  // Per row, every pair's centres and intervals once (a table may hold a pair in two columns):
  // [pair][cos | sin], hf's and ggml's.
  struct per_pair {
    centre z[2], zg[2];
    span_of v[2], vg[2];
    float angle = 0;
  };
  std::vector<per_pair> row(P);
  cos.beyond.resize(std::max(cos.beyond.size(), P), 0);
  sin.beyond.resize(std::max(sin.beyond.size(), P), 0);
  for (std::size_t q = 0; q < positions.size(); ++q) {
    const std::int64_t pq = positions[q];
    const auto key = static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(pq)));
    const std::size_t r = r0 + q;
    ggml_row(*p.ggml, pq, gangles);
    for (std::size_t i = 0; i < P; ++i) {
      per_pair& e = row[i];
      double s = 0, c = 0;
      ::sincos(static_cast<double>(gangles[i]), &s, &c);
      e.zg[0] = centre_at(*p.lib, p.ggml_m, gangles[i], c);
      e.zg[1] = centre_at(*p.lib, p.ggml_m, gangles[i], s);
      if (p.hf_on) {
        e.angle = hf_angle(pq, p.freq[i]);
        ::sincos(static_cast<double>(e.angle), &s, &c);
        e.z[0] = centre_at(*p.lib, p.hf_m, e.angle, c);
        e.z[1] = centre_at(*p.lib, p.hf_m, e.angle, s);
      }
      for (int w = 0; w < 2; ++w) {
        e.vg[w] = interval(e.zg[w], nullptr, out);
        if (p.hf_on) e.v[w] = interval(e.z[w], nullptr, out);
      }
    }
    for (std::int64_t j = 0; j < t.width; ++j) {
      const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
      if (i < 0 || static_cast<std::size_t>(i) >= P) continue;
      const auto iu = static_cast<std::size_t>(i);
      const per_pair& e = row[iu];
      for (int w = 0; w < 2; ++w) {
        replay_acc& a = w == 0 ? cos : sin;
        const double got = value_at<T>(w == 0 ? t.cos : t.sin, r, j);
        const double y = (w == 0 ? exact_cos : exact_sin)[q * P + iu];
        const auto note = [&](std::size_t g, const span_of& v, double rho) {
          if (g < kGgml && rho > 1) a.beyond[iu] |= static_cast<std::uint8_t>(1u << g);
          a.rho[g] = std::max(a.rho[g], rho);
          a.oct_rho[g][key] = std::max(a.oct_rho[g][key], rho);
          a.oct_bound[g][key] = std::max(a.oct_bound[g][key], std::max(v.hi - y, y - v.lo));
        };
        // ggml's recurrence (its rung; the octave figures of the ggml form).
        note(kGgml, e.vg[w], interval_rho(got, e.zg[w].c, e.vg[w]));
        if (!p.hf_on) continue;
        const centre& z = e.z[w];
        const span_of& v = e.v[w];
        note(kHf, v, interval_rho(got, z.c, v));
        for (std::size_t s = 0; s < 2; ++s) {
          if (std::isfinite(got) && round_in(got, kStorage[s]) != got) {
            ++a.off_grid[s];
            continue;
          }
          if (a.off_grid[s] > 0) continue;  // not followed: its figures no longer matter
          if (kStorage[s] == out) {
            note(1 + s, v, interval_rho(got, z.c, v));  // the cache is the output's rounding
            continue;
          }
          const span_of vs = interval(z, &kStorage[s], out);
          note(1 + s, vs, interval_rho(got, z.c, vs));
        }
        // The least trig error this value implies around the hf angle: its distance from the
        // centre less what the output's rounding (a whole ulp of T: either binade), the product
        // and m̂ can explain.
        if (std::isfinite(got)) {
          const replay_magnitude& mg = p.hf_m;
          const double mm = mg.m + mg.err;
          const double hidden =
              (narrow ? metric::ulp_at_finite(std::fabs(got), out) : 0.0) +
              (mg.exact() ? 0.0 : metric::ulp_at_finite(mm, metric::kF32) / 2 + mg.err * z.a);
          const double least = std::max(0.0, (std::fabs(got - z.c) - hidden) / mm);
          a.trig_least = std::max(a.trig_least, least);
          a.trig_least_ulp = std::max(a.trig_least_ulp, least / z.ulp_c);
          // The same around the exact angle (y = m·cos θ): what a table that follows it implies.
          const double t_exact = std::fabs(y) / mg.m;
          const double least_exact = std::max(0.0, (std::fabs(got - y) - hidden) / mm);
          a.exact_least = std::max(a.exact_least, least_exact);
          a.exact_least_ulp = std::max(
              a.exact_least_ulp,
              least_exact / metric::ulp_at_finite(std::min(t_exact, 1.0 - 0x1p-25), metric::kF32));
          if (e.angle != 0.0f) {
            const double angle = std::fabs(static_cast<double>(e.angle));
            a.slope_least = std::max(a.slope_least, (least - metric::kFastMathAbs) / angle);
            a.exact_slope_least =
                std::max(a.exact_slope_least, (least_exact - metric::kFastMathAbs) / angle);
          }
        }
      }
    }
  }
}

template <class T>
void replay_again(const replay_plan& p, const compare::rope_reference& ref, const table_source& t,
                  const std::vector<std::int64_t>& pos, std::size_t first, std::size_t end,
                  replay_acc& cos, replay_acc& sin) {
  constexpr std::size_t kRows = 1024;
  cos = {};
  sin = {};
  // The reference's values as the comparison had them, from a copy of it: not counted again in
  // its statistics (the certificate's provenance).
  compare::rope_reference own = ref;
  compare::typed_values<T> rc, rs;
  for (std::size_t r0 = first; r0 < end; r0 += kRows) {
    const std::span<const std::int64_t> at(pos.data() + r0, std::min(kRows, end - r0));
    own.table<T>(at, rc, rs, /*rounded_doubles=*/false);
    replay_rows<T>(p, t, r0, at, rc.exact, rs.exact, own.pairs(), cos, sin);
  }
}

std::vector<std::size_t> pairs_beyond_every_rung(const replay_plan& p, const replay_acc& cos,
                                                 const replay_acc& sin) {
  std::vector<std::size_t> out;
  if (!p.hf_on) return out;
  const std::size_t pairs = p.freq.size();
  for (std::size_t i = 0; i < pairs; ++i) {
    const auto bits = static_cast<unsigned>((i < cos.beyond.size() ? cos.beyond[i] : 0) |
                                            (i < sin.beyond.size() ? sin.beyond[i] : 0));
    // A cache the choice does not weigh holds no value of the pair (choose_frequencies: ρ = +∞).
    bool beyond = (bits & 1u) != 0;
    for (std::size_t s = 0; s < 2; ++s) {
      beyond = beyond && (!p.caches_weighed[s] || (bits & (2u << s)) != 0);
    }
    if (beyond) out.push_back(i);
  }
  return out;
}

bool follows_exact_angles(const std::vector<check>& checks) {
  double exact = 0, hf = 0;
  bool any = false;
  for (const check& c : checks) {
    if (!c.replayed || c.replayed->rho.count("hf") == 0) continue;
    any = true;
    exact = std::max(exact, c.replayed->exact_at_least_ulp);
    hf = std::max(hf, c.replayed->trig_at_least_ulp);
  }
  return any && exact < hf;
}

double least_trig_ulp(const std::vector<check>& checks) {
  const bool exact = follows_exact_angles(checks);
  double ulp = 0;
  for (const check& c : checks) {
    if (!c.replayed) continue;
    ulp = std::max(ulp, exact ? c.replayed->exact_at_least_ulp : c.replayed->trig_at_least_ulp);
  }
  return ulp;
}

void record_replay(check& c, const replay_acc& a, const replay_plan& p) {
  check::recipe_replay r;
  if (p.hf_on) {
    r.rho["hf"] = a.rho[kHf];
    for (std::size_t s = 0; s < 2; ++s) {
      const std::string name = kReplayRungs[1 + s];
      if (a.off_grid[s] == 0) {
        r.rho[name] = a.rho[1 + s];
      } else {
        r.not_followed[name] = a.off_grid[s];
      }
    }
  }
  r.rho["ggml"] = a.rho[kGgml];
  r.frequencies = p.hf_on ? p.frequencies + "; " + p.ratio : p.ratio;
  for (const auto& [name, rho] : r.rho) {
    const auto g = static_cast<std::size_t>(
        std::find(kReplayRungs.begin(), kReplayRungs.end(), name) - kReplayRungs.begin());
    std::size_t last = 0;
    for (std::size_t k = 0; k < a.oct_bound[g].size(); ++k) {
      if (a.oct_bound[g][k] > 0 || a.oct_rho[g][k] > 0) last = k + 1;
    }
    const auto end = static_cast<std::ptrdiff_t>(last);
    r.octave_bound[name].assign(a.oct_bound[g].begin(), a.oct_bound[g].begin() + end);
    r.octave_rho[name].assign(a.oct_rho[g].begin(), a.oct_rho[g].begin() + end);
  }
  r.trig_at_least = a.trig_least;
  r.trig_at_least_ulp = a.trig_least_ulp;
  r.trig_slope_at_least = a.slope_least;
  r.exact_at_least = a.exact_least;
  r.exact_at_least_ulp = a.exact_least_ulp;
  r.exact_slope_at_least = a.exact_slope_least;
  c.replayed = r;
}

void library_from_replay(report::library_figures& lib, const std::vector<check>& checks) {
  if (lib.trig_ulp) return;
  const bool exact_angles = follows_exact_angles(checks);
  double ulp = 0, abs = 0, slope = -kInf;
  bool any = false;
  for (const check& c : checks) {
    if (!c.replayed || c.replayed->rho.count("hf") == 0) continue;
    any = true;
    const check::recipe_replay& r = *c.replayed;
    ulp = std::max(ulp, exact_angles ? r.exact_at_least_ulp : r.trig_at_least_ulp);
    abs = std::max(abs, exact_angles ? r.exact_at_least : r.trig_at_least);
    slope = std::max(slope, exact_angles ? r.exact_slope_at_least : r.trig_slope_at_least);
  }
  if (!any) return;
  lib.trig_ulp_at_least = ulp;
  lib.trig_abs_at_least = abs;
  lib.trig_slope_at_least = slope;
  // Decided here over every replayed row (a merge comes here again with the shards' maxima).
  lib.angles = exact_angles ? "exact" : "";
  const std::string around =
      exact_angles ? " (measured around the exact angles p·θ_i, which the values follow)" : "";
  if (ulp <= metric::kAnyConforming.sin_cos) {
    lib.trig_class =
        "within every conforming class (the output's rounding hides the rest)" + around;
  } else if (slope <= metric::kFastMathSlope) {
    lib.trig_class = fmt::format(
        "{}: beyond every conforming class, growing as {:.3g}·|angle| (the class allows {:.4g})",
        metric::kFastMath.name, std::max(slope, 0.0), metric::kFastMathSlope);
  } else {
    lib.trig_class = exact_angles
                         ? "beyond every documented class around the exact angles (no conforming "
                           "library)"
                         : "beyond every documented class around the hf recipe's angles (not its "
                           "angles, or no conforming library)";
  }
}

void merge_replay(check::recipe_replay& into, const check::recipe_replay& later) {
  for (const auto& [name, n] : later.not_followed) into.not_followed[name] += n;
  for (auto it = into.rho.begin(); it != into.rho.end();) {
    const auto other = later.rho.find(it->first);
    if (into.not_followed.count(it->first) || other == later.rho.end()) {
      it = into.rho.erase(it);
    } else {
      it->second = std::max(it->second, other->second);
      ++it;
    }
  }
  const auto max_into = [](std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() < b.size()) a.resize(b.size(), 0.0);
    for (std::size_t k = 0; k < b.size(); ++k) a[k] = std::max(a[k], b[k]);
  };
  for (auto* m : {&into.octave_bound, &into.octave_rho}) {
    for (auto it = m->begin(); it != m->end();) {
      it = into.rho.count(it->first) ? std::next(it) : m->erase(it);
    }
  }
  for (auto& [name, v] : into.octave_bound) {
    if (const auto it = later.octave_bound.find(name); it != later.octave_bound.end()) {
      max_into(v, it->second);
    }
  }
  for (auto& [name, v] : into.octave_rho) {
    if (const auto it = later.octave_rho.find(name); it != later.octave_rho.end()) {
      max_into(v, it->second);
    }
  }
  into.trig_at_least = std::max(into.trig_at_least, later.trig_at_least);
  into.trig_at_least_ulp = std::max(into.trig_at_least_ulp, later.trig_at_least_ulp);
  into.trig_slope_at_least = std::max(into.trig_slope_at_least, later.trig_slope_at_least);
  into.exact_at_least = std::max(into.exact_at_least, later.exact_at_least);
  into.exact_at_least_ulp = std::max(into.exact_at_least_ulp, later.exact_at_least_ulp);
  into.exact_slope_at_least = std::max(into.exact_slope_at_least, later.exact_slope_at_least);
}

void decide_ladder(check& c, const std::string& held) {
  if (!c.replayed) return;
  const check::recipe_replay& r = *c.replayed;
  double prev = kInf;
  bool vacuous = false;
  for (const std::string& name : bound_names(true, true)) {
    const auto it = c.ladder_rho.find(name);
    if (it == c.ladder_rho.end()) continue;
    const bool replayed =
        std::find(kReplayRungs.begin(), kReplayRungs.end(), name) != kReplayRungs.end();
    vacuous = vacuous || c.vacuous.count(name) > 0;
    double own = kInf;
    if (replayed) {
      if (const auto rr = r.rho.find(name); rr != r.rho.end()) own = rr->second;
    } else if (!vacuous) {
      own = it->second;
    }
    prev = std::min(prev, own);
    it->second = prev;
  }
  if (const auto it = c.ladder_rho.find(held); it != c.ladder_rho.end()) c.max_rho = it->second;
  // The octave figures of the held rung: its replay's bound and ρ.
  const auto bound = r.octave_bound.find(held);
  const auto rho = r.octave_rho.find(held);
  if (bound != r.octave_bound.end() && rho != r.octave_rho.end()) {
    for (report::octave& o : c.octaves) {
      double b = 0, x = 0;
      for (std::size_t k = 0; k < bound->second.size() && k < 64; ++k) {
        const std::int64_t rp = k == 0 ? 0 : std::int64_t{1} << (k - 1);
        if (rp >= o.lo && rp < o.hi) {
          b = std::max(b, bound->second[k]);
          x = std::max(x, k < rho->second.size() ? rho->second[k] : 0.0);
        }
      }
      o.max_bound = b;
      o.max_rho = x;
    }
  }
}

/// The choice's check on every row, deferred to the replay of every row (docs/numerics.md
/// §13.9): the pairs it leaves a value beyond every rung chosen again on every row, and the rows
/// replayed again where that changed a frequency.
template <class T>
void finish_choice(const context& k, const compare::rope_reference& ref, const table_source& t,
                   const std::vector<std::int64_t>& pos, std::size_t first_row, std::size_t end_row,
                   replay_plan& plan, replay_acc& rcos, replay_acc& rsin) {
  if (!plan.every_row_deferred) return;
  const std::vector<std::size_t> again = pairs_beyond_every_rung(plan, rcos, rsin);
  if (!again.empty() && choose_again_on_every_row<T>(plan, again, t, pos, arena_threads(k.o))) {
    replay_again<T>(plan, ref, t, pos, first_row, end_row, rcos, rsin);
  }
}

/// The rungs the replay decides on the last two checks (the table's cos and sin); the library's
/// least error around the angles the values follow (docs/numerics.md §13.7).
void record_table_replay(context& k, const replay_plan& plan, const replay_acc& rcos,
                         const replay_acc& rsin) {
  for (int which = 0; which < 2; ++which) {
    check& c = k.cert.checks[k.cert.checks.size() - 2 + static_cast<std::size_t>(which)];
    record_replay(c, which == 0 ? rcos : rsin, plan);
    settle(c, k.o);
  }
  library_from_replay(k.c().library, k.cert.checks);
}

#define PEV_REPLAY(T)                                                                            \
  template replay_plan plan_replay<T>(const spec::rope&, std::optional<std::int64_t>,            \
                                      const impl::rope_contract*, const impl::rope_contract&,    \
                                      double, const std::vector<double>&, const table_source&,   \
                                      const std::vector<std::int64_t>&, const io::array*,        \
                                      const metric::libm&, int, std::size_t, bool);              \
  template void replay_rows<T>(const replay_plan&, const table_source&, std::size_t,             \
                               std::span<const std::int64_t>, std::span<const double>,           \
                               std::span<const double>, std::int64_t, replay_acc&, replay_acc&); \
  template void replay_again<T>(const replay_plan&, const compare::rope_reference&,              \
                                const table_source&, const std::vector<std::int64_t>&,           \
                                std::size_t, std::size_t, replay_acc&, replay_acc&);
#define PEV_FINISH(T)                                                                   \
  template void finish_choice<T>(const context&, const compare::rope_reference&,        \
                                 const table_source&, const std::vector<std::int64_t>&, \
                                 std::size_t, std::size_t, replay_plan&, replay_acc&,   \
                                 replay_acc&);
PEV_FINISH(float)
PEV_FINISH(double)
PEV_FINISH(half)
PEV_FINISH(bfloat16)
#undef PEV_FINISH
PEV_REPLAY(float)
PEV_REPLAY(double)
PEV_REPLAY(half)
PEV_REPLAY(bfloat16)
#undef PEV_REPLAY

}  // namespace pev::certify::detail

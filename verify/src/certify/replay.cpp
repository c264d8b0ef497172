// The recipe replay of a RoPE table (replay.h; docs/numerics.md §13.7).

#include "replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"

namespace pev::certify::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Rows of the table the frequencies are chosen on (the largest positions first).
constexpr std::size_t kChooseRows = 2048;
/// fp32 frequencies tried per side of the exact one.
constexpr int kMaxCandidates = 32;

/// x rounded to nearest (ties to even) in format f, from a double (no overflow: |x| is a table
/// value's). x/ulp is an integer-spaced significand, so nearbyint rounds it as the format would.
double round_in(double x, format f) {
  if (!std::isfinite(x) || x == 0) return x;
  const double u = metric::ulp_at_finite(std::fabs(x), f);
  return std::nearbyint(x / u) * u;
}

/// Whether format `a` holds every value of format `b` (fp32 and fp64 hold the 16-bit formats).
constexpr bool holds_every(format a, format b) { return a.p >= b.p && a.emin <= b.emin; }

/// The value of format f after x (x finite, in f): the next one up.
double next_up(double x, format f) {
  if (x >= 0) return x + metric::ulp_at_finite(x, f);
  double u = metric::ulp_at_finite(-x, f);
  int e = 0;
  // −2^e: the values above it are the binade below's, half as far apart (not subnormals).
  if (std::frexp(-x, &e) == 0.5 && u > metric::ulp_at_finite(0, f)) u /= 2;
  return x + u;
}

/// The outputs a rung can produce for one value: every one lies in [lo, hi]; ρ ≤ 1 exactly for
/// them. Where the interval was rounded to a format, ρ is measured against the midpoints between
/// its ends and the next values out (the first values it cannot produce lie beyond them), so that
/// a value at an end has ρ < 1 and the first one past it ρ > 1.
struct span_of {
  double lo = 0, hi = 0;
  double room_up = 0, room_down = 0;  // from the centre to the limits ρ = 1
};

/// ρ of a value against the outputs a rung can produce around its centre c.
double interval_rho(double got, double c, const span_of& s) {
  if (!std::isfinite(got)) return kInf;
  const double dev = got - c;
  if (dev == 0) return 0;
  const double room = dev > 0 ? s.room_up : s.room_down;
  if (!(room > 0)) return kInf;
  return std::fabs(dev) / room;
}

/// What the recipe can produce for one value: centre c = m·cos θ̂ and the fp32 pipeline's radius.
struct centre {
  double c = 0, a = 0, r32 = 0, ulp_c = 0;
};

centre centre_of(const replay_plan& p, float angle, bool is_sin) {
  const double th = angle;
  const double t = is_sin ? std::sin(th) : std::cos(th);
  centre z;
  z.a = std::fabs(t);
  z.c = p.m * t;
  // The ulp of the library's result (|t| < 1 unless θ̂ = 0, where it is exact): trig_f32_bound's.
  z.ulp_c = metric::ulp_at_finite(std::min(z.a, 1.0 - 0x1p-25), metric::kF32);
  const double te = metric::trig_error(*p.lib, z.ulp_c, th);
  double r = te;
  if (!p.m_exact) {
    const double mm = p.m + p.m_err;
    r = mm * te + p.m_err * z.a + metric::ulp_at_finite(mm * (z.a + te), metric::kF32) / 2;
  }
  // The bound's own evaluation (kSlack) and the double centre's rounding.
  z.r32 = r * (1 + 0x1p-40) + 0x1p-52 * std::fabs(z.c);
  return z;
}

/// The outputs of a rung: the fp32 interval through storage `s` (vLLM's cache) and the output's
/// rounding.
span_of interval(const centre& z, const format* s, format out) {
  span_of v{z.c - z.r32, z.c + z.r32, z.r32, z.r32};
  bool rounded = false;
  if (s) {
    v.lo = round_in(v.lo, *s);
    v.hi = round_in(v.hi, *s);
    rounded = true;
  }
  const format& cur = s ? *s : metric::kF32;
  format last = cur;
  if (!holds_every(out, cur)) {
    v.lo = round_in(v.lo, out);
    v.hi = round_in(v.hi, out);
    rounded = true;
    last = out;
  }
  if (rounded) {
    v.room_up = (v.hi + next_up(v.hi, last)) / 2 - z.c;
    v.room_down = z.c - (v.lo - next_up(-v.lo, last)) / 2;
  }
  return v;
}

constexpr format kStorage[2] = {metric::kF16, metric::kBF16};

/// The angle of pair i at position p in the hf recipe: fl32(fl32(p)·f̂_i).
inline float hf_angle(std::int64_t p, float f) {
  return static_cast<float>(p) * f;  // position_ids.float(), then one fp32 product
}

}  // namespace

void replay_acc::merge(const replay_acc& o) {
  for (std::size_t k = 0; k < rho.size(); ++k) rho[k] = std::max(rho[k], o.rho[k]);
  for (std::size_t k = 0; k < off_grid.size(); ++k) off_grid[k] += o.off_grid[k];
  trig_least = std::max(trig_least, o.trig_least);
  trig_least_ulp = std::max(trig_least_ulp, o.trig_least_ulp);
  slope_least = std::max(slope_least, o.slope_least);
  for (std::size_t k = 0; k < oct_bound.size(); ++k) {
    oct_bound[k] = std::max(oct_bound[k], o.oct_bound[k]);
    oct_rho[k] = std::max(oct_rho[k], o.oct_rho[k]);
  }
}

template <class T>
replay_plan plan_replay(const spec::rope& s, const impl::rope_contract& hf, double m,
                        const std::vector<double>& theta, const table_source& t,
                        const std::vector<std::int64_t>& pos, const io::array* inv_freq,
                        const metric::libm& lib) {
  replay_plan p;
  if (s.type == spec::rope_type::ggml || s.streams() > 1) return p;
  p.on = true;
  p.lib = &lib;
  p.m = m;
  p.m_err = hf.attention_factor_bound();
  p.m_exact = m == 1.0 && p.m_err == 0.0;
  const std::size_t pairs = theta.size();
  p.freq.assign(pairs, 0.0f);
  std::vector<std::vector<float>> cand(pairs);
  for (std::size_t i = 0; i < pairs; ++i) {
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
  // The dump's own fp32 inv_freq, where every pair's lies within the contract.
  if (inv_freq && inv_freq->type == dtype::fp32 && static_cast<std::size_t>(inv_freq->elements()) == pairs) {
    bool within = true;
    std::vector<float> f(pairs);
    for (std::size_t i = 0; i < pairs; ++i) {
      f[i] = element<float>(*inv_freq, i);
      within = within && std::find(cand[i].begin(), cand[i].end(), f[i]) != cand[i].end();
    }
    if (within) {
      p.freq = f;
      p.frequencies = "the dump's inv_freq (fp32, within the hf recipe's bound of every pair)";
      return p;
    }
  }
  // Else per pair, the candidate that fits the rows with the largest positions best.
  std::vector<std::size_t> order(pos.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return pos[a] > pos[b]; });
  order.resize(std::min(order.size(), kChooseRows));
  constexpr format out = format_of<T>();
  std::size_t tried = 0;
  for (std::size_t i = 0; i < pairs; ++i) {
    tried = std::max(tried, cand[i].size());
    if (cand[i].size() == 1) {
      p.freq[i] = cand[i][0];
      continue;
    }
    double best = kInf;
    for (const float f : cand[i]) {
      double worst = 0;
      for (const std::size_t r : order) {
        const float angle = hf_angle(pos[r], f);
        for (std::int64_t j = 0; j < t.width && worst <= best; ++j) {
          if (t.pair[static_cast<std::size_t>(j)] != static_cast<std::int64_t>(i)) continue;
          for (int w = 0; w < 2; ++w) {
            const plane& pl = w == 0 ? t.cos : t.sin;
            const double got = scalar_traits<T>::to_double(
                element<T>(*pl.a, pl.at(static_cast<std::int64_t>(r), j)));
            const centre z = centre_of(p, angle, w == 1);
            worst = std::max(worst, interval_rho(got, z.c, interval(z, nullptr, out)));
          }
        }
        if (worst > best) break;
      }
      if (worst < best) {
        best = worst;
        p.freq[i] = f;
      }
    }
  }
  p.frequencies = fmt::format(
      "per pair, the fp32 frequency within the hf recipe's bound that fits the {} rows of the "
      "largest positions best (up to {} tried per pair)",
      order.size(), tried);
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
  for (std::size_t q = 0; q < positions.size(); ++q) {
    const std::int64_t pq = positions[q];
    const auto key = static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(pq)));
    const auto r = static_cast<std::int64_t>(r0 + q);
    for (std::int64_t j = 0; j < t.width; ++j) {
      const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
      if (i < 0) continue;
      const auto iu = static_cast<std::size_t>(i);
      const float angle = hf_angle(pq, p.freq[iu]);
      for (int w = 0; w < 2; ++w) {
        replay_acc& a = w == 0 ? cos : sin;
        const plane& pl = w == 0 ? t.cos : t.sin;
        const double got = scalar_traits<T>::to_double(element<T>(*pl.a, pl.at(r, j)));
        const double y = (w == 0 ? exact_cos : exact_sin)[q * P + iu];
        const centre z = centre_of(p, angle, w == 1);
        const span_of v = interval(z, nullptr, out);
        const double rho = interval_rho(got, z.c, v);
        a.rho[0] = std::max(a.rho[0], rho);
        a.oct_rho[key] = std::max(a.oct_rho[key], rho);
        a.oct_bound[key] = std::max(a.oct_bound[key], std::max(v.hi - y, y - v.lo));
        for (std::size_t s = 0; s < 2; ++s) {
          if (std::isfinite(got) && round_in(got, kStorage[s]) != got) {
            ++a.off_grid[s];
            continue;
          }
          a.rho[1 + s] =
              std::max(a.rho[1 + s], interval_rho(got, z.c, interval(z, &kStorage[s], out)));
        }
        // The least trig error this value implies: its distance from the centre less what the
        // output's rounding (a whole ulp of T: either binade), the product and m̂ can explain.
        if (std::isfinite(got)) {
          const double mm = p.m + p.m_err;
          const double hidden =
              (narrow ? metric::ulp_at_finite(std::fabs(got), out) : 0.0) +
              (p.m_exact ? 0.0 : metric::ulp_at_finite(mm, metric::kF32) / 2 + p.m_err * z.a);
          const double least = std::max(0.0, (std::fabs(got - z.c) - hidden) / mm);
          a.trig_least = std::max(a.trig_least, least);
          a.trig_least_ulp = std::max(a.trig_least_ulp, least / z.ulp_c);
          if (angle != 0.0f) {
            a.slope_least = std::max(a.slope_least, (least - metric::kFastMathAbs) /
                                                        std::fabs(static_cast<double>(angle)));
          }
        }
      }
    }
  }
}

void record_replay(check& c, const replay_acc& a, const replay_plan& p, format out,
                   bool ggml_angles) {
  (void)out;
  check::recipe_replay r;
  r.rho["hf"] = a.rho[0];
  for (std::size_t s = 0; s < 2; ++s) {
    const std::string name = kReplayRungs[1 + s];
    if (a.off_grid[s] == 0) {
      r.rho[name] = a.rho[1 + s];
    } else {
      r.not_followed[name] = fmt::format("{} value(s) not representable in {}: not a {} cache",
                                         a.off_grid[s], s == 0 ? "fp16" : "bf16",
                                         s == 0 ? "fp16" : "bf16");
    }
  }
  r.ggml_angles = ggml_angles;
  r.frequencies = p.frequencies;
  for (const report::octave& o : c.octaves) {
    double b = 0, rho = 0;
    for (std::size_t k = 0; k < a.oct_bound.size(); ++k) {
      const std::int64_t rp = k == 0 ? 0 : std::int64_t{1} << (k - 1);
      if (k < 64 && rp >= o.lo && rp < o.hi) {
        b = std::max(b, a.oct_bound[k]);
        rho = std::max(rho, a.oct_rho[k]);
      }
    }
    r.octave_bound.push_back(b);
    r.octave_rho.push_back(rho);
  }
  r.trig_at_least = a.trig_least;
  r.trig_at_least_ulp = a.trig_least_ulp;
  r.trig_slope_at_least = a.slope_least;
  c.replayed = r;
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
    } else if (!vacuous && (name != "ggml" || r.ggml_angles)) {
      own = it->second;
    }
    prev = std::min(prev, own);
    it->second = prev;
  }
  if (const auto it = c.ladder_rho.find(held); it != c.ladder_rho.end()) c.max_rho = it->second;
  // The octave figures of the held rung: the replay's bound and ρ where it decides.
  if (std::find(kReplayRungs.begin(), kReplayRungs.end(), held) != kReplayRungs.end()) {
    for (std::size_t o = 0; o < c.octaves.size() && o < r.octave_bound.size(); ++o) {
      c.octaves[o].max_bound = r.octave_bound[o];
      c.octaves[o].max_rho = r.octave_rho[o];
    }
  }
}

#define PEV_REPLAY(T)                                                                             \
  template replay_plan plan_replay<T>(const spec::rope&, const impl::rope_contract&, double,     \
                                      const std::vector<double>&, const table_source&,           \
                                      const std::vector<std::int64_t>&, const io::array*,        \
                                      const metric::libm&);                                      \
  template void replay_rows<T>(const replay_plan&, const table_source&, std::size_t,             \
                               std::span<const std::int64_t>, std::span<const double>,           \
                               std::span<const double>, std::int64_t, replay_acc&, replay_acc&);
PEV_REPLAY(float)
PEV_REPLAY(double)
PEV_REPLAY(half)
PEV_REPLAY(bfloat16)
#undef PEV_REPLAY

}  // namespace pev::certify::detail

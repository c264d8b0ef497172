// Recovering a RoPE table's frequencies and attention factor from its rows, and measuring its
// math library against the hf recipe's own angles (recover.h).

#include "recover.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <span>
#include <type_traits>

#include "pev/impl/implementation.h"
#include "pev/kernel/rope.h"
#include "pev/metric/error_model.h"
#include "pev/ref/rope.h"

namespace pev::certify::detail {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kTwoPi = 2 * std::numbers::pi;

/// An angle difference brought to [−π, π].
double wrap(double a) { return a - kTwoPi * std::nearbyint(a / kTwoPi); }

/// The largest angle error a conforming library's cos/sin (≤ 2 ulps, then a product by m rounded)
/// can show through atan2 of a (cos, sin) pair: each value off by ≤ 2.5 ulp_32(m), so the angle by
/// ≤ 2·2.5·2^−23 (relative to m); with a factor 2 of margin.
constexpr double kAngleTolerance = 10 * 0x1p-23;

/// The hf recipe's angle: fl(fl(p)·f̂) in fp32.
float hf_angle(std::int64_t p, float f) { return static_cast<float>(p) * f; }

struct row_at {
  std::int64_t p;
  std::int64_t r;
};

/// Rows per batch of exact_figures' reference values.
constexpr std::size_t kExactRows = 1024;

/// The figures of a table against the exact angles p·θ_i (docs/numerics.md §13.6): none when some
/// observed angle (obs, [row, pair]; NaN where it tells nothing) is not within kAngleTolerance of
/// RN_double(p·θ_i); else max |ĉ − y| over every value in ulps of fp32 at |y| and, absolute, over
/// m — y the exact m·cos or m·sin (RN_double, from `exact`). value(r, j, sin): the table's value.
template <class Value>
std::optional<std::pair<double, double>> exact_figures(const ref::fast_rope_reference& exact,
                                                       const std::vector<row_at>& rows,
                                                       const std::vector<double>& obs,
                                                       const std::vector<std::int64_t>& col,
                                                       double m, Value&& value) {
  const std::size_t P = col.size();
  double ulp = 0, abs_err = 0;
  std::vector<std::int64_t> p;
  std::vector<double> ang, c, s;
  for (std::size_t k0 = 0; k0 < rows.size(); k0 += kExactRows) {
    const std::size_t n = std::min(kExactRows, rows.size() - k0);
    p.resize(n);
    for (std::size_t k = 0; k < n; ++k) p[k] = rows[k0 + k].p;
    ang.resize(n * P);
    c.resize(n * P);
    s.resize(n * P);
    exact.angles<double>(p, ang);
    exact.table<double>(p, c, s);
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t i = 0; i < P; ++i) {
        if (col[i] < 0) continue;
        const double a = obs[(k0 + k) * P + i];
        if (!std::isnan(a) && std::fabs(wrap(a - ang[k * P + i])) > kAngleTolerance) {
          return std::nullopt;
        }
        for (int which = 0; which < 2; ++which) {
          const double y = (which ? s : c)[k * P + i];
          const double got = value(rows[k0 + k].r, col[i], which == 1);
          if (y == 0 || !std::isfinite(got)) continue;
          ulp = std::max(ulp, std::fabs(got - y) / metric::ulp_at(std::fabs(y), metric::kF32));
          abs_err = std::max(abs_err, std::fabs(got - y) / (m > 0 ? m : 1.0));
        }
      }
    }
  }
  return std::pair{ulp, abs_err};
}

/// What a fit reads of a table: the first row of every distinct position it reads (by position),
/// the first column of every pair (−1: none) and the values there.
template <class T>
struct fit_view {
  const table_source& t;
  std::vector<row_at> rows;
  std::vector<std::int64_t> col;
  std::size_t P = 0;
  double value(std::int64_t r, std::int64_t j, bool sin) const {
    const plane& pl = sin ? t.sin : t.cos;
    return element_value<T>(*pl.a, pl.at(r, j));
  }
};

/// The first row of every distinct position, by position (a negative one: a row the caller
/// leaves out, recover.h); past max_rows (> 0) a sample — the first quarter densely (the
/// frequencies are unwrapped along increasing positions), the rest evenly spaced to the last
/// position — which fit.measured_on states.
std::vector<row_at> fit_rows(const std::vector<std::int64_t>& pos, std::size_t max_rows,
                             table_fit& fit) {
  std::vector<row_at> rows;
  for (std::size_t r = 0; r < pos.size(); ++r) {
    if (pos[r] >= 0) rows.push_back({pos[r], static_cast<std::int64_t>(r)});
  }
  const auto by_position = [](const row_at& a, const row_at& b) { return a.p < b.p; };
  if (!std::is_sorted(rows.begin(), rows.end(), by_position)) {
    std::stable_sort(rows.begin(), rows.end(), by_position);
  }
  rows.erase(std::unique(rows.begin(), rows.end(),
                         [](const row_at& a, const row_at& b) { return a.p == b.p; }),
             rows.end());
  if (max_rows == 0 || rows.size() <= max_rows) return rows;
  const std::size_t dense = max_rows / 4, n = rows.size();
  std::vector<row_at> sample(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(dense));
  for (std::size_t j = 0; j < max_rows - dense; ++j) {
    sample.push_back(rows[dense + (j + 1) * (n - dense) / (max_rows - dense) - 1]);
  }
  fit.measured_on = std::to_string(sample.size()) + " of " + std::to_string(n) + " positions";
  return sample;
}

/// The first column of every pair of P (−1: none).
std::vector<std::int64_t> first_columns(const table_source& t, std::size_t P) {
  std::vector<std::int64_t> col(P, -1);
  for (std::size_t j = 0; j < t.pair.size(); ++j) {
    const std::int64_t i = t.pair[j];
    if (i < 0 || static_cast<std::size_t>(i) >= P) continue;
    auto& c = col[static_cast<std::size_t>(i)];
    if (c < 0) c = static_cast<std::int64_t>(j);
  }
  return col;
}

/// The attention factor: cos(0)·m̂ = m̂ exactly at position 0, else the median magnitude of pair
/// 0 (0 when no row has finite values).
template <class T>
double fit_magnitude(const fit_view<T>& v) {
  const row_at& first = v.rows.front();
  if (first.p == 0 && std::isfinite(v.value(first.r, v.col[0], false))) {
    return v.value(first.r, v.col[0], false);
  }
  std::vector<double> mags;
  for (const row_at& row : v.rows) {
    const double c = v.value(row.r, v.col[0], false), sn = v.value(row.r, v.col[0], true);
    if (std::isfinite(c) && std::isfinite(sn)) mags.push_back(std::hypot(c, sn));
  }
  if (mags.empty()) return 0;
  std::nth_element(mags.begin(), mags.begin() + static_cast<std::ptrdiff_t>(mags.size() / 2),
                   mags.end());
  return mags[mags.size() / 2];
}

/// Every value's angle, atan2(ŝ, ĉ), [row, pair] (NaN where it tells nothing: position 0, no
/// column, a non-finite or zero pair).
template <class T>
std::vector<double> observed_angles(const fit_view<T>& v) {
  std::vector<double> obs(v.rows.size() * v.P, kNaN);
  for (std::size_t k = 0; k < v.rows.size(); ++k) {
    if (v.rows[k].p <= 0) continue;
    for (std::size_t i = 0; i < v.P; ++i) {
      if (v.col[i] < 0) continue;
      const double c = v.value(v.rows[k].r, v.col[i], false);
      const double sn = v.value(v.rows[k].r, v.col[i], true);
      if (std::isfinite(c) && std::isfinite(sn) && !(c == 0 && sn == 0)) {
        obs[k * v.P + i] = std::atan2(sn, c);
      }
    }
  }
  return obs;
}

/// Per pair: the angles unwrapped along increasing positions, and their least-squares slope
/// through 0 (NaN: no angle).
std::vector<double> unwrapped_frequencies(const std::vector<row_at>& rows,
                                          const std::vector<double>& obs, std::size_t P) {
  std::vector<double> freq(P, kNaN);
  for (std::size_t i = 0; i < P; ++i) {
    double est = kNaN, sum_pt = 0, sum_pp = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const double a = obs[k * P + i];
      if (std::isnan(a)) continue;
      const auto pd = static_cast<double>(rows[k].p);
      const double theta =
          std::isnan(est) ? a : a + kTwoPi * std::nearbyint((pd * est - a) / kTwoPi);
      sum_pt += pd * theta;
      sum_pp += pd * pd;
      est = sum_pt / sum_pp;
    }
    freq[i] = est;
  }
  return freq;
}

/// The library's error against a recipe's own angles, angle(k, i) of row k and pair i: the fp32
/// value t the library returned is one whose product by m̂ rounds to the data, fl(t·m̂) = ĉ
/// (t = ĉ when m̂ = 1); of those, the one nearest the exact cos θ̂ (the error the data proves, no
/// more). Sets fit.trig_ulp and fit.trig_abs; false (nothing set) when some value has no such t
/// (not this recipe).
template <class T, class Angle>
bool measure_trig(const fit_view<T>& v, Angle&& angle, table_fit& fit) {
  const auto mf = static_cast<float>(fit.m);
  double trig = 0, abs_err = 0;
  for (std::size_t k = 0; k < v.rows.size(); ++k) {
    for (std::size_t i = 0; i < v.P; ++i) {
      if (v.col[i] < 0) continue;
      const double a = angle(k, i);
      for (int which = 0; which < 2; ++which) {
        const double want = which ? std::sin(a) : std::cos(a);
        const double got = v.value(v.rows[k].r, v.col[i], which == 1);
        if (want == 0 || !std::isfinite(got)) continue;
        double t = got;
        if (mf != 1.0f && mf != 0.0f) {
          double best_t = std::numeric_limits<double>::infinity();
          float c = static_cast<float>(got / mf);
          for (int step = 0; step < 3; ++step) c = std::nextafter(c, -2.0f);
          for (int step = 0; step <= 6; ++step, c = std::nextafter(c, 2.0f)) {
            if (static_cast<double>(c * mf) == got &&
                std::fabs(c - want) < std::fabs(best_t - want)) {
              best_t = c;
            }
          }
          if (!std::isfinite(best_t)) return false;
          t = best_t;
        }
        trig = std::max(trig, std::fabs(t - want) / metric::ulp_at(std::fabs(want), metric::kF32));
        abs_err = std::max(abs_err, std::fabs(t - want));
      }
    }
  }
  fit.trig_ulp = trig;
  fit.trig_abs = abs_err;
  return true;
}

constexpr const char* kNotOneProduct =
    "the values are not fl(t·m̂) of an fp32 library result t: the magnitude is not one fp32 "
    "product";

/// The hf recipe: per pair, the fp32 frequency whose angles fl(fl(p)·f̂) explain every row (of
/// the 17 neighbours of the estimate fit.freq) into fit.freq_f32; whether every pair has one.
template <class T>
bool hf_frequencies(const fit_view<T>& v, const std::vector<double>& obs, table_fit& fit) {
  for (std::size_t i = 0; i < v.P; ++i) {
    if (v.col[i] < 0 || std::isnan(fit.freq[i])) return false;
    float best = 0;
    double best_res = std::numeric_limits<double>::infinity();
    float cand = static_cast<float>(fit.freq[i]);
    for (int step = 0; step < 8; ++step) {
      cand = std::nextafter(cand, -std::numeric_limits<float>::infinity());
    }
    for (int step = 0; step <= 16; ++step) {
      double res = 0;
      for (std::size_t k = 0; k < v.rows.size() && res <= best_res; ++k) {
        const double a = obs[k * v.P + i];
        if (!std::isnan(a)) {
          res = std::max(res, std::fabs(wrap(a - hf_angle(v.rows[k].p, cand))));
        }
      }
      if (res < best_res) {
        best_res = res;
        best = cand;
      }
      cand = std::nextafter(cand, std::numeric_limits<float>::infinity());
    }
    fit.freq_f32[i] = best;
    if (best_res > kAngleTolerance) return false;
  }
  return true;
}

/// The hf recipe's angles: its library measured against them, and for plain RoPE pow and the
/// reciprocal against the recipe's own exponent fl(2i/d) and fp32 base.
template <class T>
void measure_hf(const spec::rope& s, const fit_view<T>& v, table_fit& fit) {
  fit.angles = "hf";
  if (!measure_trig(
          v,
          [&](std::size_t k, std::size_t i) {
            return static_cast<double>(hf_angle(v.rows[k].p, static_cast<float>(fit.freq_f32[i])));
          },
          fit)) {
    fit.note = kNotOneProduct;
  }
  if (s.type != spec::rope_type::default_ || s.freq_scale != 1.0) return;
  const auto b = static_cast<long double>(static_cast<float>(s.rope_theta));
  double pw = 0;
  for (std::size_t i = 0; i < v.P; ++i) {
    const float x = static_cast<float>(2 * i) / static_cast<float>(s.rotary_dim);
    const auto own = static_cast<double>(1.0L / std::pow(b, static_cast<long double>(x)));
    pw = std::max(pw, std::fabs(fit.freq_f32[i] - own) / metric::ulp_at(own, metric::kF32));
  }
  fit.pow_ulp = pw;
}

/// The ggml recipe: the recurrence's angles, with the implementation's own ratio theta_scale (its
/// powf may round differently) and the rounding its build gives YaRN's angle mix (separate or
/// fused by FMA: kernel::ggml_mix; docs/numerics.md §8.7): of the neighbours of ggml's ratio with
/// each mix, the one whose angles agree with every observed angle within kAngleTolerance sets
/// fit.angles "ggml", and its library is measured.
template <class T>
void measure_ggml(const spec::rope& s, std::optional<std::int64_t> seq, const fit_view<T>& v,
                  const std::vector<double>& obs, table_fit& fit) {
  kernel::ggml_angle_plan plan(s, seq);
  const auto rot = static_cast<std::size_t>(std::min<std::int64_t>(plan.rotating(), s.pairs()));
  std::vector<float> ang(rot);
  const float own = plan.theta_scale();
  float best_ts = 0;
  kernel::ggml_mix best_mix = kernel::ggml_mix::separate;
  double best_res = std::numeric_limits<double>::infinity();
  for (const kernel::ggml_mix m : std::span(kernel::kGgmlMixes, plan.mixes() ? 3 : 1)) {
    plan.set_mix(m);
    float ts = own;
    for (int step = 0; step < 8; ++step) ts = std::nextafter(ts, 0.0f);
    for (int step = 0; step <= 16; ++step, ts = std::nextafter(ts, 2.0f)) {
      plan.set_theta_scale(ts);
      double res = 0;
      for (std::size_t k = 0; k < v.rows.size() && res <= best_res; ++k) {
        plan.angles(v.rows[k].p, ang);
        for (std::size_t i = 0; i < rot; ++i) {
          const double a = obs[k * v.P + i];
          if (!std::isnan(a)) res = std::max(res, std::fabs(wrap(a - ang[i])));
        }
      }
      if (res < best_res) {
        best_res = res;
        best_ts = ts;
        best_mix = m;
      }
    }
  }
  if (best_res > kAngleTolerance) return;
  plan.set_theta_scale(best_ts);
  plan.set_mix(best_mix);
  std::vector<double> all(v.rows.size() * rot);
  for (std::size_t k = 0; k < v.rows.size(); ++k) {
    plan.angles(v.rows[k].p, ang);
    std::copy(ang.begin(), ang.end(), all.begin() + static_cast<std::ptrdiff_t>(k * rot));
  }
  fit.angles = "ggml";
  if (!measure_trig(
          v, [&](std::size_t k, std::size_t i) { return i < rot ? all[k * rot + i] : 0.0; }, fit)) {
    fit.note = kNotOneProduct;
  }
}

/// The exact angles, where the values follow them (a correctly rounded or faithful table) and
/// explain them better than the recipe's measured above: the library is what made them from those
/// (the whole evaluation of m·cos, m·sin), and pow takes no part.
void prefer_exact(const std::optional<std::pair<double, double>>& exact_fit, table_fit& fit) {
  if (!exact_fit || (fit.trig_ulp && exact_fit->first >= *fit.trig_ulp)) return;
  fit.angles = "exact";
  fit.hf_angles = false;
  fit.trig_ulp = exact_fit->first;
  fit.trig_abs = exact_fit->second;
  fit.pow_ulp.reset();
  fit.note.clear();
}

}  // namespace

template <class T>
table_fit fit_table(const spec::rope& s, std::optional<std::int64_t> seq, const table_source& t,
                    const std::vector<std::int64_t>& pos, std::size_t max_rows,
                    const ref::fast_rope_reference* exact) {
  const auto P = static_cast<std::size_t>(s.pairs());
  table_fit fit;
  fit.freq.assign(P, kNaN);
  fit.freq_f32.assign(P, kNaN);
  std::vector<row_at> rows = fit_rows(pos, max_rows, fit);
  const fit_view<T> v{t, std::move(rows), first_columns(t, P), P};
  if (P == 0 || v.rows.empty() || v.col[0] < 0) {
    fit.note = "no rows or pairs to fit";
    return fit;
  }
  fit.m = fit_magnitude(v);
  const std::vector<double> obs = observed_angles(v);
  fit.freq = unwrapped_frequencies(v.rows, obs, P);
  if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double>) {
    fit.note = "a 16-bit table: the fp32 library error is below its resolution";
    return fit;
  }
  fit.hf_angles = hf_frequencies(v, obs, fit);
  std::optional<std::pair<double, double>> exact_fit;
  if (exact) {
    exact_fit = exact_figures(*exact, v.rows, obs, v.col, fit.m,
                              [&](auto r, auto j, bool sin) { return v.value(r, j, sin); });
  }
  if (fit.hf_angles) {
    measure_hf(s, v, fit);
  } else {
    std::fill(fit.freq_f32.begin(), fit.freq_f32.end(), kNaN);
    measure_ggml(s, seq, v, obs, fit);
  }
  prefer_exact(exact_fit, fit);
  if (fit.angles.empty()) {
    fit.note = exact ? "the angles are neither the exact p·θ_i, the hf recipe's fl(fl(p)·f) nor "
                       "ggml's recurrence"
                     : "the angles are neither the hf recipe's fl(fl(p)·f) nor ggml's recurrence";
  }
  return fit;
}

namespace {

/// Whether two positive figures differ by more than a relative 10^−4.
bool differs(double a, double b) {
  return std::fabs(a - b) > 1e-4 * std::max(std::fabs(a), std::fabs(b));
}

/// A figure as the data implies it, to 6 significant digits.
std::string shown(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// The base the fastest pairs imply, f_i = b^(−2i/d) from the ratio of pairs 1 and 0 (pair 0 is
/// 1 for every base, or the common factor of a linear scaling; YaRN and Llama-3 leave the fastest
/// pairs alone); NaN when the fit has no such pairs.
double base_from_fastest(const spec::rope& s, const table_fit& fit) {
  if (fit.freq.size() < 2 || !(fit.freq[1] > 0)) return kNaN;
  const double d = static_cast<double>(s.rotary_dim);
  return std::pow(fit.freq[1] / (fit.freq[0] > 0 ? fit.freq[0] : 1.0), -d / 2);
}

}  // namespace

std::optional<table_fit> fit_rotation(const spec::rope& s, std::optional<std::int64_t> seq,
                                      const qk_source& q, const std::vector<std::int64_t>& pos,
                                      std::size_t max_rows) {
  const std::int64_t P = s.pairs(), T = q.tokens;
  if (P == 0 || T == 0 || q.dim != s.head_dim) return std::nullopt;
  std::vector<double> c(static_cast<std::size_t>(T * P), kNaN), sn(c.size(), kNaN);
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  visit_float(q.in->type, [&](auto tag) {
    using V = typename decltype(tag)::type;
    for (std::int64_t t = 0; t < T; ++t) {
      const auto row = static_cast<std::size_t>(t * q.heads * q.dim);  // head 0
      for (std::int64_t i = 0; i < P; ++i) {
        const auto [a, b] = spec::pair_dims(s, i);
        const double x0 = element_value<V>(*q.in, row + static_cast<std::size_t>(a));
        const double x1 = element_value<V>(*q.in, row + static_cast<std::size_t>(b));
        const double y0 = element_value<V>(*q.out, row + static_cast<std::size_t>(a));
        const double y1 = element_value<V>(*q.out, row + static_cast<std::size_t>(b));
        const auto applied = applied_rotation(x0, x1, y0, y1);
        if (!applied) continue;
        const auto e = static_cast<std::size_t>(t * P + i);
        c[e] = applied->cos;
        sn[e] = applied->sin;
        // Pairs too small to resolve their angle in 16 bits say nothing of the magnitude.
        if (applied->norm2 < 1e-2) continue;
        const double r = std::hypot(c[e], sn[e]);
        lo = std::min(lo, r);
        hi = std::max(hi, r);
      }
    }
  });
  if (!(hi > 0) || hi - lo > 0x1p-6 * hi) return std::nullopt;
  const io::array ca = io::array::from_values<double>({T, P}, c);
  const io::array sa = io::array::from_values<double>({T, P}, sn);
  table_source ts;
  ts.cos = {&ca, P, 1, 0};
  ts.sin = {&sa, P, 1, 0};
  ts.rows = T;
  ts.width = P;
  for (std::int64_t i = 0; i < P; ++i) ts.pair.push_back(i);
  table_fit f = fit_table<double>(s, seq, ts, pos, max_rows);
  // What the library did is not read from a rotation's products.
  const table_fit keep = f;
  f = table_fit{};
  f.freq = keep.freq;
  f.freq_f32.assign(keep.freq.size(), kNaN);
  f.m = keep.m;
  f.measured_on = keep.measured_on;
  return f;
}

std::optional<std::int64_t> implied_width(const spec::rope& s, const table_fit& fit) {
  if (s.rotary_dim >= s.head_dim || fit.freq.size() < 2 || !(fit.freq[1] > 0)) return {};
  // The spec's θ over width W: f_1/f_0 = θ^(−2/W).
  const double r = fit.freq[1] / (fit.freq[0] > 0 ? fit.freq[0] : 1.0);
  const double w = -2 * std::log(static_cast<double>(s.rope_theta)) / std::log(r);
  if (!std::isfinite(w) || std::fabs(w - static_cast<double>(s.head_dim)) > 0.01) return {};
  return s.head_dim;
}

std::optional<double> implied_base(const spec::rope& s, const table_fit& fit) {
  const double b = base_from_fastest(s, fit);
  if (!std::isfinite(b) || !(b > 1) || implied_width(s, fit)) return {};
  const double b_spec = s.rope_theta;
  if (!differs(b, b_spec)) return {};
  // Configs write bases with few significant digits (10000, 500000, 1e6, 75e6): the shortest
  // decimal within the fit's precision (pair 1's frequency, to the power d/2).
  for (int digits = 1; digits <= 6; ++digits) {
    const double scale = std::pow(10.0, std::floor(std::log10(b)) + 1 - digits);
    const double c = std::nearbyint(b / scale) * scale;
    if (std::fabs(c - b) <= 1e-4 * b) return c;
  }
  return std::stod(shown(b));
}

std::vector<std::string> parameter_findings(const spec::rope& s, std::optional<std::int64_t> seq,
                                            const std::vector<double>& theta, double m,
                                            const table_fit& fit) {
  std::vector<std::string> out;
  const std::size_t P = std::min(theta.size(), fit.freq.size());
  if (P == 0) return out;
  if (fit.m > 0 && differs(fit.m, m)) {
    out.push_back("attention factor " + shown(fit.m) + " (the spec's is " + shown(m) + ")");
  }
  // Frequencies against the spec's: the same, a common factor, or another spec's.
  bool same = true, common = true;
  double c0 = kNaN;
  for (std::size_t i = 0; i < P; ++i) {
    const double f = std::fabs(fit.freq[i]);
    if (std::isnan(f) || theta[i] == 0) continue;
    same = same && !differs(f, theta[i]);
    const double c = f / theta[i];
    if (std::isnan(c0)) c0 = c;
    common = common && !differs(c, c0);
  }
  if (same) return out;
  if (common && !std::isnan(c0)) {
    out.push_back("every frequency times " + shown(c0) + ": a linear factor " + shown(1 / c0) +
                  " (the spec's frequencies are " + std::string(spec::to_string(s.type)) + ")");
    return out;
  }
  const spec::rope plain = impl::plain_rope(s);
  if (s.type != spec::rope_type::default_ || s.freq_scale != 1.0) {
    const ref::rope_reference plain_ref(plain);
    bool is_plain = true;
    for (std::size_t i = 0; i < P; ++i) {
      const double t = plain_ref.inv_freq()[i].convert_to<double>();
      if (!std::isnan(fit.freq[i]) && differs(std::fabs(fit.freq[i]), t)) is_plain = false;
    }
    if (is_plain) {
      out.push_back(std::string("plain RoPE's frequencies: rope_scaling (") +
                    spec::to_string(s.type) + ") ignored");
      return out;
    }
  }
  // The spec's base over the whole head's width where the config rotates fewer dims.
  if (const auto w = implied_width(s, fit)) {
    out.push_back(fmt::format(
        "frequencies over width {} (the spec's rope_theta {} with exponent 2i/{}): head_dim, "
        "where the config's rotary_dim is {}",
        *w, shown(s.rope_theta), *w, s.rotary_dim));
    return out;
  }
  // The base the high-frequency pairs imply: f_i = b^(−2i/d), from pair 1 (pair 0 is 1 for every
  // base); scalings leave the fastest pairs alone (yarn, llama3) or scale them all.
  if (P >= 2 && fit.freq[1] > 0 && theta[1] > 0) {
    const double d = static_cast<double>(s.rotary_dim);
    const double b = base_from_fastest(s, fit);
    const double b_spec = std::pow(theta[1] / theta[0], -d / 2);
    if (std::isfinite(b) && differs(b, b_spec)) {
      // The base as configs write it where the fit's precision allows (implied_base).
      std::string line = "rope_theta " + shown(implied_base(s, fit).value_or(b)) +
                         " from the fastest pairs (the spec's base gives " + shown(b_spec) + ")";
      if (s.type == spec::rope_type::dynamic && s.max_position_embeddings > 0 && s.factor > 1) {
        // Dynamic NTK: b' = b·α^(d/(d−2)), α = f·n/L − (f − 1): the length these frequencies are
        // for.
        const double alpha = std::pow(b / s.rope_theta, (d - 2) / d);
        const double L = static_cast<double>(s.max_position_embeddings);
        const double n = L * (alpha + s.factor - 1) / s.factor;
        line = "dynamic NTK at sequence length " + shown(n) + " (" +
               (alpha <= 1.0001 ? std::string("the original frequencies") : "base " + shown(b)) +
               "; the certified positions give " + (seq ? std::to_string(*seq) : "none") + ")";
      }
      out.push_back(line);
    }
  }
  return out;
}

template table_fit fit_table<double>(const spec::rope&, std::optional<std::int64_t>,
                                     const table_source&, const std::vector<std::int64_t>&,
                                     std::size_t, const ref::fast_rope_reference*);
template table_fit fit_table<float>(const spec::rope&, std::optional<std::int64_t>,
                                    const table_source&, const std::vector<std::int64_t>&,
                                    std::size_t, const ref::fast_rope_reference*);
template table_fit fit_table<half>(const spec::rope&, std::optional<std::int64_t>,
                                   const table_source&, const std::vector<std::int64_t>&,
                                   std::size_t, const ref::fast_rope_reference*);
template table_fit fit_table<bfloat16>(const spec::rope&, std::optional<std::int64_t>,
                                       const table_source&, const std::vector<std::int64_t>&,
                                       std::size_t, const ref::fast_rope_reference*);

}  // namespace pev::certify::detail

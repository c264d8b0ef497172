// The accuracy contracts of the built-in strategies (contract.h): the analytic models of the
// hf and ggml pipelines, moved here from the accuracy-contract table so that the tests, the
// property suites, the certifier and the report's sweeps evaluate one and the same bound.

#include "pev/impl/contract.h"

#include <algorithm>
#include <bit>
#include <boost/multiprecision/gmp.hpp>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <string>

#include "pev/core/real.h"
#include "pev/core/simd.h"
#include "pev/kernel/rope.h"
#include "pev/ref/relative.h"
#include "pev/ref/rope.h"

namespace pev::impl {

using metric::exact;
using metric::f32;
using metric::f64;
using metric::half_ulp;
using metric::kBF16;
using metric::kF16;
using metric::kF32;
using metric::kF64;
using metric::ulp_at;

namespace {
double to_d(const real& v) { return v.convert_to<double>(); }
}  // namespace

/// Rounding errors a value gathers after the fp32 (or fp64) pipeline: the storage format of the
/// table strategies, then the output type (conversions to a wider format are exact).
double path_bound(double B, double y, std::optional<dtype> storage, format out, format cur) {
  if (storage) {
    cur = format_of(*storage);
    B += half_ulp(y + B, cur);
  }
  const bool wider = out.p == 24 && cur.p <= 24;  // fp32 holds fp16 and bf16 exactly
  if (!(out.p == cur.p && out.emin == cur.emin) && !wider) B += half_ulp(y + B, out);
  return B;
}

tv reciprocal(tv P) { return f32.div(exact(1), P); }

std::vector<tv> powers_model(tv base, std::int64_t d, std::int64_t n, const metric::libm& lib) {
  std::vector<tv> P;
  for (std::int64_t i = 0; i < n; ++i) {
    P.push_back(f32.pow(base, metric::exponent_f32(2 * i, d), lib.pow));
  }
  return P;
}

std::vector<tv> reciprocals(const std::vector<tv>& P) {
  std::vector<tv> v;
  for (const tv& p : P) v.push_back(reciprocal(p));
  return v;
}

/// An fp32 operand from an inexact double: adds the double's own ½ ulp.
tv as_f32_inexact(double x) {
  tv t = metric::as_f32(x);
  t.e += half_ulp(std::fabs(x), kF64);
  return t;
}

/// llama3's three bands for a computed frequency `inv` (exact θ): the kernel compares its fp32
/// wavelength with fp32 thresholds; every branch it may take near an edge is bounded against the
/// exact θ' (the blend is continuous, so a branch flip costs only the distance to the edge).
struct llama3_bands {
  double Lo, low, high, f;
  float low_wl, high_wl;  // the kernel's fp32 thresholds
};

template <class Low, class Mid, class High>
tv llama3_branches(tv wl, double exact_value, const llama3_bands& b, Low&& low, Mid&& mid,
                   High&& high) {
  double E = 0;
  auto take = [&](tv v) { E = std::max(E, v.e + std::fabs(v.x - exact_value)); };
  if (wl.x + wl.e > b.low_wl) take(low());
  if (wl.x - wl.e <= b.low_wl && wl.x + wl.e >= b.high_wl) take(mid());
  if (wl.x - wl.e < b.high_wl) take(high());
  return {exact_value, E};
}

/// The exact llama3 θ' of a default frequency θ.
double llama3_exact(double theta, const llama3_bands& b) {
  const double wl = 2 * std::numbers::pi / theta;
  if (wl > b.Lo / b.low) return theta / b.f;
  if (wl < b.Lo / b.high) return theta;
  const double s = (b.Lo / wl - b.low) / (b.high - b.low);
  return (1 - s) * theta / b.f + s * theta;
}

llama3_bands bands_of(const spec::rope& s) {
  const auto Lo = static_cast<double>(s.original_max_position_embeddings);
  return {Lo,
          s.low_freq_factor,
          s.high_freq_factor,
          s.factor,
          static_cast<float>(Lo / s.low_freq_factor),
          static_cast<float>(Lo / s.high_freq_factor)};
}

std::int64_t rotating_pairs(const spec::rope& s) {
  if (s.type != spec::rope_type::proportional) return s.pairs();
  return static_cast<std::int64_t>(std::floor(s.partial_rotary_factor * double(s.head_dim) / 2.0));
}

std::int64_t effective_seq(const spec::rope& s, std::optional<std::int64_t> seq) {
  return std::max(seq.value_or(s.max_position_embeddings), s.max_position_embeddings);
}

const std::vector<double>& longrope_factors(const spec::rope& s, std::optional<std::int64_t> seq) {
  const bool long_ = seq && *seq != 0 && *seq > s.original_max_position_embeddings;
  return long_ ? s.long_factor : s.short_factor;
}

namespace {
// The exact frequencies of the ggml form in double (docs/encodings.md §8.7): b^(−2i/n)/c_i ·
// (fs·(1 − mix_i) + mix_i), mix_i = ramp_i·ext_factor, every parameter the float ggml receives.
std::vector<double> ggml_form_frequencies(const spec::rope& s) {
  const auto f = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  const auto [low_r, high_r] = ref::ggml_corr_dims(s);
  const double low = to_d(low_r), high = to_d(high_r);
  const double width = std::max(high - low, 0.001);
  const double b = f(s.rope_theta), fs = f(s.freq_scale), ef = f(s.ext_factor);
  std::vector<double> out(static_cast<std::size_t>(s.pairs()));
  for (std::int64_t i = 0; i < s.pairs(); ++i) {
    double v = std::pow(b, -2.0 * double(i) / double(s.rotary_dim));
    if (!s.freq_factors.empty()) v /= f(s.freq_factors[static_cast<std::size_t>(i)]);
    const double ramp = 1 - std::clamp((double(i) - low) / width, 0.0, 1.0);
    const double mix = ef == 0 ? 0.0 : ramp * ef;
    out[static_cast<std::size_t>(i)] = v * (fs * (1 - mix) + mix);
  }
  return out;
}
}  // namespace

rope_model hf_model(const spec::rope& s, std::optional<std::int64_t> seq, double m_exact,
                    const metric::libm& lib) {
  using spec::rope_type;
  rope_model out;
  if (s.type == rope_type::ggml) {
    // No transformers pipeline: the exact values only (for the accurate strategy's contract),
    // with no bound of an hf computation.
    for (double x : ggml_form_frequencies(s)) {
      out.freq.push_back({x, std::numeric_limits<double>::infinity()});
    }
    out.m = {m_exact, 0};
    return out;
  }
  const std::int64_t d = s.rotary_dim;
  const std::int64_t pairs = s.pairs();
  const double b = s.rope_theta;
  const tv base = metric::as_f32(b);
  switch (s.type) {
    case rope_type::default_: {
      out.freq = reciprocals(powers_model(base, d, pairs, lib));
      if (s.freq_scale != 1.0) {
        for (tv& v : out.freq) v = f32.mul(v, metric::as_f32(s.freq_scale));
      }
      break;
    }
    case rope_type::linear:
      for (const tv& v : reciprocals(powers_model(base, d, pairs, lib))) {
        out.freq.push_back(f32.div(v, metric::as_f32(s.factor)));
      }
      break;
    case rope_type::ntk: {
      const tv e = f64.div(exact(double(d)), exact(double(d - 2)));
      const tv bp = f64.mul(exact(b), f64.pow(exact(s.factor), e, lib.f64));
      out.freq = reciprocals(powers_model(f32.round(bp), d, pairs, lib));
      break;
    }
    case rope_type::dynamic: {
      const std::int64_t sq = effective_seq(s, seq);
      if (sq <= s.max_position_embeddings) {
        out.freq = reciprocals(powers_model(base, d, pairs, lib));
        break;
      }
      const tv fs = f32.mul(metric::as_f32(s.factor), metric::as_f32(double(sq)));
      const tv q = f32.div(fs, metric::as_f32(double(s.max_position_embeddings)));
      const tv fm1 = f32.round(f64.sub(exact(s.factor), exact(1)));
      const tv alpha = f32.sub(q, fm1);
      const tv e = f32.round(f64.div(exact(double(d)), exact(double(d - 2))));
      const tv bp = f32.mul(base, f32.pow(alpha, e, lib.pow));
      out.freq = reciprocals(powers_model(bp, d, pairs, lib));
      break;
    }
    case rope_type::yarn: {
      const auto P = powers_model(base, d, pairs, lib);
      const auto range = ref::yarn_correction_range(s);
      double low = to_d(range.low), high = to_d(range.high);
      // The kernel's host doubles (find_correction_range), to model their fp32 casts.
      auto [low_d, high_d] = kernel::hf_yarn_correction_range(s);
      double host_err = 0;
      if (!s.truncate) host_err = 32 * 0x1p-53 * (std::fabs(low) + std::fabs(high));
      if (low == high) {
        high += 0.001;
        high_d += 0.001;
        host_err += 0x1p-40;
      }
      const tv lo{low, std::fabs(double(float(low_d)) - low) + host_err};
      const tv width{high - low,
                     std::fabs(double(float(high_d - low_d)) - (high - low)) + host_err};
      for (std::int64_t j = 0; j < pairs; ++j) {
        const tv ramp = metric::clamp01(f32.div(f32.sub(exact(double(j)), lo), width));
        const tv gamma = f32.sub(exact(1), ramp);
        const tv extrap = reciprocal(P[j]);
        const tv interp = f32.div(exact(1), f32.mul(metric::as_f32(s.factor), P[j]));
        out.freq.push_back(
            f32.add(f32.mul(interp, f32.sub(exact(1), gamma)), f32.mul(extrap, gamma)));
      }
      break;
    }
    case rope_type::llama3: {
      const llama3_bands bands = bands_of(s);
      const tv two_pi = as_f32_inexact(2 * std::numbers::pi);
      const tv band = metric::as_f32(s.high_freq_factor - s.low_freq_factor);
      for (const tv& inv : reciprocals(powers_model(base, d, pairs, lib))) {
        const tv wl = f32.div(two_pi, inv);
        out.freq.push_back(llama3_branches(
            wl, llama3_exact(inv.x, bands), bands,
            [&] { return f32.div(inv, metric::as_f32(s.factor)); },
            [&] {
              const tv sm = f32.div(
                  f32.sub(f32.div(metric::as_f32(bands.Lo), wl), metric::as_f32(s.low_freq_factor)),
                  band);
              return f32.add(f32.div(f32.mul(f32.sub(exact(1), sm), inv), metric::as_f32(s.factor)),
                             f32.mul(sm, inv));
            },
            [&] { return inv; }));
      }
      break;
    }
    case rope_type::longrope: {
      const auto& ext = longrope_factors(s, seq);
      const auto P = powers_model(base, d, pairs, lib);
      for (std::int64_t j = 0; j < pairs; ++j) {
        out.freq.push_back(f32.div(exact(1), f32.mul(metric::as_f32(ext[j]), P[j])));
      }
      break;
    }
    case rope_type::proportional: {
      for (const tv& v : reciprocals(powers_model(base, s.head_dim, rotating_pairs(s), lib))) {
        out.freq.push_back(f32.div(v, metric::as_f32(s.factor)));
      }
      out.freq.resize(static_cast<std::size_t>(pairs), tv{0, 0});
      break;
    }
    case rope_type::ggml:
      break;  // above
  }
  // Attention factor: a host double (≤ 8 double roundings and libm calls, each ≤ 2^−53·m),
  // cast to fp32.
  if (s.type == rope_type::yarn || s.type == rope_type::longrope) {
    out.m = {m_exact, half_ulp(m_exact * (1 + 0x1p-40), kF32) + 8 * 0x1p-53 * m_exact};
  }
  return out;
}

// get_mscale in fp32 host arithmetic, as the ggml recipe evaluates it.
tv ggml_get_mscale(double f, double mu, const metric::libm& lib) {
  if (f <= 1.0) return exact(1);
  const tv a = f32.round(f64.mul(metric::as_f32(0.1, 0.1), exact(mu)));
  const tv lg = f32.round(f64.log(exact(f), lib.f64));
  return f32.add(f32.mul(a, lg), exact(1));
}

tv ggml_attention(const spec::rope& s, const metric::libm& lib) {
  using spec::rope_type;
  if (s.type == rope_type::yarn) {
    if (s.attention_factor) return metric::as_f32(*s.attention_factor);
    if (s.mscale && *s.mscale != 0 && s.mscale_all_dim && *s.mscale_all_dim != 0) {
      return f32.div(ggml_get_mscale(s.factor, *s.mscale, lib),
                     ggml_get_mscale(s.factor, *s.mscale_all_dim, lib));
    }
    return ggml_get_mscale(s.factor, 1.0, lib);
  }
  if (s.type == rope_type::longrope) {
    if (s.attention_factor) return metric::as_f32(*s.attention_factor);
    if (s.factor <= 1.0) return exact(1);
    const tv ratio =
        f32.div(f32.round(f64.log(exact(s.factor), lib.f64)),
                f32.round(f64.log(exact(double(s.original_max_position_embeddings)), lib.f64)));
    return f32.sqrt(f32.add(exact(1), ratio));
  }
  return exact(1);
}

ggml_model make_ggml_model(const spec::rope& s, std::optional<std::int64_t> seq,
                           const metric::libm& lib) {
  using spec::rope_type;
  ggml_model g;
  g.pairs = s.pairs();
  g.rotating = rotating_pairs(s);
  const std::int64_t n = s.rotary_dim;
  const auto nd = static_cast<double>(n);
  tv base = metric::as_f32(s.rope_theta);
  // −2/n_dims in fp32, with its exact rounding error.
  const float e2 = -2.0f / static_cast<float>(n);
  const tv exponent{-2.0 / nd, std::fabs(double(e2) * nd + 2.0) / nd * (1 + 0x1p-50)};
  const tv e_ntk{nd / (nd - 2.0), std::fabs(double(float(nd / (nd - 2.0))) * (nd - 2.0) - nd) /
                                      (nd - 2.0) * (1 + 0x1p-50)};
  switch (s.type) {
    case rope_type::ggml: {
      // ggml_rope_ext's own parameters (docs/numerics.md §8.8): the floats ggml receives are the
      // exact values of the reference, so they enter without error; the correction dims are the
      // exact ones (assumption (a) of docs/numerics.md §8.7).
      const auto f = [](double v) { return static_cast<double>(static_cast<float>(v)); };
      base = exact(f(s.rope_theta));
      g.freq_scale = exact(f(s.freq_scale));
      for (double c : s.freq_factors) g.factors.push_back(exact(f(c)));
      const tv attn = exact(f(s.attn_factor));
      g.m = attn;
      if (f(s.ext_factor) != 0.0) {
        g.yarn = true;
        g.ext_factor = f(s.ext_factor);
        const auto [low, high] = ref::ggml_corr_dims(s);
        g.corr_low = to_d(low);
        g.corr_width = std::max(to_d(high) - g.corr_low, 0.001);
        // mscale·(1 + 0.1f·logf(1/freq_scale)), exact value attn·(1 + 0.1·ln(1/freq_scale)).
        const tv inv_fs = f32.div(exact(1), g.freq_scale);
        g.m = f32.mul(
            attn, f32.add(exact(1), f32.mul(metric::as_f32(0.1, 0.1), f32.log(inv_fs, lib.log))));
      }
      break;
    }
    case rope_type::default_:
      g.freq_scale = metric::as_f32(s.freq_scale);
      break;
    case rope_type::linear:
    case rope_type::proportional:
      g.freq_scale = as_f32_inexact(1.0 / s.factor);
      break;
    case rope_type::ntk: {
      const tv pw = f32.round(f64.pow(exact(s.factor), e_ntk, lib.f64));
      base = f32.round(f64.mul(exact(s.rope_theta), pw));
      break;
    }
    case rope_type::dynamic: {
      const std::int64_t sq = effective_seq(s, seq);
      if (sq > s.max_position_embeddings) {
        const tv fs = f32.round(f64.mul(exact(s.factor), exact(double(sq))));
        const tv q = f32.round(f64.div(fs, exact(double(s.max_position_embeddings))));
        const tv fm1 = metric::as_f32(s.factor - 1.0);
        const tv alpha = f32.round(f64.sub(q, fm1));
        const tv pw = f32.round(f64.pow(alpha, e_ntk, lib.f64));
        base = f32.round(f64.mul(exact(s.rope_theta), pw));
      }
      break;
    }
    case rope_type::yarn: {
      g.freq_scale = as_f32_inexact(1.0 / s.factor);
      g.yarn = true;
      const auto range = ref::yarn_correction_range(s);
      g.corr_low = to_d(range.low);
      g.corr_width = std::max(to_d(range.high) - g.corr_low, 0.001);
      const tv lg = f32.round(f64.log(exact(s.factor), lib.f64));
      const tv attn =
          f32.div(ggml_attention(s, lib), f32.add(exact(1), f32.mul(metric::as_f32(0.1, 0.1), lg)));
      // mscale·(1 + 0.1f·logf(1/freq_scale)), exact value m_HF.
      const tv inv_fs = f32.div(exact(1), g.freq_scale);
      g.m = f32.mul(attn,
                    f32.add(exact(1), f32.mul(metric::as_f32(0.1, 0.1), f32.log(inv_fs, lib.log))));
      break;
    }
    case rope_type::llama3: {
      const llama3_bands bands = bands_of(s);
      // The host's fp32 thresholds (RN32 of the exact quotient; the kernel's double-then-float
      // agrees with them).
      const tv two_pi{2 * std::numbers::pi,
                      std::fabs(2.0 * double(float(std::numbers::pi)) - 2 * std::numbers::pi) +
                          half_ulp(2 * std::numbers::pi, kF64)};
      const tv band = metric::as_f32(s.high_freq_factor - s.low_freq_factor);
      for (const tv& inv : reciprocals(powers_model(base, n, g.pairs, lib))) {
        const tv wl = f32.div(two_pi, inv);
        const double theta_prime = llama3_exact(inv.x, bands);
        g.factors.push_back(llama3_branches(
            wl, inv.x / theta_prime, bands, [&] { return metric::as_f32(s.factor); },
            [&] {
              const tv ratio = f32.round(f64.div(exact(bands.Lo), wl));
              const tv num = f32.round(f64.sub(ratio, exact(s.low_freq_factor)));
              const tv t = f32.round(f64.div(num, band));
              const tv a = f32.round(f64.sub(exact(1), t));
              const tv over_f = f32.round(f64.div(a, exact(s.factor)));
              return f32.round(f64.div(exact(1), f32.add(over_f, t)));
            },
            [&] { return exact(1); }));
      }
      break;
    }
    case rope_type::longrope:
      for (double c : longrope_factors(s, seq)) g.factors.push_back(metric::as_f32(c));
      g.m = ggml_attention(s, lib);
      break;
  }
  g.ts = f32.pow(base, exponent, lib.pow);
  if (g.yarn) {
    for (std::int64_t i = 0; i < std::min(g.pairs, g.rotating); ++i) {
      const tv y = metric::clamp01(
          f32.div(f32.sub(exact(double(i)), exact(g.corr_low)), exact(g.corr_width)));
      const tv ramp = f32.sub(exact(1), y);
      // mix = ramp·ext_factor (exact for ext_factor 1).
      const tv mix = g.ext_factor == 1.0 ? ramp : f32.mul(ramp, exact(g.ext_factor));
      g.mix.push_back(mix);
      g.keep.push_back(f32.sub(exact(1), mix));
    }
  }
  return g;
}

namespace {
/// hf_angle_error's formula from fl(p) = ph, |fl(p) − p| = dp, the frequency's exact value fx,
/// its bound fe and their sum, with the rounding bound `half` of fp32 (metric::half_ulp_of, or
/// half_ulp_finite in angle_errors' loop: the same values for p ≥ 0, docs/numerics.md §8.13).
template <class Half>
double hf_angle_formula(double ph, double dp, double fx, double fe, double sum, Half half) {
  return ph * fe + dp * fx + half(ph * sum);
}

// angle_errors' loop over the hf pipeline's pairs.
PEV_VECTOR_LOOPS void hf_angle_loop(double ph, double dp, const double* fx, const double* fe,
                                    const double* sum, double* out, std::size_t n) {
  const metric::half_ulp_finite half{kF32};
  for (std::size_t i = 0; i < n; ++i) out[i] = hf_angle_formula(ph, dp, fx[i], fe[i], sum[i], half);
}
}  // namespace

/// The hf pipeline's angle error: |fl(fl(p)·f̂) − p·θ| with |f̂ − θ| ≤ f.e.
double hf_angle_error(std::int64_t p, tv f) {
  const auto pd = static_cast<double>(p);
  const auto ph = static_cast<double>(static_cast<float>(p));
  return hf_angle_formula(ph, std::fabs(ph - pd), f.x, f.e, f.x + f.e, metric::half_ulp_of{kF32});
}
/// BLOOM's fp32 slope model: fl32(2^(−b/P)) in double then powf(base, h).
std::vector<tv> alibi_model(const spec::alibi& s, const metric::libm& lib) {
  const std::int64_t H = s.num_heads;
  const auto P = static_cast<std::int64_t>(std::bit_floor(static_cast<std::uint64_t>(H)));
  std::vector<tv> out;
  auto base_of = [&](double denom) {
    return f32.round(f64.pow(exact(2.0), exact(-s.max_bias / denom), lib.f64));
  };
  const tv base = base_of(double(P));
  for (std::int64_t h = 1; h <= P; ++h) out.push_back(f32.pow(base, exact(double(h)), lib.pow));
  const tv extra = base_of(double(2 * P));
  for (std::int64_t k = 1; k <= H - P; ++k) {
    out.push_back(f32.pow(extra, exact(double(2 * k - 1)), lib.pow));
  }
  return out;
}

namespace {
/// rope_contract::angle_errors' arithmetic for the ggml replay: metric::f32's rules with the
/// branch-free rounding bound, and the recurrence's step θ ← fl(θ·ts) rounded at the binade of |x|
/// rather than of |x| + e, which takes the rounding off the chain of e's from pair to pair; `miss`
/// gathers whether |x| + e lay in a higher binade (then the caller replays in metric::f32), so that
/// the values are mul's wherever miss stays 0 (docs/numerics.md §8.13).
struct fast_f32 : metric::rounded_ops<metric::half_ulp_finite> {
  tv step(tv a, tv b, double& miss) const {
    const tv r = product(a, b);
    const double h = half(std::fabs(r.x));
    miss += half(std::fabs(r.x) + r.e) - h;  // ≥ 0: half is non-decreasing
    return {r.x, r.e + h};
  }
};

// The ggml recurrence (docs/numerics.md §8.7) as two steps that the replay of one position and
// the replay across rows share, so that both evaluate one piece of arithmetic: θ_0 of position p,
// the angle of pair u from θ_u, and θ_{u+1} = fl(θ_u·ts).
tv ggml_theta0(std::int64_t p) {
  const auto pd = static_cast<double>(p);
  return {pd, std::fabs(double(float(p)) - pd)};
}

/// Pair u's position-independent operands (read once per pair by the replay across rows).
struct ggml_pair {
  tv fs, factor, keep, mix;
};
template <bool Factors, bool Yarn>
[[gnu::always_inline]] inline ggml_pair ggml_pair_at(const ggml_model& g, tv fs, std::size_t u) {
  ggml_pair c{fs, {1, 0}, {1, 0}, {0, 0}};
  if constexpr (Factors) c.factor = g.factors[u];
  if constexpr (Yarn) {
    c.keep = g.keep[u];
    c.mix = g.mix[u];
  }
  return c;
}

/// The angle of a pair from θ: extrap = θ (or fl(θ/ĉ)), interp = fl(fs·extrap), and with YaRN
/// fl(fl(interp·(1 − mix)) + fl(extrap·mix)).
template <bool Factors, bool Yarn, class Ops>
[[gnu::always_inline]] inline tv ggml_angle(const Ops& ar, tv theta, const ggml_pair& c) {
  tv extrap = theta;
  if constexpr (Factors) extrap = ar.div(theta, c.factor);
  const tv interp = ar.mul(c.fs, extrap);
  if constexpr (Yarn) return ar.add(ar.mul(interp, c.keep), ar.mul(extrap, c.mix));
  return interp;
}

[[gnu::always_inline]] inline tv ggml_step(const metric::arith& ar, tv theta, tv ts, double&) {
  return ar.mul(theta, ts);
}
[[gnu::always_inline]] inline tv ggml_step(const fast_f32& ar, tv theta, tv ts, double& miss) {
  return ar.step(theta, ts, miss);
}

/// The number of pairs the replay rotates, once the model is checked to hold their operands.
std::size_t ggml_rotating(const ggml_model& g) {
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, std::min(g.pairs, g.rotating)));
  if ((!g.factors.empty() && g.factors.size() < n) ||
      (g.yarn && (g.mix.size() < n || g.keep.size() < n))) {
    throw error(
        "impl::ggml_model: fewer per-pair factors or YaRN mixes than rotating pairs "
        "(make_ggml_model sets them)");
  }
  return n;
}

/// The ggml recurrence at position p: sink(i, angle) for every rotating pair i in order, in
/// arithmetic `ar` (metric::f32, or fast_f32 where ggml_finite holds, which adds to `miss`). The
/// branches on the model are taken out of the loop.
template <bool Factors, bool Yarn, class Ops, class Sink>
void ggml_replay_loop(const ggml_model& g, const Ops& ar, std::int64_t p, std::size_t n,
                      double& miss, Sink&& sink) {
  const tv fs = g.freq_scale, ts = g.ts;
  tv theta = ggml_theta0(p);
  for (std::size_t u = 0; u < n; ++u) {
    sink(u, ggml_angle<Factors, Yarn>(ar, theta, ggml_pair_at<Factors, Yarn>(g, fs, u)));
    theta = ggml_step(ar, theta, ts, miss);
  }
}

template <class Ops, class Sink>
void ggml_replay(const ggml_model& g, const Ops& ar, std::int64_t p, double& miss, Sink&& sink) {
  const std::size_t n = ggml_rotating(g);
  const bool factors = !g.factors.empty();
  if (factors && g.yarn) return ggml_replay_loop<true, true>(g, ar, p, n, miss, sink);
  if (factors) return ggml_replay_loop<true, false>(g, ar, p, n, miss, sink);
  if (g.yarn) return ggml_replay_loop<false, true>(g, ar, p, n, miss, sink);
  ggml_replay_loop<false, false>(g, ar, p, n, miss, sink);
}

/// ggml_model::angles' bounds at p into out[0, rotating pairs).
void ggml_f32_errors(const ggml_model& g, std::int64_t p, double* out) {
  double unused = 0;
  ggml_replay(g, f32, p, unused, [&](std::size_t i, tv a) { out[i] = a.e; });
}

/// Rows replayed together by the fast replay across rows (its per-row state lives in arrays of
/// this length).
constexpr std::size_t kGgmlRows = 64;

/// The fast replay of R ≤ kGgmlRows rows at once: pairs outer, rows inner, every row's θ in
/// arrays, so that the inner loop is straight-line arithmetic GCC vectorises. Writes pair i's
/// angle error of row q to out[q·stride + i] (i < n) and each row's miss (0: the values are
/// metric::f32's; docs/numerics.md §8.13).
template <bool Factors, bool Yarn>
[[gnu::always_inline]] inline void ggml_rows_loop(const ggml_model& g, const double* x0,
                                                  const double* e0, std::size_t R, std::size_t n,
                                                  double* out, std::size_t stride, double* miss) {
  const fast_f32 ar{{{kF32}}};
  const tv fs = g.freq_scale, ts = g.ts;
  double x[kGgmlRows], e[kGgmlRows];
  for (std::size_t q = 0; q < R; ++q) {
    x[q] = x0[q];
    e[q] = e0[q];
    miss[q] = 0;
  }
  for (std::size_t u = 0; u < n; ++u) {
    const ggml_pair c = ggml_pair_at<Factors, Yarn>(g, fs, u);
    for (std::size_t q = 0; q < R; ++q) {
      const tv theta{x[q], e[q]};
      const tv a = ggml_angle<Factors, Yarn>(ar, theta, c);
      out[q * stride + u] = a.e;
      // Stays 0 while every result is finite (v − v is NaN for ±Inf and NaN).
      double m = miss[q] + ((a.x - a.x) + (a.e - a.e));
      const tv next = ggml_step(ar, theta, ts, m);
      x[q] = next.x;
      e[q] = next.e;
      miss[q] = m;
    }
  }
}

PEV_VECTOR_LOOPS void ggml_rows(const ggml_model& g, const double* x0, const double* e0,
                                std::size_t R, std::size_t n, double* out, std::size_t stride,
                                double* miss) {
  const bool factors = !g.factors.empty();
  if (factors && g.yarn) return ggml_rows_loop<true, true>(g, x0, e0, R, n, out, stride, miss);
  if (factors) return ggml_rows_loop<true, false>(g, x0, e0, R, n, out, stride, miss);
  if (g.yarn) return ggml_rows_loop<false, true>(g, x0, e0, R, n, out, stride, miss);
  ggml_rows_loop<false, false>(g, x0, e0, R, n, out, stride, miss);
}

bool finite_tv(tv v) { return std::isfinite(v.x) && std::isfinite(v.e) && v.e >= 0; }

/// Whether every position-independent operand of the ggml replay is finite with e ≥ 0 (and every
/// divisor |x| > e), so that every magnitude the replay rounds at is ≥ +0 and the fast replay's
/// values equal metric::f32's as long as its results are finite (docs/numerics.md §8.13).
bool ggml_finite(const ggml_model& g) {
  const auto all = [](const std::vector<tv>& v, auto&& ok) {
    return std::all_of(v.begin(), v.end(), ok);
  };
  return finite_tv(g.ts) && finite_tv(g.freq_scale) &&
         all(g.factors, [](tv c) { return finite_tv(c) && std::fabs(c.x) > c.e; }) &&
         (!g.yarn || (g.mix.size() >= static_cast<std::size_t>(std::min(g.pairs, g.rotating)) &&
                      all(g.mix, finite_tv) && all(g.keep, finite_tv)));
}
}  // namespace

std::vector<tv> ggml_model::angles(std::int64_t p) const {
  std::vector<tv> out(static_cast<std::size_t>(pairs), tv{0, 0});
  double unused = 0;
  ggml_replay(*this, f32, p, unused, [&](std::size_t i, tv a) { out[i] = a; });
  return out;
}

rope_contract::rope_contract(const spec::rope& s, kernel::strategy st,
                             std::optional<std::int64_t> seq, double m_exact,
                             const metric::libm& lib, rotation_arithmetic arith)
    : st_(st), m_(m_exact), lib_(&lib), arith_(arith), hf_(hf_model(s, seq, m_exact, lib)) {
  if (st == kernel::strategy::ggml) {
    ggml_ = make_ggml_model(s, seq, lib);
    ggml_finite_ = ggml_finite(*ggml_);
  }
  storage_ = kernel::storage_of(st);
  table_form_ = table_form_for(format_of(storage_.value_or(dtype::fp32)));
  hf_finite_ = true;
  for (const tv& f : hf_.freq) {
    hf_x_.push_back(f.x);
    hf_e_.push_back(f.e);
    hf_sum_.push_back(f.x + f.e);
    // ph·(f.x + f.e) ≥ +0 for every p ≥ 0 (docs/numerics.md §8.13).
    hf_finite_ = hf_finite_ && std::isfinite(f.x) && std::isfinite(f.e) && f.x >= 0 && f.e >= 0 &&
                 !std::signbit(f.x + f.e);
  }
  const bool hf_pipeline = st == kernel::strategy::hf || st == kernel::strategy::table_fp16 ||
                           st == kernel::strategy::table_bf16;
  if (hf_pipeline && s.type == spec::rope_type::ggml) {
    throw error(std::string("contract of strategy ") + kernel::to_string(st) +
                ": the ggml form has no transformers pipeline (strategies ggml and accurate)");
  }
}

double rope_contract::table_bound(std::int64_t p, std::int64_t i, double y, format out) const {
  return table_bound_at(angle_error(p, i), y, out);
}

double rope_contract::angle_error(std::int64_t p, std::int64_t i) const {
  const auto k = static_cast<std::size_t>(i);
  if (st_ == kernel::strategy::ggml) return ggml_->angles(p)[k].e;
  if (st_ == kernel::strategy::accurate) return 0;
  return hf_angle_error(p, hf_.freq[k]);
}

void rope_contract::angle_errors(std::int64_t p, std::vector<double>& out) const {
  const std::size_t n = hf_.freq.size();
  out.resize(n);
  if (st_ == kernel::strategy::accurate) {
    std::fill(out.begin(), out.end(), 0.0);
  } else if (st_ == kernel::strategy::ggml) {
    // One position: the fast replay of that row alone (the replay across rows costs more for a
    // single row).
    const std::size_t rot = std::min(ggml_rotating(*ggml_), n);
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(rot), out.end(), 0.0);
    bool finite = ggml_finite_;
    if (finite) {
      double miss = 0;  // stays 0 while every result is finite (v − v is NaN for ±Inf and NaN)
      const fast_f32 ar{{{kF32}}};
      ggml_replay(*ggml_, ar, p, miss, [&](std::size_t i, tv a) {
        out[i] = a.e;
        miss += (a.x - a.x) + (a.e - a.e);
      });
      finite = miss == 0;
    }
    // A non-finite result or a step rounded in the wrong binade: the replay in metric::f32.
    if (!finite) ggml_f32_errors(*ggml_, p, out.data());
  } else {
    hf_angle_errors(p, out.data());
  }
}

void rope_contract::hf_angle_errors(std::int64_t p, double* out) const {
  const std::size_t n = hf_.freq.size();
  if (p >= 0 && hf_finite_) {
    const auto pd = static_cast<double>(p);
    const auto ph = static_cast<double>(static_cast<float>(p));
    hf_angle_loop(ph, std::fabs(ph - pd), hf_x_.data(), hf_e_.data(), hf_sum_.data(), out, n);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = hf_angle_error(p, hf_.freq[i]);
  }
}

void rope_contract::angle_errors_rows(std::span<const std::int64_t> positions,
                                      std::span<double> out) const {
  const std::size_t n = hf_.freq.size(), R = positions.size();
  if (out.size() != R * n) {
    throw error("impl::rope_contract::angle_errors_rows: " + std::to_string(out.size()) +
                " outputs for " + std::to_string(R) + " rows of " + std::to_string(n) + " pairs");
  }
  if (st_ == kernel::strategy::accurate) {
    std::fill(out.begin(), out.end(), 0.0);
    return;
  }
  if (st_ != kernel::strategy::ggml) {
    for (std::size_t q = 0; q < R; ++q) hf_angle_errors(positions[q], out.data() + q * n);
    return;
  }
  // Pairs that do not rotate keep a zero bound.
  const std::size_t rot = std::min(ggml_rotating(*ggml_), n);
  if (rot < n) {
    for (std::size_t q = 0; q < R; ++q) {
      std::fill(out.data() + q * n + rot, out.data() + (q + 1) * n, 0.0);
    }
  }
  double x0[kGgmlRows], e0[kGgmlRows], miss[kGgmlRows];
  for (std::size_t q0 = 0; q0 < R; q0 += kGgmlRows) {
    const std::size_t r = std::min(kGgmlRows, R - q0);
    double* block = out.data() + q0 * n;
    if (ggml_finite_) {
      for (std::size_t q = 0; q < r; ++q) {
        const tv t = ggml_theta0(positions[q0 + q]);
        x0[q] = t.x;
        e0[q] = t.e;
      }
      ggml_rows(*ggml_, x0, e0, r, rot, block, n, miss);
    }
    // A non-finite result or a step rounded in the wrong binade: the row replayed in metric::f32.
    for (std::size_t q = 0; q < r; ++q) {
      if (!ggml_finite_ || miss[q] != 0) ggml_f32_errors(*ggml_, positions[q0 + q], block + q * n);
    }
  }
}

double rope_contract::table_bound_at(double dtheta, double y, format out) const {
  return table_form_for(out).eval(dtheta, std::fabs(y));
}

table_form rope_contract::table_form_for(format out) const {
  table_form f;
  f.out = out;
  if (st_ == kernel::strategy::accurate) {
    f.one_ulp = true;  // 1 ulp of the output type at the exact value
    return f;
  }
  // path_bound's steps: the pipeline's fp32 value, the storage dtype of vLLM's caches, the output.
  f.m = m_;
  f.trig_ulps = lib_->sin_cos;
  f.pipeline_m = st_ == kernel::strategy::ggml ? ggml_->m : hf_.m;
  format cur = kF32;
  if (storage_) {
    f.stored = true;
    f.storage = cur = format_of(*storage_);
  }
  const bool wider = out.p == 24 && cur.p <= 24;  // fp32 holds fp16 and bf16 exactly
  f.rounded_out = !(out.p == cur.p && out.emin == cur.emin) && !wider;
  return f;
}

bool rope_contract::same_trig(const rope_contract& other) const {
  auto hf_pipeline = [](kernel::strategy s) {
    return s == kernel::strategy::hf || s == kernel::strategy::table_fp16 ||
           s == kernel::strategy::table_bf16;
  };
  return hf_pipeline(st_) && hf_pipeline(other.st_) && lib_->sin_cos == other.lib_->sin_cos &&
         m_ == other.m_ && hf_.m.x == other.hf_.m.x && hf_.m.e == other.hf_.m.e &&
         hf_.freq.size() == other.hf_.freq.size() &&
         std::equal(hf_.freq.begin(), hf_.freq.end(), other.hf_.freq.begin(),
                    [](const tv& a, const tv& b) { return a.x == b.x && a.e == b.e; });
}

std::optional<double> rope_contract::inv_freq_bound(std::int64_t i) const {
  const tv& f = hf_.freq[static_cast<std::size_t>(i)];
  switch (st_) {
    case kernel::strategy::ggml:
      return std::nullopt;
    case kernel::strategy::accurate:
      return half_ulp(f.x, kF32);  // the exact frequency rounded once
    default:
      return f.e;
  }
}

double rope_contract::attention_factor_bound() const {
  if (st_ == kernel::strategy::ggml) return ggml_->m.e;
  if (st_ == kernel::strategy::accurate) return half_ulp(m_, kF32);
  return hf_.m.e;
}

sinusoidal_contract::sinusoidal_contract(const spec::sinusoidal& s, kernel::strategy st,
                                         const metric::libm& lib)
    : s_(s), st_(st), lib_(&lib) {
  if (s.layout == spec::sinusoidal_layout::blocked) {
    const std::int64_t h = s.d_model / 2;
    const tv lg = f64.log(exact(s.base), lib.f64);
    const tv step = f32.round(f64.div(lg, exact(double(h) - s.freq_shift)));
    for (std::int64_t k = 0; k < h; ++k) {
      const tv prod = f32.mul(exact(double(k)), step);
      omega_.push_back(f32.exp({-prod.x, prod.e}, lib.exp));
    }
  }
}

std::pair<std::int64_t, bool> sinusoidal_contract::pair_of(std::int64_t col) const {
  const std::int64_t h = s_.d_model / 2;
  if (s_.layout == spec::sinusoidal_layout::interleaved) return {col / 2, col % 2 == 0};
  if (col >= 2 * h) return {-1, false};
  return {col < h ? col : col - h, col < h};
}

double sinusoidal_contract::bound(std::int64_t p, std::int64_t col, double y, format out) const {
  y = std::fabs(y);
  const std::optional<dtype> stored = kernel::storage_of(st_);
  if (st_ == kernel::strategy::accurate) return ulp_at(y, out);
  const auto [pair, is_sin] = pair_of(col);
  if (s_.layout == spec::sinusoidal_layout::interleaved) {
    // The DistilBERT float64 pipeline: p / b^(2i/d) in double, np.sin/np.cos, cast once.
    const tv x{2.0 * double(pair) / double(s_.d_model),
               half_ulp(2.0 * double(pair) / double(s_.d_model), kF64)};
    const tv Pw = f64.pow(exact(s_.base), x, lib_->f64);
    const tv a = f64.div(exact(double(p)), Pw);
    const double B = std::min(a.e, 2.0) + lib_->f64 * ulp_at(std::min(y + a.e, 1.0), kF64);
    return path_bound(B, y, stored, out, kF64);
  }
  if (pair < 0) return 0.0;
  // fairseq fp32: ω = expf(−k·fl(ln b/(h − shift))), angle fl(p·ω), sinf/cosf.
  const tv a = f32.mul(metric::as_f32(double(p)), omega_[static_cast<std::size_t>(pair)]);
  return path_bound(metric::trig_f32_bound(y, a.e, lib_->sin_cos), y, stored, out, kF32);
}

alibi_contract::alibi_contract(const spec::alibi& s, kernel::strategy st, const metric::libm& lib)
    : st_(st), model_(alibi_model(s, lib)) {}

double alibi_contract::slope_bound(std::int64_t h, double y, format out) const {
  y = std::fabs(y);
  if (st_ == kernel::strategy::accurate) return half_ulp(y, out);  // rounded once
  return path_bound(model_[static_cast<std::size_t>(h)].e, y, kernel::storage_of(st_), out, kF32);
}

double alibi_contract::bias_bound(std::int64_t h, std::int64_t distance, double y,
                                  format out) const {
  y = std::fabs(y);
  if (st_ == kernel::strategy::accurate) return half_ulp(y, out);
  const tv v = f32.mul(model_[static_cast<std::size_t>(h)], metric::as_f32(double(distance)));
  return path_bound(v.e, y, kernel::storage_of(st_), out, kF32);
}

bool t5_on_integer_boundary(const spec::t5& s, std::int64_t r, std::int64_t bucket) {
  using boost::multiprecision::mpz_int;
  const std::int64_t nb = s.bidirectional ? s.num_buckets / 2 : s.num_buckets;
  const std::int64_t e = nb / 2;
  const std::int64_t w = nb - e;
  if (r == INT64_MIN) return false;  // saturated long before any boundary
  const std::int64_t n = s.bidirectional ? (r < 0 ? -r : r) : (r < 0 ? -r : 0);
  const std::int64_t k = bucket - (s.bidirectional && r > 0 ? nb : 0) - e;
  if (n < e || k <= 0 || k >= w) return false;
  const mpz_int lhs =
      pow(mpz_int(n), static_cast<unsigned>(w)) * pow(mpz_int(e), static_cast<unsigned>(k));
  const mpz_int rhs = pow(mpz_int(s.max_distance), static_cast<unsigned>(k)) *
                      pow(mpz_int(e), static_cast<unsigned>(w));
  return lhs == rhs;
}

std::int64_t t5_exact_bucket(const spec::t5& s, std::int64_t r) {
  const std::int64_t b = ref::t5_bucket(s, r);
  return t5_on_integer_boundary(s, r, b + 1) ? b + 1 : b;
}

bool t5_fp32_may_differ(const spec::t5& s, std::int64_t r) {
  const std::int64_t nb = s.bidirectional ? s.num_buckets / 2 : s.num_buckets;
  const std::int64_t e = nb / 2;
  const std::int64_t n = s.bidirectional ? (r == INT64_MIN ? INT64_MAX : std::llabs(r))
                                         : (r < 0 ? (r == INT64_MIN ? INT64_MAX : -r) : 0);
  if (n < e) return false;
  // transformers: trunc(log(n/e)/log(max_distance/e)·(nb − e)) with fp32 tensors (the
  // denominator a host double, cast).
  const tv ratio = f32.div(metric::as_f32(double(n)), metric::as_f32(double(e)));
  const tv lg = f32.log(ratio, metric::kGlibc.log);
  const tv denom = f32.round(
      f64.log(f64.div(exact(double(s.max_distance)), exact(double(e))), metric::kGlibc.f64));
  const tv sc = f32.mul(f32.div(lg, denom), metric::as_f32(double(nb - e)));
  return std::fabs(sc.x - std::round(sc.x)) <= sc.e;
}

}  // namespace pev::impl

// Planning of rope_kernel: per-pair frequencies and constants of every strategy. The `hf` and
// `ggml` plans run the arithmetic of the `hf` and `ggml` recipes (ref/recipe.h, ref/rope.cpp) in
// real fp32/double arithmetic with the C library's powf/logf; `accurate` takes exact frequencies
// from the MPFR reference (plan time only).

#include "pev/ref/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <tuple>
#include <utility>

#include "pev/scalar/round.h"
#include "rope_impl.h"

namespace pev::kernel {

correction_range hf_yarn_correction_range(const spec::rope& s) {
  const auto d = static_cast<double>(s.rotary_dim);
  const double two_log_b = 2.0 * std::log(s.rope_theta);
  const auto Lo = static_cast<double>(s.original_max_position_embeddings);
  auto cdim = [&](double beta) {
    return (d * std::log(Lo / (beta * 2.0 * std::numbers::pi))) / two_log_b;
  };
  double low = cdim(s.beta_fast);
  double high = cdim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  return {std::max(low, 0.0), std::min(high, d - 1.0)};
}

namespace {

using spec::rope_type;

// Pairs that rotate: all, except for `proportional` (int(prf·head_dim // 2), Python float floor
// division; the rest is NoPE).
std::int64_t rotating_pairs(const spec::rope& s) {
  if (s.type != rope_type::proportional) return s.pairs();
  return static_cast<std::int64_t>(std::floor(s.partial_rotary_factor * double(s.head_dim) / 2.0));
}

bool truthy(const std::optional<double>& v) { return v.has_value() && *v != 0.0; }

std::int64_t dynamic_seq(const spec::rope& s, std::optional<std::int64_t> seq_len) {
  const std::int64_t L = s.max_position_embeddings;
  return std::max(seq_len.value_or(L), L);
}

bool longrope_long(const spec::rope& s, std::optional<std::int64_t> seq_len) {
  return seq_len.has_value() && *seq_len != 0 && *seq_len > s.original_max_position_embeddings;
}

float f32(double x) { return static_cast<float>(x); }

// ---------------------------------------------------------------------------------------------
// hf: transformers' fp32 frequencies. Every step rounds where the `hf` recipe rounds: the base
// cast to fp32, the exponent fl(2i/d), powf, the fp32 reciprocal and the fp32 scaling
// arithmetic; host scalars (correction range, band edges, NTK exponent, attention factor) in
// double, cast to fp32 where they meet a tensor.

// b^(2i/d) for i < n: a float32 pow of the fp32 base and the fp32 exponent fl(2i)/d.
std::vector<float> hf_base_powers(double base, std::int64_t d, std::int64_t n) {
  const float b = f32(base);
  std::vector<float> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    p[static_cast<std::size_t>(i)] = std::pow(b, static_cast<float>(2 * i) / static_cast<float>(d));
  }
  return p;
}

std::vector<float> hf_reciprocals(std::vector<float> p) {
  for (float& v : p) v = 1.0f / v;
  return p;
}

// get_mscale(s, μ) = 0.1·μ·ln s + 1 (left to right), 1 for s ≤ 1; Python double.
double hf_get_mscale(double scale, double mu) {
  if (scale <= 1.0) return 1.0;
  return 0.1 * mu * std::log(scale) + 1.0;
}

double hf_attention_factor(const spec::rope& s) {
  if (s.type == rope_type::yarn) {
    if (s.attention_factor) return *s.attention_factor;
    if (truthy(s.mscale) && truthy(s.mscale_all_dim)) {
      return hf_get_mscale(s.factor, *s.mscale) / hf_get_mscale(s.factor, *s.mscale_all_dim);
    }
    return hf_get_mscale(s.factor, 1.0);
  }
  if (s.type == rope_type::longrope) {
    if (s.attention_factor) return *s.attention_factor;
    if (s.factor <= 1.0) return 1.0;
    return std::sqrt(1.0 + std::log(s.factor) /
                               std::log(static_cast<double>(s.original_max_position_embeddings)));
  }
  return 1.0;
}

// YaRN ramp over pairs j: clamp((j − low)/(high − low), 0, 1) in fp32, the correction range in
// double (find_correction_range), low == high widened by 0.001 as transformers does.
std::vector<float> hf_yarn_ramp(const spec::rope& s) {
  auto [low, high] = hf_yarn_correction_range(s);
  if (low == high) high += 0.001;
  const float lo = f32(low);
  const float width = f32(high - low);
  std::vector<float> ramp(static_cast<std::size_t>(s.pairs()));
  for (std::size_t j = 0; j < ramp.size(); ++j) {
    const float v = (static_cast<float>(j) - lo) / width;
    ramp[j] = std::min(1.0f, std::max(0.0f, v));
  }
  return ramp;
}

std::vector<float> hf_frequencies(const spec::rope& s, std::optional<std::int64_t> seq_len) {
  const std::int64_t d = s.rotary_dim;
  const std::int64_t pairs = s.pairs();
  const double b = s.rope_theta;
  switch (s.type) {
    case rope_type::default_: {
      auto inv = hf_reciprocals(hf_base_powers(b, d, pairs));
      if (s.freq_scale != 1.0) {
        for (float& v : inv) v = v * f32(s.freq_scale);
      }
      return inv;
    }
    case rope_type::linear: {
      auto inv = hf_reciprocals(hf_base_powers(b, d, pairs));
      for (float& v : inv) v = v / f32(s.factor);
      return inv;
    }
    case rope_type::ntk: {
      // Static NTK-aware (transformers@0044e3b): base·factor^(d/(d−2)) on the host.
      const double e = static_cast<double>(d) / static_cast<double>(d - 2);
      return hf_reciprocals(hf_base_powers(b * std::pow(s.factor, e), d, pairs));
    }
    case rope_type::dynamic: {
      const std::int64_t seq = dynamic_seq(s, seq_len);
      if (seq <= s.max_position_embeddings) return hf_reciprocals(hf_base_powers(b, d, pairs));
      // forward: seq_len is an int64 tensor, so α = f·s/L − (f − 1) and the base are fp32.
      const float fs = f32(s.factor) * static_cast<float>(seq);
      const float alpha = fs / static_cast<float>(s.max_position_embeddings) - f32(s.factor - 1.0);
      const double e = static_cast<double>(d) / static_cast<double>(d - 2);
      const float base = f32(b) * std::pow(alpha, f32(e));
      return hf_reciprocals(hf_base_powers(base, d, pairs));
    }
    case rope_type::yarn: {
      const auto P = hf_base_powers(b, d, pairs);
      const auto ramp = hf_yarn_ramp(s);
      const float f = f32(s.factor);
      std::vector<float> inv(P.size());
      for (std::size_t j = 0; j < P.size(); ++j) {
        // Blend of inverse frequencies with extrapolation weight γ = 1 − ramp.
        const float gamma = 1.0f - ramp[j];
        const float extrap = 1.0f / P[j];
        const float interp = 1.0f / (f * P[j]);
        inv[j] = interp * (1.0f - gamma) + extrap * gamma;
      }
      return inv;
    }
    case rope_type::llama3: {
      auto inv = hf_reciprocals(hf_base_powers(b, d, pairs));
      const auto Lo = static_cast<double>(s.original_max_position_embeddings);
      const float low_wl = f32(Lo / s.low_freq_factor);
      const float high_wl = f32(Lo / s.high_freq_factor);
      const float two_pi = f32(2.0 * std::numbers::pi);
      const float f = f32(s.factor);
      const float low = f32(s.low_freq_factor);
      const float band = f32(s.high_freq_factor - s.low_freq_factor);
      for (float& v : inv) {
        const float wl = two_pi / v;
        if (wl > low_wl) {
          v = v / f;
        } else if (!(wl < high_wl)) {
          // Medium band (edges inclusive): s = (Lo/λ − low)/(high − low), θ' = (1−s)θ/f + sθ.
          const float sm = (f32(Lo) / wl - low) / band;
          v = ((1.0f - sm) * v) / f + sm * v;
        }
      }
      return inv;
    }
    case rope_type::longrope: {
      const auto& ext = longrope_long(s, seq_len) ? s.long_factor : s.short_factor;
      const auto P = hf_base_powers(b, d, pairs);
      std::vector<float> inv(P.size());
      for (std::size_t j = 0; j < P.size(); ++j) inv[j] = 1.0f / (f32(ext[j]) * P[j]);
      return inv;
    }
    case rope_type::proportional: {
      // Full-dim exponents 2i/head_dim for the rotating pairs, exact zeros after, all / factor.
      auto inv = hf_reciprocals(hf_base_powers(b, s.head_dim, rotating_pairs(s)));
      inv.resize(static_cast<std::size_t>(pairs), 0.0f);
      for (float& v : inv) v = v / f32(s.factor);
      return inv;
    }
    case rope_type::ggml:
      break;  // refused by the constructor: no transformers pipeline
  }
  throw error("rope: unsupported rope_type");
}

// ---------------------------------------------------------------------------------------------
// ggml: ggml_rope_ext's parameters as the `ggml` recipe derives them from the spec (host scalars
// in fp32, the constant-exponent powf and logf of the CPU kernel). Where the recipe rounds an
// exact double operand's result to fp32, the double result is cast (a double rounding only for
// results within 2^−29 ulp of an fp32 midpoint).

// get_mscale in fp32 host arithmetic: fl(fl(0.1f·μ)·fl(ln s)) + 1.
float ggml_get_mscale(double scale, double mu) {
  if (scale <= 1.0) return 1.0f;
  const float a = f32(static_cast<double>(0.1f) * mu);
  return a * f32(std::log(scale)) + 1.0f;
}

float ggml_attention_factor(const spec::rope& s) {
  if (s.type == rope_type::yarn) {
    if (s.attention_factor) return f32(*s.attention_factor);
    if (truthy(s.mscale) && truthy(s.mscale_all_dim)) {
      return ggml_get_mscale(s.factor, *s.mscale) / ggml_get_mscale(s.factor, *s.mscale_all_dim);
    }
    return ggml_get_mscale(s.factor, 1.0);
  }
  if (s.type == rope_type::longrope) {
    if (s.attention_factor) return f32(*s.attention_factor);
    if (s.factor <= 1.0) return 1.0f;
    const float ratio = f32(std::log(s.factor)) /
                        f32(std::log(static_cast<double>(s.original_max_position_embeddings)));
    return std::sqrt(1.0f + ratio);
  }
  return 1.0f;
}

/// ggml's float arithmetic, for ref::ggml_yarn_corr_dims (logf: std::log of a float).
struct f32_arith {
  using value = float;
  static float num(std::int64_t k) { return static_cast<float>(k); }
  static float mul(float x, float y) { return x * y; }
  static float div(float x, float y) { return x / y; }
  static float log(float x) { return std::log(x); }
  static float floor(float x) { return std::floor(x); }
  static float ceil(float x) { return std::ceil(x); }
  static float max(float lo, float x) { return std::max(lo, x); }
  static float min(float hi, float x) { return std::min(hi, x); }
};

detail::ggml_rope_params ggml_plan(const spec::rope& s, std::optional<std::int64_t> seq_len) {
  detail::ggml_rope_params g;
  const std::int64_t n_dims = s.rotary_dim;
  const auto n = static_cast<double>(n_dims);
  double b = s.rope_theta;
  float attn = 1.0f;
  g.rotating = rotating_pairs(s);
  switch (s.type) {
    case rope_type::ggml: {
      // ggml_rope_ext's own parameters (docs/encodings.md §8.7), as floats.
      g.freq_scale = f32(s.freq_scale);
      g.ext_factor = f32(s.ext_factor);
      attn = f32(s.attn_factor);
      // ggml_rope_yarn_corr_dims: float arithmetic, logf, (float)M_PI; n_ctx_orig 0 gives
      // logf(0) = −∞, hence dims [0, −∞].
      std::tie(g.corr_low, g.corr_high) = ref::ggml_yarn_corr_dims(
          f32_arith{}, n_dims, static_cast<float>(s.original_max_position_embeddings), f32(b),
          f32(s.beta_fast), f32(s.beta_slow), f32(std::numbers::pi));
      for (double c : s.freq_factors) g.freq_factors.push_back(f32(c));
      break;
    }
    case rope_type::default_:
      g.freq_scale = f32(s.freq_scale);
      break;
    case rope_type::linear:
    case rope_type::proportional:
      g.freq_scale = f32(1.0 / s.factor);
      break;
    case rope_type::ntk: {
      // No static NTK type in ggml: the scaled base is passed as freq_base.
      const float e = f32(n / (n - 2.0));
      b = f32(b * static_cast<double>(f32(std::pow(s.factor, static_cast<double>(e)))));
      break;
    }
    case rope_type::dynamic: {
      // No dynamic NTK in ggml: the base at this sequence length, computed on the host.
      const std::int64_t seq = dynamic_seq(s, seq_len);
      if (seq > s.max_position_embeddings) {
        const float fs = f32(s.factor * static_cast<double>(seq));
        const float q =
            f32(static_cast<double>(fs) / static_cast<double>(s.max_position_embeddings));
        const float alpha = f32(static_cast<double>(q) - static_cast<double>(f32(s.factor - 1.0)));
        const float e = f32(n / (n - 2.0));
        const float pw = f32(std::pow(static_cast<double>(alpha), static_cast<double>(e)));
        b = f32(b * static_cast<double>(pw));
      }
      break;
    }
    case rope_type::yarn: {
      g.freq_scale = f32(1.0 / s.factor);
      g.ext_factor = 1.0f;
      // llama.cpp passes attn_factor = m_HF/(1 + 0.1·ln f); the kernel's own YaRN magnitude
      // factor brings the product back to transformers' attention factor.
      attn = ggml_attention_factor(s) / (1.0f + 0.1f * f32(std::log(s.factor)));
      // ggml_rope_yarn_corr_dims: float arithmetic, logf, (float)M_PI; always floor/ceil.
      std::tie(g.corr_low, g.corr_high) = ref::ggml_yarn_corr_dims(
          f32_arith{}, n_dims, f32(static_cast<double>(s.original_max_position_embeddings)), f32(b),
          f32(s.beta_fast), f32(s.beta_slow), f32(std::numbers::pi));
      break;
    }
    case rope_type::llama3: {
      // convert_hf_to_gguf.py rope_freqs: c_i = 1 (λ < Lo/high), f (λ > Lo/low), else
      // 1/((1−t)/f + t), t = (Lo/λ − low)/(high − low); λ from the fp32 frequency; stored fp32.
      const auto inv = hf_reciprocals(hf_base_powers(b, n_dims, s.pairs()));
      const auto Lo = static_cast<double>(s.original_max_position_embeddings);
      const float low_wl = f32(Lo / s.low_freq_factor);
      const float high_wl = f32(Lo / s.high_freq_factor);
      const float two_pi = 2.0f * f32(std::numbers::pi);
      const float band = f32(s.high_freq_factor - s.low_freq_factor);
      for (float v : inv) {
        const float wl = two_pi / v;
        float c = 1.0f;
        if (wl > low_wl) {
          c = f32(s.factor);
        } else if (!(wl < high_wl)) {
          const float ratio = f32(Lo / static_cast<double>(wl));
          const float num = f32(static_cast<double>(ratio) - s.low_freq_factor);
          const float t = f32(static_cast<double>(num) / static_cast<double>(band));
          const float a = f32(1.0 - static_cast<double>(t));
          const float over_f = f32(static_cast<double>(a) / s.factor);
          c = f32(1.0 / static_cast<double>(over_f + t));
        }
        g.freq_factors.push_back(c);
      }
      break;
    }
    case rope_type::longrope: {
      const auto& ext = longrope_long(s, seq_len) ? s.long_factor : s.short_factor;
      for (double c : ext) g.freq_factors.push_back(f32(c));
      attn = ggml_attention_factor(s);
      break;
    }
  }
  const float base = f32(b);
  g.theta_scale = std::pow(base, -2.0f / static_cast<float>(n_dims));
  g.mscale = attn;
  if (g.ext_factor != 0.0f) {
    g.mscale = g.mscale * (1.0f + 0.1f * std::log(1.0f / g.freq_scale));
  }
  return g;
}

}  // namespace

rope_kernel::rope_kernel(const spec::rope& s, strategy st, std::optional<std::int64_t> seq_len)
    : impl_(std::make_unique<impl>()) {
  spec::validate(spec::encoding{s});
  impl& k = *impl_;
  k.spec = s;
  k.st = st;
  switch (st) {
    case strategy::hf:
    case strategy::table_fp16:
    case strategy::table_bf16:
      if (s.type == rope_type::ggml) {
        throw error(fmt::format(
            "strategy {}: the ggml form (ggml_rope_ext's own parameters) has no transformers "
            "pipeline; its strategies are ggml and accurate",
            to_string(st)));
      }
      k.inv_freq = hf_frequencies(s, seq_len);
      // The attention factor is a host double, an fp32 operand of the multiplication.
      k.attention_factor = f32(hf_attention_factor(s));
      break;
    case strategy::ggml: {
      k.ggml = ggml_plan(s, seq_len);
      k.attention_factor = k.ggml.mscale;
      // The frequencies the recurrence realises: its angles at position 1.
      k.inv_freq.assign(static_cast<std::size_t>(s.pairs()), 0.0f);
      detail::ggml_angles(k.ggml, s.pairs(), 1, [&](std::int64_t i, float a) {
        k.inv_freq[static_cast<std::size_t>(i)] = a;
      });
      break;
    }
    case strategy::accurate: {
      // Exact frequencies and attention factor from the MPFR reference, with enough precision
      // for 192-bit turn fractions whatever the process-wide default is.
      const precision_scope work(std::max(precision_bits(), 200u));
      const ref::rope_reference exact(s, ref::exact_recipe(), seq_len);
      for (const real& theta : exact.inv_freq()) {
        k.turns.push_back(detail::turn_of_angle(theta));
        k.inv_freq.push_back(round_to<float>(theta));
      }
      k.m = round_to<double>(exact.attention_factor());
      k.attention_factor = round_to<float>(exact.attention_factor());
      break;
    }
  }
}

rope_kernel::~rope_kernel() = default;
rope_kernel::rope_kernel(rope_kernel&&) noexcept = default;
rope_kernel& rope_kernel::operator=(rope_kernel&&) noexcept = default;

const spec::rope& rope_kernel::spec() const { return impl_->spec; }
strategy rope_kernel::used_strategy() const { return impl_->st; }
std::int64_t rope_kernel::pairs() const { return impl_->spec.pairs(); }
std::span<const float> rope_kernel::inv_freq() const { return impl_->inv_freq; }
float rope_kernel::attention_factor() const { return impl_->attention_factor; }

struct ggml_angle_plan::params : detail::ggml_rope_params {};

ggml_angle_plan::ggml_angle_plan(const spec::rope& s, std::optional<std::int64_t> seq_len)
    : p_(std::make_unique<params>(params{ggml_plan(s, seq_len)})) {}
ggml_angle_plan::~ggml_angle_plan() = default;
ggml_angle_plan::ggml_angle_plan(ggml_angle_plan&&) noexcept = default;
float ggml_angle_plan::theta_scale() const { return p_->theta_scale; }
void ggml_angle_plan::set_theta_scale(float ts) { p_->theta_scale = ts; }
float ggml_angle_plan::mscale() const { return p_->mscale; }
bool ggml_angle_plan::mixes() const { return p_->ext_factor != 0.0f; }
ggml_mix ggml_angle_plan::mix() const { return p_->mix; }
void ggml_angle_plan::set_mix(ggml_mix m) { p_->mix = m; }

const char* describe(ggml_mix m) {
  switch (m) {
    case ggml_mix::separate:
      return "the angle mix rounded product by product (no FMA)";
    case ggml_mix::fused_interp:
      return "the angle mix fused by FMA contraction, fma(interp, 1 - mix, extrap*mix)";
    case ggml_mix::fused_extrap:
      return "the angle mix fused by FMA contraction, fma(extrap, mix, interp*(1 - mix))";
  }
  return "";
}
std::int64_t ggml_angle_plan::rotating() const { return p_->rotating; }
void ggml_angle_plan::angles(std::int64_t p, std::span<float> out) const {
  detail::ggml_angles(*p_, static_cast<std::int64_t>(out.size()), p,
                      [&](std::int64_t i, float a) { out[static_cast<std::size_t>(i)] = a; });
}

}  // namespace pev::kernel

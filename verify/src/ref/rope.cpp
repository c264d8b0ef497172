#include "pev/ref/rope.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "pev/core/error.h"

namespace pev::ref {
namespace {

using spec::rope_type;

real I(std::int64_t v) { return real_from_int(v); }
real D(double v) { return real(v); }  // doubles are exact in a real of ≥ 53 bits

// Arithmetic that rounds every result to one format (the recipe's rounding point for that stage).
struct arith {
  rounding f;
  real r(const real& x) const { return round(f, x); }
  real add(const real& a, const real& b) const { return r(a + b); }
  real sub(const real& a, const real& b) const { return r(a - b); }
  real mul(const real& a, const real& b) const { return r(a * b); }
  real div(const real& a, const real& b) const { return r(a / b); }
  real pow(const real& a, const real& b) const { return r(boost::multiprecision::pow(a, b)); }
  real log(const real& a) const { return r(boost::multiprecision::log(a)); }
};

// `arith` as ggml_yarn_corr_dims takes it; max and min as the reference clamps (x < lo: lo).
struct corr_arith {
  using value = real;
  const arith& a;
  real num(std::int64_t k) const { return I(k); }
  real mul(const real& x, const real& y) const { return a.mul(x, y); }
  real div(const real& x, const real& y) const { return a.div(x, y); }
  real log(const real& x) const { return a.log(x); }
  real floor(const real& x) const { return boost::multiprecision::floor(x); }
  real ceil(const real& x) const { return boost::multiprecision::ceil(x); }
  real max(const real& lo, const real& x) const { return x < lo ? lo : x; }
  real min(const real& hi, const real& x) const { return x > hi ? hi : x; }
};

// Rotary dimension that the exponents 2i/d use, and the number of pairs that rotate.
std::int64_t exponent_dim(const spec::rope& s) { return s.rotary_dim; }

std::int64_t rotating_pairs(const spec::rope& s) {
  if (s.type != rope_type::proportional) return s.pairs();
  // HF proportional: int(partial_rotary_factor * head_dim // 2), Python float floor division.
  return static_cast<std::int64_t>(std::floor(s.partial_rotary_factor * double(s.head_dim) / 2.0));
}

// b^(2i/d) for i < n with the exponent formed as fp(2i)/d and the base rounded to the frequency
// format first (transformers passes a Python scalar base to a float32 pow).
std::vector<real> base_powers(const real& base, std::int64_t d, std::int64_t n, const arith& fr) {
  std::vector<real> p(static_cast<std::size_t>(n));
  const real b = fr.r(base);
  for (std::int64_t i = 0; i < n; ++i) p[i] = fr.pow(b, fr.div(I(2 * i), I(d)));
  return p;
}

std::vector<real> reciprocals(const std::vector<real>& p, const arith& fr) {
  std::vector<real> v(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) v[i] = fr.div(I(1), p[i]);
  return v;
}

bool truthy(const std::optional<double>& v) { return v.has_value() && *v != 0.0; }

// A ggml parameter as ggml receives it: the float32 nearest the value given (spec.h).
real F(double v) { return round(dtype::fp32, D(v)); }

// rope_yarn_ramp of pair i: 1 − clamp((i − low)/max(0.001, high − low), 0, 1) (exact: with low
// and high integers or −∞, the 0.001 only matters where the clamp removes it).
real ggml_ramp(std::int64_t i, const real& low, const real& high, const arith& a) {
  real width = a.sub(high, low);
  const real min_width = a.r(real("0.001"));
  if (width < min_width) width = min_width;
  real y = a.div(a.sub(I(i), low), width);
  if (y < 0) y = 0;
  if (y > 1) y = 1;
  return a.sub(I(1), y);
}

// Base after static or dynamic NTK scaling, b·α^(d/(d−2)). `fr` rounds each operation.
real ntk_base(const real& b, const real& alpha, std::int64_t d, const arith& fr,
              const arith& host) {
  const real e = host.div(I(d), I(d - 2));
  return fr.mul(fr.r(b), fr.pow(alpha, fr.r(e)));
}

// Dynamic NTK α(s) = f·s/L − (f − 1) for s > L, computed as transformers' forward does (fp32 tensor
// arithmetic; f − 1 on the host).
real dynamic_alpha(const spec::rope& s, std::int64_t seq, const arith& fr, const arith& host) {
  const real f = fr.r(D(s.factor));
  const real fs = fr.mul(f, fr.r(I(seq)));
  return fr.sub(fr.div(fs, fr.r(I(s.max_position_embeddings))), fr.r(host.sub(D(s.factor), I(1))));
}

std::int64_t dynamic_seq(const spec::rope& s, std::optional<std::int64_t> seq_len) {
  const std::int64_t L = s.max_position_embeddings;
  return std::max(seq_len.value_or(L), L);
}

bool longrope_long(const spec::rope& s, std::optional<std::int64_t> seq_len) {
  return seq_len.has_value() && *seq_len != 0 && *seq_len > s.original_max_position_embeddings;
}

real attention_factor_of(const spec::rope& s, const arith& host) {
  if (s.type == rope_type::ggml) {
    // rope_yarn: mscale = attn_factor, times 1 + 0.1·ln(1/freq_scale) when ext_factor ≠ 0 (no
    // guard: below 1 for freq_scale > 1).
    const real af = F(s.attn_factor);
    if (F(s.ext_factor) == 0) return af;
    return host.mul(af, host.add(I(1), host.mul(host.r(real("0.1")),
                                                host.log(host.div(I(1), F(s.freq_scale))))));
  }
  if (s.type == rope_type::yarn) {
    if (s.attention_factor) return host.r(D(*s.attention_factor));
    const real f = D(s.factor);
    if (truthy(s.mscale) && truthy(s.mscale_all_dim)) {
      return host.div(yarn_get_mscale(f, D(*s.mscale), host.f),
                      yarn_get_mscale(f, D(*s.mscale_all_dim), host.f));
    }
    return yarn_get_mscale(f, I(1), host.f);
  }
  if (s.type == rope_type::longrope) {
    if (s.attention_factor) return host.r(D(*s.attention_factor));
    if (s.factor <= 1.0) return I(1);
    const real ratio =
        host.div(host.log(D(s.factor)), host.log(I(s.original_max_position_embeddings)));
    return host.r(boost::multiprecision::sqrt(host.add(I(1), ratio)));
  }
  return I(1);
}

// Per-pair frequencies by the power method (transformers' structure), rounded by `fr`.
std::vector<real> power_frequencies(const spec::rope& s, std::optional<std::int64_t> seq_len,
                                    const arith& fr, const arith& host) {
  const std::int64_t d = exponent_dim(s);
  const std::int64_t pairs = s.pairs();
  const real b = D(s.rope_theta);
  switch (s.type) {
    case rope_type::default_: {
      auto inv = reciprocals(base_powers(b, d, pairs, fr), fr);
      if (s.freq_scale != 1.0) {
        for (auto& v : inv) v = fr.mul(v, fr.r(D(s.freq_scale)));
      }
      return inv;
    }
    case rope_type::linear: {
      auto inv = reciprocals(base_powers(b, d, pairs, fr), fr);
      for (auto& v : inv) v = fr.div(v, fr.r(D(s.factor)));
      return inv;
    }
    case rope_type::ntk: {
      // Static NTK-aware (transformers@0044e3b): the base is scaled on the host.
      const real e = host.div(I(d), I(d - 2));
      const real bp = host.mul(b, host.pow(D(s.factor), e));
      return reciprocals(base_powers(bp, d, pairs, fr), fr);
    }
    case rope_type::dynamic: {
      const std::int64_t seq = dynamic_seq(s, seq_len);
      if (seq <= s.max_position_embeddings) {
        return reciprocals(base_powers(b, d, pairs, fr), fr);  // original_inv_freq
      }
      const real bp = ntk_base(b, dynamic_alpha(s, seq, fr, host), d, fr, host);
      return reciprocals(base_powers(bp, d, pairs, fr), fr);
    }
    case rope_type::yarn: {
      const auto P = base_powers(b, d, pairs, fr);
      const auto ramp = yarn_ramp(s, fr.f);
      const real f = fr.r(D(s.factor));
      std::vector<real> inv(static_cast<std::size_t>(pairs));
      for (std::int64_t j = 0; j < pairs; ++j) {
        // transformers blends inverse frequencies with extrapolation weight γ = 1 − ramp.
        const real gamma = fr.sub(I(1), ramp[j]);
        const real extrap = fr.div(I(1), P[j]);
        const real interp = fr.div(I(1), fr.mul(f, P[j]));
        inv[j] = fr.add(fr.mul(interp, fr.sub(I(1), gamma)), fr.mul(extrap, gamma));
      }
      return inv;
    }
    case rope_type::llama3: {
      auto inv = reciprocals(base_powers(b, d, pairs, fr), fr);
      const real Lo = I(s.original_max_position_embeddings);
      const real low_wl = fr.r(host.div(Lo, D(s.low_freq_factor)));
      const real high_wl = fr.r(host.div(Lo, D(s.high_freq_factor)));
      const real two_pi = fr.r(host.mul(I(2), host.r(pi())));
      const real f = fr.r(D(s.factor));
      const real band = fr.r(host.sub(D(s.high_freq_factor), D(s.low_freq_factor)));
      for (auto& v : inv) {
        const real wl = fr.div(two_pi, v);
        if (wl > low_wl) {
          v = fr.div(v, f);
        } else if (!(wl < high_wl)) {
          // Medium band (edges inclusive): s = (Lo/λ − low)/(high − low), θ' = (1−s)θ/f + sθ.
          const real sm = fr.div(fr.sub(fr.div(fr.r(Lo), wl), fr.r(D(s.low_freq_factor))), band);
          v = fr.add(fr.div(fr.mul(fr.sub(I(1), sm), v), f), fr.mul(sm, v));
        }
      }
      return inv;
    }
    case rope_type::longrope: {
      const auto& ext = longrope_long(s, seq_len) ? s.long_factor : s.short_factor;
      const auto P = base_powers(b, d, pairs, fr);
      std::vector<real> inv(static_cast<std::size_t>(pairs));
      for (std::int64_t j = 0; j < pairs; ++j) {
        inv[j] = fr.div(I(1), fr.mul(fr.r(D(ext[j])), P[j]));
      }
      return inv;
    }
    case rope_type::proportional: {
      const std::int64_t n = rotating_pairs(s);
      auto inv = reciprocals(base_powers(b, s.head_dim, n, fr), fr);
      inv.resize(static_cast<std::size_t>(pairs), I(0));  // NoPE tail: exactly zero
      for (auto& v : inv) v = fr.div(v, fr.r(D(s.factor)));
      return inv;
    }
    case rope_type::ggml: {
      // ggml's rope as mathematics (docs/encodings.md §8.7): θ_extrap = p·b^(−2i/n)/c_i,
      // θ_interp = freq_scale·θ_extrap, θ = θ_interp·(1 − mix_i) + θ_extrap·mix_i with mix_i =
      // ramp_i·ext_factor — linear in p, so a frequency per pair. Only the exact recipe evaluates
      // it this way; the ggml recipe runs the recurrence.
      if (fr.f) throw error("the ggml form has no pipeline of transformers' recipe (hf)");
      const auto inv = reciprocals(base_powers(F(s.rope_theta), d, pairs, fr), fr);
      const real fs = F(s.freq_scale);
      const real ef = F(s.ext_factor);
      const auto [low, high] = ggml_corr_dims(s, fr.f);
      std::vector<real> out(static_cast<std::size_t>(pairs));
      for (std::int64_t i = 0; i < pairs; ++i) {
        real v = inv[i];
        if (!s.freq_factors.empty()) v = v / F(s.freq_factors[i]);
        const real mix = ef == 0 ? real(0) : ggml_ramp(i, low, high, fr) * ef;
        out[i] = v * (fs * (1 - mix) + mix);
      }
      return out;
    }
  }
  throw error("rope: unsupported rope_type");
}

}  // namespace

real yarn_get_mscale(const real& scale, const real& mu, rounding host_fmt) {
  const arith host{host_fmt};
  if (scale <= 1) return I(1);
  // 0.1 * mscale * math.log(scale) + 1.0, left to right.
  return host.add(host.mul(host.mul(host.r(real("0.1")), mu), host.log(scale)), I(1));
}

// ggml_rope_yarn_corr_dims for the ggml form: cdim(β) = n·ln(n_ctx_orig/(2π·β))/(2·ln b), low =
// max(0, floor(cdim(β_fast))), high = min(n − 1, ceil(cdim(β_slow))), in the arithmetic `a` (exact,
// or ggml's fp32 with logf). n_ctx_orig = 0 gives ln 0 = −∞: low 0, high −∞ (then every pair but
// the first has ramp 0; docs/encodings.md §8.7).
std::pair<real, real> ggml_corr_dims(const spec::rope& s, rounding arithmetic) {
  const arith a{arithmetic};
  const std::int64_t n = s.rotary_dim;
  if (s.original_max_position_embeddings == 0) {
    return {I(0), real(-std::numeric_limits<double>::infinity())};
  }
  return ggml_yarn_corr_dims(corr_arith{a}, n, a.r(I(s.original_max_position_embeddings)),
                             F(s.rope_theta), F(s.beta_fast), F(s.beta_slow), a.r(pi()));
}

yarn_range yarn_correction_range(const spec::rope& s, rounding host_fmt) {
  const arith host{host_fmt};
  const std::int64_t d = exponent_dim(s);
  const real b = D(s.rope_theta);
  const real Lo = I(s.original_max_position_embeddings);
  const real two_log_b = host.mul(I(2), host.log(b));
  auto cdim = [&](double beta) {
    // (dim * math.log(Lo / (num_rotations * 2 * math.pi))) / (2 * math.log(base))
    const real rot = host.mul(host.mul(D(beta), I(2)), host.r(pi()));
    return host.div(host.mul(I(d), host.log(host.div(Lo, rot))), two_log_b);
  };
  yarn_range r;
  r.low_raw = cdim(s.beta_fast);
  r.high_raw = cdim(s.beta_slow);
  r.low = s.truncate ? real(floor(r.low_raw)) : r.low_raw;
  r.high = s.truncate ? real(ceil(r.high_raw)) : r.high_raw;
  if (r.low < 0) r.low = 0;
  if (r.high > I(d - 1)) r.high = I(d - 1);
  return r;
}

std::vector<real> yarn_ramp(const spec::rope& s, rounding arithmetic) {
  const arith fr{arithmetic};
  const arith host{arithmetic ? rounding(dtype::fp64) : std::nullopt};
  const yarn_range range = yarn_correction_range(s, host.f);
  real low = range.low;
  real high = range.high;
  if (low == high) high = host.add(high, real("0.001"));
  const real lo = fr.r(low);
  const real width = fr.r(host.sub(high, low));
  std::vector<real> ramp(static_cast<std::size_t>(s.pairs()));
  for (std::int64_t j = 0; j < s.pairs(); ++j) {
    real v = fr.div(fr.sub(I(j), lo), width);
    if (v < 0) v = 0;
    if (v > 1) v = 1;
    ramp[j] = v;
  }
  return ramp;
}

rope_reference::rope_reference(const spec::rope& s, const recipe& r,
                               std::optional<std::int64_t> seq_len)
    : spec_(s), recipe_(&r), seq_len_(seq_len), work_bits_(precision_bits() + kGuardBits) {
  spec::validate(spec::encoding{s});
  const precision_scope work(work_bits_);
  if (!r.rope) throw error("recipe " + std::string(r.name) + " has no RoPE pipeline");
  const rope_points& pts = *r.rope;
  const arith host{pts.host};
  const arith fr{pts.frequency};
  attention_factor_ = attention_factor_of(s, host);
  if (pts.method == frequency_method::power) {
    inv_freq_ = power_frequencies(s, seq_len, fr, host);
    return;
  }

  // ggml: parameters of ggml_rope_ext as llama.cpp sets them for this spec.
  const std::int64_t n_dims = exponent_dim(s) == 0 ? s.head_dim : exponent_dim(s);
  real b = D(s.rope_theta);
  freq_scale_ = I(1);
  ext_factor_ = I(0);
  real attn = I(1);
  switch (s.type) {
    case rope_type::ggml: {
      // ggml_rope_ext's own parameters, as floats.
      freq_scale_ = fr.r(F(s.freq_scale));
      ext_factor_ = fr.r(F(s.ext_factor));
      attn = fr.r(F(s.attn_factor));
      b = F(s.rope_theta);
      const auto [low, high] = ggml_corr_dims(s, fr.f);
      corr_low_ = low;
      corr_high_ = high;
      for (double c : s.freq_factors) freq_factors_.push_back(fr.r(F(c)));
      break;
    }
    case rope_type::default_:
      freq_scale_ = fr.r(D(s.freq_scale));
      break;
    case rope_type::linear:
    case rope_type::proportional:
      freq_scale_ = fr.r(host.div(I(1), D(s.factor)));
      break;
    case rope_type::ntk: {
      // No static NTK type in ggml: users pass the scaled base as freq_base.
      const real e = host.div(I(n_dims), I(n_dims - 2));
      b = host.mul(b, host.pow(D(s.factor), e));
      break;
    }
    case rope_type::dynamic: {
      // No dynamic NTK in ggml: the base at this sequence length, computed on the host.
      const std::int64_t seq = dynamic_seq(s, seq_len);
      if (seq > s.max_position_embeddings) {
        const real alpha =
            host.sub(host.div(host.mul(D(s.factor), I(seq)), I(s.max_position_embeddings)),
                     host.sub(D(s.factor), I(1)));
        b = host.mul(b, host.pow(alpha, host.div(I(n_dims), I(n_dims - 2))));
      }
      break;
    }
    case rope_type::yarn: {
      freq_scale_ = fr.r(host.div(I(1), D(s.factor)));
      ext_factor_ = I(1);
      // llama.cpp passes attn_factor = m_HF / (1 + 0.1·ln f) so that the kernel's own YaRN
      // magnitude factor brings the product back to transformers' attention factor.
      attn = host.div(attention_factor_,
                      host.add(I(1), host.mul(host.r(real("0.1")), host.log(D(s.factor)))));
      // ggml_rope_yarn_corr_dims: float arithmetic, logf, (float)M_PI; always floor/ceil.
      std::tie(corr_low_, corr_high_) =
          ggml_yarn_corr_dims(corr_arith{fr}, n_dims, fr.r(I(s.original_max_position_embeddings)),
                              fr.r(b), fr.r(D(s.beta_fast)), fr.r(D(s.beta_slow)), fr.r(pi()));
      break;
    }
    case rope_type::llama3: {
      // convert_hf_to_gguf.py rope_freqs: c_i = 1 (λ < Lo/high), f (λ > Lo/low), else
      // 1/((1−t)/f + t), t = (Lo/λ − low)/(high − low); λ from the fp32 frequency; stored fp32.
      const auto inv = reciprocals(base_powers(b, n_dims, s.pairs(), fr), fr);
      const real Lo = I(s.original_max_position_embeddings);
      const real low_wl = host.div(Lo, D(s.low_freq_factor));
      const real high_wl = host.div(Lo, D(s.high_freq_factor));
      for (const auto& v : inv) {
        const real wl = fr.div(fr.r(host.mul(I(2), host.r(pi()))), v);
        real c = I(1);
        if (wl > low_wl) {
          c = D(s.factor);
        } else if (!(wl < high_wl)) {
          const real t = host.div(host.sub(host.div(Lo, wl), D(s.low_freq_factor)),
                                  host.sub(D(s.high_freq_factor), D(s.low_freq_factor)));
          c = host.div(I(1), host.add(host.div(host.sub(I(1), t), D(s.factor)), t));
        }
        freq_factors_.push_back(fr.r(c));
      }
      break;
    }
    case rope_type::longrope: {
      const auto& ext = longrope_long(s, seq_len) ? s.long_factor : s.short_factor;
      for (double c : ext) freq_factors_.push_back(fr.r(D(c)));
      attn = attention_factor_;
      break;
    }
  }
  const arith fa{pts.angle};
  base_ = fr.r(b);
  theta_scale_ = fr.pow(base_, fr.div(I(-2), I(n_dims)));
  mscale_ = arith{pts.scale}.r(attn);
  if (ext_factor_ != 0) {
    // mscale *= 1.0f + 0.1f * logf(1.0f / freq_scale)
    const arith fs{pts.scale};
    mscale_ =
        fs.mul(mscale_, fs.add(I(1), fs.mul(fs.r(real("0.1")), fs.log(fa.div(I(1), freq_scale_)))));
  }
  // The frequencies the recurrence realises: its angles at position 1.
  inv_freq_ = angles(1);
}

std::vector<real> rope_reference::angles(std::int64_t p) const {
  const precision_scope work(work_bits_);
  const rope_points& pts = *recipe_->rope;
  const arith fa{pts.angle};
  const std::int64_t pairs = spec_.pairs();
  std::vector<real> out(static_cast<std::size_t>(pairs));
  if (pts.method == frequency_method::power) {
    const real pos = round(pts.position, I(p));
    for (std::int64_t i = 0; i < pairs; ++i) out[i] = fa.mul(pos, inv_freq_[i]);
    return out;
  }
  // ggml_rope_cache_init: θ starts at float(p) and is multiplied by theta_scale after each pair.
  const arith fr{pts.frequency};
  const std::int64_t rotating = rotating_pairs(spec_);
  real theta = round(pts.position, I(p));
  for (std::int64_t i = 0; i < pairs; ++i) {
    if (i >= rotating) {
      out[i] = 0;
      continue;
    }
    const real extrap = freq_factors_.empty() ? theta : fa.div(theta, freq_factors_[i]);
    const real interp = fa.mul(freq_scale_, extrap);
    if (ext_factor_ != 0) {
      const real mix = fr.mul(ggml_ramp(i, corr_low_, corr_high_, fr), ext_factor_);
      out[i] = fa.add(fa.mul(interp, fa.sub(I(1), mix)), fa.mul(extrap, mix));
    } else {
      out[i] = interp;
    }
    theta = fa.mul(theta, theta_scale_);
  }
  return out;
}

real rope_reference::angle(std::int64_t p, std::int64_t i) const {
  if (i < 0 || i >= spec_.pairs())
    throw error("rope: pair index " + std::to_string(i) + " out of range");
  const precision_scope work(work_bits_);
  if (recipe_->rope->method == frequency_method::power) {
    return arith{recipe_->rope->angle}.mul(round(recipe_->rope->position, I(p)), inv_freq_[i]);
  }
  return angles(p)[static_cast<std::size_t>(i)];
}

std::vector<cos_sin> rope_reference::row(std::int64_t p) const {
  const precision_scope work(work_bits_);
  return row_of(angles(p));
}

std::vector<cos_sin> rope_reference::row(std::span<const std::int64_t> stream_positions) const {
  if (static_cast<std::int64_t>(stream_positions.size()) != spec_.streams()) {
    throw error("rope: an MRoPE row needs " + std::to_string(spec_.streams()) +
                " stream positions, got " + std::to_string(stream_positions.size()));
  }
  const precision_scope work(work_bits_);
  // Each stream's angles are those of a 1-D row at its position (ggml runs one θ recurrence per
  // stream); pair i takes its stream's (docs/encodings.md §4.6).
  std::vector<std::vector<real>> per_stream;
  for (const std::int64_t p : stream_positions) per_stream.push_back(angles(p));
  std::vector<real> th(static_cast<std::size_t>(spec_.pairs()));
  for (std::size_t i = 0; i < th.size(); ++i) {
    th[i] = per_stream[static_cast<std::size_t>(
        spec::mrope_stream(spec_, static_cast<std::int64_t>(i)))][i];
  }
  return row_of(th);
}

std::vector<cos_sin> rope_reference::row_of(const std::vector<real>& th) const {
  const rope_points& pts = *recipe_->rope;
  const arith ft{pts.trig};
  const arith fs{pts.scale};
  const bool recurrence = pts.method == frequency_method::recurrence;
  const real m = recurrence ? mscale_ : fs.r(attention_factor_);
  std::vector<cos_sin> out(th.size());
  for (std::size_t i = 0; i < th.size(); ++i) {
    out[i].cos = fs.mul(ft.r(cos(th[i])), m);
    out[i].sin = fs.mul(ft.r(sin(th[i])), m);
  }
  return out;
}

void rope_reference::expand(std::span<const cos_sin> row, std::vector<real>& cos_full,
                            std::vector<real>& sin_full) const {
  const std::size_t half = row.size();
  cos_full.assign(2 * half, real(0));
  sin_full.assign(2 * half, real(0));
  for (std::size_t i = 0; i < half; ++i) {
    const auto [a, b] = spec::pair_dims(spec_, static_cast<std::int64_t>(i));
    cos_full[static_cast<std::size_t>(a)] = cos_full[static_cast<std::size_t>(b)] = row[i].cos;
    sin_full[static_cast<std::size_t>(a)] = sin_full[static_cast<std::size_t>(b)] = row[i].sin;
  }
}

std::vector<real> rope_reference::rotate(std::int64_t p, std::span<const real> x) const {
  const precision_scope work(work_bits_);
  return rotate_by(row(p), x);
}

std::vector<real> rope_reference::rotate(std::span<const std::int64_t> stream_positions,
                                         std::span<const real> x) const {
  const precision_scope work(work_bits_);
  return rotate_by(row(stream_positions), x);
}

std::vector<real> rope_reference::rotate_by(std::span<const cos_sin> cs,
                                            std::span<const real> x) const {
  if (static_cast<std::int64_t>(x.size()) != spec_.head_dim) {
    throw error("rope: rotate needs a vector of head_dim = " + std::to_string(spec_.head_dim) +
                " values, got " + std::to_string(x.size()));
  }
  std::vector<real> out(x.begin(), x.end());
  const std::size_t half = cs.size();
  for (std::size_t i = 0; i < half; ++i) {
    const auto [da, db] = spec::pair_dims(spec_, static_cast<std::int64_t>(i));
    const auto a = static_cast<std::size_t>(da), b = static_cast<std::size_t>(db);
    out[a] = x[a] * cs[i].cos - x[b] * cs[i].sin;
    out[b] = x[a] * cs[i].sin + x[b] * cs[i].cos;
  }
  return out;
}

}  // namespace pev::ref

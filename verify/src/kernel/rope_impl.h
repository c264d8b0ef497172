#pragma once
// Internal: the planned state of a rope_kernel and the row evaluation of every strategy. The
// template body of rope_kernel::table is here; rope_float.cpp, rope_half.cpp and rope_bfloat16.cpp
// instantiate it once each (docs/design.md §11.2).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "apply_convert.h"
#include "common.h"
#include "pev/core/error.h"
#include "pev/kernel/rope.h"
#include "turns.h"

namespace pev::kernel {
namespace detail {

/// Parameters of llama.cpp's ggml_rope_cache_init, as the `ggml` recipe sets them for a spec.
struct ggml_rope_params {
  float theta_scale = 1;  // powf(base, −2/n_dims)
  float freq_scale = 1;
  float ext_factor = 0;
  float corr_low = 0, corr_high = 0;
  float mscale = 1;  // attn_factor·(1 + 0.1·ln(1/freq_scale)) when ext_factor ≠ 0
  std::vector<float> freq_factors;    // empty: none
  std::int64_t rotating = 0;          // pairs that rotate (proportional: the rest is NoPE)
  ggml_mix mix = ggml_mix::separate;  // how the YaRN angle mix rounds (ggml_angle_plan)
};

}  // namespace detail

struct rope_kernel::impl {
  spec::rope spec;
  strategy st = strategy::hf;
  std::vector<float> inv_freq;  // as the strategy uses them (fp32)
  float attention_factor = 1;   // hf, table-*: the fp32 operand; ggml: mscale
  detail::ggml_rope_params ggml;
  detail::turn_set turns;  // accurate: frac(θ_i/2π)
  double m = 1;            // accurate: the exact attention factor rounded to double
};

namespace detail {

/// ggml_rope_cache_init's angles for one position: the recurrence θ_i = θ_{i−1}·theta_scale from
/// float(p), per-pair factors, freq_scale and the YaRN angle mix in fp32, its product-sum rounded
/// as g.mix says (docs/numerics.md §8.7). Calls f(i, angle) for every rotating pair.
template <class F>
inline void ggml_angles(const ggml_rope_params& g, std::int64_t pairs, std::int64_t p, F&& f) {
  float theta = static_cast<float>(p);
  const float width = std::max(g.corr_high - g.corr_low, 0.001f);
  const std::int64_t n = std::min(pairs, g.rotating);
  for (std::int64_t i = 0; i < n; ++i) {
    const float extrap =
        g.freq_factors.empty() ? theta : theta / g.freq_factors[static_cast<std::size_t>(i)];
    const float interp = g.freq_scale * extrap;
    float angle = interp;
    if (g.ext_factor != 0.0f) {
      // rope_yarn_ramp: y = (i − low)/max(0.001, high − low), ramp = 1 − clamp(y, 0, 1).
      float y = (static_cast<float>(i) - g.corr_low) / width;
      y = std::min(1.0f, std::max(0.0f, y));
      const float mix = (1.0f - y) * g.ext_factor;
      // interp·(1 − mix) + extrap·mix: pev builds with -ffp-contract=off, so the separate form
      // rounds both products; the fused forms are a build's FMA contraction of one of them.
      switch (g.mix) {
        case ggml_mix::separate:
          angle = interp * (1.0f - mix) + extrap * mix;
          break;
        case ggml_mix::fused_interp:
          angle = std::fma(interp, 1.0f - mix, extrap * mix);
          break;
        case ggml_mix::fused_extrap:
          angle = std::fma(extrap, mix, interp * (1.0f - mix));
          break;
      }
    }
    f(i, angle);
    theta = theta * g.theta_scale;
  }
}

/// One ggml row: cos/sin of the recurrence's angles times the fp32 mscale; the NoPE tail of
/// `proportional` has angle 0.
template <class T>
inline void ggml_row(const ggml_rope_params& g, std::int64_t pairs, std::int64_t p, T* cos_out,
                     T* sin_out) {
  for (std::int64_t i = std::min(pairs, g.rotating); i < pairs; ++i) {
    cos_out[i] = from_float<T>(1.0f * g.mscale);
    sin_out[i] = from_float<T>(0.0f * g.mscale);
  }
  ggml_angles(g, pairs, p, [&](std::int64_t i, float angle) {
    cos_out[i] = from_float<T>(std::cos(angle) * g.mscale);
    sin_out[i] = from_float<T>(std::sin(angle) * g.mscale);
  });
}

}  // namespace detail

template <class T>
void rope_kernel::table(std::span<const std::int64_t> positions, std::span<T> cos,
                        std::span<T> sin) const {
  const impl& k = *impl_;
  const std::int64_t pairs = k.spec.pairs();
  const auto need = static_cast<std::size_t>(pairs) * positions.size();
  if (cos.size() != need || sin.size() != need) {
    throw error(fmt::format(
        "rope table: cos and sin must hold positions × pairs = {} values each, got {} and {}", need,
        cos.size(), sin.size()));
  }
  const auto P = static_cast<std::int64_t>(pairs);
  // accurate, 16-bit outputs: one row of round-to-odd binary32 values (see below).
  std::vector<float> odd_cos, odd_sin;
  if (k.st == strategy::accurate && !std::is_same_v<T, float>) {
    odd_cos.resize(static_cast<std::size_t>(P));
    odd_sin.resize(static_cast<std::size_t>(P));
  }
  for (std::size_t r = 0; r < positions.size(); ++r) {
    const std::int64_t p = positions[r];
    T* c_row = cos.data() + r * static_cast<std::size_t>(P);
    T* s_row = sin.data() + r * static_cast<std::size_t>(P);
    switch (k.st) {
      case strategy::hf:
      case strategy::table_fp16:
      case strategy::table_bf16: {
        // transformers: fp32 position, fp32 product, cos/sin, fp32 attention scaling, cast.
        const std::optional<dtype> where = storage_of(k.st);
        const float pos = static_cast<float>(p);
        const float m = k.attention_factor;
        for (std::int64_t i = 0; i < P; ++i) {
          const float angle = pos * k.inv_freq[static_cast<std::size_t>(i)];
          c_row[i] = detail::store_float<T>(std::cos(angle) * m, where);
          s_row[i] = detail::store_float<T>(std::sin(angle) * m, where);
        }
        break;
      }
      case strategy::ggml:
        detail::ggml_row(k.ggml, P, p, c_row, s_row);
        break;
      case strategy::accurate: {
        // The row is evaluated into binary32 (RN for float; round-to-odd for the 16-bit types,
        // which is what narrow<T> does: accurate_row.cpp) and then converted, so that no
        // conversion call sits inside the evaluation's vector loop.
        float* c_out = odd_cos.data();
        float* s_out = odd_sin.data();
        if constexpr (std::is_same_v<T, float>) {
          c_out = c_row;
          s_out = s_row;
        }
        detail::accurate_row(k.turns, p, k.m, !std::is_same_v<T, float>, c_out, s_out);
        if constexpr (!std::is_same_v<T, float>) {
          // The inlined branch-free encoders (bit for bit T(float)), vectorisable.
          using tr = scalar_traits<T>;
          for (std::int64_t i = 0; i < P; ++i) {
            if constexpr (std::is_same_v<T, half>) {
              c_row[i] = tr::from_bits(detail::float_to_half_bits(c_out[i]));
              s_row[i] = tr::from_bits(detail::float_to_half_bits(s_out[i]));
            } else {
              c_row[i] = tr::from_bits(detail::float_to_bf16_bits(c_out[i]));
              s_row[i] = tr::from_bits(detail::float_to_bf16_bits(s_out[i]));
            }
          }
        }
        break;
      }
    }
  }
}

}  // namespace pev::kernel

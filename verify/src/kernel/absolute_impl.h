#pragma once
// Internal: plans and template bodies of the sinusoidal and learned kernels. absolute.cpp plans;
// absolute_float.cpp, absolute_half.cpp and absolute_bfloat16.cpp instantiate the row loops once
// each (docs/design.md §11.2).

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common.h"
#include "pev/core/error.h"
#include "pev/core/real.h"
#include "pev/kernel/absolute.h"
#include "turns.h"

namespace pev::kernel::detail {

// ---------------------------------------------------------------------------------------------
// Sinusoidal.

/// Per-column constants of a sinusoidal table. `pairs` frequencies serve the sin/cos columns:
/// interleaved column j uses pair ⌊j/2⌋ (sin for even j), blocked column j < h uses pair j (sin)
/// and column h + j pair j (cos); an odd blocked table ends with a zero column.
struct sinusoidal_plan {
  spec::sinusoidal spec;
  strategy st = strategy::hf;
  std::int64_t pairs = 0;
  std::vector<double> divisor;  // hf interleaved: b^fl64(2k/d) in double (NumPy pow)
  std::vector<float> omega;     // hf blocked: fp32 exp(−k·step)
  std::vector<turn> turns;      // accurate: frac(ω_k/2π)
};

sinusoidal_plan plan_sinusoidal(const spec::sinusoidal& s, strategy st);

template <class T>
void sinusoidal_rows(const sinusoidal_plan& plan, std::span<const std::int64_t> positions,
                     std::span<T> out) {
  const std::int64_t d = plan.spec.d_model;
  const bool interleaved = plan.spec.layout == spec::sinusoidal_layout::interleaved;
  const std::int64_t h = d / 2;
  const std::optional<dtype> where = storage_of(plan.st);
  // Column of the sin and cos of pair k.
  auto sin_col = [&](std::int64_t k) { return interleaved ? 2 * k : k; };
  auto cos_col = [&](std::int64_t k) { return interleaved ? 2 * k + 1 : h + k; };
  for (std::size_t r = 0; r < positions.size(); ++r) {
    const std::int64_t p = positions[r];
    T* row = out.data() + r * static_cast<std::size_t>(d);
    if (!interleaved && 2 * h < d) row[d - 1] = from_float<T>(0.0f);
    for (std::int64_t k = 0; k < plan.pairs; ++k) {
      const std::int64_t cs = sin_col(k);
      const std::int64_t cc = cos_col(k);
      const bool has_cos = cc < d;  // interleaved odd d: the last column is a lone sin
      switch (plan.st) {
        case strategy::accurate: {
          const sin_cos sc = sincos_of_turn(turn_times(plan.turns[static_cast<std::size_t>(k)], p));
          row[cs] = narrow<T>(sc.sin);
          if (has_cos) row[cc] = narrow<T>(sc.cos);
          break;
        }
        default:
          if (interleaved) {
            // DistilBERT / XLM: float64 angle pos / b^(2k/d), np.sin / np.cos, stored once.
            const double a = static_cast<double>(p) / plan.divisor[static_cast<std::size_t>(k)];
            row[cs] = store_double<T>(std::sin(a), where);
            if (has_cos) row[cc] = store_double<T>(std::cos(a), where);
          } else {
            // fairseq: fp32 position times fp32 frequency, sinf / cosf.
            const float a = static_cast<float>(p) * plan.omega[static_cast<std::size_t>(k)];
            row[cs] = store_float<T>(std::sin(a), where);
            if (has_cos) row[cc] = store_float<T>(std::cos(a), where);
          }
          break;
      }
    }
  }
}

template <class T>
void sinusoidal_table_impl(const spec::sinusoidal& s, strategy st,
                           std::span<const std::int64_t> positions, std::span<T> out) {
  const auto need = static_cast<std::size_t>(s.d_model) * positions.size();
  if (out.size() != need) {
    throw error(
        fmt::format("sinusoidal table: out must hold positions × d_model = {} values, got {}", need,
                    out.size()));
  }
  sinusoidal_rows(plan_sinusoidal(s, st), positions, out);
}

// ---------------------------------------------------------------------------------------------
// Learned.

/// One row of a learned table: lookup (i1 < 0) or the interpolation of rows i0 and i1.
struct learned_row_plan {
  std::int64_t i0 = 0, i1 = -1;
  // hf: fp32 weights λ0 = fl(1 − λ), λ.
  float w0 = 1, w1 = 0;
  // accurate: the exact weights (den − num)/den and num/den (integers, den > 0).
  double k0 = 1, k1 = 0, den = 1;
};

/// Validates s, checks t against the table, and plans row t for strategy st.
learned_row_plan plan_learned_row(const spec::learned& s, strategy st, std::int64_t t);

/// RN_T((a·k0 + b·k1)/den) for doubles a, b and integers k0, k1, den < 2^53 (one rounding; exact
/// ties to even).
template <class T>
T round_interpolation(double a, double b, double k0, double k1, double den);

template <class T>
void learned_table_impl(const spec::learned& s, strategy st,
                        std::span<const std::int64_t> positions, std::span<T> out) {
  reject_ggml(st, "learned");
  spec::validate(spec::encoding{s});
  const std::int64_t d = s.d_model;
  const auto need = static_cast<std::size_t>(d) * positions.size();
  if (out.size() != need) {
    throw error(fmt::format("learned table: out must hold positions × d_model = {} values, got {}",
                            need, out.size()));
  }
  const std::optional<dtype> where = storage_of(st);
  for (std::size_t r = 0; r < positions.size(); ++r) {
    const learned_row_plan rp = plan_learned_row(s, st, positions[r]);
    T* row = out.data() + r * static_cast<std::size_t>(d);
    const double* a = s.table.data() + rp.i0 * d;
    if (rp.i1 < 0) {
      // A lookup: the stored value, rounded once (exact for fp32 tables and fp32 outputs).
      for (std::int64_t c = 0; c < d; ++c) row[c] = store_double<T>(a[c], where);
      continue;
    }
    const double* b = s.table.data() + rp.i1 * d;
    if (st == strategy::accurate) {
      for (std::int64_t c = 0; c < d; ++c) {
        row[c] = round_interpolation<T>(a[c], b[c], rp.k0, rp.k1, rp.den);
      }
      continue;
    }
    // PyTorch linear interpolation in fp32: fl(fl(λ0·a) + fl(λ·b)).
    for (std::int64_t c = 0; c < d; ++c) {
      const float v0 = static_cast<float>(static_cast<double>(rp.w0) * a[c]);
      const float v1 = static_cast<float>(static_cast<double>(rp.w1) * b[c]);
      row[c] = store_float<T>(v0 + v1, where);
    }
  }
}

}  // namespace pev::kernel::detail

namespace pev::kernel {

template <class T>
void sinusoidal_table(const spec::sinusoidal& s, strategy st,
                      std::span<const std::int64_t> positions, std::span<T> out) {
  detail::sinusoidal_table_impl(s, st, positions, out);
}

template <class T>
void learned_table(const spec::learned& s, strategy st, std::span<const std::int64_t> positions,
                   std::span<T> out) {
  detail::learned_table_impl(s, st, positions, out);
}

}  // namespace pev::kernel

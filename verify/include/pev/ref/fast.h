#pragma once
// Fast exact reference (Ziv's strategy): the exact-recipe RoPE and sinusoidal references of
// ref/rope.h and ref/sinusoidal.h, correctly rounded to fp64, fp32, fp16 or bfloat16, at ~100×+
// the speed of evaluating them in MPFR, with results identical to the MPFR path.
//
// Method (details and the error-bound derivation in src/ref/fast_bound.cpp):
//   1. Once, at construction, the MPFR reference gives θ_i (and m, ω); they are stored as multi-
//      double expansions: 2θ_i/π ("quarter turns per position") as four doubles and θ_i as three,
//      each with a bound on its truncation residual computed in MPFR.
//   2. Per element, p·(2θ_i/π) is formed from exact two-products (FMA where the CPU has it, else
//      Dekker; p is split into two exact doubles beyond 2^53) and reduced modulo 4 term by term,
//      exactly but for a few roundings far below 2^−96: the quadrant n and a fraction
//      f = k/512 + g, |g| ≤ 1/1024 (Payne–Hanek style: the reduction constant is folded into the
//      frequency, so no long product with 2/π is needed).
//   3. sin/cos of kπ/1024 come from a table computed in MPFR at start-up, sin/cos of r = g·π/2
//      (|r| ≤ 1.534e-3) from short Taylor polynomials; then the addition formulas, the quadrant,
//      and the attention factor m.
//   4. A rigorous absolute bound E(p, i) = E0 + |p|·E1_i covers every rounding, the polynomial
//      truncation, the constants' residuals and the MPFR path's own roundings at its working
//      precision. If RN_T is constant on [v − E, v + E] the rounded value is returned.
//   Steps 2–4 run in two stages (Ziv): first in double (a shorter reduction, E ≈ 2^−50·m, which
//   decides all but ~2^−24 of fp32 values and fewer fp16/bf16 ones), then, where that cannot
//   decide and always for fp64 targets, in double-double (E ≈ 2^−96·m); only where neither decides
//   is the value taken from the MPFR path (a "fallback", counted in fast_stats). Exact cases
//   (p = 0, zero frequencies, exactly representable angles) are rounded exactly, ties included.
//
// The MPFR path is fixed at construction: the fast references reproduce the MPFR reference built
// at the precision in effect when they were constructed (pev::precision_bits()).
//
// Thread safety: an object is single-threaded (it caches its last MPFR row). The fallback
// evaluates the MPFR reference, which uses Boost's process-wide default precision
// (pev::precision_scope is not thread-safe). RoPE fast references take their fallbacks under one
// process-wide lock, so one fast_rope_reference per thread (copies) may evaluate tables
// concurrently as long as nothing else in the process touches pev::real meanwhile (certify's
// table comparison does so); sinusoidal fast references are single-threaded, like the MPFR
// reference.

#include <cstdint>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "pev/ref/rope.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"

namespace pev::ref {

/// Counters of a fast evaluation: values produced and those the rounding test could not decide
/// (taken from the MPFR path).
struct fast_stats {
  std::uint64_t values = 0;
  std::uint64_t refined = 0;    // values decided by the double-double stage (not the double one)
  std::uint64_t fallbacks = 0;  // values taken from the MPFR path
  std::uint64_t mpfr_rows = 0;  // MPFR rows (or rotations) evaluated for the fallbacks

  double fallback_rate() const {
    return values == 0 ? 0.0 : static_cast<double>(fallbacks) / static_cast<double>(values);
  }
  fast_stats& operator+=(const fast_stats& o) {
    values += o.values;
    refined += o.refined;
    fallbacks += o.fallbacks;
    mpfr_rows += o.mpfr_rows;
    return *this;
  }
};

namespace fast_detail {

/// One frequency θ, prepared for the fast evaluation (built in fast_bound.cpp from the MPFR value).
struct frequency {
  enum class kind : std::uint8_t { regular, zero, mpfr_only };
  kind k = kind::mpfr_only;
  bool exact = false;          // θ is exactly the double t0
  double q[4] = {0, 0, 0, 0};  // 2θ/π = q0 + q1 + q2 + q3 + δq (quarter turns per unit position)
  double t[3] = {0, 0, 0};     // θ = t0 + t1 + t2 + δθ
  double value_e1 = 0;         // error bound of a value (cos, sin, per unit m) per unit |p|
  double angle_e1 = 0;         // error bound of the angle p·θ per unit |p|
};

/// The regular frequencies' constants laid out for the vector double stage (fast_avx2.cpp): q0, q1
/// and value_e1 per pair, and the pairs left to the scalar code, padded to whole vectors.
struct vector_freqs {
  std::vector<double> q0, q1, e1;
  std::vector<std::uint8_t> scalar;   // 1: not a regular frequency
  std::vector<std::uint8_t> regular;  // per group of 4 pairs: bit l set for a regular pair
  std::size_t n = 0;
};

/// Selects the portable (Dekker, no FMA) arithmetic even where the CPU has FMA: a testing hook so
/// that both code paths are checked on FMA machines. Not thread-safe with running evaluations.
void force_portable_arithmetic(bool on);
/// True when evaluations use hardware FMA.
bool uses_fma();
/// Selects the per-element code even where the CPU runs the double stage on vectors (AVX2 and
/// FMA): a testing and benchmarking hook (the two give the same values and statistics). Not
/// thread-safe with running evaluations.
void force_scalar_rows(bool on);
/// True when table rows run the double stage on vectors.
bool uses_vector_rows();

/// RN_T(v), ties to even, of a non-NaN double in one rounding: the conversion the fast path uses
/// for its candidates and for exactly known values (exported for tests).
template <class T>
T round_double(double v);
extern template double round_double<double>(double);
extern template float round_double<float>(double);
extern template half round_double<half>(double);
extern template bfloat16 round_double<bfloat16>(double);

}  // namespace fast_detail

/// Fast exact-recipe RoPE reference: m·cos(p·θ_i), m·sin(p·θ_i), angles, inverse frequencies and
/// rotated vectors, each correctly rounded to T ∈ {double, float, half, bfloat16}, identical to
/// pev::round_to<T> of the corresponding rope_reference(s, exact_recipe(), seq_len) value.
class fast_rope_reference {
 public:
  /// Builds the MPFR reference at the current precision and the fast-path constants.
  explicit fast_rope_reference(const spec::rope& s,
                               std::optional<std::int64_t> seq_len = std::nullopt);

  const spec::rope& spec() const { return ref_.spec(); }
  std::int64_t pairs() const { return ref_.spec().pairs(); }
  /// The MPFR reference the fast path reproduces (and falls back to).
  const rope_reference& reference() const { return ref_; }

  /// RN_T(θ_i) for every pair (rounded once from the MPFR values at construction).
  template <class T>
  const std::vector<T>& inv_freq() const {
    return std::get<std::vector<T>>(inv_freq_);
  }

  /// RN_T(p·θ_i) (rope_reference::angle). Every int64 position is exact, negative ones included
  /// (so in every method below).
  template <class T>
  T angle(std::int64_t p, std::int64_t i, fast_stats* stats = nullptr) const;
  /// RN_T(p·θ_i) for every position and pair: out is [positions.size(), pairs()] row-major.
  template <class T>
  void angles(std::span<const std::int64_t> positions, std::span<T> out,
              fast_stats* stats = nullptr) const;

  /// RN_T(m·cos(p·θ_i)) and RN_T(m·sin(p·θ_i)) (rope_reference::row): cos and sin are
  /// [positions.size(), pairs()] row-major.
  template <class T>
  void table(std::span<const std::int64_t> positions, std::span<T> cos, std::span<T> sin,
             fast_stats* stats = nullptr) const;

  /// table() and, in cos_value and sin_value, the evaluated values themselves as doubles, within
  /// the evaluation's error bound of the exact m·cos and m·sin (about 2^−50·|m| plus a position
  /// term far below it; fast_bound.cpp) and the rounding of hi + lo to double; the MPFR values
  /// rounded to double where that path was used. For error metrics (|ŷ − y|, ulp error): one pass
  /// instead of a second, fp64-target table().
  template <class T>
  void table_values(std::span<const std::int64_t> positions, std::span<T> cos, std::span<T> sin,
                    std::span<double> cos_value, std::span<double> sin_value,
                    fast_stats* stats = nullptr) const;

  /// RN_T of rope_reference::rotate(p, x): the exact rotation of x (head_dim exact values, given as
  /// doubles) by the exact m·cos/m·sin; dims ≥ rotary_dim pass through (rounded to T).
  template <class T>
  void rotate(std::int64_t p, std::span<const double> x, std::span<T> out,
              fast_stats* stats = nullptr) const;
  /// rotate<T> and rotate<double> of the same x (T ≠ double) at about the cost of one: `exact` is
  /// rotate<double>'s, and `out` RN_T of it, the same values as rotate<T> — RN_T(RN_double(y)) =
  /// RN_T(y) unless RN_double(y) is a tie of T (docs/numerics.md §4.4) — except where some value is
  /// on a tie (or not finite): then rotate<T>'s.
  template <class T>
  void rotate_with_double(std::int64_t p, std::span<const double> x, std::span<T> out,
                          std::span<double> exact, fast_stats* stats = nullptr) const;

 private:
  struct kernels;

  const std::vector<cos_sin>& mpfr_row(std::int64_t p, fast_stats& st) const;

  rope_reference ref_;
  unsigned work_bits_;  // lower bound on the MPFR path's working precision
  std::vector<fast_detail::frequency> freq_;
  fast_detail::vector_freqs vfreq_;
  double m_hi_ = 1, m_lo_ = 0;  // attention factor m as a double-double
  bool m_one_ = true;           // m == 1 exactly: no multiplication
  bool m_ok_ = true;            // m usable by the fast path (else every value falls back)
  double m_abs_ = 1;            // |m| rounded up
  // E0, the position-independent part of a value's error bound, per stage (double, double-double)
  // and reduction (short, general); see fast_bound.cpp.
  double e0_[2][2] = {{0, 0}, {0, 0}};
  std::tuple<std::vector<double>, std::vector<float>, std::vector<half>, std::vector<bfloat16>>
      inv_freq_;
  std::tuple<double, float, half, bfloat16> m_rounded_;  // RN_T(m): cos at angle 0
  mutable std::optional<std::int64_t> cached_p_;
  mutable std::vector<cos_sin> cached_row_;
};

/// Fast exact-recipe sinusoidal reference: RN_T(PE(p, j)) identical to
/// pev::round_to<T>(sinusoidal_row(s, p)[j]) at the precision in effect at construction.
class fast_sinusoidal_reference {
 public:
  explicit fast_sinusoidal_reference(const spec::sinusoidal& s);

  const spec::sinusoidal& spec() const { return spec_; }
  std::int64_t d_model() const { return spec_.d_model; }

  /// out is [positions.size(), d_model] row-major.
  template <class T>
  void pe(std::span<const std::int64_t> positions, std::span<T> out,
          fast_stats* stats = nullptr) const;

 private:
  // One distinct frequency and the columns that hold its sine and cosine (−1: none).
  struct slot {
    std::int64_t sin_col = -1;
    std::int64_t cos_col = -1;
  };

  const std::vector<real>& mpfr_row(std::int64_t p, fast_stats& st) const;

  spec::sinusoidal spec_;
  unsigned base_bits_;  // precision_bits() at construction
  unsigned work_bits_;  // lower bound on the MPFR path's working precision
  std::vector<fast_detail::frequency> freq_;
  std::vector<slot> slots_;
  std::vector<std::int64_t> zero_cols_;  // padding columns (always +0)
  double e0_[2][2] = {{0, 0}, {0, 0}};
  mutable std::optional<std::int64_t> cached_p_;
  mutable std::vector<real> cached_row_;
};

#define PEV_FAST_EXTERN(T)                                                                         \
  extern template T fast_rope_reference::angle<T>(std::int64_t, std::int64_t, fast_stats*) const;  \
  extern template void fast_rope_reference::angles<T>(std::span<const std::int64_t>, std::span<T>, \
                                                      fast_stats*) const;                          \
  extern template void fast_rope_reference::table<T>(std::span<const std::int64_t>, std::span<T>,  \
                                                     std::span<T>, fast_stats*) const;             \
  extern template void fast_rope_reference::table_values<T>(                                       \
      std::span<const std::int64_t>, std::span<T>, std::span<T>, std::span<double>,                \
      std::span<double>, fast_stats*) const;                                                       \
  extern template void fast_rope_reference::rotate<T>(std::int64_t, std::span<const double>,       \
                                                      std::span<T>, fast_stats*) const;            \
  extern template void fast_rope_reference::rotate_with_double<T>(                                 \
      std::int64_t, std::span<const double>, std::span<T>, std::span<double>, fast_stats*) const;  \
  extern template void fast_sinusoidal_reference::pe<T>(std::span<const std::int64_t>,             \
                                                        std::span<T>, fast_stats*) const;
PEV_FAST_EXTERN(double)
PEV_FAST_EXTERN(float)
PEV_FAST_EXTERN(half)
PEV_FAST_EXTERN(bfloat16)
#undef PEV_FAST_EXTERN

}  // namespace pev::ref

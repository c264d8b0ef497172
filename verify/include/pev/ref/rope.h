#pragma once
// RoPE reference (docs/encodings.md §4, §5): per-pair frequencies for every rope_type, the
// attention factor, the YaRN correction range and ramp, angles, m·cos/m·sin, full-width tables in
// both layouts and rotated vectors. Positions are 64-bit integers and are exact at any magnitude
// (the reference needs ≥ 64 bits of precision, which it always has).
//
// Accuracy: every computation runs with kGuardBits more than the current precision N, so that
// angles p·θ_i keep N significant bits for every 64-bit position (θ_i's relative error is
// multiplied by p): results are accurate to ~2^−N relative at any position.
//
// At the `exact` recipe every quantity is the mathematical definition at the current MPFR
// precision; other recipes round where they say (ref/recipe.h). Stateful types (dynamic, longrope)
// take the sequence length that selects their frequencies; without one, transformers' init state is
// used (dynamic: s = L; longrope: short factors).

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "pev/core/real.h"
#include "pev/ref/recipe.h"
#include "pev/spec/spec.h"

namespace pev::ref {

/// YaRN correction range: raw = cdim(β) = d·ln(Lo/(2π·β))/(2·ln b); low/high after truncation
/// (floor, ceil when `truncate`) and clamping to [0, d−1].
struct yarn_range {
  real low_raw, high_raw;
  real low, high;
};

/// (m·cos θ, m·sin θ) of one pair at one position.
struct cos_sin {
  real cos, sin;
};

/// Extra bits carried by position-dependent computations (positions have up to 63 bits).
inline constexpr unsigned kGuardBits = 64;

class rope_reference {
 public:
  /// Validates the spec and precomputes frequencies and the attention factor.
  /// Throws pev::error if the recipe has no RoPE pipeline.
  explicit rope_reference(const spec::rope& s, const recipe& r = exact_recipe(),
                          std::optional<std::int64_t> seq_len = std::nullopt);

  const spec::rope& spec() const { return spec_; }
  const recipe& used_recipe() const { return *recipe_; }

  /// Effective per-pair frequencies θ'_i, i = 0 … pairs−1 (after scaling; zero for the NoPE tail of
  /// `proportional`). For the `recurrence` method these are the position-independent frequencies
  /// the recurrence approximates (b^(−2i/d)·freq_scale/c_i), evaluated exactly.
  const std::vector<real>& inv_freq() const { return inv_freq_; }
  /// Attention factor m that multiplies cos and sin.
  const real& attention_factor() const { return attention_factor_; }

  /// The recipe's angle of pair i at position p (exact: p·θ'_i).
  real angle(std::int64_t p, std::int64_t i) const;
  /// Angles of every pair at position p.
  std::vector<real> angles(std::int64_t p) const;
  /// m·cos and m·sin of every pair at position p, rounded where the recipe rounds.
  std::vector<cos_sin> row(std::int64_t p) const;
  /// MRoPE (docs/encodings.md §4.6): the row of a token whose streams are at `stream_positions`
  /// (spec().streams() values): pair i at stream_positions[spec::mrope_stream(spec(), i)].
  std::vector<cos_sin> row(std::span<const std::int64_t> stream_positions) const;

  /// Full-width cos and sin for the spec's layout, each of length rotary_dim: neox duplicates
  /// halves (cos[j] = c_{j mod d/2}), interleaved duplicates pairs (cos[j] = c_{⌊j/2⌋}).
  void expand(std::span<const cos_sin> row, std::vector<real>& cos_full,
              std::vector<real>& sin_full) const;

  /// R(p)·x for one head vector x of length head_dim: pairs per the layout, dims ≥ rotary_dim pass
  /// through; exact arithmetic on the recipe's cos/sin.
  std::vector<real> rotate(std::int64_t p, std::span<const real> x) const;
  /// R·x for an MRoPE token at `stream_positions` (pair i rotated by its stream's position).
  std::vector<real> rotate(std::span<const std::int64_t> stream_positions,
                           std::span<const real> x) const;

 private:
  std::vector<cos_sin> row_of(const std::vector<real>& angles) const;
  std::vector<real> rotate_by(std::span<const cos_sin> cs, std::span<const real> x) const;

  spec::rope spec_;
  const recipe* recipe_;
  std::optional<std::int64_t> seq_len_;
  unsigned work_bits_;
  std::vector<real> inv_freq_;
  real attention_factor_;
  // recurrence (ggml) parameters, rounded as the recipe says
  real base_, theta_scale_, freq_scale_, ext_factor_, mscale_;
  std::vector<real> freq_factors_;  // empty: none
  real corr_low_, corr_high_;
};

/// Exact YaRN correction range (host arithmetic in `host`, exact by default).
yarn_range yarn_correction_range(const spec::rope& s, rounding host = std::nullopt);
/// YaRN ramp value of pair j: clamp((j − low)/(high − low), 0, 1) (extrapolation weight = 1 −
/// ramp).
std::vector<real> yarn_ramp(const spec::rope& s, rounding arithmetic = std::nullopt);
/// ggml_rope_yarn_corr_dims (llama.cpp), the one owner of its formula for the fp32 kernel and the
/// reference: cdim(β) = n·ln(n_ctx_orig/(β·2·π))/(2·ln b), low = max(0, floor(cdim(β_fast))),
/// high = min(n − 1, ceil(cdim(β_slow))), each operation in the arithmetic `a` (A::value; num,
/// mul, div, log, floor, ceil, max, min: the kernel's float with logf, the reference's pev::real
/// exact or rounded to ggml's fp32). n_ctx_orig, b, the β and π come as `a` takes them.
template <class A, class V = typename A::value>
std::pair<V, V> ggml_yarn_corr_dims(const A& a, std::int64_t n, const V& n_ctx_orig, const V& base,
                                    const V& beta_fast, const V& beta_slow, const V& pi) {
  const V two_log_b = a.mul(a.num(2), a.log(base));
  const auto cdim = [&](const V& beta) {
    const V rot = a.mul(a.mul(beta, a.num(2)), pi);
    return a.div(a.mul(a.num(n), a.log(a.div(n_ctx_orig, rot))), two_log_b);
  };
  return {a.max(a.num(0), a.floor(cdim(beta_fast))), a.min(a.num(n - 1), a.ceil(cdim(beta_slow)))};
}

/// ggml_rope_yarn_corr_dims of a ggml-form spec (rope_type ggml): low = max(0,
/// floor(cdim(β_fast))), high = min(n_dims − 1, ceil(cdim(β_slow))), cdim(β) =
/// n_dims·ln(n_ctx_orig/(2π·β))/(2·ln freq_base), exact or in `arithmetic` (ggml's fp32);
/// n_ctx_orig 0 gives [0, −∞] (docs/encodings.md §8.7).
std::pair<real, real> ggml_corr_dims(const spec::rope& s, rounding arithmetic = std::nullopt);
/// get_mscale(s, μ) = 1 if s ≤ 1 else 0.1·μ·ln s + 1.
real yarn_get_mscale(const real& scale, const real& mu, rounding host = std::nullopt);

}  // namespace pev::ref

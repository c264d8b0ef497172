#pragma once
// The accuracy contracts of pev's built-in strategies as evaluable bounds: the analytic error
// models of each pipeline (docs/numerics.md §8–§10), evaluated per pair and element. One piece of
// code for the accuracy-contract table (tests/kernel), the rotation tests (tests/kernel_apply), the
// property suites (properties/), the certifier (pev certify) and the report's sweeps (pev report),
// which gate every comparison with an exact reference by these bounds (ρ = err/B ≤ 1) instead of
// a guessed constant.

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "pev/kernel/strategy.h"
#include "pev/metric/error_model.h"
#include "pev/metric/libm.h"
#include "pev/spec/spec.h"

namespace pev::impl {

using metric::format;
using metric::tv;

/// Exact value and error bound of every fp32 frequency of the hf pipeline, and of its attention
/// factor (docs/numerics.md §8.2: f̂_i = f_i(1 + δ_i), |δ_i| ≤ ε_i from the actual operations).
struct rope_model {
  std::vector<tv> freq;
  tv m{1, 0};
};

/// ggml: the recurrence θ_i = fl(θ_{i−1}·ts) from fl(p), per-pair factors, freq_scale and the
/// YaRN mix, all in fp32, with the host scalars of llama.cpp in fp32.
struct ggml_model {
  tv ts, freq_scale{1, 0};
  std::vector<tv> factors;  // empty: none
  bool yarn = false;        // ext_factor ≠ 0: the YaRN mix
  double ext_factor = 1;    // the mix weight (an exact fp32 value)
  double corr_low = 0, corr_width = 0;
  std::int64_t rotating = 0, pairs = 0;
  tv m{1, 0};
  /// YaRN: the mix ramp_i·ext_factor of every rotating pair and 1 − mix, in fp32 (independent of
  /// the position; make_ggml_model sets them).
  std::vector<tv> mix, keep;

  /// The computed angle of every pair at position p, with its error bound.
  std::vector<tv> angles(std::int64_t p) const;
};

/// The hf pipeline's frequencies and attention factor (exact values and bounds) for math library
/// class `lib`; m_exact is the reference's exact attention factor.
rope_model hf_model(const spec::rope& s, std::optional<std::int64_t> seq, double m_exact,
                    const metric::libm& lib = metric::kGlibc);
/// The ggml recurrence model (every rope_type, and the ggml form's own parameters).
ggml_model make_ggml_model(const spec::rope& s, std::optional<std::int64_t> seq,
                           const metric::libm& lib = metric::kGlibc);

/// Bound on |ĉ − m·cos θ| of an fp32 value m̂·cosf(θ̂) with |θ̂ − θ| ≤ dtheta, |m̂ − m| ≤ m.e,
/// c = |cos θ| (or |sin θ|), cosf/sinf with `trig_ulps` (the library class's sin_cos).
/// Bound on |fl32(m̂·t̂) − m·t| for |t̂ − t| ≤ bcs, |m̂ − m| ≤ m.e, c = |t|: the product by the
/// attention factor and its rounding (none when m̂ is exactly 1).
inline double times_m(double bcs, tv m, double c) {
  if (m.x == 1.0 && m.e == 0.0) return bcs;  // times exactly 1: no rounding
  const double mm = m.x + m.e;
  return mm * bcs + m.e * c + metric::ulp_at_finite(mm * (c + bcs), metric::kF32) / 2;
}
inline double trig_times_m(double dtheta, tv m, double c, double trig_ulps) {
  return times_m(metric::trig_f32_bound(c, dtheta, trig_ulps), m, c);
}
/// The same for library class `lib`.
inline double trig_times_m(double dtheta, tv m, double c,
                           const metric::libm& lib = metric::kGlibc) {
  return trig_times_m(dtheta, m, c, lib.sin_cos);
}

/// A strategy's RoPE table contract for one output format as straight-line arithmetic
/// (rope_contract::table_bound_at evaluates it): from a pair's angle error and a value's exact
/// magnitude, with no branch on the strategy, so that the comparison engine bounds a row of values
/// in one vectorisable loop (compare::rope_bounds::table_rows).
struct table_form {
  bool one_ulp = false;  // accurate: 1 ulp of the output at the exact value
  double m = 1;          // the exact attention factor: c = |y|/m (m > 0)
  tv pipeline_m{1, 0};   // the pipeline's attention factor (exact value, bound)
  double trig_ulps = 0;  // the library class's sinf/cosf bound
  bool stored = false;   // the table is rounded to `storage` (vLLM's caches)
  format storage{};
  bool rounded_out = false;  // then rounded to `out` (not exact: out neither equal nor wider)
  format out{};

  /// trig_times_m of the value (the part contracts of one pipeline share).
  double trig(double dtheta, double abs_y) const {
    const double c = m > 0 ? abs_y / m : abs_y;
    return trig_times_m(dtheta, pipeline_m, c, trig_ulps);
  }
  /// path_bound's roundings after the pipeline, on its bound B.
  double path(double B, double abs_y) const {
    if (stored) B += metric::ulp_at_finite(abs_y + B, storage) / 2;
    if (rounded_out) B += metric::ulp_at_finite(abs_y + B, out) / 2;
    return B;
  }
  double eval(double dtheta, double abs_y) const {
    if (one_ulp) return metric::ulp_at_finite(abs_y, out);
    return path(trig(dtheta, abs_y), abs_y);
  }
};
/// The hf pipeline's angle error: |fl(fl(p)·f̂) − p·θ| with |f̂ − θ| ≤ f.e.
double hf_angle_error(std::int64_t p, tv f);
/// Rounding errors a value (bound B, exact magnitude y) gathers after a pipeline in format `cur`:
/// the storage dtype of the table strategies (kernel::storage_of; none: straight to the output),
/// then the output type.
double path_bound(double B, double y, std::optional<dtype> storage, format out, format cur);
/// BLOOM's fp32 slope model (ALiBi hf): fl32(2^(−b/P)) in double then powf(base, h).
std::vector<tv> alibi_model(const spec::alibi& s, const metric::libm& lib = metric::kGlibc);

/// Number of pairs that rotate (proportional: the leading pairs; others all pairs).
std::int64_t rotating_pairs(const spec::rope& s);

/// Bound of apply.h's rotation contract for one output of magnitude ≤ abs_y with terms
/// |x0ĉ| + |x1ŝ| (the table's values): ε + ½ ulp_out(|y| + ε), ε = γ2·terms + 2^−148, γ2 =
/// 2u/(1−2u) with u = 2^−24 (fp32 rotation without FMA; derivation in
/// docs/numerics.md §9.1 and tests/kernel_apply/test_apply.cpp). Add (|x0| + |x1|)·ε_cs for the
/// table's own error against the exact rotation.
inline double rotation_bound(double terms, double abs_y, format out) {
  const double u = 0x1p-24;
  const double eps = 2 * u / (1 - 2 * u) * terms + 0x1p-148;
  const double store = out.p == 24 ? 0.0 : metric::half_ulp(abs_y + eps, out);
  return (eps + store) * (1 + 0x1p-40);  // slack for evaluating the bound in double
}

/// A strategy's RoPE table contract (rope.h): bound on |ĉ − m·cos(p·θ_i)| (or sin) for the value
/// of pair i at position p whose exact magnitude is y, in output format `out`. The ggml model
/// assumes YaRN's truncated correction range: llama.cpp always truncates (docs/encodings.md §8.3),
/// so a spec with truncate=false is outside the ggml recipe and its contract.
/// How a pipeline rotates q/k (docs/numerics.md §9): in fp32, each product and the sum rounded in
/// fp32 and the result stored once in the output type (pev's kernels, vLLM, FlashAttention,
/// ggml); or in the output type, the table cast to it first and each product and the sum rounded
/// in it (transformers' apply_rotary_pos_emb in the model dtype).
enum class rotation_arithmetic { fp32, output };

class rope_contract {
 public:
  /// m_exact: the exact reference's attention factor. `lib`: the math library class the bounds
  /// are derived for (pev's own kernels call glibc); `arith`: how q/k are rotated.
  rope_contract(const spec::rope& s, kernel::strategy st, std::optional<std::int64_t> seq,
                double m_exact, const metric::libm& lib = metric::kGlibc,
                rotation_arithmetic arith = rotation_arithmetic::fp32);
  double table_bound(std::int64_t p, std::int64_t i, double y, format out) const;
  /// The bound on pair i's computed angle at position p (angle_errors(p)[i]).
  double angle_error(std::int64_t p, std::int64_t i) const;
  /// The same bound split in two for callers that evaluate every pair of a position (the
  /// report's sweeps): angle_errors gives the bound on every pair's computed angle at position
  /// p (ggml's recurrence is replayed once per position; zeros for accurate), and
  /// table_bound_at(angle_errors(p)[i], y, out) == table_bound(p, i, y, out).
  void angle_errors(std::int64_t p, std::vector<double>& out) const;
  /// angle_errors of a block of rows, bit for bit: out[q·n + i] = angle_errors(positions[q])[i]
  /// with n the number of pairs (out.size() must be positions.size()·n). ggml replays its
  /// recurrence across the rows, pair by pair, in vector loops (docs/numerics.md §8.13).
  void angle_errors_rows(std::span<const std::int64_t> positions, std::span<double> out) const;
  /// The number of pairs, n (the length of angle_errors' output).
  std::size_t pairs() const { return hf_.freq.size(); }
  double table_bound_at(double dtheta, double y, format out) const;
  /// table_bound_at's formula for output format `out`.
  table_form table_form_for(format out) const;
  /// Whether `other`'s table bounds share this contract's trig part (table_form::trig and the
  /// angle errors): the hf pipeline and vLLM's caches of it, with one library class.
  bool same_trig(const rope_contract& other) const;
  /// The rotation contract (apply.h) of one output of pair i with inputs x0, x1 by the
  /// strategy's table, given the pair's angle error dtheta (angle_errors): each table value errs
  /// by ε = table_bound_at(dtheta, m, F) in the table's format F (its storage dtype, else fp32),
  /// which the rotation multiplies by |x0| + |x1|, plus the rotation's own roundings
  /// (rotation_bound) on terms (|x0| + |x1|)·(m + ε) and the store to `out` at
  /// |y| + (|x0| + |x1|)·ε. `abs_y` is the exact output's magnitude (an upper bound of it will do).
  double rotation_bound_at(double dtheta, double x0, double x1, double abs_y, format out) const;
  /// rotation_bound_at in two steps, for callers that bound the many values of one pair at one
  /// position (every head's two dims): the table's error ε the rotation sees, from the pair's
  /// angle error, then the bound from ε — rotation_bound_from(rotation_table_error(dθ, out), x0,
  /// x1, |y|, out) == rotation_bound_at(dθ, x0, x1, |y|, out).
  double rotation_table_error(double dtheta, format out) const;
  double rotation_bound_from(double eps, double x0, double x1, double abs_y, format out) const;
  /// Bound on |f̂_i − θ_i| of the strategy's fp32 inv_freq (none for ggml, whose frequencies are
  /// a per-position recurrence).
  std::optional<double> inv_freq_bound(std::int64_t i) const;
  /// Bound on |m̂ − m| of the strategy's fp32 attention factor.
  double attention_factor_bound() const;
  kernel::strategy strategy() const { return st_; }
  const metric::libm& lib() const { return *lib_; }
  rotation_arithmetic arithmetic() const { return arith_; }

 private:
  kernel::strategy st_;
  double m_;
  const metric::libm* lib_;
  rotation_arithmetic arith_;
  rope_model hf_;
  std::optional<ggml_model> ggml_;
  // angle_errors' fast paths: the hf frequencies as arrays (exact value, bound, their sum), and
  // whether the models' parameters let them round by metric::half_ulp_finite with the same
  // values (docs/numerics.md §8.13).
  std::vector<double> hf_x_, hf_e_, hf_sum_;
  bool hf_finite_ = false, ggml_finite_ = false;
  /// angle_errors of the hf pipeline (hf, table-fp16, table-bf16) at p into out[0, n).
  void hf_angle_errors(std::int64_t p, double* out) const;
  // The strategy's storage dtype (kernel::storage_of) and table_form_for of the format its
  // rotation reads the table in, once (rotation_bound_at runs per q/k value).
  std::optional<dtype> storage_;
  table_form table_form_{};
};

inline double rope_contract::rotation_table_error(double dtheta, format out) const {
  // transformers in the model dtype reads the table cast to T (docs/numerics.md §9.4); the others
  // their table in its own format (storage dtype, else fp32).
  if (arith_ == rotation_arithmetic::output && out.p != 24) return table_bound_at(dtheta, m_, out);
  return table_form_.eval(dtheta, std::fabs(m_));  // table_bound_at in its format
}

inline double rope_contract::rotation_bound_from(double eps, double x0, double x1, double abs_y,
                                                 format out) const {
  const double a0 = std::fabs(x0), a1 = std::fabs(x1), a = a0 + a1;
  if (arith_ == rotation_arithmetic::output && out.p != 24) {
    // Each product and the sum rounded in T (docs/numerics.md §9.4).
    const double e0 = metric::half_ulp(a0 * (m_ + eps), out);
    const double e1 = metric::half_ulp(a1 * (m_ + eps), out);
    const double sum = metric::half_ulp(abs_y + a * eps + e0 + e1, out);
    return (a * eps + e0 + e1 + sum) * (1 + 0x1p-40);
  }
  return a * eps + rotation_bound(a * (m_ + eps), abs_y + a * eps, out);
}

inline double rope_contract::rotation_bound_at(double dtheta, double x0, double x1, double abs_y,
                                               format out) const {
  return rotation_bound_from(rotation_table_error(dtheta, out), x0, x1, abs_y, out);
}

/// A strategy's sinusoidal PE contract (absolute.h): bound on |PE^(p, col) − PE(p, col)| for an
/// exact value of magnitude y. ggml has no sinusoidal pipeline.
class sinusoidal_contract {
 public:
  sinusoidal_contract(const spec::sinusoidal& s, kernel::strategy st,
                      const metric::libm& lib = metric::kGlibc);
  double bound(std::int64_t p, std::int64_t col, double y, format out) const;
  /// Pair index of a column and whether it holds a sine (pair −1: the zero padding column).
  std::pair<std::int64_t, bool> pair_of(std::int64_t col) const;

 private:
  spec::sinusoidal s_;
  kernel::strategy st_;
  const metric::libm* lib_;
  std::vector<tv> omega_;  // blocked: the fp32 frequencies of the exp model
};

/// A strategy's ALiBi contract (relative.h): bounds on a slope and on a bias element m_h·(j − i)
/// whose exact magnitude is y.
class alibi_contract {
 public:
  alibi_contract(const spec::alibi& s, kernel::strategy st,
                 const metric::libm& lib = metric::kGlibc);
  /// h = 0 … H−1.
  double slope_bound(std::int64_t h, double y, format out) const;
  double bias_bound(std::int64_t h, std::int64_t distance, double y, format out) const;

 private:
  kernel::strategy st_;
  std::vector<tv> model_;
};

/// T5 buckets (relative.h) are integers: the accurate strategy's contract is the exact bucket;
/// hf and table-* (transformers' fp32 logarithms) may be off by one only where the exact
/// log-branch value lies within the fp32 model's error of an integer (a truncation boundary).

/// Whether relative distance r lies exactly on the lower edge of log-branch bucket `bucket`:
/// n^w·e^k = max_distance^k·e^w with k = bucket − e (verified in integers).
bool t5_on_integer_boundary(const spec::t5& s, std::int64_t r, std::int64_t bucket);
/// The exact T5 bucket of r: ref::t5_bucket, corrected where its rounded logarithms would truncate
/// an exact integer boundary downward (an independent integer check of the reference).
std::int64_t t5_exact_bucket(const spec::t5& s, std::int64_t r);
/// Whether the hf (fp32 log) bucket may be off by one at r.
bool t5_fp32_may_differ(const spec::t5& s, std::int64_t r);

}  // namespace pev::impl

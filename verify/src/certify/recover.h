#pragma once
// What a RoPE table implies about the pipeline that made it: its per-pair frequencies, recovered
// from the angles of its rows (at positions 1, 2, 4, … and every other row, unwrapped), its
// attention factor (from the rows' magnitudes), and — when the angles are exactly those of the hf
// recipe, fl(fl(p)·f̂_i) for one fp32 frequency f̂_i per pair — the error of its math library
// measured against those angles (trig) and against its own exponent (pow). docs/numerics.md §13.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detail.h"
#include "layout.h"

namespace pev::certify::detail {

struct table_fit {
  /// Per pair: the frequency (rad per position) that best explains the angles; NaN where the rows
  /// do not determine it (no row at a small enough position).
  std::vector<double> freq;
  /// Per pair: the fp32 frequency f̂ whose hf-recipe angles fl(fl(p)·f̂) explain every row within
  /// a conforming library's error, or NaN.
  std::vector<double> freq_f32;
  /// Every pair has an fp32 frequency: the table follows the hf recipe's angles.
  bool hf_angles = false;
  /// Whose angles the table follows: "hf", "exact" (p·θ_i: a correctly rounded or faithful
  /// table), "ggml" (the recurrence, with the implementation's own ratio powf(b, −2/d)), or
  /// empty.
  std::string angles;
  /// The attention factor the magnitudes imply (the value at position 0 when the table has one,
  /// else the median of √(ĉ² + ŝ²)).
  double m = 0;
  /// fp32 tables with a recipe's angles θ̂: max |t − cos θ̂| (and sin) over every value, in ulps
  /// of fp32, t the library's fp32 result the data implies (fl(t·m̂) = ĉ, the t nearest cos θ̂).
  std::optional<double> trig_ulp;
  /// The same, as an absolute error max |t − cos θ̂| (fast-math intrinsics have absolute bounds).
  std::optional<double> trig_abs;
  /// Default rope_type (no scaling): max |f̂_i − 1/b^(fl(2i/d))| in ulps of fp32, b = fl(θ): the
  /// error of pow and the reciprocal against the recipe's own exponent.
  std::optional<double> pow_ulp;
  /// Why a figure was not measured, for the certificate.
  std::string note;
  /// "N of M positions" when the fit read a sample.
  std::string measured_on;
};

/// What the fitted frequencies and attention factor imply against the spec, as sentences naming
/// the parameter that differs and the value the data implies: the attention factor, a common
/// factor of every frequency (a linear factor), plain RoPE's frequencies where the spec scales
/// (scaling ignored), the base rope_theta the high-frequency pairs imply, and for dynamic NTK
/// the sequence length its frequencies belong to. `theta`: the spec's exact frequencies; `m` its
/// exact attention factor. Empty when the data agrees (within 10^−4).
std::vector<std::string> parameter_findings(const spec::rope& s, std::optional<std::int64_t> seq,
                                            const std::vector<double>& theta, double m,
                                            const table_fit& fit);

/// The cos/sin a rotation applied to one pair, read back: x = (x0, x1) rotated into y = (y0, y1)
/// gives cos = (x·y)/|x|², sin = (x × y)/|x|², with |x|² (norm2); nothing where |x|² is not a
/// positive finite number (docs/numerics.md §13.8). One owner for fit_rotation and the vLLM
/// rungs' read-back (qk_cache.cpp).
struct applied_pair {
  double cos, sin, norm2;
};
inline std::optional<applied_pair> applied_rotation(double x0, double x1, double y0, double y1) {
  const double n = x0 * x0 + x1 * x1;
  if (!(n > 0) || !std::isfinite(n)) return std::nullopt;
  return applied_pair{(x0 * y0 + x1 * y1) / n, (x0 * y1 - x1 * y0) / n, n};
}

/// The fit of a rotation (rotated q/k without a table): each token's pair i of the first head
/// read as the table it applied, cos = (x·y)/|x|², sin = (x × y)/|x|² — the same m̂·(cos θ̂,
/// sin θ̂) — and fitted as a table (fit_table: frequencies and attention factor; no library
/// figures). None when the spec's pairs are not rotated by one magnitude (|y|/|x| of every pair
/// within 2^−6 of one value): the data pair other dims, and their angles tell nothing.
std::optional<table_fit> fit_rotation(const spec::rope& s, std::optional<std::int64_t> seq,
                                      const qk_source& q, const std::vector<std::int64_t>& pos,
                                      std::size_t max_rows);

/// A partial-rotary spec (rotary_dim < head_dim) whose fitted fastest pairs are the spec's
/// rope_theta over the whole head, f_i = θ^(−2i/head_dim): head_dim (the width the frequencies were
/// computed over); none otherwise.
std::optional<std::int64_t> implied_width(const spec::rope& s, const table_fit& fit);

/// The base rope_theta the fitted fastest pairs imply where it differs from the spec's (by more
/// than 10^−4), as the shortest decimal within the fit's precision (configs write 10000, 1e6);
/// none where they agree, the fit has no such pairs, or implied_width explains them.
std::optional<double> implied_base(const spec::rope& s, const table_fit& fit);

/// Fits a table (its dtype T) whose rows sit at positions `pos`; rows at a negative position are
/// left out (an MRoPE table's tokens whose streams differ: docs/encodings.md §4.6). With
/// max_rows > 0 and more distinct positions than that, the fit and the library measure read
/// max_rows of them — the first quarter of max_rows positions and the rest evenly spaced
/// (table_fit::measured_on says so): the measure describes the library, the comparison with the
/// bounds still reads every value (docs/performance.md §4).
/// With `exact` (a reference of the spec, the caller's own: it is not shared across threads), the
/// exact angles p·θ_i are a third candidate: where every row's angles agree with them as above and
/// the values' error against the exact m·cos, m·sin (in fp32 ulps) is below the trig error
/// measured against hf's angles, or hf's do not explain the rows, the table follows the exact
/// angles (`angles` "exact"; a correctly rounded or faithful table) and that error is its
/// library's (docs/numerics.md §13.6).
template <class T>
table_fit fit_table(const spec::rope& s, std::optional<std::int64_t> seq, const table_source& t,
                    const std::vector<std::int64_t>& pos, std::size_t max_rows = 0,
                    const ref::fast_rope_reference* exact = nullptr);

}  // namespace pev::certify::detail

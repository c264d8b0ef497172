#pragma once
// Analytic error bounds of the RoPE kernels (notes/numerics.md §3), per pair and per element: the
// bounds of the accuracy-contract table (tests/kernel) and the denominators of the report's
// error/bound ratio ρ. Built from the error_model.h operations: nothing here is measured.
//
// hf and table-*: |ĉ − m·cos θ| ≤ trig_times_m(hf_angle_error(p, freq_i), m, |cos θ|), then the
// storage and output roundings (path_bound). ggml: the recurrence angles of ggml_model, then
// trig_times_m and the output rounding. accurate: 1 ulp of the output type (its contract).

#include <cstdint>
#include <optional>
#include <vector>

#include "pev/kernel/strategy.h"
#include "pev/spec/spec.h"
#include "pev/sweep/error_model.h"

namespace pev::sweep {

/// Exact value and error bound of every fp32 frequency of the hf pipeline, and of its attention
/// factor (notes/numerics.md §3: f̂_i = f_i(1 + δ_i), |δ_i| ≤ ε_i from the actual operations).
struct rope_model {
  std::vector<tv> freq;
  tv m{1, 0};
};

/// The hf pipeline's model for a spec at sequence length `seq` (stateful types), with the exact
/// attention factor m_exact.
rope_model hf_model(const spec::rope& s, std::optional<std::int64_t> seq, double m_exact);

/// ggml: the recurrence θ_i = fl(θ_{i−1}·ts) from fl(p), per-pair factors, freq_scale and the
/// YaRN mix, all in fp32, with the host scalars of llama.cpp in fp32.
struct ggml_model {
  tv ts, freq_scale{1, 0};
  std::vector<tv> factors;  // empty: none
  bool yarn = false;
  double corr_low = 0, corr_width = 0;
  std::int64_t rotating = 0, pairs = 0;
  tv m{1, 0};

  /// Exact angle and error bound of every pair at position p.
  std::vector<tv> angles(std::int64_t p) const;
};

ggml_model make_ggml_model(const spec::rope& s, std::optional<std::int64_t> seq);

/// Bound on |ĉ − m·cos θ| of an fp32 value m̂·cosf(θ̂) with |θ̂ − θ| ≤ dtheta, |m̂ − m| ≤ m.e,
/// c = |cos θ| (or |sin θ|).
double trig_times_m(double dtheta, tv m, double c);

/// The hf pipeline's angle error: |fl(fl(p)·f̂) − p·θ| with |f̂ − θ| ≤ f.e.
double hf_angle_error(std::int64_t p, tv f);

/// Rounding errors a value |y| gathers after the fp32 (or fp64, `cur`) pipeline with bound B: the
/// storage format of the table strategies, then the output type (conversions to a wider format
/// are exact).
double path_bound(double B, double y, kernel::storage st, format out, format cur);

/// Sinusoidal hf pipelines (kernel/absolute.h): interleaved = the DistilBERT float64 pipeline
/// cast once; blocked = fairseq's fp32 exp-based frequencies.
class sinusoidal_model {
 public:
  explicit sinusoidal_model(const spec::sinusoidal& s);
  /// Pair of column `col` (−1: the zero padding column of an odd d_model, blocked layout).
  std::int64_t pair_of(std::int64_t col) const;
  /// Bound on |ŷ − y| of the hf (or table-*, by `stored`) value at position p, column col, with
  /// |y| = y, in output format `out`.
  double bound(std::int64_t p, std::int64_t col, double y, kernel::storage stored,
               format out) const;

 private:
  spec::sinusoidal s_;
  bool interleaved_;
  std::int64_t h_;
  std::vector<tv> omega_;  // blocked: fp32 ω_k
};

/// ALiBi hf slopes: BLOOM's fp32 pow of an fp32 base, per head (exact value and bound).
std::vector<tv> alibi_model(const spec::alibi& s);

/// Bound on the hf (or table-*) bias m̂_h·(j − i) in fp32 for a slope model `slope` and distance
/// j − i, |y| = y, after the storage and output roundings.
double alibi_bias_bound(tv slope, std::int64_t distance, double y, kernel::storage stored,
                        format out);

/// Whether relative distance r lies exactly on the lower edge of log-branch bucket `bucket`
/// (verified in integers: n^w·e^k = max_distance^k·e^w).
bool t5_on_integer_boundary(const spec::t5& s, std::int64_t r, std::int64_t bucket);

/// The exact T5 bucket of r: ref::t5_bucket, corrected where its rounded logarithms truncate an
/// exact integer boundary downward.
std::int64_t t5_exact_bucket(const spec::t5& s, std::int64_t r);

/// The hf (fp32 log) bucket may be off by one at r: the exact log-branch value lies within the
/// fp32 model's error of an integer (a truncation boundary).
bool t5_fp32_may_differ(const spec::t5& s, std::int64_t r);

}  // namespace pev::sweep

#pragma once
// pev::compare::figures — the one accumulator of a check's figures. Every comparison of an
// implementation with the exact reference (the report's sweeps, certification, the accuracy-
// contract table) feeds it value by value and gets one report::check row back: value and position
// counts, correctly rounded and faithful counts, non-finite values, max absolute error, max ulp
// error and ulp distance, the fixed-bucket ulp histogram, ρ against every bound the check is
// measured with, per-octave figures (max and p99 absolute error, max bound, max ρ per index), the
// worst case and the first values beyond a chosen bound. Definitions: docs/numerics.md §3.
//
// Bounds. A check names its bounds once (e.g. {"hf"} for a sweep cell, {"hf", "vllm-fp16",
// "vllm-bf16", "ggml", "drift-free"} for a certified table); every value comes with one bound per
// name. The `gate` bound is the check's own: its max ρ is report::check::max_rho, it drives the
// octave figures and, with worst_by::rho, the worst case. ρ = |ŷ − y| / (B·(1 + 2^−40)) (the
// slack covers the rounding of B's own evaluation in double), 0 when ŷ = y, +∞ when B = 0 < err.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"
#include "pev/report/result.h"
#include "pev/scalar/dtype.h"

namespace pev::compare {

/// Bounds are sums of positive terms evaluated in double: ρ divides by B·kSlack.
inline constexpr double kSlack = 1 + 0x1p-40;

/// ρ of an error against a bound (docs/numerics.md §3.5).
inline double rho_of(double err, double bound) {
  const double b = bound * kSlack;
  if (b > 0) return err / b;
  return err == 0 ? 0.0 : std::numeric_limits<double>::infinity();
}

/// Which value a check reports as its worst case.
enum class worst_by {
  rho,        // the largest ρ against the gate bound (drift reports)
  ulp_error,  // the largest ulp error against the exact value (certificates)
};

/// One compared value.
struct value {
  std::int64_t position = 0;
  std::int64_t index = 0;          // pair, column, head or element
  double got = 0;                  // the implementation's value (exact, as a double)
  double exact = 0;                // the exact value rounded to double (or within 2^−49 of it)
  std::uint64_t ulp_distance = 0;  // ordinal distance of got to RN_T(exact)
  double ulp = 0;                  // ulp_T(|exact|) of the check's type T
  /// The largest magnitude the exact value can have (m for a table value, m·(|x0| + |x1|) for a
  /// rotated one; 0: unknown) and its ulp in T. A bound of at least 2·scale is vacuous (every
  /// value of the output's range is within it); an exact value of 0 gets its bounds in this scale
  /// (options::zero_floor).
  double scale = 0;
  double scale_ulp = 0;
};

/// The compared value of an implementation's `got` (type T) at position p and index i, against
/// the exact value y (rounded to double) and RN_T of it, `rn` — every compare::value of a typed
/// output is built here; scale and scale_ulp as compare::value's (0: unknown).
template <class T>
value value_of(std::int64_t p, std::int64_t i, T got, T rn, double y, double scale = 0,
               double scale_ulp = 0) {
  return {p,
          i,
          scalar_traits<T>::to_double(got),
          y,
          metric::ulp_distance(got, rn),
          metric::ulp_at(std::fabs(y), format_of<T>()),
          scale,
          scale_ulp};
}

/// Histogram of non-negative values with 64 logarithmic bins per binade over [2^−100, 2^16)
/// (below: the first bin; above and +Inf: the last), plus exact zeros. Streaming and order-
/// independent, so p99 needs no stored values: quantile(q) is the upper edge of the bin holding
/// the nearest-rank q-quantile, ≥ the true quantile by less than 1/64 relative.
class log_histogram {
 public:
  void add(double v);
  /// add() of n values.
  void add_all(const double* v, std::size_t n);
  double quantile(double q) const;
  std::uint64_t count() const { return count_; }
  /// Adds another histogram's counts (the histogram of both sets of values).
  void merge(const log_histogram& other);
  /// The counts as plain data (non-zero bins only), and back (pev::error for bins out of range).
  report::figure_state::histogram state() const;
  static log_histogram from_state(const report::figure_state::histogram& s);

 private:
  static constexpr int kMinExp = -100;
  static constexpr int kMaxExp = 15;
  static constexpr std::size_t kSub = 64;
  static constexpr std::size_t kBins = static_cast<std::size_t>(kMaxExp - kMinExp + 1) * kSub + 1;
  static double upper_edge(std::size_t b);
  std::vector<std::uint32_t> bins_;  // kBins counts, allocated by the first value (or merge)
  std::uint64_t count_ = 0;
  std::uint64_t zeros_ = 0;
};

/// Rows of values (table rows), row-major: row q at positions[q], n = got.size() / rows values
/// per row with indices index0 … index0 + n − 1; they share the scale of value
/// (compare::value::scale, scale_ulp) and the compared type's format `out` (compare::value::ulp is
/// ulp_out(|exact|)).
struct row_values {
  std::span<const std::int64_t> positions;
  std::int64_t index0 = 0;
  std::span<const double> got, exact;
  std::span<const std::uint64_t> ulp_distance;
  format out{};
  double scale = 0;
  double scale_ulp = 0;
};

class figures {
 public:
  struct options {
    /// Octave layout: positions are below this (at least 2).
    std::int64_t max_position = 2;
    /// Number of distinct indices (per-octave ρ by index).
    std::int64_t indices = 1;
    /// Names of the bounds every value comes with, and which of them gates the check.
    std::vector<std::string> bounds = {"bound"};
    std::size_t gate = 0;
    /// Report ρ per bound name in report::check::recipe_rho (certificates; a sweep's one bound is
    /// its max_rho).
    bool per_bound_rho = false;
    worst_by worst = worst_by::rho;
    /// Append the values beyond this bound (index into `bounds`) to `mismatches` while it holds
    /// fewer than max_mismatches (a sink several checks may share, so that it keeps the order in
    /// which values were compared).
    std::optional<std::size_t> mismatch_bound;
    std::vector<report::mismatch>* mismatches = nullptr;
    std::size_t max_mismatches = 8;
    /// A ladder of bounds (indices into `bounds`, tightest first): rung k holds a value within
    /// the largest of rungs 0…k's bounds, so that each rung holds whenever a tighter one does
    /// (report::check::ladder_rho; docs/numerics.md §13.1).
    std::vector<std::size_t> ladder;
    /// Bounds of an exact value of 0 are at least ½ ulp_T(scale) (instead of a subnormal).
    bool zero_floor = false;
  };

  explicit figures(options o);
  /// The figures whose state() is `s`, with options `o` of the same layout (max_position,
  /// indices, bound names; pev::error naming what differs): e.g. a shard's figures read back
  /// from its certificate, to be merged.
  figures(options o, const report::figure_state& s);

  /// Every accumulator merge() combines, as plain data (mismatches are the sink's).
  report::figure_state state() const;

  /// Counts a distinct position (report::check::positions and the octaves' position counts).
  void add_position(std::int64_t p);
  /// One value; `bounds` holds one bound per name of options::bounds.
  void add(const value& v, const char* component, std::span<const double> bounds);
  /// Rows of N values: the same figures as add() of each value in order (tests/compare checks
  /// it), at a fraction of the cost — the per-value work runs in vectorisable loops, and add()'s
  /// order-dependent updates (ρ maxima, each octave's argmax, the worst case, mismatches) only for
  /// the values that can change them, found by a conservative test on err against the maxima as
  /// they stand before the rows, times the bounds (docs/performance.md §4). bounds[j·S + k] is
  /// bound j of value k (S = bound_stride, 0: N); options::zero_floor is applied to it in place.
  /// `mismatch_rows`, when given, receives the row of each mismatch appended.
  void add_rows(const row_values& r, const char* component, std::span<double> bounds,
                std::vector<std::size_t>* mismatch_rows = nullptr, std::size_t bound_stride = 0);
  /// A screen for add_rows: `known` holds maxima that are at most the final ones of the sequence
  /// this object's values belong to — e.g. the merged figures of every value compared before a
  /// chunk's. add_rows then evaluates ρ only for values that may exceed this object's maxima and
  /// `known`'s both (docs/performance.md §4), so that a chunk does not evaluate every value of
  /// its first rows: merged after `known`'s values, the figures equal add()'s of the whole
  /// sequence (tests/compare); this object alone may keep lower maxima, argmaxes and per-index
  /// ρ. Same layout as this one; null: no screen. `known` must not change while it screens.
  void screen_with(const figures* known);
  /// options::max_mismatches.
  std::size_t max_mismatches() const { return o_.max_mismatches; }
  /// Replaces the mismatch sink (options::mismatches); returns the previous one.
  std::vector<report::mismatch>* mismatch_sink(std::vector<report::mismatch>* sink);

  /// Merges the figures of values compared after this one's (same options; `later`'s mismatches
  /// went to its own sink, which the caller appends): the result equals one figures fed both
  /// sequences in order — counts add, maxima combine, and ties keep the earlier value (the worst
  /// case and each octave's argmax are the first value that attains the maximum). So figures
  /// computed chunk by chunk on threads and merged in chunk order are those of one thread.
  void merge(const figures& later);

  /// The octave's largest-ρ position (−1: none evaluated), for a local worst-case search.
  std::int64_t argmax(std::size_t octave) const { return octaves_[octave].argmax; }
  std::size_t octaves() const { return octaves_.size(); }
  std::uint64_t values() const { return values_; }
  /// The largest value bound k took (e.g. the drift-free bound a certificate reports).
  double max_bound(std::size_t k) const { return max_bound_[k]; }
  /// The worst value so far (its exact value may be replaced: see finish).
  const report::worst_case& worst() const { return worst_; }

  /// The figures as a check row (figures only: names, notes and grades are the caller's).
  /// `worst_exact`, when given, replaces the worst value's exact value (e.g. recomputed in MPFR
  /// when `exact` values were only within 2^−49 of the exact ones); the max ulp error is then that
  /// value's.
  void finish(report::check& c, std::optional<double> worst_exact = std::nullopt) const;

 private:
  struct octave {
    std::int64_t lo = 0, hi = 0;
    std::uint64_t positions = 0, values = 0;
    double max_abs = 0, max_bound = 0, max_rho = 0;
    std::int64_t argmax = -1;
    std::vector<double> rho_by_index;
    log_histogram hist;
  };
  options o_;
  std::vector<octave> octaves_;
  std::int64_t max_pos_ = 0;
  std::uint64_t values_ = 0, cr_ = 0, faithful_ = 0, non_finite_ = 0, max_ulp_dist_ = 0;
  double max_abs_ = 0, max_ulp_err_ = 0;
  std::vector<double> max_rho_;              // per bound
  std::vector<double> max_bound_;            // per bound
  std::vector<double> ladder_rho_;           // per rung
  std::vector<std::uint64_t> vacuous_;       // per bound: values where it is vacuous
  std::vector<std::int64_t> first_vacuous_;  // per bound: the smallest such position
  std::vector<double> scratch_;
  std::vector<double> err_, ulp_err_, rung_;  // add_rows' per-value scratch
  std::vector<double> bound_max_;             // add_rows' per-bound maxima
  std::vector<std::uint32_t> cand_;           // add_rows' marks (figures.cpp: kMarkExact …)
  std::vector<std::size_t> row_oct_;
  const figures* known_ = nullptr;  // screen_with
  std::vector<double> index_rho_;   // add_rows' per-index ρ screened by known_
  double screened_rho(std::size_t b) const {
    return known_ ? std::max(max_rho_[b], known_->max_rho_[b]) : max_rho_[b];
  }
  double screened_rung(std::size_t l) const {
    return known_ ? std::max(ladder_rho_[l], known_->ladder_rho_[l]) : ladder_rho_[l];
  }
  /// add()'s ρ maxima per bound and per ladder rung of one value; `which` (add_rows' marks) picks
  /// the bounds and rungs (all by default).
  void add_maxima(double err, std::span<const double> bounds, std::uint32_t which = ~0u);
  /// add()'s order-dependent updates of one value whose err, ulp error and bounds are known.
  void add_exact(const value& v, const char* component, double err, double ulp_err,
                 std::span<const double> bounds, std::size_t oct, bool first);
  std::array<std::uint64_t, report::kUlpBuckets> hist_{};
  report::worst_case worst_;
  double worst_ulp_ = 0;  // ulp_T(|exact|) of the worst value
};

}  // namespace pev::compare

#include "pev/compare/figures.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "pev/core/error.h"
#include "pev/core/hex.h"
#include "pev/core/sampling.h"
#include "pev/core/simd.h"
#include "pev/metric/error_model.h"

namespace pev::compare {

namespace {

/// What a mark asks of add_rows' exact pass (figures::add_maxima, add_exact): bit b (< 8), bound
/// b's ρ maximum; bit 8 + l (l < 8), ladder rung l's; kMarkAllMaxima, every ρ maximum; kMarkExact,
/// add_exact's order-dependent updates.
constexpr std::uint32_t kMarkAllMaxima = 1u << 16, kMarkExact = 1u << 17;
constexpr std::uint32_t kMarkMaxima = 0xffffu | kMarkAllMaxima;
constexpr std::uint32_t own_bit(std::size_t b) { return b < 8 ? 1u << b : kMarkAllMaxima; }
constexpr std::uint32_t rung_bit(std::size_t l) { return l < 8 ? 1u << (8 + l) : kMarkAllMaxima; }

constexpr double kInf = std::numeric_limits<double>::infinity();

std::int64_t octave_count(std::int64_t max_position) {
  return std::max<std::int64_t>(1, std::bit_width(static_cast<std::uint64_t>(max_position - 1)));
}
}  // namespace

// ---- log_histogram ------------------------------------------------------------------------------

void log_histogram::add(double v) { add_all(&v, 1); }

void log_histogram::merge(const log_histogram& other) {
  if (bins_.empty()) {
    bins_ = other.bins_;
  } else {
    for (std::size_t b = 0; b < other.bins_.size(); ++b) bins_[b] += other.bins_[b];
  }
  count_ += other.count_;
  zeros_ += other.zeros_;
}

void log_histogram::add_all(const double* v, std::size_t n) {
  // add()'s bin from the encoding in one expression: the exponent and the top 6 fraction bits
  // are bits 46 … 62, so (bits >> 46) − (1023 + kMinExp)·64 is (e − kMinExp)·64 + ⌊f·64⌋,
  // clamped to the first bin (e < kMinExp, subnormals) and the last (e > kMaxExp, +Inf).
  constexpr std::int64_t base = std::int64_t{1023 + kMinExp} * std::int64_t{kSub};
  if (bins_.empty() && n > 0) bins_.assign(kBins, 0);
  for (std::size_t k = 0; k < n; ++k) {
    if (!(v[k] > 0)) {
      zeros_++;
      continue;
    }
    const auto top = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(v[k]) >> 46) - base;
    bins_[static_cast<std::size_t>(std::clamp<std::int64_t>(top, 0, kBins - 1))]++;
  }
  count_ += n;
}

report::figure_state::histogram log_histogram::state() const {
  report::figure_state::histogram h;
  for (std::size_t b = 0; b < bins_.size(); ++b) {
    if (bins_[b] != 0) h.bins.emplace_back(static_cast<std::uint32_t>(b), bins_[b]);
  }
  h.count = count_;
  h.zeros = zeros_;
  return h;
}

log_histogram log_histogram::from_state(const report::figure_state::histogram& s) {
  log_histogram h;
  std::uint64_t sum = s.zeros;
  for (const auto& [b, n] : s.bins) {
    if (b >= kBins || n > std::numeric_limits<std::uint32_t>::max()) {
      throw error("compare::figures: histogram bin " + std::to_string(b) + " out of range");
    }
    if (h.bins_.empty()) h.bins_.assign(kBins, 0);
    h.bins_[b] += static_cast<std::uint32_t>(n);
    sum += n;
  }
  if (sum != s.count) throw error("compare::figures: histogram counts do not add up");
  h.count_ = s.count;
  h.zeros_ = s.zeros;
  return h;
}

double log_histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  // Nearest rank: the ⌈q·n⌉-th smallest value.
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  if (rank <= zeros_) return 0;
  std::uint64_t seen = zeros_;
  for (std::size_t b = 0; b < bins_.size(); ++b) {
    seen += bins_[b];
    if (seen >= rank) return upper_edge(b);
  }
  return kInf;
}

double log_histogram::upper_edge(std::size_t b) {
  if (b == kBins - 1) return kInf;
  const int e = kMinExp + static_cast<int>(b / kSub);
  const double f = 1.0 + static_cast<double>(b % kSub + 1) / kSub;
  return std::ldexp(f, e);
}

// ---- figures ------------------------------------------------------------------------------------

figures::figures(options o) : o_(std::move(o)) {
  if (o_.max_position < 2) o_.max_position = 2;
  if (o_.gate >= o_.bounds.size() ||
      (o_.mismatch_bound && *o_.mismatch_bound >= o_.bounds.size())) {
    throw error("compare::figures: gate or mismatch bound out of range");
  }
  octaves_.resize(static_cast<std::size_t>(octave_count(o_.max_position)));
  for (std::size_t k = 0; k < octaves_.size(); ++k) {
    octaves_[k].lo = k == 0 ? 0 : std::int64_t{1} << k;
    // The last octave of position 2^63 − 1 ends at the layout's end (2^63 is no int64).
    octaves_[k].hi =
        k + 1 >= 63 ? o_.max_position : std::min(std::int64_t{1} << (k + 1), o_.max_position);
    octaves_[k].rho_by_index.assign(static_cast<std::size_t>(o_.indices), 0.0);
  }
  max_rho_.assign(o_.bounds.size(), 0.0);
  max_bound_.assign(o_.bounds.size(), 0.0);
  for (std::size_t k : o_.ladder) {
    if (k >= o_.bounds.size()) throw error("compare::figures: ladder rung out of range");
  }
  ladder_rho_.assign(o_.ladder.size(), 0.0);
  vacuous_.assign(o_.bounds.size(), 0);
  first_vacuous_.assign(o_.bounds.size(), -1);
}

figures::figures(options o, const report::figure_state& s) : figures(std::move(o)) {
  const std::size_t nb = o_.bounds.size();
  if (s.max_position != o_.max_position || s.indices != o_.indices || s.bounds != o_.bounds ||
      s.octaves.size() != octaves_.size() || s.max_rho.size() != nb || s.max_bound.size() != nb ||
      s.vacuous.size() != nb || s.first_vacuous.size() != nb ||
      s.ladder_rho.size() != ladder_rho_.size()) {
    throw error("compare::figures: a state of another layout (octaves, indices or bounds)");
  }
  for (std::size_t k = 0; k < octaves_.size(); ++k) {
    const auto& so = s.octaves[k];
    octave& o = octaves_[k];
    if (so.rho_by_index.size() != o.rho_by_index.size()) {
      throw error("compare::figures: a state of another layout (indices)");
    }
    o.positions = so.positions;
    o.values = so.values;
    o.max_abs = so.max_abs;
    o.max_bound = so.max_bound;
    o.max_rho = so.max_rho;
    o.argmax = so.argmax;
    o.rho_by_index = so.rho_by_index;
    o.hist = log_histogram::from_state(so.hist);
  }
  max_pos_ = s.max_pos;
  values_ = s.values;
  cr_ = s.correctly_rounded;
  faithful_ = s.faithful;
  non_finite_ = s.non_finite;
  max_ulp_dist_ = s.max_ulp_distance;
  max_abs_ = s.max_abs;
  max_ulp_err_ = s.max_ulp_error;
  max_rho_ = s.max_rho;
  max_bound_ = s.max_bound;
  ladder_rho_ = s.ladder_rho;
  vacuous_ = s.vacuous;
  first_vacuous_ = s.first_vacuous;
  hist_ = s.ulp_histogram;
  worst_ = s.worst;
  worst_ulp_ = s.worst_ulp;
}

report::figure_state figures::state() const {
  report::figure_state s;
  s.max_position = o_.max_position;
  s.indices = o_.indices;
  s.bounds = o_.bounds;
  for (const octave& o : octaves_) {
    s.octaves.push_back({o.positions, o.values, o.max_abs, o.max_bound, o.max_rho, o.argmax,
                         o.rho_by_index, o.hist.state()});
  }
  s.max_pos = max_pos_;
  s.values = values_;
  s.correctly_rounded = cr_;
  s.faithful = faithful_;
  s.non_finite = non_finite_;
  s.max_ulp_distance = max_ulp_dist_;
  s.max_abs = max_abs_;
  s.max_ulp_error = max_ulp_err_;
  s.max_rho = max_rho_;
  s.max_bound = max_bound_;
  s.ladder_rho = ladder_rho_;
  s.vacuous = vacuous_;
  s.first_vacuous = first_vacuous_;
  s.ulp_histogram = hist_;
  s.worst = worst_;
  s.worst_ulp = worst_ulp_;
  return s;
}

void figures::add_position(std::int64_t p) {
  const auto oct = static_cast<std::size_t>(octave_of(p));
  if (oct >= octaves_.size()) {
    throw error("compare::figures: position " + std::to_string(p) + " beyond the check's layout");
  }
  octaves_[oct].positions++;
  max_pos_ = std::max(max_pos_, p);
}

void figures::add(const value& v, const char* component, std::span<const double> given) {
  if (given.size() != o_.bounds.size()) {
    throw error("compare::figures: one bound per named bound expected");
  }
  std::span<const double> bounds = given;
  if (o_.zero_floor && v.exact == 0 && v.scale_ulp > 0) {
    scratch_.assign(given.begin(), given.end());
    for (double& b : scratch_) b = std::max(b, v.scale_ulp / 2);
    bounds = scratch_;
  }
  const bool finite = std::isfinite(v.got);
  const double err = finite ? std::fabs(v.got - v.exact) : kInf;
  const double ulp_err = finite ? err / v.ulp : kInf;
  for (std::size_t b = 0; b < bounds.size(); ++b) {
    max_bound_[b] = std::max(max_bound_[b], bounds[b]);
    if (v.scale > 0 && bounds[b] >= 2 * v.scale) {
      if (vacuous_[b]++ == 0 || v.position < first_vacuous_[b]) first_vacuous_[b] = v.position;
    }
  }
  const auto oct = static_cast<std::size_t>(octave_of(v.position));
  if (oct >= octaves_.size() || v.index < 0 || v.index >= o_.indices) {
    throw error("compare::figures: position " + std::to_string(v.position) + " or index " +
                std::to_string(v.index) + " outside the check's layout");
  }
  auto& o = octaves_[oct];
  o.values++;
  o.max_abs = std::max(o.max_abs, err);
  o.max_bound = std::max(o.max_bound, bounds[o_.gate]);
  o.hist.add(err);
  values_++;
  non_finite_ += finite ? 0 : 1;
  max_abs_ = std::max(max_abs_, err);
  max_ulp_dist_ = std::max(max_ulp_dist_, v.ulp_distance);
  cr_ += v.ulp_distance == 0 ? 1 : 0;
  faithful_ += v.ulp_distance <= 1 ? 1 : 0;
  hist_[static_cast<std::size_t>(report::ulp_bucket(ulp_err))]++;
  add_maxima(err, bounds);
  add_exact(v, component, err, ulp_err, bounds, oct, values_ == 1);
}

void figures::add_maxima(double err, std::span<const double> bounds, std::uint32_t which) {
  for (std::size_t b = 0; b < bounds.size(); ++b) {
    if (which & own_bit(b)) max_rho_[b] = std::max(max_rho_[b], rho_of(err, bounds[b]));
  }
  double rung = 0;
  for (std::size_t k = 0; k < o_.ladder.size(); ++k) {
    rung = std::max(rung, bounds[o_.ladder[k]]);
    if (which & rung_bit(k)) ladder_rho_[k] = std::max(ladder_rho_[k], rho_of(err, rung));
  }
}

void figures::add_exact(const value& v, const char* component, double err, double ulp_err,
                        std::span<const double> bounds, std::size_t oct, bool first) {
  const double B = bounds[o_.gate];
  const double rho = rho_of(err, B);
  auto& o = octaves_[oct];
  if (rho > o.max_rho || o.argmax < 0) {
    if (rho > o.max_rho) o.max_rho = rho;
    if (o.argmax < 0 || rho >= o.max_rho) o.argmax = v.position;
  }
  auto& ri = o.rho_by_index[static_cast<std::size_t>(v.index)];
  ri = std::max(ri, rho);
  const bool worse = o_.worst == worst_by::rho ? rho > worst_.rho : ulp_err > max_ulp_err_;
  max_ulp_err_ = std::max(max_ulp_err_, ulp_err);
  if (worse || first) {
    worst_ = {v.position, v.index,    component,    v.got, v.exact, B,
              rho,        hex(v.got), hex(v.exact), {},    ulp_err};
    worst_ulp_ = v.ulp;
  }
  if (o_.mismatch_bound && o_.mismatches && o_.mismatches->size() < o_.max_mismatches &&
      !(err <= bounds[*o_.mismatch_bound])) {
    o_.mismatches->push_back(
        {component, v.position, v.index, v.got, v.exact, bounds[*o_.mismatch_bound]});
  }
}

// ---- add_rows -----------------------------------------------------------------------------------

namespace {

/// err = |got − exact| (+Inf for a non-finite got) and the ulp error err/ulp_out(|exact|) (a
/// power of two: the quotient is exact either way); returns the number of non-finite values.
PEV_VECTOR_LOOPS std::uint64_t row_errors(const double* got, const double* exact, format out,
                                          double* err, double* ulp_err, std::size_t n) {
  // Both quotients computed, the non-finite case selected on the encodings: no branch in the
  // loop, which vectorises.
  constexpr std::uint64_t exp_mask = 0x7ff0000000000000, inf = exp_mask;
  std::uint64_t non_finite = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t bad =
        -static_cast<std::uint64_t>((std::bit_cast<std::uint64_t>(got[k]) & exp_mask) == exp_mask);
    const double e = std::fabs(got[k] - exact[k]);
    const double u = e / metric::ulp_at_finite(std::fabs(exact[k]), out);
    err[k] = std::bit_cast<double>((std::bit_cast<std::uint64_t>(e) & ~bad) | (inf & bad));
    ulp_err[k] = std::bit_cast<double>((std::bit_cast<std::uint64_t>(u) & ~bad) | (inf & bad));
    non_finite += bad & 1;
  }
  return non_finite;
}

/// report::ulp_bucket of every ulp error (≥ 0 or +Inf) counted into `hist`: the number above
/// each bucket's upper edge, differenced.
PEV_VECTOR_LOOPS void ulp_buckets(const double* u, std::size_t n,
                                  std::array<std::uint64_t, report::kUlpBuckets>& hist) {
  static_assert(report::kUlpBuckets == 7);
  std::uint64_t above[6] = {};
  for (std::size_t k = 0; k < n; ++k) {
    above[0] += u[k] > 0 ? 1 : 0;
    above[1] += u[k] > 0.5 ? 1 : 0;
    above[2] += u[k] > 1 ? 1 : 0;
    above[3] += u[k] > 2 ? 1 : 0;
    above[4] += u[k] > 4 ? 1 : 0;
    above[5] += u[k] > 8 ? 1 : 0;
  }
  hist[0] += n - above[0];
  for (std::size_t b = 1; b < 6; ++b) hist[b] += above[b - 1] - above[b];
  hist[6] += above[5];
}

/// The largest of n values ≥ 0 (or +Inf), and 0 for none: on the encodings, which order like
/// the values for non-negative doubles (an integer maximum vectorises; a double one, whose NaN
/// rules make it order-dependent, does not).
PEV_VECTOR_LOOPS double row_max(const double* v, std::size_t n) {
  // Signed: the encodings of these values are below 2^63 (AVX2 compares signed 64-bit lanes).
  // Sixteen running maxima (four vectors), so that the compare-and-blend chains overlap.
  constexpr std::size_t kLanes = 16;
  std::int64_t m[kLanes] = {};
  std::size_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) {
      const auto b = std::bit_cast<std::int64_t>(v[k + l]);
      m[l] = b > m[l] ? b : m[l];
    }
  }
  std::int64_t r = 0;
  for (; k < n; ++k) {
    const auto b = std::bit_cast<std::int64_t>(v[k]);
    r = b > r ? b : r;
  }
  for (const std::int64_t x : m) r = x > r ? x : r;
  return std::bit_cast<double>(r);
}

/// mark_rho's t of a maximum r: r·kSlack·(1 − 2^−48), rounded after each product.
[[gnu::always_inline]] inline double mark_t(double r) { return r * kSlack * (1 - 0x1p-48); }

/// The mark test of mark_rho: err > fl(t·B), or err > 0 where fl(t·B) is below 2^−1000 or not a
/// number — in one comparison, err > g with g = fl(t·B) where fl(t·B) ≥ 2^−1000, else +0 (selected
/// on the encoding, so that the loops stay straight vector code). It also leaves unmarked an error
/// of 0 against a negative bound (ρ = 0, which raises no maximum).
[[gnu::always_inline]] inline bool may_raise(double err, double tb) {
  const std::uint64_t keep = -static_cast<std::uint64_t>(tb >= 0x1p-1000);
  return err > std::bit_cast<double>(std::bit_cast<std::uint64_t>(tb) & keep);
}

/// Marks the values that may raise a ρ maximum r against bounds B: not err ≤ fl(t·B) with
/// t = r·kSlack·(1 − 2^−48), which implies err/fl(B·kSlack) < r (the relative error of the two
/// products is below 2^−50; docs/performance.md §4), unless t·B is too small for that argument
/// (below 2^−1000, where a subnormal product loses relative precision) or not a number.
PEV_VECTOR_LOOPS void mark_rho(const double* err, const double* B, double r, std::uint32_t* cand,
                               std::size_t n, std::uint32_t bit) {
  const double t = mark_t(r);
  for (std::size_t k = 0; k < n; ++k) {
    const double tb = t * B[k];
    const bool m = may_raise(err[k], tb);
    cand[k] |= -static_cast<std::uint32_t>(m) & bit;
  }
}

/// rung[k] = max(rung[k], B[k]) for bounds ≥ 0 (or NaN, which the maximum keeps and mark_rho
/// marks), on the encodings, which order like the values there.
PEV_VECTOR_LOOPS void max_into(double* rung, const double* B, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    const auto r = std::bit_cast<std::int64_t>(rung[k]), b = std::bit_cast<std::int64_t>(B[k]);
    rung[k] = std::bit_cast<double>(b > r ? b : r);
  }
}

/// mark_rho against a maximum per index: rows × n values, value k of a row against r[k].
PEV_VECTOR_LOOPS void mark_rho_rows(const double* err, const double* B, const double* r,
                                    std::uint32_t* cand, std::size_t rows, std::size_t n) {
  for (std::size_t q = 0; q < rows; ++q) {
    const double* e = err + q * n;
    const double* b = B + q * n;
    std::uint32_t* c = cand + q * n;
    for (std::size_t k = 0; k < n; ++k) {
      const double tb = mark_t(r[k]) * b[k];
      const bool m = may_raise(e[k], tb);
      c[k] |= -static_cast<std::uint32_t>(m) & kMarkExact;
    }
  }
}

/// One pass of mark_rho over NB bounds, each against its own maximum (t_own: its t) and, with
/// Ladder (rungs 0…NB − 1 in bound order), each rung against the largest of bounds 0…l and its
/// maximum (t_rung), and each bound's largest encoding (row_max).
template <std::size_t NB, bool Ladder>
[[gnu::always_inline]] inline void mark_bounds_n(const double* __restrict err,
                                                 const double* __restrict B, std::size_t stride,
                                                 const double* t_own, const double* t_rung,
                                                 std::uint32_t* __restrict cand, std::int64_t* mx,
                                                 std::size_t n) {
  std::int64_t m[NB] = {};
  double to[NB], tr[NB];
  for (std::size_t b = 0; b < NB; ++b) {
    to[b] = t_own[b];
    tr[b] = Ladder ? t_rung[b] : 0;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const double e = err[k];
    std::int64_t R = 0;  // add_maxima's rung: the largest of 0 and bounds 0…b
    std::uint32_t c = 0;
    for (std::size_t b = 0; b < NB; ++b) {
      const double Bb = B[b * stride + k];
      const auto eb = std::bit_cast<std::int64_t>(Bb);
      m[b] = eb > m[b] ? eb : m[b];
      const double tb = to[b] * Bb;
      c |= static_cast<std::uint32_t>(may_raise(e, tb)) << b;
      if constexpr (Ladder) {
        R = eb > R ? eb : R;
        const double trb = tr[b] * std::bit_cast<double>(R);
        c |= static_cast<std::uint32_t>(may_raise(e, trb)) << (8 + b);
      }
    }
    cand[k] |= c;
  }
  for (std::size_t b = 0; b < NB; ++b) mx[b] = m[b];
}

template <std::size_t NB>
[[gnu::always_inline]] inline void mark_bounds_nb(const double* err, const double* B,
                                                  std::size_t stride, bool ladder,
                                                  const double* t_own, const double* t_rung,
                                                  std::uint32_t* cand, std::int64_t* mx,
                                                  std::size_t n) {
  if (ladder) {
    mark_bounds_n<NB, true>(err, B, stride, t_own, t_rung, cand, mx, n);
  } else {
    mark_bounds_n<NB, false>(err, B, stride, t_own, t_rung, cand, mx, n);
  }
}

/// mark_bounds_n for 1 ≤ nb ≤ kFusedBounds bounds (always-inline templates, so that each
/// target clone compiles them for its own target); false (nothing done) for more.
constexpr std::size_t kFusedBounds = 8;
template <std::size_t... I>
[[gnu::always_inline]] inline bool mark_bounds_upto(std::index_sequence<I...>, const double* err,
                                                    const double* B, std::size_t stride,
                                                    std::size_t nb, bool ladder,
                                                    const double* t_own, const double* t_rung,
                                                    std::uint32_t* cand, std::int64_t* mx,
                                                    std::size_t n) {
  return ((nb == I + 1 &&
           (mark_bounds_nb<I + 1>(err, B, stride, ladder, t_own, t_rung, cand, mx, n), true)) ||
          ...);
}
PEV_VECTOR_LOOPS bool mark_bounds(const double* err, const double* B, std::size_t stride,
                                  std::size_t nb, bool ladder, const double* t_own,
                                  const double* t_rung, std::uint32_t* cand, std::int64_t* mx,
                                  std::size_t n) {
  return mark_bounds_upto(std::make_index_sequence<kFusedBounds>(), err, B, stride, nb, ladder,
                          t_own, t_rung, cand, mx, n);
}

/// options::zero_floor: bounds of an exact value of ±0 raised to at least `floor` (selects on
/// the encodings, which order like the values for these non-negative bounds).
PEV_VECTOR_LOOPS void zero_floor(const double* exact, double floor, double* B, std::size_t n) {
  const auto f = std::bit_cast<std::uint64_t>(floor);
  for (std::size_t k = 0; k < n; ++k) {
    const auto b = std::bit_cast<std::uint64_t>(B[k]);
    const std::uint64_t zero =
        -static_cast<std::uint64_t>((std::bit_cast<std::uint64_t>(exact[k]) << 1) == 0);
    const std::uint64_t raise = zero & -static_cast<std::uint64_t>(b < f);
    B[k] = std::bit_cast<double>((b & ~raise) | (f & raise));
  }
}

/// Whether any of x[0 … n) is ±0 (on the encodings: a reduction that vectorises).
PEV_VECTOR_LOOPS bool any_zero(const double* x, std::size_t n) {
  std::uint64_t z = 0;
  for (std::size_t k = 0; k < n; ++k) z |= (std::bit_cast<std::uint64_t>(x[k]) << 1) == 0 ? 1 : 0;
  return z != 0;
}

/// Whether the 16 marks from c are all 0.
inline bool none_of_16(const std::uint32_t* c) {
  std::uint64_t w[8];
  std::memcpy(w, c, sizeof w);
  return (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) == 0;
}

/// Correctly rounded (distance 0) and faithful (≤ 1) counts and the largest distance.
PEV_VECTOR_LOOPS void distances(const std::uint64_t* d, std::size_t n, std::uint64_t& cr,
                                std::uint64_t& faithful, std::uint64_t& max_dist) {
  std::uint64_t c = 0, f = 0, m = 0;
  for (std::size_t k = 0; k < n; ++k) {
    c += d[k] == 0 ? 1 : 0;
    f += d[k] <= 1 ? 1 : 0;
    m = d[k] > m ? d[k] : m;
  }
  cr = c;
  faithful = f;
  max_dist = m;
}

/// Values beyond their bound (!(err ≤ B): mismatches).
PEV_VECTOR_LOOPS void mark_beyond(const double* err, const double* B, std::uint32_t* cand,
                                  std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    cand[k] |= -static_cast<std::uint32_t>(!(err[k] <= B[k])) & kMarkExact;
  }
}

}  // namespace

void figures::add_rows(const row_values& r, const char* component, std::span<double> bounds,
                       std::vector<std::size_t>* mismatch_rows, std::size_t bound_stride) {
  const std::size_t R = r.positions.size(), N = r.got.size();
  const std::size_t nb = o_.bounds.size();
  if (R == 0 || N == 0) return;
  const std::size_t n = N / R;
  if (n * R != N || r.exact.size() != N || r.ulp_distance.size() != N) {
    throw error("compare::figures: rows' values, distances and bounds differ in size");
  }
  if (r.index0 < 0 || r.index0 + static_cast<std::int64_t>(n) > o_.indices) {
    throw error("compare::figures: indices " + std::to_string(r.index0) + "+" + std::to_string(n) +
                " outside the check's layout");
  }
  row_oct_.resize(R);
  for (std::size_t q = 0; q < R; ++q) {
    const auto oct = static_cast<std::size_t>(octave_of(r.positions[q]));
    if (oct >= octaves_.size()) {
      throw error("compare::figures: position " + std::to_string(r.positions[q]) +
                  " beyond the check's layout");
    }
    row_oct_[q] = oct;
  }
  const std::size_t stride = bound_stride ? bound_stride : N;
  if (bounds.size() < (nb - 1) * stride + N) {
    throw error("compare::figures: rows' bounds too short for their stride");
  }
  auto bound = [&](std::size_t b) { return bounds.data() + b * stride; };
  if (o_.zero_floor && r.scale_ulp > 0 && any_zero(r.exact.data(), N)) {
    for (std::size_t b = 0; b < nb; ++b) zero_floor(r.exact.data(), r.scale_ulp / 2, bound(b), N);
  }
  err_.resize(N);
  ulp_err_.resize(N);
  const std::uint64_t non_finite =
      row_errors(r.got.data(), r.exact.data(), r.out, err_.data(), ulp_err_.data(), N);
  // The values that may change a ρ maximum or an order-dependent figure (add_maxima,
  // add_exact), with the maxima as they stand before these rows: a value that is not marked
  // changes none of them — its ρ against every rung's bound (the largest of rungs 0…l's, as
  // add_maxima takes it) is at most the rung's maximum, against every bound at most that bound's,
  // its gate ρ at most its index's octave maximum (which the octave's maximum and the worst ρ
  // bound); and of the values whose ulp error exceeds the worst's, only the first with the rows'
  // largest one can end up the worst case. Each bound's largest value comes from the same pass.
  cand_.assign(N, 0);
  bound_max_.resize(nb);
  bool identity_ladder = o_.ladder.size() == nb;
  for (std::size_t l = 0; l < o_.ladder.size() && identity_ladder; ++l) {
    identity_ladder = o_.ladder[l] == l;
  }
  bool fused = false;
  if (nb <= kFusedBounds && (identity_ladder || o_.ladder.empty())) {
    std::array<double, kFusedBounds> t_own{}, t_rung{};
    std::array<std::int64_t, kFusedBounds> mx{};
    for (std::size_t b = 0; b < nb; ++b) {
      t_own[b] = mark_t(screened_rho(b));
      if (identity_ladder) t_rung[b] = mark_t(screened_rung(b));
    }
    fused = mark_bounds(err_.data(), bounds.data(), stride, nb, identity_ladder, t_own.data(),
                        t_rung.data(), cand_.data(), mx.data(), N);
    for (std::size_t b = 0; b < nb; ++b) bound_max_[b] = std::bit_cast<double>(mx[b]);
  }
  if (!fused) {
    if (!o_.ladder.empty()) rung_.assign(bound(o_.ladder[0]), bound(o_.ladder[0]) + N);
    for (std::size_t l = 0; l < o_.ladder.size(); ++l) {
      if (l > 0) max_into(rung_.data(), bound(o_.ladder[l]), N);
      mark_rho(err_.data(), rung_.data(), screened_rung(l), cand_.data(), N, rung_bit(l));
    }
    for (std::size_t b = 0; b < nb; ++b) {
      mark_rho(err_.data(), bound(b), screened_rho(b), cand_.data(), N, own_bit(b));
      bound_max_[b] = row_max(bound(b), N);
    }
  }
  // Order-independent figures: counts, maxima, histograms — over all rows, and per octave over
  // each run of rows in one octave.
  for (std::size_t b = 0; b < nb; ++b) {
    const double mx = bound_max_[b];
    max_bound_[b] = std::max(max_bound_[b], mx);
    if (r.scale > 0 && mx >= 2 * r.scale) {
      for (std::size_t q = 0; q < R; ++q) {
        std::uint64_t c = 0;
        for (std::size_t k = q * n; k < (q + 1) * n; ++k) c += bound(b)[k] >= 2 * r.scale ? 1 : 0;
        if (c == 0) continue;
        if (vacuous_[b] == 0 || r.positions[q] < first_vacuous_[b]) {
          first_vacuous_[b] = r.positions[q];
        }
        vacuous_[b] += c;
      }
    }
  }
  std::uint64_t cr = 0, faithful = 0, max_dist = 0;
  distances(r.ulp_distance.data(), N, cr, faithful, max_dist);
  ulp_buckets(ulp_err_.data(), N, hist_);
  const double max_ulp = row_max(ulp_err_.data(), N);
  if (o_.worst == worst_by::ulp_error && max_ulp > max_ulp_err_) {
    cand_[static_cast<std::size_t>(std::find(ulp_err_.begin(), ulp_err_.end(), max_ulp) -
                                   ulp_err_.begin())] |= kMarkExact;
  }
  if (o_.mismatch_bound && o_.mismatches && o_.mismatches->size() < o_.max_mismatches) {
    mark_beyond(err_.data(), bound(*o_.mismatch_bound), cand_.data(), N);
  }
  double max_err = 0;
  for (std::size_t q0 = 0; q0 < R;) {
    std::size_t q1 = q0 + 1;
    while (q1 < R && row_oct_[q1] == row_oct_[q0]) ++q1;
    auto& o = octaves_[row_oct_[q0]];
    const std::size_t a = q0 * n, len = (q1 - q0) * n;
    const double run_err = row_max(err_.data() + a, len);
    max_err = std::max(max_err, run_err);
    o.max_abs = std::max(o.max_abs, run_err);
    o.max_bound = std::max(o.max_bound, row_max(bound(o_.gate) + a, len));
    o.hist.add_all(err_.data() + a, len);
    o.values += len;
    const double* by_index = o.rho_by_index.data() + static_cast<std::size_t>(r.index0);
    if (known_) {
      const std::vector<double>& k = known_->octaves_[row_oct_[q0]].rho_by_index;
      index_rho_.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        index_rho_[i] = std::max(by_index[i], k[static_cast<std::size_t>(r.index0) + i]);
      }
      by_index = index_rho_.data();
    }
    mark_rho_rows(err_.data() + a, bound(o_.gate) + a, by_index, cand_.data() + a, q1 - q0, n);
    if (o.argmax < 0) cand_[a] |= kMarkExact;  // the octave's first value sets its argmax
    q0 = q1;
  }
  const bool first_overall = values_ == 0;
  if (first_overall) cand_[0] |= kMarkExact;
  std::vector<double>& b1 = scratch_;
  b1.resize(nb);
  for (std::size_t k = 0; k < N; ++k) {
    // Sixteen marks at a time: most are 0.
    if (k % 16 == 0 && k + 16 <= N && none_of_16(cand_.data() + k)) {
      k += 15;
      continue;
    }
    const std::uint32_t mark = cand_[k];
    if (!mark) continue;
    for (std::size_t b = 0; b < nb; ++b) b1[b] = bound(b)[k];
    const std::size_t q = k / n;
    const value v{r.positions[q],    r.index0 + static_cast<std::int64_t>(k - q * n),
                  r.got[k],          r.exact[k],
                  r.ulp_distance[k], metric::ulp_at_finite(std::fabs(r.exact[k]), r.out),
                  r.scale,           r.scale_ulp};
    const std::size_t before = o_.mismatches ? o_.mismatches->size() : 0;
    if (mark & kMarkMaxima) add_maxima(err_[k], b1, mark & kMarkAllMaxima ? ~0u : mark);
    if (mark & kMarkExact) {
      add_exact(v, component, err_[k], ulp_err_[k], b1, row_oct_[q], first_overall && k == 0);
    }
    if (mismatch_rows && o_.mismatches && o_.mismatches->size() > before) {
      mismatch_rows->push_back(q);
    }
  }
  max_ulp_err_ = std::max(max_ulp_err_, max_ulp);
  values_ += N;
  non_finite_ += non_finite;
  max_abs_ = std::max(max_abs_, max_err);
  max_ulp_dist_ = std::max(max_ulp_dist_, max_dist);
  cr_ += cr;
  faithful_ += faithful;
}

void figures::screen_with(const figures* known) {
  if (known &&
      (known->octaves_.size() != octaves_.size() || known->max_rho_.size() != max_rho_.size() ||
       known->ladder_rho_.size() != ladder_rho_.size() || known->o_.indices != o_.indices)) {
    throw error("compare::figures::screen_with: figures of another layout");
  }
  known_ = known;
}

std::vector<report::mismatch>* figures::mismatch_sink(std::vector<report::mismatch>* sink) {
  std::swap(sink, o_.mismatches);
  return sink;
}

void figures::merge(const figures& later) {
  if (later.octaves_.size() != octaves_.size() || later.max_rho_.size() != max_rho_.size() ||
      later.ladder_rho_.size() != ladder_rho_.size() || later.o_.indices != o_.indices) {
    throw error("compare::figures::merge: figures of another layout");
  }
  for (std::size_t k = 0; k < octaves_.size(); ++k) {
    octave& o = octaves_[k];
    const octave& l = later.octaves_[k];
    o.positions += l.positions;
    if (l.values == 0) continue;
    o.values += l.values;
    o.max_abs = std::max(o.max_abs, l.max_abs);
    o.max_bound = std::max(o.max_bound, l.max_bound);
    // add(): the argmax is the first value whose ρ is the maximum (the first value's otherwise).
    if (o.argmax < 0 || l.max_rho > o.max_rho) {
      o.max_rho = std::max(o.max_rho, l.max_rho);
      o.argmax = l.argmax;
    }
    for (std::size_t i = 0; i < o.rho_by_index.size(); ++i) {
      o.rho_by_index[i] = std::max(o.rho_by_index[i], l.rho_by_index[i]);
    }
    o.hist.merge(l.hist);
  }
  max_pos_ = std::max(max_pos_, later.max_pos_);
  if (later.values_ == 0) return;
  for (std::size_t b = 0; b < max_rho_.size(); ++b) {
    max_rho_[b] = std::max(max_rho_[b], later.max_rho_[b]);
    max_bound_[b] = std::max(max_bound_[b], later.max_bound_[b]);
    if (later.vacuous_[b] > 0 &&
        (vacuous_[b] == 0 || later.first_vacuous_[b] < first_vacuous_[b])) {
      first_vacuous_[b] = later.first_vacuous_[b];
    }
    vacuous_[b] += later.vacuous_[b];
  }
  for (std::size_t k = 0; k < ladder_rho_.size(); ++k) {
    ladder_rho_[k] = std::max(ladder_rho_[k], later.ladder_rho_[k]);
  }
  // The worst case: the first value with the strictly largest key (add()).
  const bool worse =
      o_.worst == worst_by::rho ? later.worst_.rho > worst_.rho : later.max_ulp_err_ > max_ulp_err_;
  if (values_ == 0 || worse) {
    worst_ = later.worst_;
    worst_ulp_ = later.worst_ulp_;
  }
  max_ulp_err_ = std::max(max_ulp_err_, later.max_ulp_err_);
  values_ += later.values_;
  cr_ += later.cr_;
  faithful_ += later.faithful_;
  non_finite_ += later.non_finite_;
  max_ulp_dist_ = std::max(max_ulp_dist_, later.max_ulp_dist_);
  max_abs_ = std::max(max_abs_, later.max_abs_);
  for (std::size_t b = 0; b < hist_.size(); ++b) hist_[b] += later.hist_[b];
}

void figures::finish(report::check& c, std::optional<double> worst_exact) const {
  c.values = values_;
  c.max_position = max_pos_;
  c.max_abs = max_abs_;
  c.max_ulp_error = max_ulp_err_;
  c.max_ulp_distance = max_ulp_dist_;
  c.correctly_rounded = cr_;
  c.faithful = faithful_;
  c.non_finite = non_finite_;
  c.pct_correctly_rounded = values_ ? 100.0 * double(cr_) / double(values_) : 0;
  c.pct_faithful = values_ ? 100.0 * double(faithful_) / double(values_) : 0;
  c.ulp_histogram = hist_;
  c.worst = worst_;
  if (worst_exact && values_ > 0) {
    auto& w = c.worst;
    w.exact = *worst_exact;
    w.exact_hex = hex(w.exact);
    w.ulp_error = std::isfinite(w.got) ? std::fabs(w.got - w.exact) / worst_ulp_ : kInf;
    w.rho = rho_of(std::isfinite(w.got) ? std::fabs(w.got - w.exact) : kInf, w.bound);
    if (o_.worst == worst_by::ulp_error) c.max_ulp_error = w.ulp_error;
  }
  c.max_rho = 0;
  c.positions = 0;
  c.octaves.clear();
  for (const auto& o : octaves_) {
    c.positions += o.positions;
    if (o.values == 0) continue;
    c.max_rho = std::max(c.max_rho, o.max_rho);
    c.octaves.push_back({o.lo, o.hi, o.positions, o.values, o.max_abs, o.hist.quantile(0.99),
                         o.max_bound, o.max_rho, o.rho_by_index});
  }
  c.pass = c.values > 0 && c.max_rho <= 1.0;
  c.recipe_rho.clear();
  c.ladder_rho.clear();
  c.vacuous.clear();
  if (o_.per_bound_rho) {
    for (std::size_t b = 0; b < o_.bounds.size(); ++b) {
      c.recipe_rho[o_.bounds[b]] = max_rho_[b];
      if (vacuous_[b] > 0) c.vacuous[o_.bounds[b]] = {vacuous_[b], first_vacuous_[b]};
    }
  }
  for (std::size_t k = 0; k < o_.ladder.size(); ++k) {
    c.ladder_rho[o_.bounds[o_.ladder[k]]] = ladder_rho_[k];
  }
}

}  // namespace pev::compare

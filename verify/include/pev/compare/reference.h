#pragma once
// Reference values for comparisons (docs/design.md §4.1): the exact values of a batch of positions,
// rounded once to the compared type T (RN_T, for the ulp distance) and to double (the value every
// error is measured from). One class per kind of output; each takes its values from the fast exact
// reference (pev/ref/fast.h: identical to MPFR, with MPFR only where its rounding test cannot
// decide) or, with reference_path::mpfr, from the MPFR reference for every value (a slow
// cross-check). Like the references they wrap, these objects are single-threaded.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "pev/core/real.h"
#include "pev/ref/fast.h"
#include "pev/scalar/dtype.h"
#include "pev/spec/spec.h"

namespace pev::compare {

enum class reference_path { fast, mpfr };

/// Reference values rounded once to each type pev compares in: RN_double (the exact value of the
/// metrics) and RN_T of fp32, fp16 and bf16.
struct rounded_values {
  std::vector<double> f64;
  std::vector<float> f32;
  std::vector<half> f16;
  std::vector<bfloat16> bf16;
  template <class T>
  std::vector<T>& get() {
    if constexpr (std::is_same_v<T, double>) {
      return f64;
    } else if constexpr (std::is_same_v<T, float>) {
      return f32;
    } else if constexpr (std::is_same_v<T, half>) {
      return f16;
    } else {
      return bf16;
    }
  }
  template <class T>
  const std::vector<T>& get() const {
    return const_cast<rounded_values*>(this)->get<T>();
  }
};

/// RN_T of the exact values and the exact values as doubles, for one type T.
template <class T>
struct typed_values {
  std::vector<T> rn;
  std::vector<double> exact;
};

/// RoPE: m·cos(p·θ_i), m·sin(p·θ_i), the frequencies, the attention factor and rotated vectors.
class rope_reference {
 public:
  rope_reference(const spec::rope& s, std::optional<std::int64_t> seq, reference_path path);

  const spec::rope& spec() const { return fast_.spec(); }
  std::int64_t pairs() const { return fast_.pairs(); }
  const ref::fast_rope_reference& fast() const { return fast_; }
  reference_path path() const { return path_; }
  /// The exact attention factor m, rounded to double.
  double attention_factor() const { return m_; }

  /// cos and sin of `positions` ([n, pairs]) for type T. With `rounded_doubles` the doubles are
  /// RN_double of the exact values; without, the fast path gives them in the same pass, within
  /// its error bound (about 2^−49·m) of the exact values — enough for every count and grade, and
  /// exact_value() gives the worst value's exact double afterwards.
  template <class T>
  void table(std::span<const std::int64_t> positions, typed_values<T>& cos, typed_values<T>& sin,
             bool rounded_doubles);
  /// table() without its interruption point, for a worker thread's copy of the reference: the
  /// embedder's check (pev/core/interrupt.h) is the calling thread's to call.
  template <class T>
  void table_on_worker(std::span<const std::int64_t> positions, typed_values<T>& cos,
                       typed_values<T>& sin, bool rounded_doubles);
  /// MRoPE (docs/encodings.md §4.6): cos and sin [n, pairs] of n tokens whose stream positions
  /// are `positions` [S, n]; pair i of token t is the 1-D value at positions[s(i)·n + t].
  template <class T>
  void table_streams(std::span<const std::int64_t> positions, typed_values<T>& cos,
                     typed_values<T>& sin, bool rounded_doubles);
  /// cos and sin of `positions` rounded to every compared type (the sweeps' batches).
  void table_all(std::span<const std::int64_t> positions, rounded_values& cos, rounded_values& sin);
  /// RN_double of the exact m·cos (or m·sin) of pair i at p, from MPFR.
  double exact_value(std::int64_t p, std::int64_t i, bool sin) const;

  /// RN_T and RN_double of the exact rotation of x (head_dim exact values) by p.
  template <class T>
  void rotate(std::int64_t p, std::span<const double> x, std::span<T> rn, std::span<double> exact);

  /// RN_T and RN_double of the exact rotation of x by an MRoPE token at `stream_positions` (one
  /// per stream): pair i rotated by its stream's position.
  template <class T>
  void rotate_streams(std::span<const std::int64_t> stream_positions, std::span<const double> x,
                      std::span<T> rn, std::span<double> exact);
  /// spec::mrope_streams of the spec (empty for plain RoPE).
  const std::vector<std::int64_t>& stream_of_pair() const { return stream_of_pair_; }
  const ref::fast_stats& stats() const { return stats_; }
  /// Zeroes stats() (e.g. of a copy that will count its own evaluations).
  void clear_stats() { stats_ = {}; }

 private:
  std::vector<std::int64_t> stream_of_pair_;
  ref::fast_rope_reference fast_;
  reference_path path_;
  double m_ = 1;
  ref::fast_stats stats_;
};

/// Sinusoidal PE rows [n, d_model].
class sinusoidal_reference {
 public:
  sinusoidal_reference(const spec::sinusoidal& s, reference_path path);
  std::int64_t d_model() const { return s_.d_model; }

  template <class T>
  void pe(std::span<const std::int64_t> positions, typed_values<T>& out);
  void pe_all(std::span<const std::int64_t> positions, rounded_values& out);

  const ref::fast_stats& stats() const { return stats_; }

 private:
  spec::sinusoidal s_;
  ref::fast_sinusoidal_reference fast_;
  reference_path path_;
  ref::fast_stats stats_;
};

/// ALiBi slopes and biases (exact in MPFR: a bias is a slope times an integer).
class alibi_reference {
 public:
  explicit alibi_reference(const spec::alibi& s);
  std::int64_t heads() const { return static_cast<std::int64_t>(slopes_.size()); }
  const std::vector<real>& slopes() const { return slopes_; }
  /// The exact bias of head h for a query at q and a key at k: m_h·(k − q).
  real bias(std::int64_t h, std::int64_t q, std::int64_t k) const;

 private:
  std::vector<real> slopes_;
};

}  // namespace pev::compare

#pragma once
// The bounds a compared value is measured against, taken from the strategies' accuracy contracts
// (pev/impl/contract.h) — never rebuilt by hand. A bound set names its bounds once; per value it
// fills one bound per name, in that order, for compare::figures.
//
// Names used by certification (docs/design.md §6.5): a recipe is the contract of the strategy that
// implements it — "hf" (strategy hf), "vllm-fp16" and "vllm-bf16" (table-fp16, table-bf16: the hf
// computation with its cache stored in the model dtype), "ggml" (ggml) — and "drift-free" is an
// absolute bound independent of position: 2 ulps of the output type at the largest magnitude the
// value can have (m for a table value, m·(|x0| + |x1|) for a rotated one).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pev/impl/contract.h"
#include "pev/kernel/strategy.h"
#include "pev/scalar/dtype.h"
#include "pev/spec/spec.h"

namespace pev::compare {

/// Whether a row's values are the P pairs 0 … P − 1 in order (`pair_of[k]`: value k's pair) — the
/// common layouts, whose rows read the reference's and the angle errors' rows as they lie.
inline bool pairs_in_order(std::span<const std::int64_t> pair_of, std::size_t P) {
  if (pair_of.size() != P) return false;
  for (std::size_t k = 0; k < P; ++k) {
    if (pair_of[k] != static_cast<std::int64_t>(k)) return false;
  }
  return true;
}

/// The entries of a bound set in the order of its `names` (docs/design.md §6.5: the ladder's,
/// tightest first): element k of the result is the index in `entries` of the entry called
/// names[k]. pev::error naming `what` for a name without an entry, a name given twice, or an entry
/// whose name is none of `known` (every bound name there is). Entries of a known name that
/// `names` leaves out are not used — so that a set lists every bound its family defines once,
/// and a rung added to the names without an entry fails at construction.
std::vector<std::size_t> order_by_name(std::span<const std::string> names,
                                       std::span<const std::string> known,
                                       std::span<const std::string> entries, std::string_view what);

/// `entries` (name, value) as order_by_name orders them: the values in the order of `names`.
template <class V>
std::vector<V> by_name(std::span<const std::string> names, std::span<const std::string> known,
                       std::vector<std::pair<std::string, V>> entries, std::string_view what) {
  std::vector<std::string> entry_names;
  for (const auto& e : entries) entry_names.push_back(e.first);
  std::vector<V> v;
  for (std::size_t k : order_by_name(names, known, entry_names, what)) {
    v.push_back(std::move(entries[k].second));
  }
  return v;
}

/// A bound set filled by name: its names (e.g. certify's ladder), and per name the function
/// that gives that bound of a value from Args (order_by_name: pev::error at construction for a
/// name without an entry, or an entry of an unknown name).
template <class... Args>
class bound_set {
 public:
  using bound_fn = std::function<double(Args...)>;
  using entries = std::vector<std::pair<std::string, bound_fn>>;

  bound_set(std::vector<std::string> names, std::span<const std::string> known, entries e,
            std::string_view what)
      : names_(std::move(names)), fns_(by_name(names_, known, std::move(e), what)) {}

  const std::vector<std::string>& names() const { return names_; }
  std::size_t size() const { return names_.size(); }
  /// b[k]: bound names()[k] of the value `a` describes.
  void fill(std::span<double> b, Args... a) const {
    for (std::size_t k = 0; k < fns_.size(); ++k) b[k] = fns_[k](a...);
  }

 private:
  std::vector<std::string> names_;
  std::vector<bound_fn> fns_;
};

/// A named bound of a bound set: a strategy's contract, the drift-free bound, or one ulp of the
/// output type at the exact value (the exact recipe's faithfulness).
struct named_bound {
  enum class kind { contract, drift_free, one_ulp };
  std::string name;
  kind k = kind::contract;
  kernel::strategy contract = kernel::strategy::hf;
  /// The math library class the contract's bounds are derived for, and how it rotates q/k.
  const metric::libm* lib = &metric::kGlibc;
  impl::rotation_arithmetic arithmetic = impl::rotation_arithmetic::fp32;

  static named_bound of(std::string name, kernel::strategy st,
                        const metric::libm& lib = metric::kGlibc,
                        impl::rotation_arithmetic a = impl::rotation_arithmetic::fp32) {
    return {std::move(name), kind::contract, st, &lib, a};
  }
  static named_bound drift_free() { return {"drift-free", kind::drift_free}; }
  static named_bound one_ulp() { return {"exact", kind::one_ulp}; }
};

/// The bounds of RoPE values (tables and rotated q/k).
class rope_bounds {
 public:
  /// m: the exact attention factor; seq: the sequence length of stateful types.
  rope_bounds(const spec::rope& s, std::optional<std::int64_t> seq, double m,
              std::vector<named_bound> bounds);

  std::vector<std::string> names() const;
  std::size_t size() const { return bounds_.size(); }
  /// The exact attention factor the bounds are for.
  double m() const { return m_; }
  /// The index of the bound called `name` (none if absent).
  std::optional<std::size_t> find(std::string_view name) const;
  const impl::rope_contract* contract(std::size_t k) const { return contracts_[k].get(); }

  /// Evaluates what every bound needs at position p (the contracts' angle errors: ggml's
  /// recurrence is replayed once per position).
  void at_position(std::int64_t p);
  /// MRoPE (docs/encodings.md §4.6): pair i's angle errors at stream_positions[stream_of_pair[i]]
  /// (each stream's at its own position, as every pair is a 1-D RoPE value of its stream).
  void at_positions(std::span<const std::int64_t> stream_positions,
                    std::span<const std::int64_t> stream_of_pair);
  /// Bounds of a table value of pair i whose exact magnitude is y, in format `out` (after
  /// at_position).
  void table(std::int64_t i, double y, format out, std::span<double> b) const;
  /// table() of rows of table values: row q at positions[q] (at_position is evaluated for each,
  /// and the bound set is left at the last), n = pair_of.size() values per row, value k of a row
  /// of pair pair_of[k]; abs_y holds the exact magnitudes (≥ 0) row-major, in one or more planes
  /// of R·n values at the same rows (cos, then sin), and bound j of value v goes to b[j·N + v]
  /// (N = abs_y.size()). The same numbers, in vectorisable loops, the trig part computed once for
  /// the contracts that share it (impl::rope_contract::same_trig).
  void table_rows(std::span<const std::int64_t> positions, std::span<const std::int64_t> pair_of,
                  std::span<const double> abs_y, format out, std::span<double> b);
  /// Bounds of a rotated element of pair i (−1: a pass-through dim, which must be exact) with
  /// inputs x0, x1 and exact output magnitude y (after at_position).
  void rotation(std::int64_t i, double x0, double x1, double y, format out,
                std::span<double> b) const;

 private:
  std::vector<named_bound> bounds_;
  double m_;
  // Null for drift-free and exact; shared (they are immutable), so that a copy of the bound set
  // (one per thread) is cheap.
  std::vector<std::shared_ptr<const impl::rope_contract>> contracts_;
  std::vector<std::vector<double>> dtheta_;      // per bound, per pair
  std::vector<std::vector<double>> row_dtheta_;  // table_rows' scratch: per bound, per value
  std::vector<double> row_trig_;
  std::optional<format> forms_out_;  // table_rows' forms are for this format
  std::vector<impl::table_form> forms_;
  std::vector<bool> shares_trig_;
};

}  // namespace pev::compare

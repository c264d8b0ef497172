// pev::kernel::rope_apply / rope_apply_qk against the MPFR reference and the properties of
// docs/design.md §7.2 (rotation): every q/k dtype × table dtype, both layouts, partial rotary, GQA,
// in place and out of place, arbitrary rows, and every code path this CPU has (baseline and AVX2 +
// F16C).
//
// Error model (docs/numerics.md §9.1), derived for this kernel. Let x0, x1 be the inputs
// and ĉ, ŝ the table's values (exact in float). The kernel computes a = fl(x0·ĉ), b = fl(x1·ŝ),
// r = fl(a − b) in binary32 (no FMA: -ffp-contract=off) and stores ŷ = RN_TQ(r). With u = 2^−24,
// a = x0ĉ(1 + δ1), b = x1ŝ(1 + δ2), r = (a − b)(1 + δ3), |δk| ≤ u, so for y = x0ĉ − x1ŝ (exact)
//   |r − y| ≤ u·|x0ĉ| + u·|x1ŝ| + u·|a − b| ≤ (2u + u²)(|x0ĉ| + |x1ŝ|) ≤ γ2·(|x0ĉ| + |x1ŝ|),
// γ2 = 2u/(1 − 2u). Gradual underflow adds at most 2^−150 per product (a subnormal difference is
// exact), hence + 2^−148 to be safe. Then |ŷ − r| ≤ ½ ulp_TQ(r) (zero for TQ = float), and since
// |r| ≤ |y| + ε, ulp_TQ(r) ≤ ulp_TQ(|y| + ε): the bound is ε + ½ ulp_TQ(|y| + ε),
// ε = γ2·(|x0ĉ| + |x1ŝ|) + 2^−148. (½ ulp_TQ(y) alone is not sound when y lies within ε below a
// power of two and r rounds up past it.) The same holds for y1 = x0ŝ + x1ĉ.
// Against the exact rotation y* = x0·c − x1·s with the exact m·cos, m·sin of the reference, the
// table's own error |ĉ − c| ≤ ½ ulp_TT(ĉ) (the tables here are the reference rounded once) adds
// |x0|·|ĉ − c| + |x1|·|ŝ − s| — the (|x0| + |x1|)·ε_cs term of apply.h's contract.
//
// Finite results must also equal, bit for bit, a scalar evaluation with pev's own conversions; NaN
// results are compared as NaN (the payload of a NaN − NaN is the compiler's choice of operand
// order).

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "apply_impl.h"
#include "pev/core/error.h"
#include "pev/core/real.h"
#include "pev/impl/contract.h"
#include "pev/kernel/apply.h"
#include "pev/kernel/rope.h"
#include "pev/kernel/strategy.h"
#include "pev/metric/ulp.h"
#include "pev/ref/rope.h"
#include "pev/scalar/round.h"
#include "pev/scalar/traits.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

namespace d = kernel::detail;
using kernel::heads_view;
using kernel::rope_table_view;

spec::rope rope_spec(const std::string& body) {
  return std::get<spec::rope>(spec::parse_spec("rope:" + body));
}

std::uint64_t test_seed() {
  const char* env = std::getenv("PEV_SEED");
  static const std::uint64_t seed = env ? std::strtoull(env, nullptr, 0) : 20240607;
  static const bool printed = [] {
    std::cout << "seed: " << seed << " (replay with PEV_SEED=" << seed << ")\n";
    return true;
  }();
  (void)printed;
  return seed;
}

// Every code path this CPU can run; a scope forces one.
std::vector<d::isa> isas() {
  std::vector<d::isa> v{d::isa::baseline};
  if (d::detected_isa() == d::isa::avx2) v.push_back(d::isa::avx2);
  return v;
}
const char* isa_name(d::isa i) { return i == d::isa::avx2 ? "avx2+f16c" : "baseline"; }
class isa_scope {
 public:
  explicit isa_scope(d::isa i) { d::force_isa(i); }
  ~isa_scope() { d::force_isa(std::nullopt); }
  isa_scope(const isa_scope&) = delete;
  isa_scope& operator=(const isa_scope&) = delete;
};

template <class T>
auto bits_of(T v) {
  return scalar_traits<T>::to_bits(v);
}
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}
template <class T>
float to_f(T v) {
  return static_cast<float>(v);
}
template <class T>
bool is_nan(T v) {
  return std::isnan(static_cast<float>(v));
}

// An ordinary value: ± m·2^k with m uniform in [1, 2), k ∈ [−30, 12], rounded to T; 1 in 16 is ±0.
// For fp16 the small ones are subnormal or zero. |x| < 2^13, so rotated values stay finite.
template <class T>
T random_value(std::mt19937_64& g) {
  std::uniform_int_distribution<int> e(-30, 12);
  std::uniform_real_distribution<float> m(1.0f, 2.0f);
  const int k = e(g);
  const float sign = (g() & 1) ? -1.0f : 1.0f;
  if ((g() & 15) == 0) return T(sign * 0.0f);
  return T(sign * std::ldexp(m(g), k));
}

// Encodings that must pass through bit for bit: NaNs with payloads (signalling too), ±Inf, ±0,
// subnormals, the largest finite value.
template <class T>
std::vector<T> special_values() {
  using tr = scalar_traits<T>;
  using B = typename tr::bits_type;
  const B quiet = B(1) << (tr::mantissa_bits - 1);
  return {tr::from_bits(tr::exponent_mask | quiet | 5),
          tr::from_bits(tr::exponent_mask | 1),  // signalling NaN
          tr::from_bits(tr::sign_mask | tr::exponent_mask | quiet),
          tr::from_bits(tr::infinity_bits),
          tr::from_bits(tr::sign_mask | tr::infinity_bits),
          tr::from_bits(0),
          tr::from_bits(tr::sign_mask),
          tr::from_bits(1),
          tr::from_bits(tr::sign_mask | tr::mantissa_mask),
          tr::from_bits(tr::max_finite_bits)};
}

double to_d(const real& v) { return v.convert_to<double>(); }

// ½ ulp_T(|v|) as a double.
template <class T>
double half_ulp(double v) {
  return 0.5 * metric::ulp_of<T>(real(std::abs(v))).template convert_to<double>();
}

// The derived bound (file comment) for one output with |y| ≤ abs_y and terms |x0ĉ| + |x1ŝ|: the
// library's evaluation of apply.h's contract (shared with the property suites).
template <class TQ>
double rotation_bound(double terms, double abs_y) {
  return impl::rotation_bound(terms, abs_y, format_of<TQ>());
}

// One rotation problem: a table of `positions.size()` rows (row r = position positions[r], from
// the exact reference rounded once to TT), q and k inputs, a table row per token.
template <class TQ, class TT>
struct problem {
  spec::rope s;
  ref::rope_reference reference;
  std::vector<std::int64_t> positions;
  std::vector<TT> cos, sin;
  std::vector<std::int64_t> rows;
  std::int64_t tokens, q_heads, k_heads;
  std::vector<TQ> q, k;

  problem(const spec::rope& spec, std::vector<std::int64_t> pos, std::int64_t t, std::int64_t hq,
          std::int64_t hk, std::uint64_t seed)
      : s(spec), reference(spec), positions(std::move(pos)), tokens(t), q_heads(hq), k_heads(hk) {
    for (const std::int64_t p : positions) {
      for (const auto& cs : reference.row(p)) {
        cos.push_back(round_to<TT>(cs.cos));
        sin.push_back(round_to<TT>(cs.sin));
      }
    }
    std::mt19937_64 g(seed);
    // Non-monotone rows with repeats: random, but the first tokens walk the table backwards.
    for (std::int64_t i = 0; i < tokens; ++i) {
      const auto n = static_cast<std::int64_t>(positions.size());
      rows.push_back(i < n ? n - 1 - i : static_cast<std::int64_t>(g() % positions.size()));
    }
    q.resize(static_cast<std::size_t>(tokens * q_heads * s.head_dim));
    k.resize(static_cast<std::size_t>(tokens * k_heads * s.head_dim));
    for (auto& v : q) v = random_value<TQ>(g);
    for (auto& v : k) v = random_value<TQ>(g);
  }

  rope_table_view<TT> table() const {
    return {cos, sin, static_cast<std::int64_t>(positions.size()), s.pairs()};
  }
  heads_view<TQ> mut_view(std::vector<TQ>& v, std::int64_t heads) const {
    return {v, tokens, heads, s.head_dim};
  }
  heads_view<const TQ> view(const std::vector<TQ>& v, std::int64_t heads) const {
    return {v, tokens, heads, s.head_dim};
  }
};

// Element indices of pair i in a head.
using spec::pair_dims;

// The kernel's arithmetic, one element at a time, with pev's conversions.
template <class TQ>
TQ emulate(float x0, float x1, float c, float s, bool first) {
  const float r = first ? x0 * c - x1 * s : x0 * s + x1 * c;
  if constexpr (std::is_same_v<TQ, float>) {
    return r;
  } else {
    return TQ(r);
  }
}

struct check_stats {
  double max_rho_table = 0;  // vs the exact rotation by the table's values
  double max_rho_exact = 0;  // vs the reference's exact rotation
  std::int64_t checked = 0;
};

// Checks `out` (the rotation of `in`, heads per token) against the emulation bit for bit, the
// table-value bound and the reference bound, and the pass-through dims bit for bit.
template <class TQ, class TT>
void check_rotation(const problem<TQ, TT>& pr, const std::vector<TQ>& in,
                    const std::vector<TQ>& out, std::int64_t heads, check_stats& st,
                    bool with_reference, const std::string& what) {
  const spec::rope& s = pr.s;
  const std::int64_t n = s.pairs();
  const std::int64_t dim = s.head_dim;
  for (std::int64_t t = 0; t < pr.tokens; ++t) {
    const std::int64_t row = pr.rows[t];
    const std::int64_t position = pr.positions[row];
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t base = (t * heads + h) * dim;
      std::vector<real> ref_out;
      if (with_reference) {
        std::vector<real> x(static_cast<std::size_t>(dim));
        for (std::int64_t j = 0; j < dim; ++j) x[j] = to_real(in[base + j]);
        ref_out = pr.reference.rotate(position, x);
      }
      for (std::int64_t i = 0; i < n; ++i) {
        const auto [ia, ib] = pair_dims(s, i);
        const TT ct = pr.cos[row * n + i];
        const TT stt = pr.sin[row * n + i];
        const float c = to_f(ct);
        const float sn = to_f(stt);
        const float x0 = to_f(in[base + ia]);
        const float x1 = to_f(in[base + ib]);
        for (const bool first : {true, false}) {
          const std::int64_t idx = base + (first ? ia : ib);
          const std::string where = what + ": token " + std::to_string(t) + " (row " +
                                    std::to_string(row) + ", position " + std::to_string(position) +
                                    ") head " + std::to_string(h) + " pair " + std::to_string(i) +
                                    (first ? " y0" : " y1");
          const TQ want = emulate<TQ>(x0, x1, c, sn, first);
          ASSERT_EQ(bits_of(out[idx]), bits_of(want)) << where;
          // Exact rotation by the table's values.
          const real rx0 = to_real(x0), rx1 = to_real(x1), rc = to_real(c), rs = to_real(sn);
          const real y = first ? rx0 * rc - rx1 * rs : rx0 * rs + rx1 * rc;
          const double terms = first ? std::abs(double(x0) * c) + std::abs(double(x1) * sn)
                                     : std::abs(double(x0) * sn) + std::abs(double(x1) * c);
          const double err = to_d(abs(to_real(out[idx]) - y));
          const double bound = rotation_bound<TQ>(terms, to_d(abs(y)));
          ASSERT_LE(err, bound) << where << ": |ŷ − y| = " << err << " > bound " << bound;
          st.max_rho_table = std::max(st.max_rho_table, err / bound);
          if (with_reference) {
            // The table's rounding error, then the same bound around the table-value result.
            const double ec = half_ulp<TT>(c);
            const double es = half_ulp<TT>(sn);
            const double table_err = first ? std::abs(x0) * ec + std::abs(x1) * es
                                           : std::abs(x0) * es + std::abs(x1) * ec;
            const real& ystar = ref_out[idx - base];
            const double abs_y = to_d(abs(ystar)) + table_err;
            const double bound_exact = table_err + rotation_bound<TQ>(terms, abs_y);
            const double err_exact = to_d(abs(to_real(out[idx]) - ystar));
            ASSERT_LE(err_exact, bound_exact)
                << where << ": vs reference |ŷ − y*| = " << err_exact << " > " << bound_exact;
            st.max_rho_exact = std::max(st.max_rho_exact, err_exact / bound_exact);
          }
          ++st.checked;
        }
      }
      for (std::int64_t j = 2 * n; j < dim; ++j) {
        ASSERT_EQ(bits_of(out[base + j]), bits_of(in[base + j]))
            << what << ": pass-through dim " << j << " of token " << t << " head " << h;
        if (with_reference) {
          ASSERT_EQ(ref_out[j], to_real(in[base + j]));
        }
      }
    }
  }
}

template <class Combo>
class KernelApply : public ::testing::Test {};

template <class Q, class T>
struct combo {
  using tq = Q;
  using tt = T;
};
using combos =
    ::testing::Types<combo<float, float>, combo<float, half>, combo<float, bfloat16>,
                     combo<half, float>, combo<half, half>, combo<half, bfloat16>,
                     combo<bfloat16, float>, combo<bfloat16, half>, combo<bfloat16, bfloat16>>;
struct combo_names {
  template <class C>
  static std::string GetName(int) {
    return std::string(scalar_traits<typename C::tq>::name) + "_table_" +
           std::string(scalar_traits<typename C::tt>::name);
  }
};
TYPED_TEST_SUITE(KernelApply, combos, combo_names);

// Positions of the table rows: edges of the 16-bit formats, fp32's 2^24 and far beyond.
const std::vector<std::int64_t> kPositions = {
    0, 1, 2, 255, 256, 257, 2047, 2048, 2049, 65504, 1000003, 16777217, 1099511627776};

struct config {
  std::string spec;
  std::int64_t tokens, q_heads, k_heads;
};

// Full and partial rotary, both layouts, odd pair counts (the bf16 NeoX tail pair), head sizes
// that leave vector remainders, a YaRN table (attention factor m ≠ 1, c² + s² ≠ 1), one pair only.
const std::vector<config> kConfigs = {
    {"head_dim=64", 20, 4, 2},
    {"head_dim=64,layout=interleaved", 20, 4, 2},
    {"head_dim=80,rotary_dim=40,layout=interleaved", 16, 3, 1},
    {"head_dim=20,rotary_dim=10,rope_type=yarn,factor=4,original_max_position_embeddings=2048", 16,
     5, 1},
    {"head_dim=22,rotary_dim=14,layout=interleaved,rope_theta=500000", 16, 2, 2},
    {"head_dim=130,rotary_dim=128", 14, 3, 1},
    {"head_dim=2,layout=interleaved", 16, 2, 1},
    {"head_dim=3,rotary_dim=2", 16, 2, 1},
};

// Out of place, in place and rope_apply_qk agree bit for bit on every path; the input of an
// out-of-place call is untouched; the result is the emulation bit for bit, within the derived
// bound of the exact rotation by the table's values, and within the contract of the exact
// reference rotation; pass-through dims are bit-exact.
TYPED_TEST(KernelApply, MatchesReferenceAndEveryPathAgrees) {
  using TQ = typename TypeParam::tq;
  using TT = typename TypeParam::tt;
  check_stats st;
  std::uint64_t seed = test_seed();
  for (const config& cfg : kConfigs) {
    SCOPED_TRACE(cfg.spec);
    const problem<TQ, TT> pr(rope_spec(cfg.spec), kPositions, cfg.tokens, cfg.q_heads, cfg.k_heads,
                             seed++);
    std::optional<std::vector<TQ>> q_first, k_first;
    for (const d::isa i : isas()) {
      SCOPED_TRACE(isa_name(i));
      const isa_scope scope(i);
      // Out of place into a buffer full of garbage.
      std::vector<TQ> q_out(pr.q.size(), scalar_traits<TQ>::from_bits(0x5a5a));
      std::vector<TQ> k_out(pr.k.size(), scalar_traits<TQ>::from_bits(0x5a5a));
      const std::vector<TQ> q_before = pr.q;
      const std::vector<TQ> k_before = pr.k;
      kernel::rope_apply<TQ, TT>(pr.s, pr.table(), pr.rows, pr.view(pr.q, pr.q_heads),
                                 pr.mut_view(q_out, pr.q_heads));
      kernel::rope_apply<TQ, TT>(pr.s, pr.table(), pr.rows, pr.view(pr.k, pr.k_heads),
                                 pr.mut_view(k_out, pr.k_heads));
      ASSERT_TRUE(same_bits(pr.q, q_before) && same_bits(pr.k, k_before))
          << "out-of-place call changed its input";
      // In place.
      std::vector<TQ> q_in = pr.q;
      auto q_view = pr.mut_view(q_in, pr.q_heads);
      kernel::rope_apply<TQ, TT>(pr.s, pr.table(), pr.rows,
                                 {q_view.data, q_view.tokens, q_view.heads, q_view.head_dim},
                                 q_view);
      EXPECT_TRUE(same_bits(q_in, q_out)) << "in place differs from out of place";
      // q and k together (GQA: different head counts).
      std::vector<TQ> q_qk = pr.q;
      std::vector<TQ> k_qk = pr.k;
      kernel::rope_apply_qk<TQ, TT>(pr.s, pr.table(), pr.rows, pr.mut_view(q_qk, pr.q_heads),
                                    pr.mut_view(k_qk, pr.k_heads));
      EXPECT_TRUE(same_bits(q_qk, q_out)) << "rope_apply_qk's q differs from rope_apply";
      EXPECT_TRUE(same_bits(k_qk, k_out)) << "rope_apply_qk's k differs from rope_apply";
      if (!q_first) {
        check_rotation(pr, pr.q, q_out, pr.q_heads, st, true, "q");
        check_rotation(pr, pr.k, k_out, pr.k_heads, st, true, "k");
        q_first = q_out;
        k_first = k_out;
      } else {
        EXPECT_TRUE(same_bits(*q_first, q_out)) << "code paths differ";
        EXPECT_TRUE(same_bits(*k_first, k_out)) << "code paths differ";
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  std::cout << std::setprecision(8) << scalar_traits<TQ>::name << " q/k, "
            << scalar_traits<TT>::name << " table: " << st.checked << " outputs; max err/bound "
            << st.max_rho_table << " (table values), " << st.max_rho_exact
            << " (exact reference)\n";
}

// Many tokens and heads (long vector loops and their remainders), emulation and table-value bound
// only; every path.
TYPED_TEST(KernelApply, LargerShapesMatchEmulation) {
  using TQ = typename TypeParam::tq;
  using TT = typename TypeParam::tt;
  for (const char* body :
       {"head_dim=128", "head_dim=128,layout=interleaved", "head_dim=96,rotary_dim=62",
        "head_dim=96,rotary_dim=62,layout=interleaved"}) {
    SCOPED_TRACE(body);
    const problem<TQ, TT> pr(rope_spec(body), kPositions, 64, 8, 0, test_seed() + 99);
    for (const d::isa i : isas()) {
      SCOPED_TRACE(isa_name(i));
      const isa_scope scope(i);
      std::vector<TQ> q = pr.q;
      auto v = pr.mut_view(q, pr.q_heads);
      kernel::rope_apply<TQ, TT>(pr.s, pr.table(), pr.rows, {v.data, v.tokens, v.heads, v.head_dim},
                                 v);
      check_stats st;
      check_rotation(pr, pr.q, q, pr.q_heads, st, false, "q");
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// NaN, ±Inf, ±0, subnormals and the largest finite values in the rotated dims give the emulation's
// result (NaN as NaN) on every path; in the pass-through dims they come back bit for bit, in place
// and out of place.
TYPED_TEST(KernelApply, SpecialValues) {
  using TQ = typename TypeParam::tq;
  using TT = typename TypeParam::tt;
  const auto specials = special_values<TQ>();
  for (const char* body :
       {"head_dim=24,rotary_dim=14", "head_dim=24,rotary_dim=16,layout=interleaved"}) {
    SCOPED_TRACE(body);
    problem<TQ, TT> pr(rope_spec(body), kPositions, 16, 3, 0, test_seed() + 7);
    std::mt19937_64 g(test_seed() + 8);
    for (auto& v : pr.q) {
      if (g() % 3 == 0) v = specials[g() % specials.size()];
    }
    const std::int64_t n = pr.s.pairs();
    for (const d::isa i : isas()) {
      SCOPED_TRACE(isa_name(i));
      const isa_scope scope(i);
      std::vector<TQ> out(pr.q.size());
      kernel::rope_apply<TQ, TT>(pr.s, pr.table(), pr.rows, pr.view(pr.q, pr.q_heads),
                                 pr.mut_view(out, pr.q_heads));
      std::vector<TQ> in_place = pr.q;
      auto v = pr.mut_view(in_place, pr.q_heads);
      kernel::rope_apply<TQ, TT>(pr.s, pr.table(), pr.rows, {v.data, v.tokens, v.heads, v.head_dim},
                                 v);
      for (std::int64_t t = 0; t < pr.tokens; ++t) {
        for (std::int64_t h = 0; h < pr.q_heads; ++h) {
          const std::int64_t base = (t * pr.q_heads + h) * pr.s.head_dim;
          for (std::int64_t i = 0; i < n; ++i) {
            const auto [ia, ib] = pair_dims(pr.s, i);
            const float c = to_f(pr.cos[pr.rows[t] * n + i]);
            const float s = to_f(pr.sin[pr.rows[t] * n + i]);
            for (const bool first : {true, false}) {
              const std::int64_t idx = base + (first ? ia : ib);
              const TQ want =
                  emulate<TQ>(to_f(pr.q[base + ia]), to_f(pr.q[base + ib]), c, s, first);
              for (const TQ got : {out[idx], in_place[idx]}) {
                if (is_nan(want)) {
                  EXPECT_TRUE(is_nan(got)) << "token " << t << " head " << h << " pair " << i;
                } else {
                  EXPECT_EQ(bits_of(got), bits_of(want))
                      << "token " << t << " head " << h << " pair " << i;
                }
              }
            }
          }
          for (std::int64_t j = 2 * n; j < pr.s.head_dim; ++j) {
            EXPECT_EQ(bits_of(out[base + j]), bits_of(pr.q[base + j])) << "dim " << j;
            EXPECT_EQ(bits_of(in_place[base + j]), bits_of(pr.q[base + j])) << "dim " << j;
          }
        }
      }
    }
  }
}

// No tokens, or no heads: nothing to do, no error.
TYPED_TEST(KernelApply, EmptyShapes) {
  using TQ = typename TypeParam::tq;
  using TT = typename TypeParam::tt;
  const problem<TQ, TT> pr(rope_spec("head_dim=8"), {0, 5}, 0, 4, 0, 1);
  std::vector<TQ> q;
  std::vector<TQ> k;
  EXPECT_NO_THROW(
      (kernel::rope_apply_qk<TQ, TT>(pr.s, pr.table(), {}, {q, 0, 4, 8}, {k, 0, 0, 8})));
  std::vector<TQ> one(8, TQ(1.0f));
  const std::vector<std::int64_t> rows = {1};
  EXPECT_NO_THROW(
      (kernel::rope_apply_qk<TQ, TT>(pr.s, pr.table(), rows, {one, 1, 1, 8}, {k, 1, 0, 8})));
}

// Tables made by pev's own kernels (every strategy, written as [rows, pairs] cos and sin) drive the
// application kernel as they are: the result is the emulation bit for bit and within the derived
// bound of the exact rotation by those table values.
TYPED_TEST(KernelApply, TablesFromRopeKernel) {
  using TQ = typename TypeParam::tq;
  using TT = typename TypeParam::tt;
  for (const char* body : {"head_dim=64", "head_dim=48,rotary_dim=30,layout=interleaved"}) {
    SCOPED_TRACE(body);
    problem<TQ, TT> pr(rope_spec(body), kPositions, 20, 3, 0, test_seed() + 3);
    for (const kernel::strategy st : kernel::all_strategies()) {
      SCOPED_TRACE(kernel::to_string(st));
      const kernel::rope_kernel rk(pr.s, st);
      ASSERT_EQ(rk.pairs(), pr.s.pairs());
      rk.template table<TT>(pr.positions, pr.cos, pr.sin);
      std::vector<TQ> out(pr.q.size());
      kernel::rope_apply<TQ, TT>(pr.s, pr.table(), pr.rows, pr.view(pr.q, pr.q_heads),
                                 pr.mut_view(out, pr.q_heads));
      check_stats stats;
      check_rotation(pr, pr.q, out, pr.q_heads, stats, false, "q");
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// --- Errors ---

class KernelApplyErrors : public ::testing::Test {
 protected:
  KernelApplyErrors()
      : s(rope_spec("head_dim=8,rotary_dim=4")),
        cos(3 * 2, 1.0f),
        sin(3 * 2, 0.0f),
        rows{0, 2, 1, 1},
        in(4 * 2 * 8, 1.5f),
        out(4 * 2 * 8, 0.0f) {}

  rope_table_view<float> table() const { return {cos, sin, 3, 2}; }
  heads_view<const float> in_view() const { return {in, 4, 2, 8}; }
  heads_view<float> out_view() { return {out, 4, 2, 8}; }

  // Expects pev::error with `needle` in its message, and `out` unchanged.
  template <class F>
  void expect_error(F f, const std::string& needle) {
    const std::vector<float> before = out;
    try {
      f();
      ADD_FAILURE() << "no pev::error (expected one mentioning '" << needle << "')";
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_TRUE(same_bits(out, before)) << "a failed call wrote its output";
  }

  spec::rope s;
  std::vector<float> cos, sin;
  std::vector<std::int64_t> rows;
  std::vector<float> in, out;
};

TEST_F(KernelApplyErrors, RowOutsideTableNamesTheToken) {
  rows[3] = 3;
  expect_error([&] { kernel::rope_apply<float, float>(s, table(), rows, in_view(), out_view()); },
               "token 3 uses table row 3");
  rows[3] = -1;
  expect_error([&] { kernel::rope_apply<float, float>(s, table(), rows, in_view(), out_view()); },
               "token 3 uses table row -1");
  rows[3] = 1;
  rows[0] = std::int64_t{1} << 62;
  expect_error(
      [&] {
        kernel::rope_apply_qk<float, float>(s, table(), rows, out_view(),
                                            {std::span<float>(), 4, 0, 8});
      },
      "token 0");
}

TEST_F(KernelApplyErrors, RowsAndTokensDisagree) {
  rows.pop_back();
  expect_error([&] { kernel::rope_apply<float, float>(s, table(), rows, in_view(), out_view()); },
               "rows has 3");
}

TEST_F(KernelApplyErrors, ShapeMismatches) {
  expect_error(
      [&] {
        kernel::rope_apply<float, float>(s, table(), rows, {in, 4, 2, 8}, {out, 4, 1, 16});
      },
      "head_dim 16");
  expect_error(
      [&] {
        kernel::rope_apply<float, float>(s, table(), rows, {in, 4, 2, 8},
                                         {std::span(out).first(32), 4, 1, 8});
      },
      "out has 1 heads, in has 2");
  expect_error(
      [&] {
        kernel::rope_apply<float, float>(s, table(), rows, {std::span(in).first(63), 4, 2, 8},
                                         out_view());
      },
      "in data must hold tokens·heads·head_dim = 64");
  expect_error(
      [&] {
        kernel::rope_apply<float, float>(s, table(), rows, {in, 4, -2, 8}, out_view());
      },
      "heads must be ≥ 0");
}

TEST_F(KernelApplyErrors, TableMismatches) {
  expect_error(
      [&] {
        kernel::rope_apply<float, float>(s, {cos, sin, 2, 3}, rows, in_view(), out_view());
      },
      "table has 3 pairs per row");
  expect_error(
      [&] {
        kernel::rope_apply<float, float>(s, {std::span(cos).first(5), sin, 3, 2}, rows, in_view(),
                                         out_view());
      },
      "rows·pairs = 6");
}

TEST_F(KernelApplyErrors, BadSpec) {
  spec::rope bad = s;
  bad.rotary_dim = 3;
  expect_error([&] { kernel::rope_apply<float, float>(bad, table(), rows, in_view(), out_view()); },
               "rotary_dim must be even");
  bad.rotary_dim = 10;
  expect_error([&] { kernel::rope_apply<float, float>(bad, table(), rows, in_view(), out_view()); },
               "rotary_dim must be even and in [2, head_dim = 8]");
}

// Out of place must not overlap its input unless it is the very same buffer.
TEST_F(KernelApplyErrors, PartialOverlap) {
  std::vector<float> big(4 * 2 * 8 + 1, 0.5f);
  const std::span<float> all(big);
  out = big;
  expect_error(
      [&] {
        kernel::rope_apply<float, float>(s, table(), rows, {all.first(64), 4, 2, 8},
                                         {all.subspan(1, 64), 4, 2, 8});
      },
      "overlap");
  EXPECT_TRUE(same_bits(big, out)) << "a failed call wrote its buffer";
  expect_error(
      [&] {
        kernel::rope_apply<float, float>(s, table(), rows, {all.subspan(1, 64), 4, 2, 8},
                                         {all.first(64), 4, 2, 8});
      },
      "overlap");
  // q and k in one buffer must not overlap either.
  expect_error(
      [&] {
        kernel::rope_apply_qk<float, float>(s, table(), rows, {all.first(64), 4, 2, 8},
                                            {all.subspan(32, 32), 4, 1, 8});
      },
      "q and k overlap");
  // Adjacent (touching) buffers are fine.
  std::vector<float> qk(4 * 3 * 8, 0.25f);
  const std::span<float> both(qk);
  EXPECT_NO_THROW((kernel::rope_apply_qk<float, float>(s, table(), rows, {both.first(64), 4, 2, 8},
                                                       {both.subspan(64), 4, 1, 8})));
}

TEST_F(KernelApplyErrors, SixteenBitErrorsToo) {
  std::vector<bfloat16> q(4 * 2 * 8);
  std::vector<half> hc(6, half(1.0f)), hs(6, half(0.0f));
  rows[2] = 7;
  EXPECT_THROW((kernel::rope_apply_qk<bfloat16, half>(s, {hc, hs, 3, 2}, rows, {q, 4, 2, 8},
                                                      {std::span<bfloat16>(), 4, 0, 8})),
               error);
}

}  // namespace
}  // namespace pev

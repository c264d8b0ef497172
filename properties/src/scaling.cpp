// RoPE scaling invariants (docs/design.md §7.2): factor 1 is plain RoPE for every type; linear(s)
// at s·t is plain at t; NTK is plain with base b·f^(d/(d−2)); YaRN keeps high-frequency pairs,
// divides low ones by f and keeps θ' ∈ [θ/f, θ]; llama3 bands and continuity; dynamic below its
// length is plain; LongRoPE selects short/long by its rule; proportional's tail is exactly zero.
//
// Two implementations whose exact outputs are equal may differ by the sum of their contract
// bounds (pev/impl/contract.h): that sum is the tolerance of every cross-spec comparison here.
// Frequencies are compared with the contract's per-pair inv_freq bound (ε_i·θ_i of the fp32
// pipeline; ½ ulp for accurate); ggml claims no per-pair frequency (its angles come from a
// recurrence), so the frequency-level properties do not apply to it.

#include <boost/multiprecision/mpfr.hpp>
#include <cmath>
#include <numbers>
#include <sstream>

#include "detail.h"
#include "pev/compare/reference.h"
#include "pev/core/real.h"
#include "pev/ref/fast.h"
#include "pev/ref/rope.h"

namespace pev::prop::detail {
namespace {

namespace gen = rc::gen;
using metric::half_ulp;
using metric::kF64;

spec::rope plain_of(const spec::rope& s) { return impl::plain_rope(s); }

/// One side of a cross-spec comparison: its implementation, exact reference and contract.
struct side {
  spec::rope s;
  std::optional<std::int64_t> seq;
  std::unique_ptr<impl::implementation> impl;
  std::unique_ptr<compare::rope_reference> ref;
  std::unique_ptr<impl::rope_contract> contract;
  double m = 1;

  side(const subject& sub, const spec::rope& spec_, std::optional<std::int64_t> seq_ = {})
      : s(spec_), seq(spec_.stateful() ? seq_ : std::nullopt) {
    spec::validate(spec::encoding{s});
    impl = sub.make(spec::encoding{s});
    ref = std::make_unique<compare::rope_reference>(s, seq, compare::reference_path::fast);
    m = ref->attention_factor();
    contract = std::make_unique<impl::rope_contract>(s, impl->claimed_accuracy(), seq, m);
  }

  template <class T>
  void table(const std::vector<std::int64_t>& pos, std::vector<T>& c, std::vector<T>& sn) const {
    const auto n = pos.size() * static_cast<std::size_t>(s.pairs());
    c.resize(n);
    sn.resize(n);
    impl->rope_table(pos, seq, std::span<T>(c), std::span<T>(sn));
  }
};

/// Compares two tables whose exact values are equal (a's exact values `exact_c/s`): each pair of
/// outputs may differ by the sum of both contracts plus `extra(p_a, i)`.
template <class T, class Extra>
void compare_tables(const std::string& what, const side& a, const std::vector<std::int64_t>& pa,
                    const side& b, const std::vector<std::int64_t>& pb, Extra&& extra) {
  std::vector<T> ac, as, bc, bs;
  a.table(pa, ac, as);
  b.table(pb, bc, bs);
  compare::typed_values<double> rc, rs;
  a.ref->table<double>(pa, rc, rs, /*rounded_doubles=*/true);
  const std::vector<double>& ec = rc.exact;
  const std::vector<double>& es = rs.exact;
  const auto P = static_cast<std::size_t>(a.s.pairs());
  constexpr auto out = format_of<T>();
  for (std::size_t k = 0; k < ac.size(); ++k) {
    const auto i = static_cast<std::int64_t>(k % P);
    const std::int64_t p = pa[k / P], q = pb[k / P];
    for (int w = 0; w < 2; ++w) {
      const double y = w ? es[k] : ec[k];
      const double va = dbl(w ? as[k] : ac[k]), vb = dbl(w ? bs[k] : bc[k]);
      const double B = a.contract->table_bound(p, i, y, out) +
                       b.contract->table_bound(q, i, y, out) + extra(p, i);
      if (!(std::fabs(va - vb) <= B)) {
        std::ostringstream os;
        os << what << ": " << a.impl->name() << " " << spec::to_spec_string(spec::encoding{a.s})
           << (a.seq ? " seq_len=" + std::to_string(*a.seq) : "") << " at p=" << p << " gives "
           << (w ? "m·sin " : "m·cos ") << dec_hex(va) << " but "
           << spec::to_spec_string(spec::encoding{b.s})
           << (b.seq ? " seq_len=" + std::to_string(*b.seq) : "") << " at p=" << q << " gives "
           << dec_hex(vb) << " (pair " << i << ", |diff| " << std::fabs(va - vb) << " > bound " << B
           << ")";
        RC_FAIL(os.str());
      }
    }
  }
}

std::vector<std::int64_t> some_positions(std::int64_t max = std::int64_t{1} << 31) {
  const auto n = *gen::inRange<std::size_t>(1, 4);
  return *gen::container<std::vector<std::int64_t>>(n, position(max));
}

auto no_extra = [](std::int64_t, std::int64_t) { return 0.0; };

std::string freq_fail(const side& a, std::size_t i, double got, const std::string& rule, double lo,
                      double hi) {
  std::ostringstream os;
  os << a.impl->name() << " " << spec::to_spec_string(spec::encoding{a.s}) << ": inv_freq[" << i
     << "] = " << dec_hex(got) << " breaks " << rule << " [" << dec_hex(lo) << ", " << dec_hex(hi)
     << "]";
  return os.str();
}

}  // namespace

void scaling_factor_one(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    using rt = spec::rope_type;
    const rt type = *gen::element(rt::linear, rt::ntk, rt::dynamic, rt::yarn, rt::llama3,
                                  rt::longrope, rt::proportional);
    auto s = *rope_spec(type);
    s.factor = 1.0;
    s.attention_factor.reset();
    if (type == rt::longrope) {
      std::fill(s.short_factor.begin(), s.short_factor.end(), 1.0);
      std::fill(s.long_factor.begin(), s.long_factor.end(), 1.0);
    }
    if (type == rt::proportional) s.partial_rotary_factor = 1.0;
    RC_PRE(sub.accepts(spec::encoding{s}) || sub.accepts(spec::encoding{plain_of(s)}));
    RC_TAG(spec::to_string(type));
    const side a(sub, s), b(sub, plain_of(s));
    const auto pos = some_positions();
    compare_tables<T>("factor 1 vs plain", a, pos, b, pos, no_extra);
  });
}

void scaling_linear_stretch(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = *gen::suchThat(rope_spec(spec::rope_type::linear), [&](const spec::rope& v) {
      return v.factor == std::floor(v.factor);
    });
    const auto f = static_cast<std::int64_t>(s.factor);
    RC_TAG(f);
    const side a(sub, s), b(sub, plain_of(s));
    const auto tpos = some_positions((std::int64_t{1} << 31) / f);
    std::vector<std::int64_t> spos;
    for (std::int64_t p : tpos) spos.push_back(p * f);
    RC_TAG(position_bucket(spos[0]));
    // linear(f) at f·t has the exact angle (θ/f)·(f·t) = θ·t of plain at t.
    compare_tables<T>("linear(f) at f·t vs plain at t", a, spos, b, tpos, no_extra);
  });
}

void scaling_ntk_base(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec(spec::rope_type::ntk));
    spec::rope p = plain_of(s);
    const auto d = static_cast<double>(s.rotary_dim);
    // b' = b·f^(d/(d−2)) to 161 bits, then the nearest double (the plain spec's base).
    const real bp = real(s.rope_theta) * pow(real(s.factor), real(d) / real(d - 2));
    p.rope_theta = bp.convert_to<double>();
    const side a(sub, s), b(sub, p);
    const auto pos = some_positions();
    RC_TAG(position_bucket(pos[0]));
    // The double base differs from b' by ≤ 2^−53 relative, so θ_i by ≤ (2i/d)·2^−53 relative and
    // a value by ≤ m·p·θ_i·2^−53: allowed on top of both contracts.
    const auto& theta = a.ref->fast().inv_freq<double>();
    compare_tables<T>("ntk(f) vs plain with base b·f^(d/(d−2))", a, pos, b, pos,
                      [&](std::int64_t q, std::int64_t i) {
                        return a.m * static_cast<double>(q) * theta[i] * 0x1p-52;
                      });
  });
}

void scaling_yarn_bands(const subject& sub, dtype) {
  const auto s = accepted(sub, rope_spec(spec::rope_type::yarn));
  const side a(sub, s);
  const ref::fast_rope_reference plain(plain_of(s));
  const auto& theta = plain.inv_freq<double>();
  const auto range = ref::yarn_correction_range(s);
  const double low = range.low.convert_to<double>(), high = range.high.convert_to<double>();
  const auto f = a.impl->inv_freq(std::nullopt);
  // transformers clamps high to d − 1 without ordering the ends: when the clamp puts high below
  // low (tiny rotary dims, long Lo) the ramp degenerates and only θ' ∈ [θ/f, θ] is a rule.
  const bool ordered = low < high;
  RC_TAG(s.truncate ? "truncate" : "no truncate", s.original_max_position_embeddings,
         ordered ? "low < high" : "degenerate range (high <= low)");
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double B =
        *a.contract->inv_freq_bound(static_cast<std::int64_t>(i)) + half_ulp(theta[i], kF64);
    const double th = theta[i], thf = theta[i] / s.factor;
    const double got = f[i];
    if (!(got >= thf - B - half_ulp(thf, kF64) && got <= th + B)) {
      RC_FAIL(freq_fail(a, i, got, "θ' ∈ [θ/f, θ]", thf, th));
    }
    const auto j = static_cast<double>(i);
    if (ordered && j <= low && !(std::fabs(got - th) <= B)) {
      RC_FAIL(freq_fail(a, i, got, "pairs ≤ low keep θ", th, th));
    }
    if (ordered && j >= high && !(std::fabs(got - thf) <= B + half_ulp(thf, kF64))) {
      RC_FAIL(freq_fail(a, i, got, "pairs ≥ high use θ/f", thf, thf));
    }
  }
}

void scaling_llama3_bands(const subject& sub, dtype) {
  const auto s = accepted(sub, rope_spec(spec::rope_type::llama3));
  const side a(sub, s);
  const ref::fast_rope_reference plain(plain_of(s));
  const auto& theta = plain.inv_freq<double>();
  const auto f = a.impl->inv_freq(std::nullopt);
  const auto Lo = static_cast<double>(s.original_max_position_embeddings);
  const double high_wl = Lo / s.high_freq_factor, low_wl = Lo / s.low_freq_factor;
  double prev_ratio = 0, prev_tol = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double B =
        *a.contract->inv_freq_bound(static_cast<std::int64_t>(i)) + half_ulp(theta[i], kF64);
    const double th = theta[i], thf = th / s.factor, got = f[i];
    const double wl = 2 * std::numbers::pi / th;
    const double slack = half_ulp(thf, kF64);
    if (wl < high_wl) {
      RC_TAG("high-frequency band");
      if (!(std::fabs(got - th) <= B))
        RC_FAIL(freq_fail(a, i, got, "wl < Lo/high keeps θ", th, th));
    } else if (wl > low_wl) {
      RC_TAG("low-frequency band");
      if (!(std::fabs(got - thf) <= B + slack)) {
        RC_FAIL(freq_fail(a, i, got, "wl > Lo/low uses θ/f", thf, thf));
      }
    } else {
      RC_TAG("blended band");
    }
    // Everywhere θ' ∈ [θ/f, θ], and θ'/θ never increases with the wavelength (continuous at both
    // band edges, monotone inside): consecutive ratios within their tolerances.
    if (!(got >= thf - B - slack && got <= th + B)) {
      RC_FAIL(freq_fail(a, i, got, "θ' ∈ [θ/f, θ]", thf, th));
    }
    const double ratio = got / th, tol = (B + slack) / th;
    if (i > 0 && !(ratio <= prev_ratio + prev_tol + tol)) {
      std::ostringstream os;
      os << a.impl->name() << " " << spec::to_spec_string(spec::encoding{s}) << ": θ'/θ rises from "
         << prev_ratio << " (pair " << i - 1 << ") to " << ratio << " (pair " << i
         << "): llama3's blend must be continuous and monotone across the bands";
      RC_FAIL(os.str());
    }
    prev_ratio = ratio;
    prev_tol = tol;
  }
}

void scaling_dynamic_below(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec(spec::rope_type::dynamic));
    const std::int64_t L = s.max_position_embeddings;
    const auto seq = *gen::weightedOneOf<std::optional<std::int64_t>>(
        {{1, gen::just(std::optional<std::int64_t>())},
         {3, gen::map(gen::inRange<std::int64_t>(1, L + 1),
                      [](std::int64_t v) { return std::optional<std::int64_t>(v); })}});
    RC_TAG(seq ? (*seq == L ? "seq = L" : "seq < L") : "no seq");
    const side a(sub, s, seq), b(sub, plain_of(s));
    const auto pos = some_positions();
    compare_tables<T>("dynamic at seq_len ≤ L vs plain", a, pos, b, pos, no_extra);
  });
}

void scaling_longrope_select(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec(spec::rope_type::longrope));
    const std::int64_t Lo = s.original_max_position_embeddings;
    const std::int64_t seq = *gen::element<std::int64_t>(1, Lo / 2, Lo, Lo + 1, 2 * Lo,
                                                         static_cast<std::int64_t>(s.factor) * Lo);
    const bool use_long = seq > Lo;
    RC_TAG(use_long ? "long (seq > Lo)" : "short (seq <= Lo)");
    // The rule: the spec at seq_len behaves as the spec whose two lists are both the selected
    // one — bit for bit (same pipeline, same inputs).
    spec::rope chosen = s;
    chosen.short_factor = chosen.long_factor = use_long ? s.long_factor : s.short_factor;
    const auto a = sub.make(spec::encoding{s});
    const auto b = sub.make(spec::encoding{chosen});
    const auto fa = a->inv_freq(seq), fb = b->inv_freq(seq);
    for (std::size_t i = 0; i < fa.size(); ++i) {
      if (fa[i] != fb[i]) {
        std::ostringstream os;
        os << a->name() << " " << spec::to_spec_string(spec::encoding{s}) << " at seq_len " << seq
           << ": inv_freq[" << i << "] = " << dec_hex(fa[i]) << " but the "
           << (use_long ? "long" : "short") << " factors give " << dec_hex(fb[i]);
        RC_FAIL(os.str());
      }
    }
    const auto pos = some_positions();
    const auto n = pos.size() * static_cast<std::size_t>(s.pairs());
    std::vector<T> ac(n), as(n), bc(n), bs(n);
    a->rope_table(pos, seq, std::span<T>(ac), std::span<T>(as));
    b->rope_table(pos, seq, std::span<T>(bc), std::span<T>(bs));
    for (std::size_t k = 0; k < n; ++k) {
      RC_ASSERT(scalar_traits<T>::to_bits(ac[k]) == scalar_traits<T>::to_bits(bc[k]));
      RC_ASSERT(scalar_traits<T>::to_bits(as[k]) == scalar_traits<T>::to_bits(bs[k]));
    }
  });
}

void scaling_proportional_tail(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s =
        *gen::suchThat(rope_spec(spec::rope_type::proportional), [&](const spec::rope& v) {
          return static_cast<std::int64_t>(v.partial_rotary_factor * double(v.head_dim) / 2) <
                     v.pairs() &&
                 sub.accepts(spec::encoding{v});
        });
    const auto n = static_cast<std::size_t>(s.partial_rotary_factor * double(s.head_dim) / 2);
    const auto impl_ = sub.make(spec::encoding{s});
    const auto f = impl_->inv_freq(std::nullopt);
    for (std::size_t i = n; i < f.size(); ++i) {
      if (f[i] != 0.0f)
        RC_FAIL("proportional tail inv_freq[" + std::to_string(i) + "] = " + dec_hex(f[i]) +
                ", not 0");
    }
    const auto pos = some_positions();
    RC_TAG(position_bucket(pos[0]));
    const auto P = static_cast<std::size_t>(s.pairs());
    std::vector<T> c(pos.size() * P), sn(c.size());
    impl_->rope_table(pos, std::nullopt, std::span<T>(c), std::span<T>(sn));
    for (std::size_t k = 0; k < c.size(); ++k) {
      if (k % P < n) continue;
      // NoPE pairs: cos exactly 1 (m = 1), sin exactly 0 at every position.
      if (!(dbl(c[k]) == 1.0 && dbl(sn[k]) == 0.0)) {
        RC_FAIL("proportional tail pair " + std::to_string(k % P) +
                " at p=" + std::to_string(pos[k / P]) + ": cos " + dec_hex(dbl(c[k])) + ", sin " +
                dec_hex(dbl(sn[k])));
      }
    }
  });
}

}  // namespace pev::prop::detail

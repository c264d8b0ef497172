// RoPE properties: frequencies, tables and rotations against the exact reference within the
// claimed contract, and the reference-free invariants of docs/design.md §7.2 (norm, R(0),
// composition, inverse, pass-through, out of place, relative position, KV cache).
//
// Tolerances. Every bound below is assembled from the claimed strategy's contract
// (pev/impl/contract.h, docs/numerics.md §14.3): ε_cs(p, i) bounds a table value's error at
// position p and pair i (evaluated at the largest magnitude m, where it is largest, since the
// bound grows with the value), and the rotation of a pair (x0, x1) errs per output by at most
//   e = rotation_bound((|x0| + |x1|)(m + ε_cs), …) + (|x0| + |x1|)·ε_cs        (apply.h)
// Derived identities propagate these bounds exactly (triangle inequality); reference values are
// RN_double of the exact values, which adds ½ ulp of double; sums evaluated in double add their
// own γ_n·Σ|terms| (n terms, γ_n = n·2^−53/(1 − n·2^−53), taken as n·2^−52).

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <vector>

#include "detail.h"
#include "pev/compare/reference.h"

namespace pev::prop::detail {
namespace {

namespace gen = rc::gen;
using metric::format;
using metric::half_ulp;
using metric::kF64;

format table_format(kernel::strategy st) {
  return format_of(kernel::storage_of(st).value_or(dtype::fp32));
}

/// A RoPE case: the spec, its sequence length, the implementation, the exact reference and the
/// claimed contract.
struct rope_setup {
  spec::rope s;
  std::optional<std::int64_t> seq;
  std::unique_ptr<impl::implementation> impl;
  std::unique_ptr<compare::rope_reference> ref;
  double m = 1;
  std::unique_ptr<impl::rope_contract> contract;
  format table_fmt = metric::kF32;

  double eps_cs(std::int64_t p, std::int64_t i) const {
    return contract->table_bound(p, i, m, table_fmt);
  }

  /// Bound on each rotated output of pair i at position p with inputs x0, x1 (format out): the
  /// claimed contract's rotation bound, for an output of magnitude ≤ m·(|x0| + |x1|).
  double rot(std::int64_t p, std::int64_t i, double x0, double x1, format out) const {
    return contract->rotation_bound_at(contract->angle_error(p, i), x0, x1,
                                       m * (std::fabs(x0) + std::fabs(x1)), out);
  }
};

rope_setup setup(const subject& sub, const spec::rope& s, std::optional<std::int64_t> seq) {
  rope_setup r;
  r.s = s;
  r.seq = s.stateful() ? seq : std::nullopt;
  r.impl = sub.make(spec::encoding{s});
  r.ref = std::make_unique<compare::rope_reference>(s, r.seq, compare::reference_path::fast);
  r.m = r.ref->attention_factor();
  r.contract = std::make_unique<impl::rope_contract>(s, r.impl->claimed_accuracy(), r.seq, r.m,
                                                     sub.libm ? *sub.libm : metric::kGlibc);
  r.table_fmt = table_format(r.impl->claimed_accuracy());
  return r;
}

/// A sequence length for stateful types around their switching length; none for static ones.
std::optional<std::int64_t> gen_seq(const spec::rope& s) {
  if (!s.stateful()) return std::nullopt;
  const std::int64_t L = s.type == spec::rope_type::dynamic ? s.max_position_embeddings
                                                            : s.original_max_position_embeddings;
  const auto big = static_cast<std::int64_t>(s.factor * static_cast<double>(L));
  return *gen::element<std::int64_t>(L / 2, L, L + 1, 2 * L, big);
}

using spec::pair_dims;

template <class T>
std::vector<double> to_doubles(std::span<const T> v) {
  std::vector<double> out(v.size());
  for (std::size_t k = 0; k < v.size(); ++k) out[k] = dbl(v[k]);
  return out;
}

template <class T>
std::vector<T> rotate(const rope_setup& r, const std::vector<std::int64_t>& pos,
                      const std::vector<T>& x, std::int64_t heads) {
  std::vector<T> out(x.size());
  const auto tokens = static_cast<std::int64_t>(pos.size());
  r.impl->rope_rotate(pos, r.seq, kernel::heads_view<const T>{x, tokens, heads, r.s.head_dim},
                      kernel::heads_view<T>{out, tokens, heads, r.s.head_dim});
  return out;
}

template <class T>
std::vector<T> inputs(const spec::rope& s, std::int64_t tokens, std::int64_t heads) {
  return *gen::container<std::vector<T>>(static_cast<std::size_t>(tokens * heads * s.head_dim),
                                         finite<T>(4));
}

void tag(const spec::rope& s, std::int64_t p) {
  RC_TAG(position_bucket(p), spec::to_string(s.type), spec::to_string(s.layout));
}

std::string where(const rope_setup& r, std::int64_t p, std::int64_t i) {
  std::ostringstream os;
  os << r.impl->name() << " " << spec::to_spec_string(spec::encoding{r.s});
  if (r.seq) os << " seq_len=" << *r.seq;
  os << " p=" << p << " pair=" << i;
  return os.str();
}

void fail_value(const std::string& what, const std::string& at, double got, double want,
                double bound) {
  std::ostringstream os;
  os << what << " at " << at << ": got " << dec_hex(got) << ", expected " << dec_hex(want)
     << ", |err| " << std::fabs(got - want) << " > bound " << bound << " (rho "
     << std::fabs(got - want) / bound << ")";
  RC_FAIL(os.str());
}

std::vector<std::int64_t> gen_positions(std::int64_t max_count,
                                        std::int64_t max = std::int64_t{1} << 31) {
  const auto n = *gen::inRange<std::int64_t>(1, max_count + 1);
  return *gen::container<std::vector<std::int64_t>>(static_cast<std::size_t>(n), position(max));
}

}  // namespace

void rope_inv_freq_exact(const subject& sub, dtype) {
  const auto s = accepted(sub, rope_spec());
  const auto r = setup(sub, s, gen_seq(s));
  RC_TAG(spec::to_string(s.type));
  const auto f = r.impl->inv_freq(r.seq);
  const auto& theta = r.ref->fast().inv_freq<double>();
  RC_ASSERT(f.size() == theta.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double B =
        *r.contract->inv_freq_bound(static_cast<std::int64_t>(i)) + half_ulp(theta[i], kF64);
    if (!(std::fabs(double(f[i]) - theta[i]) <= B)) {
      fail_value("inv_freq", where(r, 0, static_cast<std::int64_t>(i)), f[i], theta[i], B);
    }
  }
}

void rope_attention_factor_exact(const subject& sub, dtype) {
  const auto s = accepted(sub, rope_spec());
  const auto r = setup(sub, s, gen_seq(s));
  RC_TAG(spec::to_string(s.type));
  const double got = r.impl->attention_factor(r.seq);
  const double B = r.contract->attention_factor_bound() + half_ulp(r.m, kF64);
  if (!(std::fabs(got - r.m) <= B)) fail_value("attention factor", where(r, 0, 0), got, r.m, B);
}

void rope_table_exact(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec());
    const auto r = setup(sub, s, gen_seq(s));
    const auto pos = gen_positions(4);
    const auto P = static_cast<std::size_t>(s.pairs());
    std::vector<T> c(pos.size() * P), sn(c.size());
    r.impl->rope_table(pos, r.seq, std::span<T>(c), std::span<T>(sn));
    compare::typed_values<T> rc, rs;
    r.ref->table<T>(pos, rc, rs, /*rounded_doubles=*/true);
    for (std::size_t k = 0; k < c.size(); ++k) {
      const std::int64_t p = pos[k / P];
      const auto i = static_cast<std::int64_t>(k % P);
      tag(s, p);
      for (int which = 0; which < 2; ++which) {
        const double got = dbl(which ? sn[k] : c[k]);
        const double want = which ? rs.exact[k] : rc.exact[k];
        const double B = r.contract->table_bound(p, i, want, format_of<T>()) + half_ulp(want, kF64);
        if (!(std::fabs(got - want) <= B)) {
          fail_value(which ? "m·sin" : "m·cos", where(r, p, i), got, want, B);
        }
      }
    }
  });
}

void rope_rotate_exact(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec());
    const auto r = setup(sub, s, gen_seq(s));
    const auto pos = gen_positions(3);
    const auto heads = *gen::inRange<std::int64_t>(1, 3);
    const auto x = inputs<T>(s, static_cast<std::int64_t>(pos.size()), heads);
    const auto y = rotate(r, pos, x, heads);
    const auto D = static_cast<std::size_t>(s.head_dim);
    std::vector<double> want(D);
    std::vector<T> rn(D);
    for (std::size_t tok = 0; tok < pos.size(); ++tok) {
      tag(s, pos[tok]);
      for (std::int64_t h = 0; h < heads; ++h) {
        const std::size_t base = (tok * static_cast<std::size_t>(heads) + h) * D;
        const auto xd = to_doubles<T>(std::span<const T>(x).subspan(base, D));
        r.ref->rotate<T>(pos[tok], xd, rn, want);
        for (std::int64_t i = 0; i < s.pairs(); ++i) {
          const auto [j0, j1] = pair_dims(s, i);
          const double B0 = r.rot(pos[tok], i, xd[j0], xd[j1], format_of<T>());
          for (std::int64_t j : {j0, j1}) {
            const double got = dbl(y[base + j]);
            const double B = B0 + half_ulp(want[j], kF64);
            if (!(std::fabs(got - want[j]) <= B)) {
              fail_value("rotated q/k dim " + std::to_string(j), where(r, pos[tok], i), got,
                         want[j], B);
            }
          }
        }
      }
    }
  });
}

void rope_norm(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec());
    const auto r = setup(sub, s, gen_seq(s));
    const std::int64_t p = *position();
    tag(s, p);
    const auto x = inputs<T>(s, 1, 1);
    const auto y = rotate(r, {p}, x, 1);
    // ‖ŷ_rot‖ vs m·‖x_rot‖ over the rotary dims: |‖ŷ‖ − ‖y‖| ≤ ‖ŷ − y‖ ≤ (Σ e_j²)^½.
    double ny = 0, nx = 0, e2 = 0;
    for (std::int64_t i = 0; i < s.pairs(); ++i) {
      const auto [j0, j1] = pair_dims(s, i);
      const double x0 = dbl(x[j0]), x1 = dbl(x[j1]);
      const double e = r.rot(p, i, x0, x1, format_of<T>());
      e2 += 2 * e * e;
      nx += x0 * x0 + x1 * x1;
      ny += dbl(y[j0]) * dbl(y[j0]) + dbl(y[j1]) * dbl(y[j1]);
    }
    const double got = std::sqrt(ny), want = r.m * std::sqrt(nx);
    const double n = static_cast<double>(s.rotary_dim) + 4;
    const double B = std::sqrt(e2) + n * 0x1p-52 * (got + want);
    RC_CLASSIFY(r.m != 1.0, "m != 1");
    if (!(std::fabs(got - want) <= B)) fail_value("‖R(p)x‖ vs m‖x‖", where(r, p, -1), got, want, B);
  });
}

void rope_identity_at_zero(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec());
    const auto r = setup(sub, s, gen_seq(s));
    RC_TAG(spec::to_string(s.type), r.m != 1.0 ? "m != 1" : "m = 1");
    const auto x = inputs<T>(s, 1, 1);
    const auto y = rotate(r, {0}, x, 1);
    for (std::int64_t i = 0; i < s.pairs(); ++i) {
      const auto [j0, j1] = pair_dims(s, i);
      const double B0 = r.rot(0, i, dbl(x[j0]), dbl(x[j1]), format_of<T>());
      for (std::int64_t j : {j0, j1}) {
        const double want = r.m * dbl(x[j]);
        const double B = B0 + half_ulp(want, kF64);
        if (!(std::fabs(dbl(y[j]) - want) <= B)) {
          fail_value("R(0)x vs m·x, dim " + std::to_string(j), where(r, 0, i), dbl(y[j]), want, B);
        }
      }
    }
  });
}

void rope_composition(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec());
    const auto r = setup(sub, s, gen_seq(s));
    const std::int64_t a = *position(std::int64_t{1} << 30);
    const std::int64_t b = *position(std::int64_t{1} << 30);
    tag(s, a + b);
    const auto x = inputs<T>(s, 1, 1);
    const auto yb = rotate(r, {b}, x, 1);
    const auto z = rotate(r, {a}, yb, 1);
    const auto w = rotate(r, {a + b}, x, 1);
    // R(a)R(b)x = m²·rot(a+b)x = m·R(a+b)x. z = R̂(a)ŷ_b errs from R(a)ŷ_b by e_z, R(a)ŷ_b from
    // R(a)y_b by at most m(|δ0| + |δ1|) per output (δ = ŷ_b − y_b), and m·ŵ from m·w by m·e_w.
    for (std::int64_t i = 0; i < s.pairs(); ++i) {
      const auto [j0, j1] = pair_dims(s, i);
      constexpr format out = format_of<T>();
      const double eb = r.rot(b, i, dbl(x[j0]), dbl(x[j1]), out);
      const double ez = r.rot(a, i, dbl(yb[j0]), dbl(yb[j1]), out);
      const double ew = r.rot(a + b, i, dbl(x[j0]), dbl(x[j1]), out);
      for (std::int64_t j : {j0, j1}) {
        const double want = r.m * dbl(w[j]);
        const double B = ez + r.m * 2 * eb + r.m * ew + half_ulp(want, kF64);
        if (!(std::fabs(dbl(z[j]) - want) <= B)) {
          std::ostringstream at;
          at << where(r, a + b, i) << " (a=" << a << ", b=" << b << ", dim " << j << ")";
          fail_value("R(a)R(b)x vs m·R(a+b)x", at.str(), dbl(z[j]), want, B);
        }
      }
    }
  });
}

void rope_inverse(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec());
    const auto r = setup(sub, s, gen_seq(s));
    const std::int64_t p = *position();
    tag(s, p);
    const auto x = inputs<T>(s, 1, 1);
    const auto y = rotate(r, {p}, x, 1);
    // R(p)⁻¹ = R(p)ᵀ/m²: the transpose of the implementation's own table undoes the rotation
    // (positions stay ≥ 0). With ĉ, ŝ within ε_T of m·cos, m·sin and ŷ within e of y:
    // |(T̂ᵀŷ)_0 − m²x0| ≤ |ĉ|e + |ŝ|e + ε_T(|ŷ0| + |ŷ1| + 2e).
    const auto P = static_cast<std::size_t>(s.pairs());
    std::vector<T> c(P), sn(P);
    r.impl->rope_table(std::vector<std::int64_t>{p}, r.seq, std::span<T>(c), std::span<T>(sn));
    constexpr format out = format_of<T>();
    for (std::size_t i = 0; i < P; ++i) {
      const auto ii = static_cast<std::int64_t>(i);
      const auto [j0, j1] = pair_dims(s, ii);
      const double ch = dbl(c[i]), sh = dbl(sn[i]);
      const double y0 = dbl(y[j0]), y1 = dbl(y[j1]);
      const double e = r.rot(p, ii, dbl(x[j0]), dbl(x[j1]), out);
      const double eT = r.contract->table_bound(p, ii, r.m, out);
      const double z0 = ch * y0 + sh * y1, z1 = -sh * y0 + ch * y1;
      const double mm = r.m * r.m;
      for (int k = 0; k < 2; ++k) {
        const double z = k ? z1 : z0;
        const double want = mm * dbl(x[k ? j1 : j0]);
        const double B = (std::fabs(ch) + std::fabs(sh)) * e +
                         eT * (std::fabs(y0) + std::fabs(y1) + 2 * e) +
                         4 * 0x1p-52 * (std::fabs(ch * y0) + std::fabs(sh * y1) + std::fabs(want));
        if (!(std::fabs(z - want) <= B)) {
          fail_value("R(p)ᵀR(p)x vs m²x, dim " + std::to_string(k ? j1 : j0), where(r, p, ii), z,
                     want, B);
        }
      }
    }
  });
}

void rope_passthrough(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = *gen::suchThat(rope_spec(), [&](const spec::rope& v) {
      return v.rotary_dim < v.head_dim && sub.accepts(spec::encoding{v});
    });
    const auto r = setup(sub, s, gen_seq(s));
    const std::int64_t p = *position();
    tag(s, p);
    auto x = inputs<T>(s, 1, 1);
    // Pass-through dims hold arbitrary bit patterns (NaN and Inf included): copied bit for bit.
    for (std::int64_t j = s.rotary_dim; j < s.head_dim; ++j) x[j] = *bit_pattern<T>();
    const auto y = rotate(r, {p}, x, 1);
    for (std::int64_t j = s.rotary_dim; j < s.head_dim; ++j) {
      if (scalar_traits<T>::to_bits(y[j]) != scalar_traits<T>::to_bits(x[j])) {
        std::ostringstream os;
        os << "pass-through dim " << j << " changed at " << where(r, p, -1) << ": in "
           << dec_hex(dbl(x[j])) << ", out " << dec_hex(dbl(y[j]));
        RC_FAIL(os.str());
      }
    }
  });
}

void rope_out_of_place(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec());
    const auto r = setup(sub, s, gen_seq(s));
    const auto pos = gen_positions(3);
    tag(s, pos[0]);
    const auto tokens = static_cast<std::int64_t>(pos.size());
    const auto x = inputs<T>(s, tokens, 1);
    const auto keep = x;
    const auto y = rotate(r, pos, x, 1);
    auto bits_equal = [](T a, T b) {
      return scalar_traits<T>::to_bits(a) == scalar_traits<T>::to_bits(b) ||
             (std::isnan(dbl(a)) && std::isnan(dbl(b)));
    };
    for (std::size_t k = 0; k < x.size(); ++k) {
      RC_ASSERT(scalar_traits<T>::to_bits(x[k]) == scalar_traits<T>::to_bits(keep[k]));
    }
    auto inplace = x;
    r.impl->rope_rotate(pos, r.seq, kernel::heads_view<const T>{inplace, tokens, 1, s.head_dim},
                        kernel::heads_view<T>{inplace, tokens, 1, s.head_dim});
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (!bits_equal(inplace[k], y[k])) {
        std::ostringstream os;
        os << "in-place result differs from out-of-place at element " << k << ": "
           << dec_hex(dbl(inplace[k])) << " vs " << dec_hex(dbl(y[k]));
        RC_FAIL(os.str());
      }
    }
  });
}

void rope_relative_shift(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, rope_spec());
    const auto r = setup(sub, s, gen_seq(s));
    const std::int64_t mq = *position(std::int64_t{1} << 30);
    const std::int64_t nk = *position(std::int64_t{1} << 30);
    const std::int64_t shift = *position(std::int64_t{1} << 30);
    tag(s, std::max(mq, nk) + shift);
    const auto q = inputs<T>(s, 1, 1);
    const auto k = inputs<T>(s, 1, 1);
    constexpr format out = format_of<T>();
    // ⟨R(m)q, R(n)k⟩ = m²⟨q, rot(n − m)k⟩ for every shift. Each computed score errs from the exact
    // one by Σ_j |q̂_j|e_k,j + e_q,j(|k̂_j| + e_k,j), plus the double sum's γ_D·Σ|q̂_j k̂_j|.
    auto score = [&](std::int64_t a, std::int64_t b, double& bound) {
      const auto qa = rotate(r, {a}, q, 1);
      const auto kb = rotate(r, {b}, k, 1);
      double sum = 0, abs_sum = 0;
      bound = 0;
      for (std::int64_t i = 0; i < s.pairs(); ++i) {
        const auto [j0, j1] = pair_dims(s, i);
        const double eq = r.rot(a, i, dbl(q[j0]), dbl(q[j1]), out);
        const double ek = r.rot(b, i, dbl(k[j0]), dbl(k[j1]), out);
        for (std::int64_t j : {j0, j1}) {
          const double qv = dbl(qa[j]), kv = dbl(kb[j]);
          sum += qv * kv;
          abs_sum += std::fabs(qv * kv);
          bound += std::fabs(qv) * ek + eq * (std::fabs(kv) + ek);
        }
      }
      bound += static_cast<double>(s.rotary_dim + 2) * 0x1p-52 * abs_sum;
      return sum;
    };
    double b1 = 0, b2 = 0;
    const double s1 = score(mq, nk, b1);
    const double s2 = score(mq + shift, nk + shift, b2);
    if (!(std::fabs(s1 - s2) <= b1 + b2)) {
      std::ostringstream at;
      at << where(r, mq, -1) << " n=" << nk << " shift=" << shift;
      fail_value("<R(m)q, R(n)k> vs shifted", at.str(), s2, s1, b1 + b2);
    }
  });
}

// Keys rotated when they were cached (sequence length j + 1) and rotated now (length n > j) must
// be the same vectors: bit for bit for static encodings.
namespace {
template <class T>
void kv_cache_check(const subject& sub, const spec::rope& s, std::int64_t j, std::int64_t n) {
  const auto impl_ = sub.make(spec::encoding{s});
  const auto k = inputs<T>(s, 1, 1);
  std::vector<T> cached(k.size()), now(k.size());
  const std::vector<std::int64_t> pos{j};
  impl_->rope_rotate(pos, j + 1, kernel::heads_view<const T>{k, 1, 1, s.head_dim},
                     kernel::heads_view<T>{cached, 1, 1, s.head_dim});
  impl_->rope_rotate(pos, n, kernel::heads_view<const T>{k, 1, 1, s.head_dim},
                     kernel::heads_view<T>{now, 1, 1, s.head_dim});
  for (std::size_t d = 0; d < k.size(); ++d) {
    if (scalar_traits<T>::to_bits(cached[d]) != scalar_traits<T>::to_bits(now[d])) {
      std::ostringstream os;
      os << impl_->name() << " " << spec::to_spec_string(spec::encoding{s}) << ": key at position "
         << j << " cached with seq_len " << j + 1 << " gives dim " << d << " = "
         << dec_hex(dbl(cached[d])) << ", rotated now (seq_len " << n << ") "
         << dec_hex(dbl(now[d]));
      RC_FAIL(os.str());
    }
  }
}
}  // namespace

void rope_kv_cache(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = *gen::suchThat(rope_spec(), [&](const spec::rope& v) {
      return !v.stateful() && sub.accepts(spec::encoding{v});
    });
    const std::int64_t j = *position(std::int64_t{1} << 20);
    const std::int64_t n = j + 1 + *position(std::int64_t{1} << 20);
    tag(s, n);
    kv_cache_check<T>(sub, s, j, n);
  });
}

void rope_kv_cache_stateful(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = *gen::suchThat(rope_spec(), [&](const spec::rope& v) {
      return v.stateful() && v.factor > 1 && sub.accepts(spec::encoding{v});
    });
    const std::int64_t L = s.type == spec::rope_type::dynamic ? s.max_position_embeddings
                                                              : s.original_max_position_embeddings;
    // A key cached before the switching length, scores computed after it.
    const std::int64_t j = *gen::inRange<std::int64_t>(1, L);
    const std::int64_t n = L + *gen::inRange<std::int64_t>(1, 4 * L);
    tag(s, n);
    kv_cache_check<T>(sub, s, j, n);
  });
}

}  // namespace pev::prop::detail

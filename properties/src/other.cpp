// Sinusoidal, ALiBi and T5 properties.
//
// Sinusoidal values are compared with the exact reference within the claimed contract
// (sinusoidal_contract: the float64 DistilBERT pipeline or fairseq's fp32 exp model; ½–1 ulp for
// accurate). Linearity PE(t+k) = M(k)·PE(t) applies the exact rotation M(k) (cos and sin of k·ω_i
// from MPFR, rounded to double: ≤ 2^−53 each) to the implementation's own PE(t): with PE(t) within
// e_s, e_c of the exact pair, M(k)PE^(t) is within e_s + e_c of the exact PE(t+k), so the two
// computed sides may differ by e(t+k) + e_s(t) + e_c(t) plus the double evaluation (≤ 2^−50).
// ALiBi slopes and biases: the ALiBi contract; shift invariance and the zero diagonal bit for bit.
// T5: bucket ids are integers, so every rule is exact.

#include <boost/multiprecision/mpfr.hpp>
#include <cmath>
#include <sstream>

#include "detail.h"
#include "pev/compare/reference.h"
#include "pev/core/real.h"
#include "pev/ref/relative.h"
#include "pev/ref/sinusoidal.h"

namespace pev::prop::detail {
namespace {

namespace gen = rc::gen;
using metric::half_ulp;
using metric::kF64;

std::string name_of(const impl::implementation& im) {
  return im.name() + " " + spec::to_spec_string(im.claimed_spec());
}

}  // namespace

void sinusoidal_pe_exact(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, sinusoidal_spec());
    const auto im = sub.make(spec::encoding{s});
    const impl::sinusoidal_contract contract(s, im->claimed_accuracy());
    const auto n = *gen::inRange<std::size_t>(1, 4);
    const auto pos = *gen::container<std::vector<std::int64_t>>(n, position());
    const auto d = static_cast<std::size_t>(s.d_model);
    std::vector<T> got(pos.size() * d);
    im->sinusoidal_pe(pos, std::span<T>(got));
    compare::typed_values<T> ref;
    compare::sinusoidal_reference(s, compare::reference_path::fast).pe<T>(pos, ref);
    const std::vector<double>& want = ref.exact;
    for (std::size_t k = 0; k < got.size(); ++k) {
      const std::int64_t p = pos[k / d];
      RC_TAG(position_bucket(p), spec::to_string(s.layout));
      const double B =
          contract.bound(p, static_cast<std::int64_t>(k % d), want[k], format_of<T>()) +
          half_ulp(want[k], kF64);
      if (!(std::fabs(dbl(got[k]) - want[k]) <= B)) {
        std::ostringstream os;
        os << name_of(*im) << ": PE(" << p << ", " << k % d << ") = " << dec_hex(dbl(got[k]))
           << ", exact " << dec_hex(want[k]) << ", |err| " << std::fabs(dbl(got[k]) - want[k])
           << " > bound " << B;
        RC_FAIL(os.str());
      }
    }
  });
}

void sinusoidal_linearity(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, sinusoidal_spec());
    const auto im = sub.make(spec::encoding{s});
    const impl::sinusoidal_contract contract(s, im->claimed_accuracy());
    const std::int64_t t0 = *position(std::int64_t{1} << 30);
    const std::int64_t k = *position(std::int64_t{1} << 20);
    RC_TAG(position_bucket(t0 + k), spec::to_string(s.layout));
    const std::vector<std::int64_t> pos{t0, t0 + k};
    const auto d = static_cast<std::size_t>(s.d_model);
    std::vector<T> pe(2 * d);
    im->sinusoidal_pe(pos, std::span<T>(pe));
    const auto omega = ref::sinusoidal_frequencies(s);  // per column
    // Columns of each pair in the claimed layout.
    const auto pairs = static_cast<std::size_t>((s.d_model + 1) / 2);
    std::vector<std::int64_t> sin_col(pairs, -1), cos_col(pairs, -1);
    for (std::int64_t c = 0; c < s.d_model; ++c) {
      const auto [pair, is_sin] = contract.pair_of(c);
      if (pair < 0 || pair >= static_cast<std::int64_t>(pairs)) continue;
      (is_sin ? sin_col : cos_col)[static_cast<std::size_t>(pair)] = c;
    }
    constexpr auto out = format_of<T>();
    for (std::size_t i = 0; i < pairs; ++i) {
      if (sin_col[i] < 0 || cos_col[i] < 0) continue;
      // The claimed pair's frequency (the spec's layout decides which columns hold it).
      const real angle = omega[static_cast<std::size_t>(sin_col[i])] * real(k);
      const double ck = boost::multiprecision::cos(angle).convert_to<double>();
      const double sk = boost::multiprecision::sin(angle).convert_to<double>();
      const auto sc = static_cast<std::size_t>(sin_col[i]),
                 cc = static_cast<std::size_t>(cos_col[i]);
      const double s0 = dbl(pe[sc]), c0 = dbl(pe[cc]);
      const double s1 = dbl(pe[d + sc]), c1 = dbl(pe[d + cc]);
      // sin(a + b) = sin a cos b + cos a sin b; cos(a + b) = cos a cos b − sin a sin b.
      const double ps = s0 * ck + c0 * sk, pc = c0 * ck - s0 * sk;
      const double e0 =
          contract.bound(t0, sin_col[i], 1.0, out) + contract.bound(t0, cos_col[i], 1.0, out);
      for (int w = 0; w < 2; ++w) {
        const double got = w ? c1 : s1, pred = w ? pc : ps;
        const double B =
            contract.bound(t0 + k, w ? cos_col[i] : sin_col[i], 1.0, out) + e0 + 0x1p-50;
        if (!(std::fabs(got - pred) <= B)) {
          std::ostringstream os;
          os << name_of(*im) << ": PE(t+k) ≠ M(k)·PE(t) for t=" << t0 << ", k=" << k << ", pair "
             << i << " (" << (w ? "cos" : "sin") << " column " << (w ? cos_col[i] : sin_col[i])
             << "): PE(t+k) = " << dec_hex(got) << ", M(k)·PE(t) = " << dec_hex(pred) << ", |diff| "
             << std::fabs(got - pred) << " > bound " << B;
          RC_FAIL(os.str());
        }
      }
    }
  });
}

void alibi_slopes_exact(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, alibi_spec());
    RC_TAG(std::has_single_bit(static_cast<std::uint64_t>(s.num_heads)) ? "H power of two"
                                                                        : "H not a power of two");
    const auto im = sub.make(spec::encoding{s});
    const impl::alibi_contract contract(s, im->claimed_accuracy());
    std::vector<T> got(static_cast<std::size_t>(s.num_heads));
    im->alibi_slopes(std::span<T>(got));
    const compare::alibi_reference ref(s);
    const auto& exact = ref.slopes();
    for (std::size_t h = 0; h < got.size(); ++h) {
      const double want = exact[h].convert_to<double>();
      const double B = contract.slope_bound(static_cast<std::int64_t>(h), want, format_of<T>()) +
                       half_ulp(want, kF64);
      if (!(std::fabs(dbl(got[h]) - want) <= B)) {
        std::ostringstream os;
        os << name_of(*im) << ": slope of head " << h + 1 << " = " << dec_hex(dbl(got[h]))
           << ", exact " << dec_hex(want) << " (bound " << B << ")";
        RC_FAIL(os.str());
      }
    }
  });
}

void alibi_bias_exact(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, alibi_spec());
    const auto im = sub.make(spec::encoding{s});
    const impl::alibi_contract contract(s, im->claimed_accuracy());
    // |j − i| < 2^15 keeps every bias finite in fp16 (slopes ≤ 2^(−8/64)).
    const auto q = *gen::container<std::vector<std::int64_t>>(2, position((1 << 15) - 1));
    const auto k = *gen::container<std::vector<std::int64_t>>(2, position((1 << 15) - 1));
    RC_TAG(position_bucket(std::max(q[0], k[0])));
    std::vector<T> got(static_cast<std::size_t>(s.num_heads) * 4);
    im->alibi_bias(q, k, std::span<T>(got));
    const compare::alibi_reference ref(s);
    std::size_t idx = 0;
    for (std::int64_t h = 0; h < s.num_heads; ++h) {
      for (std::int64_t a : q) {
        for (std::int64_t b : k) {
          const double want = ref.bias(h, a, b).convert_to<double>();
          const double B =
              contract.bias_bound(h, b - a, want, format_of<T>()) + half_ulp(want, kF64);
          const double g = dbl(got[idx++]);
          if (!(std::fabs(g - want) <= B)) {
            std::ostringstream os;
            os << name_of(*im) << ": bias[h=" << h + 1 << ", i=" << a << ", j=" << b
               << "] = " << dec_hex(g) << ", exact m·(j − i) = " << dec_hex(want) << " (bound " << B
               << ")";
            RC_FAIL(os.str());
          }
        }
      }
    }
  });
}

void alibi_shift_invariance(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    const auto s = accepted(sub, alibi_spec());
    const auto im = sub.make(spec::encoding{s});
    const std::int64_t i = *position(1 << 14), j = *position(1 << 14), sh = *position(1 << 14);
    RC_TAG(j >= i ? "key after query" : "key before query");
    const auto H = static_cast<std::size_t>(s.num_heads);
    std::vector<T> a(H), b(H), diag(H);
    im->alibi_bias(std::vector<std::int64_t>{i}, std::vector<std::int64_t>{j}, std::span<T>(a));
    im->alibi_bias(std::vector<std::int64_t>{i + sh}, std::vector<std::int64_t>{j + sh},
                   std::span<T>(b));
    im->alibi_bias(std::vector<std::int64_t>{i}, std::vector<std::int64_t>{i}, std::span<T>(diag));
    for (std::size_t h = 0; h < H; ++h) {
      if (scalar_traits<T>::to_bits(a[h]) != scalar_traits<T>::to_bits(b[h])) {
        std::ostringstream os;
        os << name_of(*im) << ": bias depends on more than j − i: head " << h + 1 << " (i=" << i
           << ", j=" << j << ") = " << dec_hex(dbl(a[h])) << " but shifted by " << sh << " = "
           << dec_hex(dbl(b[h]));
        RC_FAIL(os.str());
      }
      RC_ASSERT(dbl(diag[h]) == 0.0);
    }
  });
}

namespace {
std::int64_t half_buckets(const spec::t5& s) {
  return s.bidirectional ? s.num_buckets / 2 : s.num_buckets;
}

// Distances: uniform below 4·max_distance, any position, and the T5 edge buckets n = e·2^j ± 1
// (e = half the distance-bucket count), where the log branch ln(n/e)/ln(D/e)·(nb − e) can be an
// exact integer (docs/encodings.md §3.2: n = 16, 32, 64 for the bidirectional defaults).
std::int64_t gen_distance(const spec::t5& s) {
  const std::int64_t e = half_buckets(s) / 2;
  const auto edge =
      gen::map(gen::tuple(gen::inRange(0, 13), gen::inRange<std::int64_t>(-1, 2)),
               [e](const std::tuple<int, std::int64_t>& a) {
                 return std::max<std::int64_t>(0, (e << std::get<0>(a)) + std::get<1>(a));
               });
  const auto mag = *gen::weightedOneOf<std::int64_t>(
      {{3, gen::inRange<std::int64_t>(0, 4 * s.max_distance)}, {1, position()}, {2, edge}});
  return *gen::arbitrary<bool>() ? -mag : mag;
}

std::vector<std::int64_t> buckets(const impl::implementation& im, std::vector<std::int64_t> r) {
  std::vector<std::int64_t> out(r.size());
  im.t5_buckets(r, out);
  return out;
}
}  // namespace

void t5_range(const subject& sub, dtype) {
  const auto s = accepted(sub, t5_spec());
  const auto im = sub.make(spec::encoding{s});
  const std::int64_t r = gen_distance(s);
  RC_TAG(s.bidirectional ? "bidirectional" : "causal",
         std::abs(r) < s.max_distance ? "|r| < max" : "|r| >= max");
  const auto b = buckets(*im, {r});
  RC_ASSERT(b[0] >= 0);
  RC_ASSERT(b[0] < s.num_buckets);
}

void t5_monotone(const subject& sub, dtype) {
  const auto s = accepted(sub, t5_spec());
  const auto im = sub.make(spec::encoding{s});
  const std::int64_t r1 = gen_distance(s);
  const std::int64_t extra = *gen::inRange<std::int64_t>(0, 2 * s.max_distance);
  // Same sign, |r2| ≥ |r1|.
  const std::int64_t r2 = r1 < 0 ? r1 - extra : r1 + extra;
  RC_TAG(s.bidirectional ? "bidirectional" : "causal");
  const auto b = buckets(*im, {r1, r2});
  if (!(b[0] <= b[1])) {
    RC_FAIL(name_of(*im) + ": bucket(" + std::to_string(r1) + ") = " + std::to_string(b[0]) +
            " > bucket(" + std::to_string(r2) + ") = " + std::to_string(b[1]) +
            " although |r| grew");
  }
}

void t5_symmetry(const subject& sub, dtype) {
  const auto s = accepted(sub, t5_spec());
  const auto im = sub.make(spec::encoding{s});
  const std::int64_t n = std::abs(gen_distance(s));
  const auto b = buckets(*im, {n, -n, 0});
  RC_TAG(s.bidirectional ? "bidirectional" : "causal");
  RC_ASSERT(b[2] == 0);
  if (s.bidirectional) {
    // Keys after the query use the upper half: bucket(n) = bucket(−n) + nb/2 for n > 0.
    if (n > 0 && b[0] != b[1] + half_buckets(s)) {
      RC_FAIL(name_of(*im) + ": bucket(" + std::to_string(n) + ") = " + std::to_string(b[0]) +
              ", bucket(-" + std::to_string(n) + ") = " + std::to_string(b[1]) +
              ": expected the first to be the second + num_buckets/2");
    }
  } else {
    // Causal: keys after the query all fall into bucket 0.
    if (b[0] != 0)
      RC_FAIL(name_of(*im) + ": causal bucket(" + std::to_string(n) +
              ") = " + std::to_string(b[0]) + ", expected 0");
  }
}

void t5_exact(const subject& sub, dtype) {
  const auto s = accepted(sub, t5_spec());
  const auto im = sub.make(spec::encoding{s});
  const std::int64_t r = gen_distance(s);
  RC_TAG(s.num_buckets, s.max_distance);
  const auto b = buckets(*im, {r});
  const std::int64_t want = ref::t5_bucket(s, r);
  if (b[0] != want) {
    RC_FAIL(name_of(*im) + ": bucket(" + std::to_string(r) + ") = " + std::to_string(b[0]) +
            ", exact bucket " + std::to_string(want));
  }
}

}  // namespace pev::prop::detail

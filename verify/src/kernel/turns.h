#pragma once
// Internal: exact angle reduction in turns and double-precision sin/cos, the core of the
// `accurate` strategy (RoPE and sinusoidal tables).
//
// A frequency θ (radians per position) is stored at plan time as F = frac(θ/2π), a fraction of a
// turn in 192-bit unsigned fixed point, rounded to nearest from the MPFR reference. The angle of
// position p is then t = p·F mod 1, computed exactly in integer arithmetic: its only error is
// |p|·|F − θ/2π| ≤ |p|·2^−193 turns, i.e. ≤ 2^−137 rad for |p| < 2^53 and ≤ 2^−127 rad for any
// int64 p. (128 bits would leave |p|·2^−129 turns ≈ 2^−73 rad at p = 2^53, which is larger than
// an fp32 ulp of the values sin and cos take near their zeros at such positions; 192 bits keep the
// reduced angle's relative error below 2^−60 except within 2^−77 rad of a zero, which no
// position below 2^53 reaches for frequencies that are not pathologically close to rational
// multiples of π.)
//
// Reduction: with t' = t + 1/8 turn, the quadrant q is the top two bits of t', and
// r = (t' mod ¼) − ⅛ ∈ [−⅛, ⅛) turn is the signed remainder, so 2π·t = q·π/2 + 2π·r with
// 2π·r ∈ [−π/4, π/4). 2π·r is formed in double from the leading 64 bits of |r| (wherever they
// lie, so a tiny remainder keeps its relative accuracy): truncation 2^−63, conversion, 2π and
// product roundings 2^−53 each, relative error ≤ 3.1·2^−53.
//
// sin and cos of the remainder: Taylor polynomials of degree 17 and 18 (truncation below
// 1e−19 on [−π/4, π/4]), Horner in double, cos with the 1 − z/2 split of fdlibm's __kernel_cos.
// Each is within ~1 ulp of double of the exact value of the rounded remainder; with the
// remainder's own error the result is within ~2^−51 (relative for sin of a small remainder,
// absolute otherwise) of sin/cos(2π·t). One final rounding to fp32/fp16/bf16 (detail::narrow)
// is then correctly rounded unless the exact value lies within ~2^−50 relative of a rounding
// midpoint of the output type: probability ~2^−26 per fp32 value, ~2^−39 per fp16 value, and
// never more than 1 ulp off.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pev/core/real.h"

namespace pev::kernel::detail {

// 64×64 → 128-bit products (GCC/Clang extension; __extension__ keeps -Wpedantic quiet).
__extension__ typedef unsigned __int128 u128;

/// A fraction of a turn in [0, 1): (hi·2^128 + mid·2^64 + lo) / 2^192.
struct turn {
  std::uint64_t hi = 0, mid = 0, lo = 0;

  friend bool operator==(const turn&, const turn&) = default;
};

/// frac(radians / 2π) rounded to the nearest multiple of 2^−192 (MPFR, plan time only; the
/// argument should carry at least 200 significant bits for the result to be exact).
turn turn_of_angle(const real& radians);

/// p·f mod 1, exactly, for any 64-bit p (negative p gives the complementary fraction).
inline turn turn_times(const turn& f, std::int64_t p) {
  // |p| fits in uint64 even for INT64_MIN.
  const std::uint64_t a =
      p < 0 ? ~static_cast<std::uint64_t>(p) + 1u : static_cast<std::uint64_t>(p);
  const u128 m0 = static_cast<u128>(a) * f.lo;
  const u128 m1 = static_cast<u128>(a) * f.mid;
  const u128 mid = (m0 >> 64) + static_cast<std::uint64_t>(m1);
  turn t;
  t.lo = static_cast<std::uint64_t>(m0);
  t.mid = static_cast<std::uint64_t>(mid);
  t.hi = static_cast<std::uint64_t>(mid >> 64) + static_cast<std::uint64_t>(m1 >> 64) + a * f.hi;
  if (p < 0) {
    // 1 − t mod 1: two's complement over 192 bits.
    t.lo = ~t.lo + 1u;
    const std::uint64_t c1 = t.lo == 0 ? 1u : 0u;
    t.mid = ~t.mid + c1;
    const std::uint64_t c2 = (c1 != 0 && t.mid == 0) ? 1u : 0u;
    t.hi = ~t.hi + c2;
  }
  return t;
}

/// 2^k for −1022 ≤ k ≤ 1023.
inline double pow2(int k) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(1023 + k) << 52);
}

struct sin_cos {
  double sin = 0, cos = 1;
};

/// The Taylor coefficients of sincos_reduced: 1/(2k+1)! (s_k, sin) and 1/(2k)! (c_k, cos) with
/// alternating signs, each the double nearest the quotient. The one definition: the vector lanes of
/// accurate_row.cpp evaluate the same polynomials with them, so every ISA gives the same bits.
namespace sincos_taylor {
inline constexpr double s1 = -1.0 / 6.0, s2 = 1.0 / 120.0, s3 = -1.0 / 5040.0, s4 = 1.0 / 362880.0,
                        s5 = -1.0 / 39916800.0, s6 = 1.0 / 6227020800.0,
                        s7 = -1.0 / 1307674368000.0, s8 = 1.0 / 355687428096000.0;
inline constexpr double c2 = 1.0 / 24.0, c3 = -1.0 / 720.0, c4 = 1.0 / 40320.0,
                        c5 = -1.0 / 3628800.0, c6 = 1.0 / 479001600.0, c7 = -1.0 / 87178291200.0,
                        c8 = 1.0 / 20922789888000.0, c9 = -1.0 / 6402373705728000.0;
}  // namespace sincos_taylor

/// sin and cos of a reduced angle r ∈ [−π/4, π/4] in double (see the header comment).
inline sin_cos sincos_reduced(double r) {
  using namespace sincos_taylor;
  const double z = r * r;
  const double ps = s1 + z * (s2 + z * (s3 + z * (s4 + z * (s5 + z * (s6 + z * (s7 + z * s8))))));
  sin_cos out;
  out.sin = r + (r * z) * ps;
  // cos r = 1 − z/2 + z²·Q(z), with 1 − z/2 split as in fdlibm's __kernel_cos so that its
  // rounding error is recovered exactly.
  const double q = c2 + z * (c3 + z * (c4 + z * (c5 + z * (c6 + z * (c7 + z * (c8 + z * c9))))));
  const double hz = 0.5 * z;
  const double w = 1.0 - hz;
  out.cos = w + (((1.0 - w) - hz) + (z * z) * q);
  return out;
}

/// The reduction of 2π·t: q·π/2 + r with the quadrant q ∈ {0, 1, 2, 3} (returned) and the remainder
/// r ∈ [−π/4, π/4] in double (see the header comment). Branch-free but for the rare remainders
/// below 2^−66 turn.
[[gnu::always_inline]] inline unsigned reduce_turn(const turn& t, double& r) {
  // t' = t + ⅛ turn (bit 189 = bit 61 of hi); quadrant = top two bits of t'.
  const std::uint64_t h = t.hi + (std::uint64_t{1} << 61);
  const auto q = static_cast<unsigned>(h >> 62);
  // Signed remainder r = (t' mod ¼) − ⅛, as a 192-bit two's complement number (rh, mid, lo).
  const auto rh =
      static_cast<std::int64_t>(h & ((std::uint64_t{1} << 62) - 1u)) - (std::int64_t{1} << 61);
  // |r| by a masked two's complement negation (the sign is a coin toss: no branch on it).
  const auto neg = static_cast<std::uint64_t>(rh >> 63);  // all ones when r < 0
  const std::uint64_t c1 = neg & static_cast<std::uint64_t>(t.lo == 0);
  const std::uint64_t c2 = c1 & static_cast<std::uint64_t>(t.mid == 0);
  const std::uint64_t a0 = (t.lo ^ neg) - neg;
  const std::uint64_t a1 = (t.mid ^ neg) + c1;
  const std::uint64_t a2 = (static_cast<std::uint64_t>(rh) ^ neg) + c2;
  // |r| = a2·2^128 + a1·2^64 + a0 < 2^190 (units of 2^−192 turn). Take its leading 64 bits.
  std::uint64_t top;
  int scale;  // |r| ≈ top·2^scale
  if (a2 != 0) [[likely]] {
    const int s = std::countl_zero(a2);  // ≥ 2
    top = (a2 << s) | (a1 >> (64 - s));
    scale = 128 - s;
  } else if (a1 != 0) {
    const int s = std::countl_zero(a1);
    top = s == 0 ? a1 : (a1 << s) | (a0 >> (64 - s));
    scale = 64 - s;
  } else {
    const int s = a0 == 0 ? 0 : std::countl_zero(a0);
    top = a0 << s;
    scale = -s;
  }
  // top < 2^64: convert its upper 63 bits with the signed conversion (one rounding).
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double mag = static_cast<double>(static_cast<std::int64_t>(top >> 1)) * 2.0;
  const double sign = neg != 0 ? -1.0 : 1.0;
  r = (sign * mag) * (kTwoPi * pow2(scale - 192));
  return q;
}

/// sin and cos of q·π/2 + r from those of r.
inline sin_cos apply_quadrant(const sin_cos& sc, unsigned q) {
  switch (q & 3u) {
    case 0:
      return sc;
    case 1:
      return {sc.cos, -sc.sin};
    case 2:
      return {-sc.sin, -sc.cos};
    default:
      return {-sc.cos, sc.sin};
  }
}

/// sin and cos of 2π·t.
inline sin_cos sincos_of_turn(const turn& t) {
  double r;
  const unsigned q = reduce_turn(t, r);
  return apply_quadrant(sincos_reduced(r), q);
}

/// A row's frequencies as turns, in two layouts: one `turn` per frequency (the scalar reduction),
/// and the six 32-bit limbs of each (limb 0 the most significant), one array per limb, zero-padded
/// to a multiple of 8 entries (the vector reduction of accurate_row.cpp).
class turn_set {
 public:
  void push_back(const turn& t);
  std::size_t size() const { return turns_.size(); }
  const turn& operator[](std::size_t i) const { return turns_[i]; }
  const std::vector<turn>& turns() const { return turns_; }
  const std::uint64_t* limb(int j) const { return limbs_[static_cast<std::size_t>(j)].data(); }

 private:
  std::vector<turn> turns_;
  std::array<std::vector<std::uint64_t>, 6> limbs_;
};

/// The accurate strategy's row (accurate_row.cpp): v_i = m·cos and m·sin of 2π·frac(p·F_i) for
/// every frequency F_i of `F`, each rounded once to binary32 (to nearest, or to odd with `odd` for
/// a later rounding to a 16-bit type: detail::narrow), into cos_out and sin_out. The same bits as
/// sincos_of_turn per element on every instruction set (isa.h): each vector lane runs the scalar
/// operations in the same order.
void accurate_row(const turn_set& F, std::int64_t p, double m, bool odd, float* cos_out,
                  float* sin_out);
/// accurate_row's reduction alone (for tests): r_i and q_i of reduce_turn(turn_times(F_i, p)) as
/// the active instruction set computes them.
void accurate_remainders(const turn_set& F, std::int64_t p, double* r, std::int64_t* q);

}  // namespace pev::kernel::detail

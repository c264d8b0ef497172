#include "pev/scalar/half.h"

#include <bit>
#include <cstdint>

namespace pev::detail {

// All conversions work on the encodings with integer arithmetic, so they do not depend on the
// floating-point environment (rounding mode, FTZ/DAZ) and never raise spurious exceptions.
//
// Layouts: binary32 = 1 sign | 8 exponent (bias 127) | 23 fraction;
//          binary16 = 1 sign | 5 exponent (bias 15)  | 10 fraction.

std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;

  if (abs > 0x7f800000u) {
    // NaN: keep the top 10 payload bits and set the quiet bit, so a quiet NaN round-trips
    // through float bit for bit and a signaling one (or one whose payload lies in the low 13
    // bits only) stays a NaN.
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x03ffu));
  }
  if (abs >= 0x477ff000u) {
    // |f| ≥ 65520 = 65504 + ½ ulp(65504): the tie goes to the even neighbour 2^16, which
    // overflows. Also catches ±Inf.
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  }
  if (abs >= 0x38800000u) {
    // Normal half (|f| ≥ 2^−14). Rebias the exponent (127 − 15 = 112) and drop 13 fraction
    // bits with round to nearest even: adding 0x0fff plus the lowest kept bit carries into the
    // kept part exactly when the dropped part exceeds one half, or equals it and the kept part is
    // odd. A carry out of the fraction correctly bumps the exponent (…7ff → next binade).
    const std::uint32_t rebiased = abs - (112u << 23);
    const std::uint32_t rounded = rebiased + 0x0fffu + ((rebiased >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (rounded >> 13));
  }
  if (abs <= 0x33000000u) {
    // |f| ≤ 2^−25 = half the smallest subnormal 2^−24: rounds to zero (the tie 2^−25 goes to
    // the even neighbour 0). Every float subnormal lands here.
    return sign;
  }
  // Half subnormal range, 2^−25 < |f| < 2^−14: the result is |f| / 2^−24 rounded to an
  // integer. With the implicit bit, |f| = m·2^(e−150) (m < 2^24, e the biased exponent in
  // [102, 112]), so the integer is m·2^(e−126) = m >> (126 − e), shift ∈ [14, 24].
  const std::uint32_t e = abs >> 23;
  const std::uint32_t m = (abs & 0x007fffffu) | 0x00800000u;
  const std::uint32_t shift = 126u - e;
  std::uint32_t q = m >> shift;
  const std::uint32_t rest = m & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (q & 1u) != 0)) ++q;  // may reach 0x400 = 2^−14
  return static_cast<std::uint16_t>(sign | q);
}

float half_bits_to_float(std::uint16_t b) {
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x8000u) << 16;
  const std::uint32_t exponent = (b >> 10) & 0x1fu;
  std::uint32_t fraction = b & 0x03ffu;

  if (exponent == 0x1fu) {
    // ±Inf, or NaN with its payload moved to the top of float's fraction (quiet bit included).
    return std::bit_cast<float>(sign | 0x7f800000u | (fraction << 13));
  }
  if (exponent != 0) {
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (fraction << 13));
  }
  if (fraction == 0) return std::bit_cast<float>(sign);
  // Subnormal half fraction·2^−24: normalise. With the leading one at bit k (0 ≤ k ≤ 9) the
  // value is 1.xxx·2^(k−24), a normal float with biased exponent k − 24 + 127 = k + 103.
  const int k = std::bit_width(fraction) - 1;
  fraction = (fraction << (23 - k)) & 0x007fffffu;
  return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(k + 103) << 23) | fraction);
}

}  // namespace pev::detail

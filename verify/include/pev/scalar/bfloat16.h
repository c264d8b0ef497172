#pragma once
// bfloat16 (8-bit significand, float's exponent range) held as its 16-bit encoding. Conversion from
// float rounds to nearest, ties to even (subnormals included; NaN stays NaN, quieted); conversion
// to float is exact.

#include <cstdint>

namespace pev {

struct bfloat16 {
  std::uint16_t bits = 0;

  constexpr bfloat16() = default;
  /// Round-to-nearest-even conversion from float.
  explicit bfloat16(float f);
  /// The value with encoding `b`.
  static constexpr bfloat16 from_bits(std::uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  /// Exact conversion to float.
  explicit operator float() const;

  friend constexpr bool operator==(bfloat16 a, bfloat16 b) = default;
};

namespace detail {
std::uint16_t float_to_bfloat16_bits(float f);
float bfloat16_bits_to_float(std::uint16_t b);
}  // namespace detail

inline bfloat16::bfloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}
inline bfloat16::operator float() const { return detail::bfloat16_bits_to_float(bits); }

}  // namespace pev

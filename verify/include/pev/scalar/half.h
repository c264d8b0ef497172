#pragma once
// IEEE 754 binary16 ("half", fp16) held as its 16-bit encoding. Arithmetic is done in float by the
// caller; conversion from float rounds to nearest, ties to even, with subnormals, infinities
// (overflow from 65520 on) and NaN (payload kept, quieted) handled. Conversion to float is exact.

#include <cstdint>

namespace pev {

struct half {
  std::uint16_t bits = 0;

  constexpr half() = default;
  /// Round-to-nearest-even conversion from float.
  explicit half(float f);
  /// The value with encoding `b`.
  static constexpr half from_bits(std::uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
  /// Exact conversion to float.
  explicit operator float() const;

  friend constexpr bool operator==(half a, half b) = default;
};

namespace detail {
std::uint16_t float_to_half_bits(float f);
float half_bits_to_float(std::uint16_t b);
}  // namespace detail

inline half::half(float f) : bits(detail::float_to_half_bits(f)) {}
inline half::operator float() const { return detail::half_bits_to_float(bits); }

}  // namespace pev

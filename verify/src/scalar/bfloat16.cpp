#include "pev/scalar/bfloat16.h"

#include <bit>
#include <cstdint>

namespace pev::detail {

// bfloat16 is the top half of a binary32 encoding (same sign and exponent fields, 7 fraction
// bits), so conversions are integer operations on the float's bits, independent of the
// floating-point environment (FTZ/DAZ included: float subnormals are rounded like any other value).

std::uint16_t float_to_bfloat16_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    // NaN: truncating could clear every payload bit and give Inf; setting the quiet bit keeps
    // it a NaN and keeps sign and the top 6 payload bits (a quiet NaN round-trips exactly).
    return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  }
  // Round to nearest even on the 16 dropped bits: adding 0x7fff plus the lowest kept bit carries
  // into the kept half exactly when the dropped half is above 0x8000, or equal to it with an odd
  // kept half. The carry propagates through the exponent, so subnormals become normals and values
  // from (2 − 2^−8)·2^127 on become ±Inf (0x7f80) as RNE with overflow requires.
  const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

float bfloat16_bits_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace pev::detail

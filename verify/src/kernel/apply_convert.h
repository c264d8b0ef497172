#pragma once
// Branch-free float ↔ fp16 / bf16 conversions for the RoPE application kernels (internal).
//
// They give bit for bit the results of pev's own conversions (half(float), bfloat16(float) and
// their float operators; verify/src/scalar/*.cpp): round to nearest, ties to even, subnormals,
// overflow to ±Inf from 65520 on (fp16), NaN quieted with its top payload bits kept. Unlike those,
// every path is computed and the result selected, so that GCC vectorises a loop of them with the
// x86-64 baseline (SSE2) — no variable shifts, no table lookups.
//
// Two steps use float arithmetic, exactly: the fp16 subnormal encoder adds 0.5f (the sum is normal,
// and its rounding to 2^−24 steps is the RNE we want), and the fp16 subnormal decoder subtracts
// 0.5f (exact, the result is normal or zero). Both need round to nearest; FTZ/DAZ cannot change
// them (the only float subnormals involved are encoder inputs, which round to fp16 zero either
// way). The rotation itself needs the default environment anyway.
//
// They are always inlined, so that a loop of them compiled inside a function with a wider target
// (apply_impl.h's AVX2 variant) is vectorised for that target.

#include <bit>
#include <cstdint>

namespace pev::kernel::detail {

/// All ones where `c`, else zero: selections are written as masks so that GCC keeps them
/// branch-free (a conditional that it turns into a branch leaves float operations on one side,
/// which it then may not if-convert under -ftrapping-math).
[[gnu::always_inline]] inline std::uint32_t mask_if(bool c) {
  return 0u - static_cast<std::uint32_t>(c);
}

/// a where `m` is all ones, b where it is zero.
[[gnu::always_inline]] inline std::uint32_t select(std::uint32_t m, std::uint32_t a,
                                                   std::uint32_t b) {
  return (a & m) | (b & ~m);
}

/// bf16 encoding → float: the encoding is the top half of the binary32 encoding.
[[gnu::always_inline]] inline float bf16_bits_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

/// float → bf16 encoding, RNE. NaN: the top 7 payload bits kept and the quiet bit set.
[[gnu::always_inline]] inline std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  // Adding 0x7fff plus the lowest kept bit carries into the kept half exactly when the dropped half
  // is above the midpoint, or on it with an odd kept half (the carry also rounds into ±Inf).
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (x >> 16) | 0x0040u;
  const bool nan = (x & 0x7fffffffu) > 0x7f800000u;
  return static_cast<std::uint16_t>(nan ? quiet_nan : rounded);
}

/// fp16 encoding → float (exact).
[[gnu::always_inline]] inline float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t magnitude = h & 0x7fffu;
  const std::uint32_t exponent = magnitude >> 10;
  // Normal: move exponent and fraction into place (fraction << 13) and rebias 15 → 127 (+112).
  // Inf/NaN (exponent 31): rebias to 255 instead (+224), which keeps the payload as pev does.
  const std::uint32_t shifted = magnitude << 13;
  const std::uint32_t normal = shifted + (112u << 23);
  const std::uint32_t special = shifted + (224u << 23);
  // Subnormal or zero, fraction·2^−24: place the fraction at the bottom of 0.5f's encoding, whose
  // ulp is 2^−24, and subtract 0.5f (exact, the result is zero or a normal float).
  const std::uint32_t subnormal =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(magnitude | 0x3f000000u) - 0.5f);
  const std::uint32_t bits =
      select(mask_if(exponent == 0), subnormal, select(mask_if(exponent == 31), special, normal));
  return std::bit_cast<float>(sign | bits);
}

/// float → fp16 encoding, RNE (F. Giesen's branch-free scheme, with pev's NaN rule).
[[gnu::always_inline]] inline std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7fffffffu;
  // Normal result (2^−14 ≤ |f| < 2^16): rebias (−112 in the exponent field) and drop 13 fraction
  // bits with RNE (add 0xfff plus the lowest kept bit); [65520, 2^16) carries into Inf's exponent.
  const std::uint32_t normal = (abs - (112u << 23) + 0x0fffu + ((abs >> 13) & 1u)) >> 13;
  // Subnormal result (|f| < 2^−14): |f| + 0.5f rounds |f| to a multiple of 2^−24 (the ulp of 0.5)
  // with the FPU's RNE; the low bits of the sum's encoding are the fp16 subnormal fraction (0x400
  // is the carry into the smallest normal, which is the right encoding too).
  const std::uint32_t subnormal =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(abs) + 0.5f) - 0x3f000000u;
  // |f| ≥ 2^16 or not finite: Inf, or NaN with the top 10 payload bits and the quiet bit.
  const std::uint32_t special =
      select(mask_if(abs > 0x7f800000u), 0x7e00u | ((abs >> 13) & 0x03ffu), 0x7c00u);
  const std::uint32_t magnitude = select(mask_if(abs >= 0x47800000u), special,
                                         select(mask_if(abs < 0x38800000u), subnormal, normal));
  return static_cast<std::uint16_t>(sign | magnitude);
}

}  // namespace pev::kernel::detail

#pragma once
// pev::scalar_traits<T>: the description of a binary floating-point format that every
// precision-generic piece of pev uses (docs/design.md §11.1): encoding width, precision, exponent
// range, name, bit access.
//
// Exponent conventions: `precision` p counts the implicit bit (fp32 24). `min_normal_exponent` is
// the IEEE emin (fp32 −126). MPFR's convention writes x = m·2^e with m ∈ [0.5, 1): `mpfr_emax` =
// emax + 1 and `mpfr_emin` = emin − p + 2 (fp32 −148, fp16 −23, bf16 −132; docs/numerics.md §4.1).

#include <bit>
#include <cstdint>
#include <string_view>

#include "pev/scalar/bfloat16.h"
#include "pev/scalar/half.h"

namespace pev {

template <class T>
struct scalar_traits;

namespace detail {
template <class T, class Bits, int TotalBits, int Precision, int ExponentBits>
struct ieee_traits {
  using value_type = T;
  using bits_type = Bits;
  static constexpr int total_bits = TotalBits;
  static constexpr int precision = Precision;
  static constexpr int exponent_bits = ExponentBits;
  static constexpr int mantissa_bits = Precision - 1;
  static constexpr int bias = (1 << (ExponentBits - 1)) - 1;
  static constexpr int min_normal_exponent = 1 - bias;
  static constexpr int max_exponent = bias;
  static constexpr long mpfr_emax = bias + 1;
  static constexpr long mpfr_emin = min_normal_exponent - Precision + 2;
  static constexpr Bits sign_mask = Bits(1) << (TotalBits - 1);
  static constexpr Bits exponent_mask = ((Bits(1) << ExponentBits) - 1) << mantissa_bits;
  static constexpr Bits mantissa_mask = (Bits(1) << mantissa_bits) - 1;
  static constexpr Bits max_finite_bits =
      exponent_mask - (Bits(1) << mantissa_bits) + mantissa_mask;
  static constexpr Bits infinity_bits = exponent_mask;
};
}  // namespace detail

template <>
struct scalar_traits<double> : detail::ieee_traits<double, std::uint64_t, 64, 53, 11> {
  static constexpr std::string_view name = "fp64";
  static constexpr bits_type to_bits(double v) { return std::bit_cast<bits_type>(v); }
  static constexpr double from_bits(bits_type b) { return std::bit_cast<double>(b); }
  static constexpr double to_double(double v) { return v; }
};

template <>
struct scalar_traits<float> : detail::ieee_traits<float, std::uint32_t, 32, 24, 8> {
  static constexpr std::string_view name = "fp32";
  static constexpr bits_type to_bits(float v) { return std::bit_cast<bits_type>(v); }
  static constexpr float from_bits(bits_type b) { return std::bit_cast<float>(b); }
  static constexpr double to_double(float v) { return v; }
};

template <>
struct scalar_traits<half> : detail::ieee_traits<half, std::uint16_t, 16, 11, 5> {
  static constexpr std::string_view name = "fp16";
  static constexpr bits_type to_bits(half v) { return v.bits; }
  static constexpr half from_bits(bits_type b) { return half::from_bits(b); }
  static double to_double(half v) { return static_cast<float>(v); }
};

template <>
struct scalar_traits<bfloat16> : detail::ieee_traits<bfloat16, std::uint16_t, 16, 8, 8> {
  static constexpr std::string_view name = "bf16";
  static constexpr bits_type to_bits(bfloat16 v) { return v.bits; }
  static constexpr bfloat16 from_bits(bits_type b) { return bfloat16::from_bits(b); }
  static double to_double(bfloat16 v) { return static_cast<float>(v); }
};

/// True for a NaN encoding of T.
template <class T>
constexpr bool is_nan_bits(typename scalar_traits<T>::bits_type b) {
  using tr = scalar_traits<T>;
  return (b & tr::exponent_mask) == tr::exponent_mask && (b & tr::mantissa_mask) != 0;
}

/// True for ±Inf encodings of T.
template <class T>
constexpr bool is_inf_bits(typename scalar_traits<T>::bits_type b) {
  using tr = scalar_traits<T>;
  return (b & ~tr::sign_mask) == tr::infinity_bits;
}

}  // namespace pev

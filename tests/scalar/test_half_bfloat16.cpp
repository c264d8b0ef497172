// pev::half and pev::bfloat16 encoders/decoders: exhaustive round trips over all 65,536 encodings,
// float → 16-bit conversion against MPFR on a stride through all 2^32 float patterns, and edge
// cases.

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>

#include "mpfr_oracle.h"
#include "pev/scalar/bfloat16.h"
#include "pev/scalar/half.h"
#include "pev/scalar/traits.h"

namespace pev {
namespace {

using test::mpfr_rounder;

float from_bits32(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint32_t bits32(float f) { return std::bit_cast<std::uint32_t>(f); }

// Independent decoder: the value of a binary16/bfloat16 encoding by its definition,
// (−1)^s · 2^(E−bias) · 1.f for normals, (−1)^s · 2^(1−bias) · 0.f for subnormals.
template <class T>
float decode_by_definition(std::uint16_t b) {
  using tr = scalar_traits<T>;
  const int exponent = (b & tr::exponent_mask) >> tr::mantissa_bits;
  const int fraction = b & tr::mantissa_mask;
  const float sign = (b & tr::sign_mask) != 0 ? -1.0f : 1.0f;
  if (exponent == (1 << tr::exponent_bits) - 1) {
    return fraction == 0 ? sign * std::numeric_limits<float>::infinity()
                         : std::numeric_limits<float>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(fraction), tr::mpfr_emin - 1);
  return sign * std::ldexp(static_cast<float>(fraction + (1 << tr::mantissa_bits)),
                           exponent - tr::bias - tr::mantissa_bits);
}

// Round trip bits → float → bits over every encoding; the decoded float must equal the
// definition, and NaNs must stay NaN (quiet ones bit for bit, signaling ones gain the quiet bit).
template <class T, class ToFloat, class FromFloat>
void check_round_trip_all(ToFloat to_float, FromFloat from_float) {
  using tr = scalar_traits<T>;
  const std::uint16_t quiet_bit = std::uint16_t{1} << (tr::mantissa_bits - 1);
  int checked = 0;
  int nans = 0;
  for (std::uint32_t i = 0; i <= 0xffffu; ++i) {
    const auto b = static_cast<std::uint16_t>(i);
    const float f = to_float(b);
    const std::uint16_t back = from_float(f);
    ++checked;
    if (is_nan_bits<T>(b)) {
      ++nans;
      ASSERT_TRUE(std::isnan(f)) << std::hex << b;
      ASSERT_EQ(std::signbit(f), (b & tr::sign_mask) != 0) << std::hex << b;
      ASSERT_TRUE(is_nan_bits<T>(back)) << std::hex << b;
      ASSERT_EQ(back, b | quiet_bit) << std::hex << b;
      continue;
    }
    const float expected = decode_by_definition<T>(b);
    ASSERT_EQ(bits32(f), bits32(expected)) << std::hex << b;  // also tells −0 from +0
    ASSERT_EQ(back, b) << std::hex << b;
  }
  EXPECT_EQ(checked, 65536);
  std::cout << tr::name << ": " << checked << " encodings round-tripped (" << nans << " NaNs)\n";
}

TEST(Half, RoundTripsAll65536Encodings) {
  check_round_trip_all<half>(detail::half_bits_to_float, detail::float_to_half_bits);
}

TEST(Bfloat16, RoundTripsAll65536Encodings) {
  check_round_trip_all<bfloat16>(detail::bfloat16_bits_to_float, detail::float_to_bfloat16_bits);
}

TEST(Half, StructWrapsTheConversions) {
  EXPECT_EQ(half(1.0f).bits, 0x3c00);
  EXPECT_EQ(static_cast<float>(half::from_bits(0xc000)), -2.0f);
  EXPECT_EQ(half(65504.0f), half::from_bits(0x7bff));
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(bfloat16::from_bits(0xc040)), -3.0f);
}

// The expected 16-bit result for a NaN float: sign, quiet bit and the top payload bits kept.
template <class T>
std::uint16_t expected_nan(std::uint32_t x) {
  using tr = scalar_traits<T>;
  const int dropped = 23 - tr::mantissa_bits;
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const auto payload = static_cast<std::uint16_t>((x & 0x007fffffu) >> dropped);
  return sign | tr::exponent_mask | test::canonical_nan_bits<T>() | payload;
}

// Every `stride`-th float pattern (plus the last one) converted by pev and by MPFR.
template <class T>
void check_stride_against_mpfr(std::uint16_t (*convert)(float), std::uint32_t stride) {
  mpfr_rounder<T> oracle;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t checked = 0;
  std::uint64_t failures = 0;
  for (std::uint64_t i = 0; i <= 0xffffffffu; i += stride) {
    const auto x = static_cast<std::uint32_t>(i);
    const float f = from_bits32(x);
    const std::uint16_t got = convert(f);
    const std::uint16_t want = std::isnan(f) ? expected_nan<T>(x) : oracle.from_float(f);
    ++checked;
    if (got != want && ++failures <= 10) {
      ADD_FAILURE() << scalar_traits<T>::name << " of " << std::hexfloat << f << " (0x" << std::hex
                    << x << "): got 0x" << got << ", MPFR 0x" << want;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(failures, 0u);
  std::cout << "float -> " << scalar_traits<T>::name << ": " << checked
            << " float patterns (stride " << stride << ") agree with MPFR; " << seconds << " s\n";
}

// Stride 97 (prime, so it walks through every residue of the low fraction bits) gives
// 44,278,014 patterns per format.
TEST(Half, FromFloatMatchesMpfrOnStride) {
  check_stride_against_mpfr<half>(detail::float_to_half_bits, 97);
}

TEST(Bfloat16, FromFloatMatchesMpfrOnStride) {
  check_stride_against_mpfr<bfloat16>(detail::float_to_bfloat16_bits, 97);
}

struct edge_case {
  float value;
  std::uint16_t expected;
};

// Each value is checked against the hand-derived encoding, MPFR, and with its sign flipped.
template <class T>
void check_edge_cases(std::uint16_t (*convert)(float), std::initializer_list<edge_case> cases) {
  mpfr_rounder<T> oracle;
  for (const edge_case& c : cases) {
    for (const float sign : {1.0f, -1.0f}) {
      const float f = sign * c.value;
      const auto want = static_cast<std::uint16_t>(c.expected | (sign < 0 ? 0x8000u : 0u));
      EXPECT_EQ(convert(f), want) << std::hexfloat << f;
      EXPECT_EQ(oracle.from_float(f), want) << std::hexfloat << f;
    }
  }
}

TEST(Half, EdgeCases) {
  const float min_sub = 0x1p-24f;
  check_edge_cases<half>(detail::float_to_half_bits,
                         {
                             {0.0f, 0x0000},
                             {1.0f, 0x3c00},
                             {65504.0f, 0x7bff},         // largest finite
                             {65519.99609375f, 0x7bff},  // largest float below 65520
                             {65520.0f, 0x7c00},         // the tie rounds to even = 2^16: overflow
                             {65536.0f, 0x7c00},
                             {std::numeric_limits<float>::max(), 0x7c00},
                             {std::numeric_limits<float>::infinity(), 0x7c00},
                             {2049.0f, 0x6800},          // tie → 2048 (even)
                             {2051.0f, 0x6802},          // tie → 2052
                             {1.0f + 0x1p-11f, 0x3c00},  // tie → even
                             {1.0f + 0x1p-11f + 0x1p-23f, 0x3c01},
                             {1.0f + 3 * 0x1p-11f, 0x3c02},  // tie → even (up)
                             {0x1p-14f, 0x0400},             // smallest normal
                             {0x1p-14f - 0x1p-25f, 0x0400},  // tie between 0x3ff and 0x400 → 0x400
                             {0x1p-14f - 0x1p-25f - 0x1p-38f, 0x03ff},
                             {0x1p-14f - min_sub, 0x03ff},   // largest subnormal
                             {min_sub, 0x0001},              // smallest subnormal
                             {0x1p-25f, 0x0000},             // tie between 0 and 2^−24 → 0
                             {0x1p-25f + 0x1p-48f, 0x0001},  // just above the tie
                             {0x1p-25f - 0x1p-49f, 0x0000},
                             {3 * 0x1p-25f, 0x0002},  // tie between 1 and 2 subnormal ulps → 2
                             {5 * 0x1p-25f, 0x0002},  // tie between 2 and 3 → 2
                             {0x1p-30f, 0x0000},
                             {std::numeric_limits<float>::denorm_min(), 0x0000},
                             {std::numeric_limits<float>::min(), 0x0000},
                         });
}

TEST(Bfloat16, EdgeCases) {
  check_edge_cases<bfloat16>(
      detail::float_to_bfloat16_bits,
      {
          {0.0f, 0x0000},
          {1.0f, 0x3f80},
          {257.0f, 0x4380},              // docs/numerics.md §2.2: 257 → 256
          {1995.0f, 0x44f9},             // → 1992
          {15962.0f, 0x4679},            // → 15936
          {65505.0f, 0x4780},            // → 65536
          {1.0f + 0x1p-8f, 0x3f80},      // tie → even
          {1.0f + 3 * 0x1p-8f, 0x3f82},  // tie → even (up)
          {1.0f + 0x1p-8f + 0x1p-23f, 0x3f81},
          {std::numeric_limits<float>::max(), 0x7f80},  // above (2 − 2^−8)·2^127: overflow
          {from_bits32(0x7f7f7fffu), 0x7f7f},
          {from_bits32(0x7f7f8000u), 0x7f80},  // tie with odd largest finite → Inf
          {from_bits32(0x7f7e8000u), 0x7f7e},  // tie with even neighbour stays finite
          {std::numeric_limits<float>::infinity(), 0x7f80},
          {0x1p-133f, 0x0001},  // smallest bf16 subnormal
          {0x1p-134f, 0x0000},  // tie → 0
          {0x1p-134f + 0x1p-149f, 0x0001},
          {std::numeric_limits<float>::denorm_min(), 0x0000},
          {std::numeric_limits<float>::min(), 0x0080},
          {from_bits32(0x007fffffu), 0x0080},  // largest float subnormal rounds up to min normal
      });
}

TEST(Half, NaNsStayNaN) {
  // Quiet NaN with payload only in the low bits, signaling NaN with a low payload (truncation
  // alone would give Inf), signaling NaN with a high payload, negative NaN.
  for (const std::uint32_t x : {0x7fc00000u, 0x7fc00001u, 0x7f800001u, 0x7fa00000u, 0xffc12345u,
                                0xff800001u, 0x7fffffffu}) {
    const std::uint16_t h = detail::float_to_half_bits(from_bits32(x));
    EXPECT_TRUE(is_nan_bits<half>(h)) << std::hex << x;
    EXPECT_EQ(h, expected_nan<half>(x)) << std::hex << x;
    const std::uint16_t b = detail::float_to_bfloat16_bits(from_bits32(x));
    EXPECT_TRUE(is_nan_bits<bfloat16>(b)) << std::hex << x;
    EXPECT_EQ(b, expected_nan<bfloat16>(x)) << std::hex << x;
  }
  EXPECT_EQ(detail::float_to_half_bits(from_bits32(0x7f800001u)), 0x7e00);
  EXPECT_EQ(detail::float_to_bfloat16_bits(from_bits32(0xffa00000u)), 0xffe0);
  EXPECT_EQ(detail::float_to_half_bits(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  EXPECT_EQ(detail::float_to_bfloat16_bits(std::numeric_limits<float>::quiet_NaN()), 0x7fc0);
}

#ifdef __FLT16_MAX__
// A second, independent opinion where the compiler has _Float16 (GCC ≥ 12 on x86-64: RNE
// conversion in libgcc or F16C; ≈ 80 ns each in libgcc). Every 1021st pattern, NaNs skipped
// (payload rules differ).
TEST(Half, FromFloatMatchesCompilerFloat16) {
  std::uint64_t checked = 0;
  std::uint64_t failures = 0;
  for (std::uint64_t i = 0; i <= 0xffffffffu; i += 1021) {
    const float f = from_bits32(static_cast<std::uint32_t>(i));
    if (std::isnan(f)) continue;
    const auto h = static_cast<_Float16>(f);
    const auto want = std::bit_cast<std::uint16_t>(h);
    ++checked;
    if (detail::float_to_half_bits(f) != want && ++failures <= 10) {
      ADD_FAILURE() << std::hexfloat << f << ": _Float16 0x" << std::hex << want;
    }
  }
  EXPECT_EQ(failures, 0u);
  std::cout << "float -> fp16: " << checked << " float patterns agree with _Float16\n";
}
#endif

}  // namespace
}  // namespace pev

// pev::io::array: dtype names and sizes, the factories and their little-endian layout, and exact
// decoding of every binary16 and bfloat16 encoding against the formats' definitions.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "io_test_util.h"
#include "pev/io/array.h"

namespace pev::io {
namespace {

std::vector<unsigned char> bytes_of(const array& a) {
  std::vector<unsigned char> out;
  for (std::byte b : a.data) out.push_back(std::to_integer<unsigned char>(b));
  return out;
}

TEST(IoArray, DtypeSizesAndNames) {
  EXPECT_EQ(size_of(dtype::fp64), 8u);
  EXPECT_EQ(size_of(dtype::fp32), 4u);
  EXPECT_EQ(size_of(dtype::fp16), 2u);
  EXPECT_EQ(size_of(dtype::bf16), 2u);
  EXPECT_EQ(size_of(dtype::int32), 4u);
  EXPECT_EQ(size_of(dtype::int64), 8u);
  for (dtype t : {dtype::fp64, dtype::fp32, dtype::fp16, dtype::bf16, dtype::int32, dtype::int64}) {
    EXPECT_EQ(parse_safetensors_dtype(safetensors_name(t)), t);
  }
  EXPECT_EQ(safetensors_name(dtype::bf16), "BF16");
}

TEST(IoArray, ParseSafetensorsDtypeRefusesOthers) {
  EXPECT_PEV_ERROR(parse_safetensors_dtype("F8_E4M3"), "'F8_E4M3' is not supported");
  EXPECT_PEV_ERROR(parse_safetensors_dtype("f32"), "supported: F64, F32, F16, BF16, I32, I64");
  EXPECT_PEV_ERROR(parse_safetensors_dtype(""), "not supported");
}

// binary16 by its definition: (−1)^s · 2^(e−15) · (1 + f/1024), subnormals 2^−14 · f/1024.
TEST(IoArray, HalfDecodesEveryEncodingExactly) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const int sign = bits >> 15, exponent = (bits >> 10) & 31, fraction = bits & 1023;
    const float got = half_bits_to_float(bits);
    if (exponent == 31) {
      if (fraction == 0) {
        EXPECT_TRUE(std::isinf(got)) << b;
      } else {
        ASSERT_TRUE(std::isnan(got)) << b;
        EXPECT_EQ((std::bit_cast<std::uint32_t>(got) >> 13) & 1023u,
                  static_cast<unsigned>(fraction));
      }
      EXPECT_EQ(std::signbit(got), sign == 1) << b;
      continue;
    }
    const double magnitude =
        exponent == 0 ? std::ldexp(fraction, -24) : std::ldexp(1024 + fraction, exponent - 25);
    const double want = sign ? -magnitude : magnitude;
    ASSERT_EQ(static_cast<double>(got), want) << "bits 0x" << std::hex << b;
    EXPECT_EQ(std::signbit(got), sign == 1) << b;  // −0 stays −0
  }
}

// bfloat16 by its definition: float's sign and exponent, 7 fraction bits.
TEST(IoArray, Bfloat16DecodesEveryEncodingExactly) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const int sign = bits >> 15, exponent = (bits >> 7) & 255, fraction = bits & 127;
    const float got = bfloat16_bits_to_float(bits);
    if (exponent == 255) {
      EXPECT_TRUE(fraction == 0 ? std::isinf(got) : std::isnan(got)) << b;
      continue;
    }
    const double magnitude =
        exponent == 0 ? std::ldexp(fraction, -133) : std::ldexp(128 + fraction, exponent - 134);
    ASSERT_EQ(static_cast<double>(got), sign ? -magnitude : magnitude)
        << "bits 0x" << std::hex << b;
  }
}

TEST(IoArray, FactoriesStoreLittleEndianRowMajor) {
  EXPECT_EQ(bytes_of(array::from_floats({1}, {1.0f})),
            (std::vector<unsigned char>{0, 0, 0x80, 0x3F}));
  EXPECT_EQ(bytes_of(array::from_doubles({}, {2.5})),
            (std::vector<unsigned char>{0, 0, 0, 0, 0, 0, 4, 0x40}));
  EXPECT_EQ(bytes_of(array::from_int32({2}, {1, -2})),
            (std::vector<unsigned char>{1, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(bytes_of(array::from_int64({1}, {0x0102030405060708})),
            (std::vector<unsigned char>{8, 7, 6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(bytes_of(array::from_bits16(dtype::bf16, {1}, {0x3F80})),
            (std::vector<unsigned char>{0x80, 0x3F}));
}

TEST(IoArray, ConversionsAreExact) {
  const array d = array::from_doubles({2, 2}, {0.1, -0.0, 1e308, 5e-324});
  EXPECT_EQ(d.elements(), 4u);
  const auto dv = d.to_doubles();
  EXPECT_EQ(dv, (std::vector<double>{0.1, -0.0, 1e308, 5e-324}));
  EXPECT_TRUE(std::signbit(dv[1]));

  const array f = array::from_floats({3}, {0.1f, 1e-45f, -3.0f});
  EXPECT_EQ(f.to_doubles(), (std::vector<double>{double(0.1f), double(1e-45f), -3.0}));

  const array h = array::from_bits16(dtype::fp16, {4}, {0x3C00, 0x0001, 0x7BFF, 0xC000});
  EXPECT_EQ(h.to_doubles(), (std::vector<double>{1.0, std::ldexp(1.0, -24), 65504.0, -2.0}));
  EXPECT_EQ(h.to_bits16(), (std::vector<std::uint16_t>{0x3C00, 0x0001, 0x7BFF, 0xC000}));

  const array b = array::from_bits16(dtype::bf16, {2}, {0x3F80, 0x4049});
  EXPECT_EQ(b.to_doubles(), (std::vector<double>{1.0, 3.140625}));

  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  const array i = array::from_int64({3}, {big, std::numeric_limits<std::int64_t>::min(), -1});
  EXPECT_EQ(i.to_int64(),
            (std::vector<std::int64_t>{big, std::numeric_limits<std::int64_t>::min(), -1}));
  EXPECT_EQ(i.to_doubles()[0], std::ldexp(1.0, 53));  // documented: int64 beyond 2^53 rounds

  const array j = array::from_int32({2}, {std::numeric_limits<std::int32_t>::min(), 7});
  EXPECT_EQ(j.to_int64(), (std::vector<std::int64_t>{std::numeric_limits<std::int32_t>::min(), 7}));
  EXPECT_EQ(j.to_doubles(), (std::vector<double>{-2147483648.0, 7.0}));
}

TEST(IoArray, ScalarAndEmptyShapes) {
  const array s = array::from_doubles({}, {4.0});
  EXPECT_EQ(s.elements(), 1u);
  EXPECT_EQ(s.data.size(), 8u);
  const array e = array::from_floats({3, 0}, {});
  EXPECT_EQ(e.elements(), 0u);
  EXPECT_TRUE(e.to_doubles().empty());
}

TEST(IoArray, FactoriesRefuseInconsistentInput) {
  EXPECT_PEV_ERROR(array::from_doubles({2, 2}, {1, 2, 3}), "holds 4 elements but 3 values");
  EXPECT_PEV_ERROR(array::from_floats({-1}, {}), "negative dimension -1");
  EXPECT_PEV_ERROR(array::from_bits16(dtype::fp32, {1}, {0}), "expected F16 or BF16");
  EXPECT_PEV_ERROR(array::from_int64({std::int64_t{1} << 40, std::int64_t{1} << 40}, {}),
                   "overflows");
}

TEST(IoArray, IntegerAndBitsAccessorsCheckTheDtype) {
  EXPECT_PEV_ERROR(array::from_floats({1}, {1.0f}).to_int64(), "expected an integer array");
  EXPECT_PEV_ERROR(array::from_int32({1}, {1}).to_bits16(), "expected F16 or BF16");
}

TEST(IoArray, CheckFindsDataOfTheWrongSize) {
  array a = array::from_floats({2}, {1.0f, 2.0f});
  a.data.pop_back();
  EXPECT_PEV_ERROR(a.check("out.npy"),
                   "out.npy: array of shape [2] and dtype F32 needs 8 bytes but holds 7");
  EXPECT_PEV_ERROR(a.to_doubles(), "needs 8 bytes");
  EXPECT_EQ(shape_string({2, 0, 3}), "[2, 0, 3]");
  EXPECT_EQ(shape_string({}), "[]");
}

}  // namespace
}  // namespace pev::io

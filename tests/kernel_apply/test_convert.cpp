// The RoPE application kernels' fast float ↔ fp16/bf16 converters (verify/src/kernel/
// apply_convert.h, F16C paths in apply_impl.h) give exactly the bits of pev's own conversions
// (pev::half, pev::bfloat16): all 65,536 encodings for the decoders; for the encoders every float
// of the binades where the rules change (fp16 subnormals, the smallest normal, overflow at 65520),
// every high part × the rounding-critical low parts (ties, just above and below), and a stride
// through all 2^32 encodings.

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <vector>

#include "apply_convert.h"
#include "apply_impl.h"
#include "pev/scalar/traits.h"

namespace {

namespace d = pev::kernel::detail;
using pev::bfloat16;
using pev::half;

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float from(std::uint32_t b) { return std::bit_cast<float>(b); }

// Calls f(x) for every float encoding x of the sweep; see the file comment.
void for_each_test_float(int dropped_bits, const std::function<void(std::uint32_t)>& f) {
  // Stride through all encodings (a prime, so every low-bit pattern shows up).
  for (std::uint64_t x = 0; x < (std::uint64_t{1} << 32); x += 1021)
    f(static_cast<std::uint32_t>(x));
  // Every kept part × the low parts that decide rounding.
  const std::uint32_t half_ulp = 1u << (dropped_bits - 1);
  const std::uint32_t low_mask = (1u << dropped_bits) - 1;
  const std::uint32_t lows[] = {
      0, 1, half_ulp - 1, half_ulp, half_ulp + 1, low_mask, 0x5a5a5a5au & low_mask};
  for (std::uint64_t hi = 0; hi < (std::uint64_t{1} << (32 - dropped_bits)); ++hi) {
    for (std::uint32_t lo : lows) f(static_cast<std::uint32_t>(hi << dropped_bits) | lo);
  }
}

TEST(KernelApplyConvert, HalfDecodeAllEncodings) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    ASSERT_EQ(bits(d::half_bits_to_float(h)), bits(pev::detail::half_bits_to_float(h)))
        << std::hex << "encoding 0x" << b;
  }
}

TEST(KernelApplyConvert, Bf16DecodeAllEncodings) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    ASSERT_EQ(bits(d::bf16_bits_to_float(h)), bits(pev::detail::bfloat16_bits_to_float(h)))
        << std::hex << "encoding 0x" << b;
  }
}

TEST(KernelApplyConvert, HalfEncodeSweep) {
  std::uint64_t mismatches = 0;
  std::uint32_t first = 0;
  auto check = [&](std::uint32_t x) {
    if (d::float_to_half_bits(from(x)) != pev::detail::float_to_half_bits(from(x))) {
      if (mismatches++ == 0) first = x;
    }
  };
  for_each_test_float(13, check);
  // Every float of both signs in [2^−27, 2^−13) (fp16 subnormals, the tie to zero, the smallest
  // normal) and in [2^15, 2^17) (65504, the overflow threshold 65520, Inf).
  for (std::uint32_t sign : {0u, 0x80000000u}) {
    for (std::uint32_t x = 100u << 23; x < (114u << 23); ++x) check(sign | x);
    for (std::uint32_t x = 142u << 23; x < (144u << 23); ++x) check(sign | x);
  }
  EXPECT_EQ(mismatches, 0u) << std::hex << "first mismatch at float encoding 0x" << first;
}

TEST(KernelApplyConvert, Bf16EncodeSweep) {
  std::uint64_t mismatches = 0;
  std::uint32_t first = 0;
  for_each_test_float(16, [&](std::uint32_t x) {
    const std::uint16_t want = pev::detail::float_to_bfloat16_bits(from(x));
    // The fused interleaved path keeps the rounded word and takes its top half.
    if (d::float_to_bf16_bits(from(x)) != want || (d::bf16_rounded_word(from(x)) >> 16) != want) {
      if (mismatches++ == 0) first = x;
    }
  });
  EXPECT_EQ(mismatches, 0u) << std::hex << "first mismatch at float encoding 0x" << first;
}

#if PEV_APPLY_X86
// vcvtph2ps / vcvtps2ph against pev, through the same row converters the kernel uses (8 at a time
// plus the scalar tail).
TEST(KernelApplyConvert, F16cMatchesPev) {
  if (d::detected_isa() != d::isa::avx2) GTEST_SKIP() << "no AVX2 + F16C on this CPU";
  // Decoder: all encodings, in rows of 1003 (so the scalar tail runs too).
  std::vector<half> h(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) h[b] = half::from_bits(static_cast<std::uint16_t>(b));
  std::vector<float> f(h.size());
  for (std::size_t i = 0; i < h.size(); i += 1003) {
    d::widen_half_f16c(h.data() + i, f.data() + i, std::min<std::int64_t>(1003, h.size() - i));
  }
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint32_t want = bits(static_cast<float>(h[b]));
    // A signalling NaN may come back quieted (the rotation quiets it anyway); nothing else may
    // differ.
    const bool nan = pev::is_nan_bits<half>(static_cast<std::uint16_t>(b));
    const std::uint32_t got = bits(f[b]) | (nan ? 0x00400000u : 0u);
    ASSERT_EQ(got, want | (nan ? 0x00400000u : 0u)) << std::hex << "encoding 0x" << b;
  }

  // Encoder: the same sweep as HalfEncodeSweep, in batches.
  std::vector<float> in;
  std::vector<half> out;
  std::uint64_t mismatches = 0;
  std::uint32_t first = 0;
  auto flush = [&] {
    out.resize(in.size());
    d::narrow_half_f16c(in.data(), out.data(), static_cast<std::int64_t>(in.size()));
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (out[i].bits != pev::detail::float_to_half_bits(in[i]) && mismatches++ == 0) {
        first = bits(in[i]);
      }
    }
    in.clear();
  };
  auto add = [&](std::uint32_t x) {
    in.push_back(from(x));
    if (in.size() == 4093) flush();
  };
  for_each_test_float(13, add);
  for (std::uint32_t sign : {0u, 0x80000000u}) {
    for (std::uint32_t x = 100u << 23; x < (114u << 23); ++x) add(sign | x);
    for (std::uint32_t x = 142u << 23; x < (144u << 23); ++x) add(sign | x);
  }
  flush();
  EXPECT_EQ(mismatches, 0u) << std::hex << "first mismatch at float encoding 0x" << first;
}
#endif

}  // namespace

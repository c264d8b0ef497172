// ALiBi slopes and T5 buckets against the published rules and transformers' values.

#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "pev/ref/relative.h"

namespace pev {
namespace {

using test::to_d;

TEST(AlibiReference, PowerOfTwoHeads) {
  const auto s = std::get<spec::alibi>(spec::parse_spec("alibi:num_heads=8"));
  const auto m = ref::alibi_slopes(s);
  ASSERT_EQ(m.size(), 8u);
  for (int h = 1; h <= 8; ++h) EXPECT_EQ(m[h - 1], real(std::ldexp(1.0, -h)));
  EXPECT_EQ(ref::alibi_bias(m[0], 10, 7), real("-1.5"));
  EXPECT_EQ(ref::alibi_bias(m[0], 7, 7), 0);
}

TEST(AlibiReference, NonPowerOfTwoHeads) {
  // 12 heads: the 8-head slopes 2^−1 … 2^−8, then 2^−0.5, 2^−1.5, 2^−2.5, 2^−3.5 (every other slope
  // of the 16-head rule), as in ofirpress/attention_with_linear_biases and BLOOM.
  const auto m = ref::alibi_slopes(std::get<spec::alibi>(spec::parse_spec("alibi:num_heads=12")));
  ASSERT_EQ(m.size(), 12u);
  for (int h = 1; h <= 8; ++h) EXPECT_EQ(m[h - 1], real(std::ldexp(1.0, -h)));
  const double extra[] = {std::pow(2.0, -0.5), std::pow(2.0, -1.5), std::pow(2.0, -2.5),
                          std::pow(2.0, -3.5)};
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(to_d(m[8 + k]), extra[k], 1e-16);
}

TEST(AlibiReference, HfRecipeMatchesFloat32Powers) {
  const auto s = std::get<spec::alibi>(spec::parse_spec("alibi:num_heads=12"));
  const auto m = ref::alibi_slopes(s, ref::hf_recipe());
  const float extra_base = static_cast<float>(std::pow(2.0, -0.5));
  EXPECT_EQ(to_d(m[9]), static_cast<double>(
                            static_cast<float>(std::pow(static_cast<double>(extra_base), 3.0))));
}

spec::t5 t5_spec(const std::string& body) {
  return std::get<spec::t5>(spec::parse_spec("t5" + body));
}

TEST(T5Reference, BidirectionalDefaults) {
  const auto s = t5_spec("");  // 32 buckets, max_distance 128, bidirectional
  EXPECT_EQ(ref::t5_bucket(s, 0), 0);
  EXPECT_EQ(ref::t5_bucket(s, -1), 1);
  EXPECT_EQ(ref::t5_bucket(s, 1), 17);
  EXPECT_EQ(ref::t5_bucket(s, -7), 7);
  EXPECT_EQ(ref::t5_bucket(s, -8), 8);
  // n = 16: 8 + trunc(ln 2 / ln 16 · 8) = 8 + 2 (a boundary that is an integer in real arithmetic).
  EXPECT_EQ(ref::t5_bucket(s, -16), 10);
  EXPECT_EQ(ref::t5_bucket(s, -15), 9);
  EXPECT_EQ(ref::t5_bucket(s, -127), 15);
  EXPECT_EQ(ref::t5_bucket(s, -100000), 15);
  EXPECT_EQ(ref::t5_bucket(s, 100000), 31);
  EXPECT_EQ(ref::t5_bucket(s, INT64_MIN), 15);
}

TEST(T5Reference, CausalAndMonotone) {
  const auto s = t5_spec(":bidirectional=false");
  EXPECT_EQ(ref::t5_bucket(s, 5), 0);  // future keys all map to 0
  EXPECT_EQ(ref::t5_bucket(s, -20), 17);
  std::int64_t prev = 0;
  for (std::int64_t n = 0; n < 2000; ++n) {
    const auto b = ref::t5_bucket(s, -n);
    EXPECT_GE(b, prev);
    EXPECT_LT(b, 32);
    prev = b;
  }
}

TEST(T5Reference, IntegerBoundariesAreExact) {
  // 32 buckets, max_distance 4096, causal, n = 2048: ln(128)/ln(256)·16 = 14 exactly → bucket 30.
  spec::t5 s;
  s.max_distance = 4096;
  s.bidirectional = false;
  EXPECT_EQ(ref::t5_bucket(s, -2048), 30);
  EXPECT_EQ(ref::t5_bucket(s, -2047), 29);
  // Defaults: n = 16, 32, 64 are boundaries (2, 4, 6 past the exact buckets).
  const auto d = t5_spec("");
  EXPECT_EQ(ref::t5_bucket(d, -32), 12);
  EXPECT_EQ(ref::t5_bucket(d, -64), 14);
  EXPECT_EQ(ref::t5_bucket(d, -63), 13);
}

TEST(T5Reference, Float32AndExactAgreeOnTheNotesConfigs) {
  // docs/encodings.md §3.2: fp32 and exact agree at every distance for these (num_buckets,
  // max_distance).
  const std::pair<int, int> configs[] = {{16, 128}, {32, 128}, {64, 256}, {160, 800}, {320, 800}};
  for (auto [nb, md] : configs) {
    for (bool bidir : {true, false}) {
      spec::t5 s;
      s.num_buckets = nb;
      s.max_distance = md;
      s.bidirectional = bidir;
      for (std::int64_t r = -5000; r <= 5000; ++r) {
        ASSERT_EQ(ref::t5_bucket(s, r), ref::t5_bucket(s, r, ref::hf_recipe()))
            << nb << "/" << md << " r=" << r;
      }
    }
  }
}

TEST(ShawReference, Clipping) {
  const auto s = std::get<spec::shaw>(spec::parse_spec("shaw:max_relative_position=4"));
  EXPECT_EQ(ref::shaw_clip(s, -10), -4);
  EXPECT_EQ(ref::shaw_clip(s, 3), 3);
  EXPECT_EQ(ref::shaw_clip(s, 9), 4);
}

}  // namespace
}  // namespace pev

// Sinusoidal and learned references against the paper's formula and known tables.

#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "pev/ref/sinusoidal.h"

namespace pev {
namespace {

using test::to_d;

spec::sinusoidal sin_spec(const std::string& body) {
  return std::get<spec::sinusoidal>(spec::parse_spec("sinusoidal:" + body));
}

TEST(SinusoidalReference, PaperTableDModel4) {
  // Vaswani et al. §3.5 with d_model = 4: ω = (1, 0.01). Row p: sin p, cos p, sin p/100, cos p/100.
  const auto s = sin_spec("d_model=4");
  const double expected[4][4] = {{0, 1, 0, 1},
                                 {0.84147098, 0.54030231, 0.00999983, 0.99995000},
                                 {0.90929743, -0.41614684, 0.01999867, 0.99980001},
                                 {0.14112001, -0.98999250, 0.02999550, 0.99955003}};
  for (int p = 0; p < 4; ++p) {
    const auto row = ref::sinusoidal_row(s, p);
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(to_d(row[j]), expected[p][j], 5e-9) << p << "," << j;
  }
  // And against libm in double at a larger position.
  const auto row = ref::sinusoidal_row(s, 1000);
  EXPECT_NEAR(to_d(row[0]), std::sin(1000.0), 1e-15);
  EXPECT_NEAR(to_d(row[3]), std::cos(10.0), 1e-15);
}

TEST(SinusoidalReference, BlockedFairseqFrequencies) {
  // fairseq: h = d/2, ω_j = exp(−j·ln(10000)/(h−1)): first 1, last exactly 1/10000.
  const auto s = sin_spec("d_model=8,layout=blocked");
  const auto w = ref::sinusoidal_frequencies(s);
  EXPECT_EQ(w[0], 1);
  EXPECT_LT(to_d(abs(w[3] - real("0.0001"))), 1e-45);
  const auto row = ref::sinusoidal_row(s, 3);
  EXPECT_NEAR(to_d(row[0]), std::sin(3.0), 1e-15);  // sin block first
  EXPECT_NEAR(to_d(row[4]), std::cos(3.0), 1e-15);  // then cos block
  // freq_shift 0 gives the paper's frequencies ω_j = 10000^(−j/h).
  const auto w0 = ref::sinusoidal_frequencies(sin_spec("d_model=8,layout=blocked,freq_shift=0"));
  EXPECT_LT(to_d(abs(w0[2] - real("0.01"))), 1e-45);
}

TEST(SinusoidalReference, OddDModel) {
  // HF interleaved with odd d: column j uses ω_{⌊j/2⌋}; blocked appends a zero column.
  const auto row = ref::sinusoidal_row(sin_spec("d_model=5"), 2);
  EXPECT_NEAR(to_d(row[4]), std::sin(2 * std::pow(10000.0, -4.0 / 5)), 1e-15);
  const auto blocked = ref::sinusoidal_row(sin_spec("d_model=7,layout=blocked"), 5);
  EXPECT_EQ(blocked[6], 0);
}

TEST(SinusoidalReference, LinearityPeOfShiftIsRotation) {
  // PE(t+k) = M(k)·PE(t), M(k) a 2×2 rotation by k·ω_i per pair (sin, cos).
  const auto s = sin_spec("d_model=16");
  const auto w = ref::sinusoidal_frequencies(s);
  const std::int64_t t = 123456789, k = 987;
  const auto a = ref::sinusoidal_row(s, t);
  const auto b = ref::sinusoidal_row(s, t + k);
  for (int i = 0; i < 8; ++i) {
    const real c = cos(real(k) * w[2 * i]), sn = sin(real(k) * w[2 * i]);
    const real sin_shift = a[2 * i] * c + a[2 * i + 1] * sn;
    const real cos_shift = a[2 * i + 1] * c - a[2 * i] * sn;
    EXPECT_LT(to_d(abs(sin_shift - b[2 * i])), 1e-40);
    EXPECT_LT(to_d(abs(cos_shift - b[2 * i + 1])), 1e-40);
  }
}

TEST(SinusoidalReference, HfRecipeIsFloat64Pipeline) {
  // DistilBERT: pos / np.power(10000, 2*(j//2)/dim) in float64, then sin/cos in float64.
  const auto s = sin_spec("d_model=64");
  const auto row = ref::sinusoidal_row(s, 777, ref::hf_recipe());
  for (int j = 0; j < 64; ++j) {
    const double angle = 777.0 / std::pow(10000.0, 2.0 * (j / 2) / 64.0);
    const double v = j % 2 == 0 ? std::sin(angle) : std::cos(angle);
    // glibc's double sin/cos are within 1 ulp; the recipe rounds the exact trig correctly.
    EXPECT_NEAR(to_d(row[j]), v, 2 * std::ldexp(1.0, -53)) << j;
  }
}

TEST(LearnedReference, LookupAndInterpolation) {
  auto s = std::get<spec::learned>(spec::parse_spec("learned:num_positions=3,d_model=2"));
  s.table = {0, 10, 1, 20, 3, 40};
  const auto r1 = ref::learned_row(s, 1);
  EXPECT_EQ(r1[0], 1);
  EXPECT_EQ(r1[1], 20);
  EXPECT_THROW(ref::learned_row(s, 3), error);
  // align_corners: 3 → 5 rows maps t to t·2/4 = t/2.
  s.target_positions = 5;
  const auto m = ref::learned_row(s, 1);  // x = 0.5
  EXPECT_EQ(m[0], real("0.5"));
  EXPECT_EQ(m[1], 15);
  const auto e = ref::learned_row(s, 4);
  EXPECT_EQ(e[0], 3);
  // align_corners = false: x = (t + ½)·3/5 − ½; t = 2 → 1.0.
  s.align_corners = false;
  EXPECT_EQ(ref::learned_row(s, 2)[0], 1);
  EXPECT_EQ(ref::learned_row(s, 0)[0], 0);  // clamped at 0
  // Half-pixel with a non-dyadic scale: L = 3 → L′ = 7, t = 2: x = (5·3 − 7)/14 = 4/7 exactly.
  s.target_positions = 7;
  const auto h = ref::learned_row(s, 2);
  EXPECT_LT(to_d(abs(h[0] - real(4) / 7)), 1e-45);
  EXPECT_LT(to_d(abs(h[1] - (real(10) * 3 / 7 + real(20) * 4 / 7))), 1e-40);
}

TEST(LearnedReference, OffsetReadsRowPPlusOffset) {
  auto s = std::get<spec::learned>(spec::parse_spec("learned:num_positions=3,d_model=2,offset=1"));
  s.table = {0, 10, 1, 20, 3, 40};
  EXPECT_EQ(ref::learned_row(s, 0)[1], 20);
  EXPECT_EQ(ref::learned_row(s, 1)[1], 40);
  EXPECT_EQ(ref::learned_row(s, -1)[1], 10);
  EXPECT_THROW(ref::learned_row(s, 2), error);
  // Interpolated 3 → 5 rows (align_corners: x = t′/2), position 2 reads row t′ = 3: x = 1.5.
  s.target_positions = 5;
  EXPECT_EQ(ref::learned_row(s, 2)[1], 30);
  const ref::learned_source src = ref::learned_source_of(s, 2);
  EXPECT_EQ(src.i0, 1);
  EXPECT_EQ(src.i1, 2);
  EXPECT_EQ(src.rem, 2);
  EXPECT_EQ(src.den, 4);
}

}  // namespace
}  // namespace pev

// Unit tests of the kernels' building blocks and interfaces: strategy names, the exact narrowing
// helpers, the 192-bit turn reduction, argument checks, layouts, stateful rope types, and the
// `accurate` kernels at positions the contract table does not reach (negative, ≥ 2^24, int64
// extremes).

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "helpers.h"
#include "isa.h"
#include "narrow.h"
#include "pev/kernel/absolute.h"
#include "pev/kernel/relative.h"
#include "pev/kernel/rope.h"
#include "pev/metric/ulp.h"
#include "pev/ref/relative.h"
#include "pev/ref/rope.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"
#include "turns.h"

namespace pev {
namespace {

using kernel::strategy;

// ---------------------------------------------------------------------------------------------
// Strategies.

TEST(KernelStrategy, NamesRoundTripInOrder) {
  const char* names[] = {"hf", "ggml", "table-fp16", "table-bf16", "accurate"};
  ASSERT_EQ(kernel::all_strategies().size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    const strategy s = kernel::all_strategies()[i];
    EXPECT_STREQ(kernel::to_string(s), names[i]);
    EXPECT_EQ(kernel::parse_strategy(names[i]), s);
  }
  EXPECT_EQ(kernel::storage_of(strategy::table_fp16), dtype::fp16);
  EXPECT_EQ(kernel::storage_of(strategy::table_bf16), dtype::bf16);
  EXPECT_EQ(kernel::storage_of(strategy::hf), std::nullopt);
  EXPECT_EQ(kernel::storage_of(strategy::accurate), std::nullopt);
}

TEST(KernelStrategy, UnknownNameListsTheKnownOnes) {
  try {
    kernel::parse_strategy("fast");
    FAIL() << "no error";
  } catch (const error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'fast'"), std::string::npos) << m;
    EXPECT_NE(m.find("hf, ggml, table-fp16, table-bf16, accurate"), std::string::npos) << m;
  }
}

TEST(KernelStrategy, GgmlIsRopeOnly) {
  const auto sin = test::parse_as<spec::sinusoidal>("sinusoidal:d_model=8");
  const auto lrn = test::parse_as<spec::learned>("learned:num_positions=4,d_model=2");
  const auto ali = test::parse_as<spec::alibi>("alibi:num_heads=4");
  const auto t5 = test::parse_as<spec::t5>("t5");
  const std::vector<std::int64_t> p = {0, 1};
  std::vector<float> out(16);
  std::vector<std::int64_t> ids(2);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { kernel::sinusoidal_table<float>(sin, strategy::ggml, p, out); }),
            "strategy ggml has no sinusoidal kernel");
  EXPECT_EQ(message([&] {
              kernel::learned_table<float>(lrn, strategy::ggml, p, std::span(out).first(4));
            }),
            "strategy ggml has no learned kernel");
  EXPECT_EQ(
      message([&] { kernel::alibi_slopes<float>(ali, strategy::ggml, std::span(out).first(4)); }),
      "strategy ggml has no alibi kernel");
  EXPECT_EQ(message([&] { kernel::t5_buckets(t5, strategy::ggml, p, ids); }),
            "strategy ggml has no t5 kernel");
}

TEST(KernelStrategy, ShapeMismatchesThrow) {
  const auto r = test::parse_as<spec::rope>("rope:head_dim=8");
  const kernel::rope_kernel k(r, strategy::hf);
  const std::vector<std::int64_t> p = {0, 1, 2};
  std::vector<float> c(12), s(11);
  EXPECT_THROW(k.table<float>(p, c, s), error);
  const auto lrn = test::parse_as<spec::learned>("learned:num_positions=4,d_model=2");
  std::vector<float> out(2);
  EXPECT_THROW(kernel::learned_table<float>(lrn, strategy::hf, std::vector<std::int64_t>{4}, out),
               error);
  EXPECT_THROW(kernel::learned_table<float>(lrn, strategy::hf, std::vector<std::int64_t>{-1}, out),
               error);
  // offset: position p reads row p + offset (of the interpolated table when it interpolates).
  auto off = test::parse_as<spec::learned>(
      "learned:num_positions=3,d_model=2,target_positions=5,offset=1");
  off.table = {0, 10, 1, 20, 3, 40};
  for (strategy st : {strategy::hf, strategy::accurate}) {
    kernel::learned_table<float>(off, st, std::vector<std::int64_t>{2}, out);  // x = 3/2
    EXPECT_EQ(out[1], 30.0f);
    kernel::learned_table<float>(off, st, std::vector<std::int64_t>{-1}, out);  // row 0
    EXPECT_EQ(out[1], 10.0f);
    EXPECT_THROW(kernel::learned_table<float>(off, st, std::vector<std::int64_t>{4}, out), error);
  }
  const auto ali = test::parse_as<spec::alibi>("alibi:num_heads=4");
  std::vector<float> bias(4 * 3 * 2 + 1);
  EXPECT_THROW(
      kernel::alibi_bias<float>(ali, strategy::hf, p, std::vector<std::int64_t>{0, 1}, bias),
      error);
}

// ---------------------------------------------------------------------------------------------
// Narrowing.

TEST(KernelNarrow, DoubleToSixteenBitsRoundsOnce) {
  // ml_dtypes PR #401: 1 + 2^−8 + 2^−40 must give bf16 1.0078125, not 1.0 (double rounding).
  EXPECT_EQ(static_cast<float>(kernel::detail::narrow<bfloat16>(1 + 0x1p-8 + 0x1p-40)), 1.0078125f);
  EXPECT_EQ(static_cast<float>(kernel::detail::narrow<half>(1 + 0x1p-11 + 0x1p-40)),
            static_cast<float>(1 + 0x1p-10));
  // Every fp16 and bf16 rounding midpoint (and its double neighbours) against MPFR.
  test::splitmix rng(test::test_seed(7));
  std::size_t n = 0;
  for (std::uint32_t b = 0; b < 0x7c00; ++b) {
    const double v = static_cast<float>(half::from_bits(static_cast<std::uint16_t>(b)));
    const double next = static_cast<float>(half::from_bits(static_cast<std::uint16_t>(b + 1)));
    const double mid = (v + next) / 2;
    for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9), -mid,
                     v + (next - v) * static_cast<double>(rng.next() >> 11) * 0x1p-53}) {
      ASSERT_EQ(kernel::detail::narrow<half>(x).bits, round_to<half>(real(x)).bits) << x;
      ++n;
    }
  }
  for (int k = 0; k < 200000; ++k) {
    const double x = std::ldexp(static_cast<double>(rng.next() >> 11) * 0x1p-53 + 0.5,
                                static_cast<int>(rng.in(-140, 128)));
    ASSERT_EQ(kernel::detail::narrow<bfloat16>(x).bits, round_to<bfloat16>(real(x)).bits) << x;
    ASSERT_EQ(kernel::detail::narrow<half>(x).bits, round_to<half>(real(x)).bits) << x;
    ++n;
  }
  std::cout << n << " conversions checked\n";
}

TEST(KernelNarrow, DoubleDoubleAndExactTies) {
  test::splitmix rng(11);
  for (int k = 0; k < 100000; ++k) {
    const double hi = std::ldexp(static_cast<double>(rng.next() >> 11) * 0x1p-53 + 0.5,
                                 static_cast<int>(rng.in(-30, 30)));
    // A low part that puts hi + lo near fp32/fp16 midpoints often: a few bits below hi's ulp.
    const double lo = std::ldexp(
        static_cast<double>(static_cast<std::int64_t>(rng.next() >> 40) - (std::int64_t{1} << 23)),
        std::ilogb(hi) - 53 - 24);
    double h, l;
    kernel::detail::two_sum(hi, lo, h, l);
    const real exact = real(h) + real(l);
    ASSERT_EQ(kernel::detail::narrow_dd<float>(h, l), round_to<float>(exact));
    ASSERT_EQ(kernel::detail::narrow_dd<half>(h, l).bits, round_to<half>(exact).bits);
    ASSERT_EQ(kernel::detail::narrow_dd<bfloat16>(h, l).bits, round_to<bfloat16>(exact).bits);
  }
  // round_checked settles a tie that the approximation cannot see: 1 + 2^−11 is the fp16
  // midpoint between 1 and 1 + 2^−10; the exact comparison decides.
  const auto tie = kernel::detail::round_checked<half>(
      1 + 0x1p-11, 0, 1e-30,
      [](double m) -> std::optional<int> { return m == 1 + 0x1p-11 ? 0 : 1; });
  ASSERT_TRUE(tie.has_value());
  EXPECT_EQ(static_cast<float>(*tie), 1.0f);  // the even neighbour
  const auto above = kernel::detail::round_checked<half>(
      1 + 0x1p-11, 0, 1e-30, [](double) -> std::optional<int> { return 1; });
  EXPECT_EQ(static_cast<float>(*above), static_cast<float>(1 + 0x1p-10));
  const auto unknown = kernel::detail::round_checked<half>(
      1 + 0x1p-11, 0, 1e-30, [](double) -> std::optional<int> { return std::nullopt; });
  EXPECT_FALSE(unknown.has_value());
  EXPECT_EQ(kernel::detail::expansion_sign(std::array<double, 4>{1e300, 1.0, -1e300, -1.0}), 0);
  EXPECT_EQ(kernel::detail::expansion_sign(std::array<double, 3>{1e300, 0x1p-900, -1e300}), 1);
}

// ---------------------------------------------------------------------------------------------
// Turns.

TEST(KernelTurns, ProductIsExactModOneAndReductionIsAccurate) {
  const precision_scope work(400);
  test::splitmix rng(test::test_seed(3));
  const real two_pi = 2 * pi();
  std::vector<std::int64_t> ps = {0,
                                  1,
                                  -1,
                                  2,
                                  (std::int64_t{1} << 24) + 1,
                                  (std::int64_t{1} << 53) - 1,
                                  -(std::int64_t{1} << 53),
                                  std::numeric_limits<std::int64_t>::max(),
                                  std::numeric_limits<std::int64_t>::min()};
  for (int k = 0; k < 40; ++k) ps.push_back(static_cast<std::int64_t>(rng.next()));
  double worst = 0;
  for (int f = 0; f < 40; ++f) {
    // Frequencies like RoPE's: b^(−x) for x ∈ [0, 1), and a few above 2π.
    const real theta = f < 36 ? pow(real(10000), -real(f) / 36) : real(7.5 + f);
    const kernel::detail::turn F = kernel::detail::turn_of_angle(theta);
    for (std::int64_t p : ps) {
      const kernel::detail::turn t = kernel::detail::turn_times(F, p);
      // The exact angle mod 2π.
      real a = real_from_int(p) * theta / two_pi;
      a -= floor(a);
      // Compare through sin/cos: both within ~2^−51 of the exact values.
      const kernel::detail::sin_cos sc = kernel::detail::sincos_of_turn(t);
      const real ang = a * two_pi;
      const double es = std::fabs(sc.sin - round_to<double>(sin(ang)));
      const double ec = std::fabs(sc.cos - round_to<double>(cos(ang)));
      worst = std::max({worst, es, ec});
      ASSERT_LE(es, 0x1p-50) << "p=" << p << " f=" << f;
      ASSERT_LE(ec, 0x1p-50) << "p=" << p << " f=" << f;
    }
  }
  std::cout << "max |sincos_of_turn − exact| = " << worst << "\n";
}

TEST(KernelTurns, TinyRemaindersKeepRelativeAccuracy) {
  // A turn just past 0 and just before ½: sin keeps ~53 bits relative.
  for (int k : {3, 20, 60, 100, 150, 189}) {
    kernel::detail::turn t;
    const int bit = 192 - k;  // t = 2^−k turn
    if (bit >= 128) {
      t.hi = std::uint64_t{1} << (bit - 128);
    } else if (bit >= 64) {
      t.mid = std::uint64_t{1} << (bit - 64);
    } else {
      t.lo = std::uint64_t{1} << bit;
    }
    const double s = kernel::detail::sincos_of_turn(t).sin;
    const double want = std::sin(2 * M_PI * std::ldexp(1.0, -k));
    EXPECT_NEAR(s / want, 1.0, 4e-16) << k;
  }
}

// The accurate row before its vectorisation: sincos_of_turn as it was written per element (the
// negation branch, the switch on the quadrant), times m unless m == 1, then RN or round-to-odd to
// binary32. accurate_row must give these bits on every instruction set.
unsigned scalar_reduce_turn(const kernel::detail::turn& t, double& r) {
  using kernel::detail::pow2;
  const std::uint64_t h = t.hi + (std::uint64_t{1} << 61);
  const unsigned q = static_cast<unsigned>(h >> 62);
  const auto rh =
      static_cast<std::int64_t>(h & ((std::uint64_t{1} << 62) - 1u)) - (std::int64_t{1} << 61);
  std::uint64_t a2 = static_cast<std::uint64_t>(rh), a1 = t.mid, a0 = t.lo;
  const bool negative = rh < 0;
  if (negative) {
    a0 = ~a0 + 1u;
    const std::uint64_t c1 = a0 == 0 ? 1u : 0u;
    a1 = ~a1 + c1;
    const std::uint64_t c2 = (c1 != 0 && a1 == 0) ? 1u : 0u;
    a2 = ~a2 + c2;
  }
  std::uint64_t top;
  int scale;
  if (a2 != 0) {
    const int sh = std::countl_zero(a2);
    top = (a2 << sh) | (a1 >> (64 - sh));
    scale = 128 - sh;
  } else if (a1 != 0) {
    const int sh = std::countl_zero(a1);
    top = sh == 0 ? a1 : (a1 << sh) | (a0 >> (64 - sh));
    scale = 64 - sh;
  } else {
    const int sh = a0 == 0 ? 0 : std::countl_zero(a0);
    top = a0 << sh;
    scale = -sh;
  }
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double mag = static_cast<double>(static_cast<std::int64_t>(top >> 1)) * 2.0;
  r = (negative ? -mag : mag) * (kTwoPi * pow2(scale - 192));
  return q;
}

kernel::detail::sin_cos scalar_sincos_of_turn(const kernel::detail::turn& t) {
  double r;
  const unsigned q = scalar_reduce_turn(t, r);
  const kernel::detail::sin_cos sc = kernel::detail::sincos_reduced(r);
  switch (q) {
    case 0:
      return sc;
    case 1:
      return {sc.cos, -sc.sin};
    case 2:
      return {-sc.sin, -sc.cos};
    default:
      return {-sc.cos, sc.sin};
  }
}

// Every instruction set's accurate_row against the per-element code, bit for bit: random and
// RoPE-like frequencies, turns whose remainders are exactly zero or below 2^−64 turn (the vector
// reduction's rare lanes), positions in and out of the vector reduction's range [0, 2^32), row
// lengths around the vector width, m = 1 and m ≠ 1, RN and round-to-odd.
TEST(KernelTurns, AccurateRowIsTheScalarCodeOnEveryIsa) {
  using kernel::detail::turn;
  test::splitmix rng(test::test_seed(17));
  std::vector<turn> turns;
  for (int k = 0; k < 200; ++k) turns.push_back({rng.next(), rng.next(), rng.next()});
  {
    const precision_scope work(400);
    for (int f = 0; f < 64; ++f) {
      turns.push_back(kernel::detail::turn_of_angle(pow(real(10000), -real(f) / 64)));
    }
  }
  // Quarter and eighth turns (remainder exactly 0 or ⅛ for p = 1), and turns whose multiples by
  // small p land within 2^−64..2^−190 turn of a quadrant boundary.
  for (std::uint64_t hi : {0ull, 1ull << 61, 1ull << 62, 3ull << 62, 1ull << 63}) {
    turns.push_back({hi, 0, 0});
    turns.push_back({hi, 0, 1});
    turns.push_back({hi, 1, 0});
    turns.push_back({hi - 1, ~0ull, ~0ull});
    turns.push_back({hi + 1, 0, 0});
  }
  std::vector<std::int64_t> ps = {0,
                                  1,
                                  2,
                                  3,
                                  4095,
                                  (std::int64_t{1} << 31) - 1,
                                  (std::int64_t{1} << 32) - 1,
                                  std::int64_t{1} << 32,
                                  (std::int64_t{1} << 53) + 1,
                                  -1,
                                  -2,
                                  std::numeric_limits<std::int64_t>::max(),
                                  std::numeric_limits<std::int64_t>::min()};
  for (int k = 0; k < 24; ++k) ps.push_back(static_cast<std::int64_t>(rng.next() >> 33));
  for (int k = 0; k < 8; ++k) ps.push_back(static_cast<std::int64_t>(rng.next()));
  std::vector<kernel::detail::isa> isas = {kernel::detail::isa::baseline};
  if (kernel::detail::detected_isa() == kernel::detail::isa::avx2) {
    isas.push_back(kernel::detail::isa::avx2);
  }
  std::uint64_t compared = 0;
  for (const std::size_t len : {std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{7},
                                std::size_t{64}, std::size_t{67}, turns.size()}) {
    for (std::size_t start = 0; start + len <= turns.size(); start += len) {
      kernel::detail::turn_set set;
      for (std::size_t i = 0; i < len; ++i) set.push_back(turns[start + i]);
      for (const std::int64_t p : ps) {
        for (const double m : {1.0, 0.7071067811865476, 1.25}) {
          for (const bool odd : {false, true}) {
            std::vector<float> want_c(len), want_s(len);
            for (std::size_t i = 0; i < len; ++i) {
              const auto sc = scalar_sincos_of_turn(kernel::detail::turn_times(set[i], p));
              const double c = m == 1.0 ? sc.cos : sc.cos * m;
              const double sn = m == 1.0 ? sc.sin : sc.sin * m;
              want_c[i] = odd ? kernel::detail::round_to_odd_float(c) : static_cast<float>(c);
              want_s[i] = odd ? kernel::detail::round_to_odd_float(sn) : static_cast<float>(sn);
            }
            for (const kernel::detail::isa i : isas) {
              kernel::detail::force_isa(i);
              if (m == 1.0 && !odd) {
                // The reduction itself, bit for bit (most differences of r change no float).
                std::vector<double> r(len);
                std::vector<std::int64_t> q(len);
                kernel::detail::accurate_remainders(set, p, r.data(), q.data());
                for (std::size_t j = 0; j < len; ++j) {
                  double want_r;
                  const unsigned want_q =
                      scalar_reduce_turn(kernel::detail::turn_times(set[j], p), want_r);
                  ASSERT_EQ(std::bit_cast<std::uint64_t>(r[j]),
                            std::bit_cast<std::uint64_t>(want_r))
                      << "isa " << static_cast<int>(i) << ", p=" << p << ", turn " << start + j;
                  ASSERT_EQ(q[j], static_cast<std::int64_t>(want_q));
                }
              }
              std::vector<float> c(len), sn(len);
              kernel::detail::accurate_row(set, p, m, odd, c.data(), sn.data());
              kernel::detail::force_isa(std::nullopt);
              for (std::size_t j = 0; j < len; ++j) {
                ASSERT_EQ(std::bit_cast<std::uint32_t>(c[j]),
                          std::bit_cast<std::uint32_t>(want_c[j]))
                    << "cos, isa " << static_cast<int>(i) << ", p=" << p << ", turn " << start + j
                    << ", m=" << m << ", odd=" << odd;
                ASSERT_EQ(std::bit_cast<std::uint32_t>(sn[j]),
                          std::bit_cast<std::uint32_t>(want_s[j]))
                    << "sin, isa " << static_cast<int>(i) << ", p=" << p << ", turn " << start + j
                    << ", m=" << m << ", odd=" << odd;
                compared += 2;
              }
            }
          }
        }
      }
    }
  }
  std::cout << compared << " values compared on " << isas.size() << " instruction set(s)\n";
}

// ---------------------------------------------------------------------------------------------
// RoPE interfaces and states.

TEST(KernelRope, HfFrequenciesAreTransformersFp32) {
  const auto s = test::parse_as<spec::rope>("rope:head_dim=128,rope_theta=500000");
  kernel::rope_kernel k(s, strategy::hf);
  ASSERT_EQ(k.pairs(), 64);
  EXPECT_EQ(k.spec(), s);
  EXPECT_EQ(k.used_strategy(), strategy::hf);
  for (int i = 0; i < 64; ++i) {
    const float x = static_cast<float>(2 * i) / 128.0f;
    EXPECT_EQ(k.inv_freq()[i], 1.0f / std::pow(500000.0f, x)) << i;
  }
  EXPECT_EQ(k.attention_factor(), 1.0f);
  const kernel::rope_kernel moved = std::move(k);
  EXPECT_EQ(moved.pairs(), 64);
}

TEST(KernelRope, StatefulTypesFollowTheSequenceLength) {
  const auto dyn = test::parse_as<spec::rope>(
      "rope:head_dim=64,rope_type=dynamic,factor=4,max_position_embeddings=1024");
  const auto plain = test::parse_as<spec::rope>("rope:head_dim=64");
  for (strategy st : {strategy::hf, strategy::ggml, strategy::accurate}) {
    const kernel::rope_kernel a(dyn, st, 1000), b(plain, st), c(dyn, st, 8192);
    for (std::int64_t i = 0; i < 32; ++i) EXPECT_EQ(a.inv_freq()[i], b.inv_freq()[i]) << i;
    EXPECT_LT(c.inv_freq()[31], b.inv_freq()[31]) << kernel::to_string(st);
  }
  std::string sf = "[", lf = "[";
  for (int i = 0; i < 4; ++i) {
    sf += (i ? "," : "") + std::to_string(1.0 + 0.01 * i);
    lf += (i ? "," : "") + std::to_string(2.0 + i);
  }
  const auto lr = test::parse_as<spec::rope>(
      "rope:head_dim=8,rope_type=longrope,factor=4,original_max_position_embeddings=4096,"
      "short_factor=" +
      sf + "],long_factor=" + lf + "]");
  for (strategy st : {strategy::hf, strategy::ggml, strategy::accurate}) {
    const kernel::rope_kernel s(lr, st, 4096), l(lr, st, 4097), init(lr, st);
    EXPECT_EQ(s.inv_freq()[3], init.inv_freq()[3]);
    EXPECT_LT(l.inv_freq()[3], s.inv_freq()[3]) << kernel::to_string(st);
    EXPECT_NEAR(l.attention_factor(), std::sqrt(1 + std::log(4.0) / std::log(4096.0)), 1e-6);
  }
}

TEST(KernelRope, AccurateAtExtremePositions) {
  // Negative positions, positions past 2^24 and 2^53, and the int64 extremes: still within 1 ulp
  // of the exact value (the contract table covers [0, 2^24)).
  const auto s = test::parse_as<spec::rope>(
      "rope:head_dim=32,rope_type=yarn,factor=8,original_max_position_embeddings=4096");
  const ref::rope_reference ref(s);
  const kernel::rope_kernel k(s, strategy::accurate);
  const std::vector<std::int64_t> pos = {-1,
                                         -12345,
                                         (std::int64_t{1} << 24) + 1,
                                         (std::int64_t{1} << 40) + 7,
                                         (std::int64_t{1} << 53) - 1,
                                         std::numeric_limits<std::int64_t>::max(),
                                         std::numeric_limits<std::int64_t>::min() + 1};
  std::vector<float> c(pos.size() * 16), sn(c.size());
  std::vector<half> ch(c.size()), sh(c.size());
  k.table<float>(pos, c, sn);
  k.table<half>(pos, ch, sh);
  std::size_t cr = 0;
  for (std::size_t r = 0; r < pos.size(); ++r) {
    const auto row = ref.row(pos[r]);
    for (std::size_t i = 0; i < 16; ++i) {
      const std::size_t j = r * 16 + i;
      const auto dc = metric::ulp_distance(c[j], round_to<float>(row[i].cos));
      const auto ds = metric::ulp_distance(sn[j], round_to<float>(row[i].sin));
      EXPECT_LE(dc, 1u) << "p=" << pos[r] << " i=" << i;
      EXPECT_LE(ds, 1u) << "p=" << pos[r] << " i=" << i;
      EXPECT_LE(metric::ulp_distance(ch[j], round_to<half>(row[i].cos)), 1u);
      EXPECT_LE(metric::ulp_distance(sh[j], round_to<half>(row[i].sin)), 1u);
      cr += (dc == 0) + (ds == 0);
    }
  }
  std::cout << "correctly rounded: " << cr << " / " << 2 * c.size() << "\n";
}

TEST(KernelRope, ProportionalTailIsExactlyNoPE) {
  const auto s = test::parse_as<spec::rope>(
      "rope:head_dim=16,rope_type=proportional,partial_rotary_factor=0.5,factor=2");
  const std::vector<std::int64_t> pos = {0, 7, 123456};
  for (strategy st : kernel::all_strategies()) {
    const kernel::rope_kernel k(s, st);
    std::vector<float> c(pos.size() * 8), sn(c.size());
    k.table<float>(pos, c, sn);
    for (std::size_t r = 0; r < pos.size(); ++r) {
      for (std::size_t i = 4; i < 8; ++i) {
        EXPECT_EQ(c[r * 8 + i], 1.0f) << kernel::to_string(st);
        EXPECT_EQ(sn[r * 8 + i], 0.0f) << kernel::to_string(st);
      }
    }
    for (std::size_t i = 4; i < 8; ++i) EXPECT_EQ(k.inv_freq()[i], 0.0f);
  }
}

// ---------------------------------------------------------------------------------------------
// Absolute and relative families.

TEST(KernelSinusoidal, LayoutsAtPositionZero) {
  const std::vector<std::int64_t> p0 = {0};
  for (strategy st : {strategy::hf, strategy::table_bf16, strategy::accurate}) {
    std::vector<float> out(7);
    kernel::sinusoidal_table<float>(test::parse_as<spec::sinusoidal>("sinusoidal:d_model=7"), st,
                                    p0, out);
    EXPECT_EQ(out, (std::vector<float>{0, 1, 0, 1, 0, 1, 0})) << kernel::to_string(st);
    kernel::sinusoidal_table<float>(
        test::parse_as<spec::sinusoidal>("sinusoidal:d_model=7,layout=blocked"), st, p0, out);
    EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 1, 1, 1, 0})) << kernel::to_string(st);
  }
}

TEST(KernelAlibi, AccurateBiasIsCorrectlyRoundedAtHugeDistances) {
  const auto s = test::parse_as<spec::alibi>("alibi:num_heads=12");
  const auto slopes = ref::alibi_slopes(s);
  const std::vector<std::int64_t> q = {0, std::numeric_limits<std::int64_t>::max()};
  const std::vector<std::int64_t> keys = {std::numeric_limits<std::int64_t>::min(), -1, 3,
                                          (std::int64_t{1} << 62) + 12345};
  std::vector<float> f(12 * 2 * 4);
  std::vector<bfloat16> b(f.size());
  kernel::alibi_bias<float>(s, strategy::accurate, q, keys, f);
  kernel::alibi_bias<bfloat16>(s, strategy::accurate, q, keys, b);
  const precision_scope work(400);
  for (std::size_t h = 0; h < 12; ++h) {
    for (std::size_t a = 0; a < 2; ++a) {
      for (std::size_t k = 0; k < 4; ++k) {
        const real n = real_from_int(keys[k]) - real_from_int(q[a]);
        const real v = slopes[h] * n;
        const std::size_t j = (h * 2 + a) * 4 + k;
        EXPECT_EQ(f[j], round_to<float>(v)) << h << " " << a << " " << k;
        EXPECT_EQ(b[j].bits, round_to<bfloat16>(v).bits) << h << " " << a << " " << k;
      }
    }
  }
}

TEST(KernelT5, AccurateEqualsExactForManyConfigs) {
  // Including configurations whose real bucket boundaries are integer distances.
  std::size_t reference_off = 0;
  for (int nb : {4, 8, 16, 32, 64, 100, 160, 1000}) {
    for (int md : {8, 64, 128, 256, 800, 4096}) {
      for (bool bi : {true, false}) {
        const std::int64_t e = (bi ? nb / 2 : nb) / 2;
        if (md <= e) continue;
        const auto s = test::parse_as<spec::t5>("t5:num_buckets=" + std::to_string(nb) +
                                                ",max_distance=" + std::to_string(md) +
                                                ",bidirectional=" + (bi ? "true" : "false"));
        std::vector<std::int64_t> r;
        for (std::int64_t v = -2 * md; v <= 2 * md; ++v) r.push_back(v);
        std::vector<std::int64_t> got(r.size());
        kernel::t5_buckets(s, strategy::accurate, r, got);
        for (std::size_t i = 0; i < r.size(); ++i) {
          const std::int64_t want = ref::t5_bucket(s, r[i]);
          if (got[i] != want) {
            // The reference rounds its logarithms: at an exact integer boundary it may truncate
            // to the bucket below. Accept the kernel there, and only there.
            ASSERT_EQ(got[i], want + 1) << nb << "," << md << "," << bi << " r=" << r[i];
            ASSERT_TRUE(test::t5_on_integer_boundary(s, r[i], got[i]))
                << nb << "," << md << "," << bi << " r=" << r[i];
            ++reference_off;
          }
        }
      }
    }
  }
  std::cout << reference_off
            << " distances where ref::t5_bucket truncates an exact integer boundary downward\n";
}

}  // namespace
}  // namespace pev

// RoPE reference against independently known values: the worked examples of docs/encodings.md §5
// (computed there from transformers' formulas) and identities that hold exactly.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.h"
#include "pev/ref/rope.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

using test::rel;
using test::rope_spec;
using test::to_d;

// 4-5 significant digits as printed in the notes: relative tolerance half a unit of the last digit.
void expect_sig(const real& got, double printed, double rel_tol) {
  EXPECT_NEAR(to_d(got) / printed, 1.0, rel_tol)
      << "got " << got.str(12) << ", notes say " << printed;
}

TEST(RopeReference, DefaultFrequenciesMatchNotesAndExactPowers) {
  const ref::rope_reference r(rope_spec("head_dim=128,rope_theta=10000"));
  const auto& f = r.inv_freq();
  ASSERT_EQ(f.size(), 64u);
  EXPECT_EQ(f[0], 1);
  expect_sig(f[1], 0.865964, 6e-7);
  expect_sig(f[31], 1.15478e-2, 5e-6);
  expect_sig(f[63], 1.15478e-4, 5e-6);
  // 10000^(−2i/128) is a power of ten for i = 16, 32, 48: exact to the working precision.
  EXPECT_LT(rel(f[16], real("0.1")), 1e-45);
  EXPECT_LT(rel(f[32], real("0.01")), 1e-45);
  EXPECT_LT(rel(f[48], real("0.001")), 1e-45);
  EXPECT_EQ(r.attention_factor(), 1);
}

TEST(RopeReference, LinearIsDefaultOverFactorExactly) {
  const ref::rope_reference plain(rope_spec("head_dim=128"));
  const ref::rope_reference lin(rope_spec("head_dim=128,rope_type=linear,factor=10"));
  for (std::size_t i = 0; i < 64; ++i) {
    EXPECT_LT(rel(lin.inv_freq()[i], plain.inv_freq()[i] / 10), 1e-45) << "pair " << i;
  }
  expect_sig(lin.inv_freq()[1], 0.0865964, 6e-7);
  expect_sig(lin.inv_freq()[63], 1.15478e-5, 5e-6);
  // Property of PI: table_linear[p] = table_default[p/f] at multiples of f.
  const auto a = lin.row(7340);
  const auto b = plain.row(734);
  for (std::size_t i = 0; i < 64; ++i) EXPECT_LT(to_d(abs(a[i].cos - b[i].cos)), 1e-40);
}

TEST(RopeReference, DynamicNtkBaseAndFrequencies) {
  // docs/encodings.md §5.5: L 2048, f 10, seq 16384 → α = 71, b′ = 759702.23.
  const auto s = rope_spec("head_dim=128,rope_type=dynamic,factor=10,max_position_embeddings=2048");
  const ref::rope_reference r(s, ref::exact_recipe(), 16384);
  const auto& f = r.inv_freq();
  const real base = pow(1 / f[1], 64);
  EXPECT_NEAR(to_d(base), 759702.23, 0.01);
  EXPECT_LT(rel(base, 10000 * pow(real(71), real(128) / 126)), 1e-40);
  expect_sig(f[1], 0.80931, 7e-6);
  expect_sig(f[2], 0.65498, 8e-6);
  expect_sig(f[8], 0.18404, 3e-5);
  expect_sig(f[16], 3.3872e-2, 2e-5);
  expect_sig(f[32], 1.1473e-3, 5e-5);
  expect_sig(f[48], 3.8861e-5, 2e-5);
  expect_sig(f[63], 1.6265e-6, 4e-5);
  // seq ≤ L reproduces default exactly.
  const ref::rope_reference shortseq(s, ref::exact_recipe(), 2048);
  const ref::rope_reference plain(rope_spec("head_dim=128"));
  for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(shortseq.inv_freq()[i], plain.inv_freq()[i]);
}

TEST(RopeReference, YarnCorrectionRangeRampAndAttentionFactor) {
  // docs/encodings.md §5.6: d 128, b 1e4, Lo 2048, f 10, β 32/1: raw 16.128 / 40.210 → (16, 41).
  const auto s =
      rope_spec("head_dim=128,rope_type=yarn,factor=10,original_max_position_embeddings=2048");
  const auto range = ref::yarn_correction_range(s);
  EXPECT_NEAR(to_d(range.low_raw), 16.128, 5e-4);
  EXPECT_NEAR(to_d(range.high_raw), 40.210, 5e-4);
  EXPECT_EQ(range.low, 16);
  EXPECT_EQ(range.high, 41);
  const ref::rope_reference r(s);
  const ref::rope_reference plain(rope_spec("head_dim=128"));
  const double expected[] = {8.3479e-2, 6.9590e-2, 5.7925e-2, 4.8136e-2, 3.9931e-2, 3.3061e-2,
                             2.7315e-2, 2.2515e-2, 1.8512e-2, 1.5177e-2, 1.2403e-2, 1.0101e-2,
                             8.1924e-3, 6.6143e-3, 5.3120e-3, 4.2400e-3, 3.3599e-3, 2.6396e-3,
                             2.0520e-3, 1.5746e-3, 1.1882e-3, 8.7713e-4, 6.2810e-4, 4.3007e-4};
  for (std::size_t i = 0; i < 64; ++i) {
    const real& got = r.inv_freq()[i];
    if (i <= 16) {
      EXPECT_EQ(got, plain.inv_freq()[i]) << "pair " << i;
    } else if (i >= 41) {
      EXPECT_LT(rel(got, plain.inv_freq()[i] / 10), 1e-45) << "pair " << i;
    } else {
      expect_sig(got, expected[i - 17], 7e-5);
      // θ' ∈ [θ/f, θ]
      EXPECT_GT(got, plain.inv_freq()[i] / 10);
      EXPECT_LT(got, plain.inv_freq()[i]);
    }
  }
  // m = 0.1·ln 10 + 1 = 1.2302585093.
  EXPECT_LT(rel(r.attention_factor(), real("0.1") * log(real(10)) + 1), 1e-45);
  EXPECT_NEAR(to_d(r.attention_factor()), 1.2302585093, 1e-10);
}

TEST(RopeReference, YarnMscaleTable) {
  // docs/encodings.md §5.7: 0.1·ln f + 1 for f = 2 … 64.
  const std::pair<int, double> table[] = {
      {2, 1.0693147181},  {4, 1.1386294361},  {8, 1.2079441542},  {10, 1.2302585093},
      {16, 1.2772588722}, {32, 1.3465735903}, {40, 1.3688879454}, {64, 1.4158883083}};
  for (const auto& [f, m] : table) {
    EXPECT_NEAR(to_d(ref::yarn_get_mscale(real(f), real(1))), m, 6e-11) << "factor " << f;
  }
  EXPECT_EQ(ref::yarn_get_mscale(real("0.5"), real(1)), 1);
  // DeepSeek-V3: mscale = mscale_all_dim = 1 → m = 1 exactly; softmax multiplier 1.36889²
  // = 1.87385.
  const ref::rope_reference ds(rope_spec(
      "head_dim=64,layout=interleaved,rope_type=yarn,factor=40,original_max_position_embeddings="
      "4096,mscale=1,mscale_all_dim=1"));
  EXPECT_EQ(ds.attention_factor(), 1);
  EXPECT_NEAR(to_d(pow(ref::yarn_get_mscale(real(40), real(1)), 2)), 1.87385, 5e-6);
}

TEST(RopeReference, YarnTruncateFalseKeepsRawRange) {
  // gpt-oss (docs/encodings.md §5.6): truncate false → low/high are the raw values 8.092779…,
  // 17.398024….
  const auto s = rope_spec(
      "head_dim=64,rope_theta=150000,rope_type=yarn,factor=32,original_max_position_embeddings="
      "4096,truncate=false");
  const auto range = ref::yarn_correction_range(s);
  EXPECT_NEAR(to_d(range.low), 8.092779, 1e-6);
  EXPECT_NEAR(to_d(range.high), 17.398024, 1e-6);
}

TEST(RopeReference, Llama3Bands) {
  // docs/encodings.md §5.9: d 128, b 1e4, f 10, low 1, high 4, Lo 2048.
  const ref::rope_reference r(
      rope_spec("head_dim=128,rope_type=llama3,factor=10,low_freq_factor=1,high_freq_factor=4,"
                "original_max_position_embeddings=2048"));
  const ref::rope_reference plain(rope_spec("head_dim=128"));
  const double medium[] = {1.0730e-2, 7.7785e-3, 5.6009e-3, 3.9991e-3, 2.8248e-3,
                           1.9675e-3, 1.3449e-3, 8.9549e-4, 5.7363e-4, 3.4539e-4};
  for (std::size_t i = 0; i < 64; ++i) {
    const real& got = r.inv_freq()[i];
    if (i <= 30) {
      EXPECT_EQ(got, plain.inv_freq()[i]) << "pair " << i;
    } else if (i >= 41) {
      EXPECT_LT(rel(got, plain.inv_freq()[i] / 10), 1e-45) << "pair " << i;
    } else {
      expect_sig(got, medium[i - 31], 8e-5);
    }
  }
  EXPECT_EQ(r.attention_factor(), 1);
}

TEST(RopeReference, Llama3IsContinuousAtBandEdges) {
  // d = 2 gives one pair with θ = 1, λ = 2π. Put λ just inside the medium band at each edge: the
  // blend must approach θ at the high-frequency edge and θ/f at the low-frequency edge.
  const double lo = 8192;
  const double at_edge = lo / (2 * M_PI);
  auto spec_with = [&](double low, double high) {
    std::ostringstream os;
    os.precision(17);
    os << "head_dim=2,rope_type=llama3,factor=8,original_max_position_embeddings=8192,"
       << "low_freq_factor=" << low << ",high_freq_factor=" << high;
    return rope_spec(os.str());
  };
  const ref::rope_reference high_edge(spec_with(1, at_edge * (1 + 1e-12)));
  EXPECT_NEAR(to_d(high_edge.inv_freq()[0]), 1.0, 1e-9);
  EXPECT_LT(high_edge.inv_freq()[0], 1);
  const ref::rope_reference low_edge(spec_with(at_edge * (1 - 1e-12), 2 * at_edge));
  EXPECT_NEAR(to_d(low_edge.inv_freq()[0]), 1.0 / 8, 1e-9);
  EXPECT_GT(low_edge.inv_freq()[0], real(1) / 8);
}

TEST(RopeReference, FactorOneIsPlainRopeForEveryType) {
  const ref::rope_reference plain(rope_spec("head_dim=64,rope_theta=500000"));
  const char* specs[] = {
      "rope_type=linear,factor=1",
      "rope_type=ntk,factor=1",
      "rope_type=dynamic,factor=1,max_position_embeddings=4096",
      "rope_type=yarn,factor=1,original_max_position_embeddings=4096",
      "rope_type=llama3,factor=1,low_freq_factor=1,high_freq_factor=4,"
      "original_max_position_embeddings=8192",
      "rope_type=longrope,factor=1,original_max_position_embeddings=4096,short_factor=[1,1,1,1,1,"
      "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],long_factor=[1,1,1,1,1,1,1,1,1,1,1,"
      "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
      "rope_type=proportional,factor=1,partial_rotary_factor=1",
  };
  for (const char* extra : specs) {
    const auto s = rope_spec(std::string("head_dim=64,rope_theta=500000,") + extra);
    // Dynamic NTK is plain only up to L: at f = 1 its α(s) = s/L still grows past L (below).
    const std::int64_t long_seq = s.type == spec::rope_type::dynamic ? 4096 : 100000;
    for (std::int64_t seq : {std::int64_t(1), long_seq}) {
      const ref::rope_reference r(s, ref::exact_recipe(), seq);
      EXPECT_EQ(r.attention_factor(), 1) << extra;
      for (std::size_t i = 0; i < 32; ++i) {
        EXPECT_LT(rel(r.inv_freq()[i], plain.inv_freq()[i]), 1e-45) << extra << " pair " << i;
      }
    }
  }
}

TEST(RopeReference, DynamicAtFactorOneStillScalesPastL) {
  // transformers' α(s) = f·s/L − (f − 1) is s/L at f = 1: the base changes once s > L. Recorded
  // here because "factor 1 is plain RoPE" holds for dynamic NTK only up to max_position_embeddings.
  const auto s = rope_spec("head_dim=64,rope_type=dynamic,factor=1,max_position_embeddings=4096");
  const ref::rope_reference r(s, ref::exact_recipe(), 8192);
  const real base = pow(1 / r.inv_freq()[1], 32);
  EXPECT_LT(rel(base, 10000 * pow(real(2), real(64) / 62)), 1e-40);
}

TEST(RopeReference, ProportionalZeroTailAndLinearEquivalence) {
  const ref::rope_reference prop(
      rope_spec("head_dim=128,rope_type=proportional,partial_rotary_factor=0.25,factor=8"));
  const ref::rope_reference lin(rope_spec("head_dim=128,rope_type=linear,factor=8"));
  // int(0.25·128 // 2) = 16 rotating pairs with full-dim frequencies, then exact zeros.
  for (std::size_t i = 0; i < 64; ++i) {
    if (i < 16) {
      EXPECT_LT(rel(prop.inv_freq()[i], lin.inv_freq()[i]), 1e-45);
    } else {
      EXPECT_EQ(prop.inv_freq()[i], 0) << "pair " << i;
    }
  }
  const auto row = prop.row(123456);
  EXPECT_EQ(row[40].cos, 1);
  EXPECT_EQ(row[40].sin, 0);
}

TEST(RopeReference, LongropeSelectsByLengthAndScales) {
  std::string shortf = "[", longf = "[";
  for (int i = 0; i < 48; ++i) {
    shortf += (i ? "," : "") + std::to_string(1.0 + 0.001 * i);
    longf += (i ? "," : "") + std::to_string(1.0 + 0.5 * i);
  }
  const auto s = rope_spec(
      "head_dim=96,rope_type=longrope,factor=32,original_max_position_"
      "embeddings=4096,short_factor=" +
      shortf + "],long_factor=" + longf + "]");
  const ref::rope_reference plain(rope_spec("head_dim=96"));
  const ref::rope_reference at_lo(s, ref::exact_recipe(), 4096);
  const ref::rope_reference past(s, ref::exact_recipe(), 4097);
  for (std::size_t i = 0; i < 48; ++i) {
    EXPECT_LT(rel(at_lo.inv_freq()[i], plain.inv_freq()[i] / s.short_factor[i]), 1e-45);
    EXPECT_LT(rel(past.inv_freq()[i], plain.inv_freq()[i] / s.long_factor[i]), 1e-45);
  }
  // Phi-3-128k: √(1 + ln 32 / ln 4096) = 1.1902380714.
  EXPECT_NEAR(to_d(past.attention_factor()), 1.1902380714, 1e-10);
  EXPECT_EQ(past.attention_factor(), at_lo.attention_factor());
}

TEST(RopeReference, NtkBase) {
  // YaRN App. A.1: f 4, d 128 → b′ = 40889.94.
  const ref::rope_reference r(rope_spec("head_dim=128,rope_type=ntk,factor=4"));
  EXPECT_NEAR(to_d(pow(1 / r.inv_freq()[1], 64)), 40889.94, 0.01);
  // The lowest frequency scales like PI (÷f) while the highest is unchanged.
  const ref::rope_reference plain(rope_spec("head_dim=128"));
  EXPECT_EQ(r.inv_freq()[0], 1);
  EXPECT_LT(rel(r.inv_freq()[63] * pow(real(4), real(126) / 126), plain.inv_freq()[63]), 1e-40);
}

TEST(RopeReference, RotationLayoutsPartialRotaryAndAttentionFactor) {
  const auto s = rope_spec(
      "head_dim=8,partial_rotary_factor=0.5,rope_type=yarn,factor=4,"
      "original_max_position_embeddings=64");
  for (auto layout : {spec::rope_layout::neox, spec::rope_layout::interleaved}) {
    auto sl = s;
    sl.layout = layout;
    const ref::rope_reference r(sl);
    std::vector<real> x;
    for (int k = 0; k < 8; ++k) x.push_back(real(k + 1));
    const auto y = r.rotate(1000, x);
    // Pass-through dims untouched.
    for (int k = 4; k < 8; ++k) EXPECT_EQ(y[k], x[k]);
    // Norm of the rotated part is m·‖x_rot‖.
    real nx = 0, ny = 0;
    for (int k = 0; k < 4; ++k) {
      nx += x[k] * x[k];
      ny += y[k] * y[k];
    }
    EXPECT_LT(rel(sqrt(ny), r.attention_factor() * sqrt(nx)), 1e-40);
    // Pairing per layout: pair 0 is (x0, x2) in neox and (x0, x1) interleaved.
    const auto cs = r.row(1000);
    const std::size_t partner = layout == spec::rope_layout::neox ? 2 : 1;
    EXPECT_LT(rel(y[0], x[0] * cs[0].cos - x[partner] * cs[0].sin), 1e-40);
    std::vector<real> cf, sf;
    r.expand(cs, cf, sf);
    ASSERT_EQ(cf.size(), 4u);
    EXPECT_EQ(cf[1], layout == spec::rope_layout::neox ? cs[1].cos : cs[0].cos);
  }
}

TEST(RopeReference, HugePositionsStayAccurate) {
  // cos(p·1) at p = 2^40 + 1 and 2^62: pair 0 has θ = 1 exactly, so the reference must equal MPFR's
  // cos of the integer evaluated independently at a much higher precision.
  const ref::rope_reference r(rope_spec("head_dim=4"));
  for (std::int64_t p : {(std::int64_t(1) << 40) + 1, std::int64_t(1) << 62, INT64_MAX}) {
    const auto row = r.row(p);
    real hi;
    {
      const precision_scope high(600);
      hi = cos(real_from_int(p));
    }
    EXPECT_LT(to_d(abs(row[0].cos - hi)), 1e-45) << "p = " << p;
  }
}

TEST(RopeRecipe, HfRoundsWhereTransformersRounds) {
  const auto s = rope_spec("head_dim=128");
  const ref::rope_reference hf(s, ref::hf_recipe());
  const ref::rope_reference ex(s);
  for (std::size_t i = 0; i < 64; ++i) {
    const double v = to_d(hf.inv_freq()[i]);
    EXPECT_EQ(real(static_cast<float>(v)), hf.inv_freq()[i]) << "inv_freq is fp32";
    // 1/powf: k_f·u with k_f ≈ 1.17 (docs/numerics.md §5.2); an fp32 pipeline is within 2 u.
    EXPECT_LT(rel(hf.inv_freq()[i], ex.inv_freq()[i]), 2 * std::ldexp(1.0, -24)) << i;
  }
  // The angle is fp32(fp32(p)·f̂): at p = 2^24 + 1 the position itself rounds to 2^24.
  const std::int64_t p = (1 << 24) + 1;
  EXPECT_EQ(hf.angle(p, 0), real(1 << 24));
  // cos/sin are fp32 values.
  for (const auto& cs : hf.row(1000)) {
    EXPECT_EQ(real(static_cast<float>(to_d(cs.cos))), cs.cos);
  }
}

TEST(RopeRecipe, GgmlRecurrenceMatchesPowerWithinItsEnvelope) {
  // docs/encodings.md §8.2, docs/numerics.md §8.7: the fp32 recurrence has a systematic frequency
  // error; its angle error envelope is p·n_dims/(2e·ln b)·(|δ| + 2^−24) — with |δ| ≤ 2^−24 here, at
  // p = 1000 ≈ 1000·128/(2e·9.21)·2^−23.
  const auto s = rope_spec("head_dim=128");
  const ref::rope_reference gg(s, ref::ggml_recipe());
  const ref::rope_reference ex(s);
  const std::int64_t p = 1000;
  const double envelope = p * 128.0 / (2 * M_E * std::log(10000.0)) * std::ldexp(1.0, -23);
  for (std::int64_t i = 0; i < 64; ++i) {
    const double err = to_d(abs(gg.angle(p, i) - ex.angle(p, i)));
    EXPECT_LE(err, envelope) << "pair " << i;
  }
  EXPECT_EQ(gg.angle(p, 0), p);  // θ_0 = float(p) exactly
}

TEST(RopeRecipe, GgmlYarnMagnitudeReproducesTransformersFactor) {
  const auto s =
      rope_spec("head_dim=128,rope_type=yarn,factor=16,original_max_position_embeddings=4096");
  const ref::rope_reference gg(s, ref::ggml_recipe());
  const auto row0 = gg.row(0);
  // cos(0)·mscale: fp32(attn_factor·(1 + 0.1f·logf(16))) ≈ 0.1·ln 16 + 1 = 1.2772588722.
  EXPECT_NEAR(to_d(row0[0].cos), 1.2772588722, 3e-7);
}

// The ggml form's exact reference (docs/encodings.md §8.7) against an independent evaluation of the
// same formulas in long double (64-bit significand), at a few points: ggml_rope_ext's parameters as
// floats, the correction dims from n_ctx_orig (0: [0, −∞]), the ramp·ext_factor mix, the per-pair
// factors and the magnitude attn_factor·(1 + 0.1·ln(1/freq_scale)).
TEST(RopeReference, GgmlFormMatchesAnIndependentEvaluation) {
  std::string ff = "[";
  for (int i = 0; i < 64; ++i)
    ff += (i ? "," : "") + std::to_string(0.9 + 0.2 * ((i * 37) % 64) / 64.0);
  ff += "]";
  const std::vector<std::string> specs = {
      // test-backend-ops: fs 1.4245, ef 0.7465, af 1.4245, n_ctx_orig 0, betas 1/1, factors.
      "ggml:head_dim=128,mode=normal,freq_scale=1.4245,ext_factor=0.7465,attn_factor=1.4245,"
      "beta_fast=1,beta_slow=1,freq_factors=" +
          ff,
      // YaRN-like, a partial mix, NEOX.
      "ggml:head_dim=128,mode=neox,freq_base=500000,freq_scale=0.25,ext_factor=0.5,"
      "attn_factor=0.9,n_ctx_orig=8192",
      // Partial n_dims, full mix, a short original context.
      "ggml:head_dim=80,n_dims=20,mode=normal,freq_scale=0.5,ext_factor=1,n_ctx_orig=512",
      // ext_factor 0: plain scaled RoPE, attn_factor alone.
      "ggml:head_dim=64,mode=neox,freq_base=1000000,freq_scale=1.4245,attn_factor=0.75",
  };
  using ld = long double;
  const auto F = [](double v) { return static_cast<ld>(static_cast<float>(v)); };
  for (const std::string& text : specs) {
    SCOPED_TRACE(text);
    const spec::rope s = std::get<spec::rope>(spec::parse_spec(text));
    const ref::rope_reference r(s);
    const std::int64_t n = s.rotary_dim;
    const ld b = F(s.rope_theta), fs = F(s.freq_scale), ef = F(s.ext_factor);
    ld low = 0, high = -std::numeric_limits<ld>::infinity();
    if (s.original_max_position_embeddings != 0) {
      const auto cdim = [&](double beta) {
        return ld(n) *
               std::log(ld(s.original_max_position_embeddings) /
                        (F(beta) * 2 * 3.141592653589793238462643383279502884L)) /
               (2 * std::log(b));
      };
      low = std::max<ld>(0, std::floor(cdim(s.beta_fast)));
      high = std::min<ld>(ld(n - 1), std::ceil(cdim(s.beta_slow)));
    }
    std::vector<ld> theta(static_cast<std::size_t>(n / 2));
    for (std::int64_t i = 0; i < n / 2; ++i) {
      ld t = std::pow(b, -ld(2 * i) / ld(n));
      if (!s.freq_factors.empty()) t /= F(s.freq_factors[static_cast<std::size_t>(i)]);
      const ld y = (ld(i) - low) / std::max<ld>(0.001L, high - low);
      const ld ramp = 1 - std::min<ld>(1, std::max<ld>(0, y));
      const ld mix = ef == 0 ? 0 : ramp * ef;
      theta[static_cast<std::size_t>(i)] = fs * t * (1 - mix) + t * mix;
      EXPECT_NEAR(to_d(r.inv_freq()[static_cast<std::size_t>(i)]) /
                      double(theta[static_cast<std::size_t>(i)]),
                  1.0, 1e-15)
          << "pair " << i;
    }
    const ld m = ef == 0 ? F(s.attn_factor) : F(s.attn_factor) * (1 + 0.1L * std::log(1 / fs));
    EXPECT_NEAR(to_d(r.attention_factor()) / double(m), 1.0, 1e-15);
    for (std::int64_t p : {1, 100, 511, 4097}) {
      const auto row = r.row(p);
      for (std::int64_t i = 0; i < n / 2; ++i) {
        const ld a = ld(p) * theta[static_cast<std::size_t>(i)];
        EXPECT_NEAR(to_d(row[static_cast<std::size_t>(i)].cos), double(m * std::cos(a)), 1e-13)
            << "p " << p << " pair " << i;
        EXPECT_NEAR(to_d(row[static_cast<std::size_t>(i)].sin), double(m * std::sin(a)), 1e-13)
            << "p " << p << " pair " << i;
      }
    }
  }
}

}  // namespace
}  // namespace pev

// MRoPE (docs/encodings.md §4.6): the pair → stream rule against the conventions of transformers
// (Qwen2-VL / Qwen2.5-VL consecutive sections, Qwen3-VL interleaved) and ggml (MROPE / IMROPE with
// four sections), SPEC round trips and validation, and the composition every implementation uses:
// text tokens (t = h = w) equal 1-D RoPE bit for bit for every strategy and dtype, each section
// against an independent MPFR evaluation of its own stream's angles, the exact reference's MRoPE
// row and rotation, and the four MRoPE mistakes of the mutant catalogue.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "pev/compare/reference.h"
#include "pev/core/error.h"
#include "pev/core/real.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/metric/ulp.h"
#include "pev/ref/rope.h"
#include "pev/scalar/round.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

spec::rope parse_rope(const std::string& text) {
  return std::get<spec::rope>(spec::parse_spec(text));
}

const char* kQwen25VL = "rope:head_dim=128,rope_theta=1000000,mrope_section=[16,24,24]";
const char* kQwen3VL =
    "rope:head_dim=128,rope_theta=5000000,mrope_section=[24,20,20],mrope_interleaved=true";

std::vector<std::int64_t> streams_of(const std::string& text) {
  return spec::mrope_streams(parse_rope(text));
}

TEST(MropeSpec, ConsecutiveSectionsAsTransformersSplitsThem) {
  // apply_multimodal_rotary_pos_emb splits the head_dim-wide cos by mrope_section·2 and takes
  // chunk k from stream k mod 3: pairs [0,16) t, [16,40) h, [40,64) w.
  const auto map = streams_of(kQwen25VL);
  ASSERT_EQ(map.size(), 64u);
  for (std::size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(map[i], i < 16 ? 0 : i < 40 ? 1 : 2) << "pair " << i;
  }
}

TEST(MropeSpec, InterleavedAsQwen3VL) {
  // apply_interleaved_mrope: h on i ≡ 1 (mod 3) below 3·20, w on i ≡ 2 below 3·20, else t.
  const auto map = streams_of(kQwen3VL);
  ASSERT_EQ(map.size(), 64u);
  for (std::int64_t i = 0; i < 64; ++i) {
    const std::int64_t want = i % 3 == 1 && i < 60 ? 1 : i % 3 == 2 && i < 60 ? 2 : 0;
    EXPECT_EQ(map[static_cast<std::size_t>(i)], want) << "pair " << i;
  }
}

TEST(MropeSpec, GgmlFourSectionsRepeatWithTheirSum) {
  // ggml MROPE: sector = pair mod Σ sections; [2,1,1,0] over 8 pairs → t t h w t t h w.
  EXPECT_EQ(streams_of("rope:head_dim=16,mrope_section=[2,1,1,0]"),
            (std::vector<std::int64_t>{0, 0, 1, 2, 0, 0, 1, 2}));
  // The fourth stream e takes what follows w.
  EXPECT_EQ(streams_of("rope:head_dim=8,mrope_section=[1,1,1,1]"),
            (std::vector<std::int64_t>{0, 1, 2, 3}));
  // IMROPE: t only on sectors ≡ 0 below 3·s0, e for the rest (sector 3: 3 < 3·1 fails).
  EXPECT_EQ(streams_of("rope:head_dim=12,mrope_section=[1,1,1,3],mrope_interleaved=true"),
            (std::vector<std::int64_t>{0, 1, 2, 3, 3, 3}));
}

TEST(MropeSpec, SectionsPartitionThePairs) {
  for (const char* text : {kQwen25VL, kQwen3VL}) {
    const spec::rope s = parse_rope(text);
    std::vector<std::int64_t> count(static_cast<std::size_t>(s.streams()), 0);
    for (const std::int64_t k : spec::mrope_streams(s)) {
      ASSERT_GE(k, 0);
      ASSERT_LT(k, s.streams());
      ++count[static_cast<std::size_t>(k)];
    }
    // Every pair in exactly one stream; consecutive and interleaved give each stream its section.
    EXPECT_EQ(std::accumulate(count.begin(), count.end(), std::int64_t{0}), s.pairs()) << text;
    EXPECT_EQ(count, s.mrope_section) << text;
  }
}

TEST(MropeSpec, SpecStringRoundTripsAndIsStrict) {
  for (const char* text : {kQwen25VL, kQwen3VL, "rope:head_dim=16,mrope_section=[2,1,1,0]"}) {
    const spec::encoding e = spec::parse_spec(text);
    EXPECT_EQ(spec::to_spec_string(e), text);
    EXPECT_EQ(spec::parse_spec(spec::to_spec_string(e)), e);
  }
  EXPECT_EQ(parse_rope(kQwen25VL).streams(), 3);
  EXPECT_EQ(parse_rope("rope:head_dim=16,mrope_section=[2,1,1,0]").streams(), 4);
  EXPECT_EQ(parse_rope("rope:head_dim=16").streams(), 1);
  // Sections count pairs: [32,48,48] (dims) is refused, naming the rule.
  try {
    spec::parse_spec("rope:head_dim=128,mrope_section=[32,48,48]");
    FAIL() << "accepted sections in dims";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("must sum to rotary_dim/2 = 64"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(spec::parse_spec("rope:head_dim=8,mrope_section=[4]"), error);
  EXPECT_THROW(spec::parse_spec("rope:head_dim=8,mrope_section=[1,1,1,1,0]"), error);
  EXPECT_THROW(spec::parse_spec("rope:head_dim=8,mrope_section=[1.5,1.5,1]"), error);
  EXPECT_THROW(spec::parse_spec("rope:head_dim=8,mrope_section=[-1,4,1]"), error);
  EXPECT_THROW(spec::parse_spec("rope:head_dim=8,mrope_section=[0,0,0,0]"), error);
  EXPECT_THROW(spec::parse_spec("rope:head_dim=8,mrope_interleaved=true"), error);
  EXPECT_THROW(spec::parse_spec("rope:head_dim=8,mrope_section=4"), error);
}

// A few tokens of a multimodal sequence: a text prefix (t = h = w), then image patches whose
// height/width positions differ from the temporal one, then text again, and large positions.
std::vector<std::int64_t> vision_positions(std::int64_t streams, std::int64_t& tokens) {
  // clang-format off
  const std::vector<std::int64_t> t = {0, 1, 2, 3, 3, 3, 3,  7, 8, 65505, 1 << 20, (1 << 24) + 1};
  const std::vector<std::int64_t> h = {0, 1, 2, 3, 3, 4, 4,  7, 8, 65537, 3,       (1 << 24) + 1};
  const std::vector<std::int64_t> w = {0, 1, 2, 3, 4, 3, 4,  7, 8, 2049,  1 << 21, 5};
  // clang-format on
  tokens = static_cast<std::int64_t>(t.size());
  std::vector<std::int64_t> pos = t;
  pos.insert(pos.end(), h.begin(), h.end());
  pos.insert(pos.end(), w.begin(), w.end());
  for (std::int64_t k = 3; k < streams; ++k) pos.insert(pos.end(), w.rbegin(), w.rend());
  return pos;
}

template <class T>
std::vector<std::uint64_t> bits(const std::vector<T>& v) {
  std::vector<std::uint64_t> out;
  for (T x : v) out.push_back(static_cast<std::uint64_t>(scalar_traits<T>::to_bits(x)));
  return out;
}

template <class T>
void text_tokens_equal_plain(const spec::rope& s, kernel::strategy st) {
  const auto im = impl::make_builtin(spec::encoding{s}, st);
  const std::vector<std::int64_t> one = {0, 1, 257, 2049, 65505, (1 << 24) + 1, 1 << 30};
  const auto S = static_cast<std::size_t>(s.streams());
  std::vector<std::int64_t> pos;
  for (std::size_t k = 0; k < S; ++k) pos.insert(pos.end(), one.begin(), one.end());
  const std::size_t n = one.size() * static_cast<std::size_t>(s.pairs());
  std::vector<T> c(n), sn(n), c1(n), s1(n);
  im->rope_table_streams<T>(pos, std::nullopt, std::span<T>(c), std::span<T>(sn));
  im->rope_table(one, std::nullopt, std::span<T>(c1), std::span<T>(s1));
  EXPECT_EQ(bits(c), bits(c1)) << kernel::to_string(st);
  EXPECT_EQ(bits(sn), bits(s1)) << kernel::to_string(st);
  // The plain spec (no mrope_section) gives the same bits: the plan changes nothing for text.
  spec::rope plain = s;
  plain.mrope_section.clear();
  plain.mrope_interleaved = false;
  const auto ip = impl::make_builtin(spec::encoding{plain}, st);
  ip->rope_table(one, std::nullopt, std::span<T>(c1), std::span<T>(s1));
  EXPECT_EQ(bits(c), bits(c1)) << kernel::to_string(st);
  EXPECT_EQ(bits(sn), bits(s1)) << kernel::to_string(st);
  // Rotation of text tokens equals the 1-D rotation.
  const std::int64_t T_ = static_cast<std::int64_t>(one.size()), H = 2, D = s.head_dim;
  std::vector<T> x(static_cast<std::size_t>(T_ * H * D));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = T(static_cast<float>(i % 11) * 0.375f - 2.0f);
  std::vector<T> y(x.size()), y1(x.size());
  im->rope_rotate_streams<T>(pos, std::nullopt, kernel::heads_view<const T>{x, T_, H, D},
                             kernel::heads_view<T>{y, T_, H, D});
  ip->rope_rotate(one, std::nullopt, kernel::heads_view<const T>{x, T_, H, D},
                  kernel::heads_view<T>{y1, T_, H, D});
  EXPECT_EQ(bits(y), bits(y1)) << kernel::to_string(st);
}

TEST(MropeImplementations, TextTokensEqualPlainRopeBitForBit) {
  for (const char* text : {kQwen25VL, kQwen3VL,
                           "rope:head_dim=64,rope_theta=10000,mrope_section=[4,6,6,0],layout="
                           "interleaved"}) {
    const spec::rope s = parse_rope(text);
    for (const kernel::strategy st : kernel::all_strategies()) {
      SCOPED_TRACE(text);
      text_tokens_equal_plain<float>(s, st);
      text_tokens_equal_plain<half>(s, st);
      text_tokens_equal_plain<bfloat16>(s, st);
    }
  }
}

// The independent evaluation: cos and sin of p·b^(−2i/d) computed here in MPFR, for the pair's own
// stream position, rounded once to T. The accurate strategy's contract is ≤ 1 ulp at every
// position (kernel/rope.h); the exact reference's MRoPE row must round to the same value.
template <class T>
void sections_against_independent_evaluation(const spec::rope& s) {
  std::int64_t n = 0;
  const std::vector<std::int64_t> pos = vision_positions(s.streams(), n);
  const auto P = static_cast<std::size_t>(s.pairs());
  const auto im = impl::make_builtin(spec::encoding{s}, kernel::strategy::accurate);
  std::vector<T> c(static_cast<std::size_t>(n) * P), sn(c.size());
  im->rope_table_streams<T>(pos, std::nullopt, std::span<T>(c), std::span<T>(sn));
  const ref::rope_reference rr(s);
  const precision_scope work(default_precision_bits() + 128);
  std::uint64_t worst = 0;
  for (std::int64_t tok = 0; tok < n; ++tok) {
    std::vector<std::int64_t> sp;
    for (std::int64_t k = 0; k < s.streams(); ++k)
      sp.push_back(pos[static_cast<std::size_t>(k * n + tok)]);
    const auto row = rr.row(sp);
    for (std::size_t i = 0; i < P; ++i) {
      const std::int64_t k = spec::mrope_stream(s, static_cast<std::int64_t>(i));
      const std::int64_t p = sp[static_cast<std::size_t>(k)];
      const real theta =
          pow(real(s.rope_theta), real(-2 * static_cast<std::int64_t>(i)) / real(s.rotary_dim));
      const real angle = real_from_int(p) * theta;
      const T want_c = round_to<T>(cos(angle)), want_s = round_to<T>(sin(angle));
      const std::size_t e = static_cast<std::size_t>(tok) * P + i;
      // The exact reference: the correctly rounded value of the same angle.
      EXPECT_EQ(scalar_traits<T>::to_bits(round_to<T>(row[i].cos)),
                scalar_traits<T>::to_bits(want_c))
          << "token " << tok << " pair " << i << " stream " << k << " p " << p;
      EXPECT_EQ(scalar_traits<T>::to_bits(round_to<T>(row[i].sin)),
                scalar_traits<T>::to_bits(want_s))
          << "token " << tok << " pair " << i << " stream " << k << " p " << p;
      worst = std::max(
          {worst, metric::ulp_distance(c[e], want_c), metric::ulp_distance(sn[e], want_s)});
      EXPECT_LE(metric::ulp_distance(c[e], want_c), 1u)
          << "token " << tok << " pair " << i << " stream " << k << " p " << p;
      EXPECT_LE(metric::ulp_distance(sn[e], want_s), 1u)
          << "token " << tok << " pair " << i << " stream " << k << " p " << p;
    }
  }
  std::cout << spec::to_spec_string(spec::encoding{s}) << " " << scalar_traits<T>::name
            << ": accurate MRoPE table, max ulp distance to the independent evaluation " << worst
            << " over " << c.size() << " values\n";
}

TEST(MropeImplementations, EachSectionAgainstAnIndependentEvaluation) {
  for (const char* text : {kQwen25VL, kQwen3VL, "rope:head_dim=16,mrope_section=[2,1,1,2]"}) {
    SCOPED_TRACE(text);
    const spec::rope s = parse_rope(text);
    sections_against_independent_evaluation<float>(s);
    sections_against_independent_evaluation<half>(s);
    sections_against_independent_evaluation<bfloat16>(s);
  }
}

TEST(MropeImplementations, EachSectionIsItsStreamsPlainRope) {
  // For every strategy: pairs of stream k equal that strategy's 1-D table at stream k's positions.
  const spec::rope s = parse_rope(kQwen25VL);
  std::int64_t n = 0;
  const std::vector<std::int64_t> pos = vision_positions(3, n);
  const auto P = static_cast<std::size_t>(s.pairs());
  const auto map = spec::mrope_streams(s);
  for (const kernel::strategy st : kernel::all_strategies()) {
    const auto im = impl::make_builtin(spec::encoding{s}, st);
    std::vector<float> c(static_cast<std::size_t>(n) * P), sn(c.size()), c1(c.size()), s1(c.size());
    im->rope_table_streams<float>(pos, std::nullopt, std::span<float>(c), std::span<float>(sn));
    for (std::int64_t k = 0; k < 3; ++k) {
      im->rope_table(std::span<const std::int64_t>(pos).subspan(static_cast<std::size_t>(k * n),
                                                                static_cast<std::size_t>(n)),
                     std::nullopt, std::span<float>(c1), std::span<float>(s1));
      for (std::size_t e = 0; e < c.size(); ++e) {
        if (map[e % P] != k) continue;
        EXPECT_EQ(c[e], c1[e]) << kernel::to_string(st) << " stream " << k << " value " << e;
        EXPECT_EQ(sn[e], s1[e]) << kernel::to_string(st) << " stream " << k << " value " << e;
      }
    }
  }
}

TEST(MropeReference, RotationRotatesEachPairByItsStream) {
  const spec::rope s = parse_rope("rope:head_dim=16,rope_theta=10000,mrope_section=[2,3,3]");
  const ref::rope_reference rr(s);
  const std::vector<std::int64_t> sp = {5, 700, 90000};
  std::vector<real> x;
  for (int j = 0; j < 16; ++j) x.push_back(real(j) / 4 - 1);
  const auto y = rr.rotate(sp, x);
  for (std::int64_t i = 0; i < s.pairs(); ++i) {
    const auto y1 = rr.rotate(sp[static_cast<std::size_t>(spec::mrope_stream(s, i))], x);
    const auto [a, b] = spec::pair_dims(s, i);
    EXPECT_EQ(y[static_cast<std::size_t>(a)], y1[static_cast<std::size_t>(a)]) << "pair " << i;
    EXPECT_EQ(y[static_cast<std::size_t>(b)], y1[static_cast<std::size_t>(b)]) << "pair " << i;
  }
  // compare::rope_reference composes the fast reference the same way: RN_fp32 of the MPFR values.
  compare::rope_reference cr(s, std::nullopt, compare::reference_path::fast);
  std::vector<double> xd, exact(16);
  for (const real& v : x) xd.push_back(v.convert_to<double>());
  std::vector<float> rn(16);
  cr.rotate_streams<float>(sp, xd, rn, exact);
  for (std::size_t j = 0; j < 16; ++j) EXPECT_EQ(rn[j], round_to<float>(y[j])) << "dim " << j;
  EXPECT_THROW(rr.row(std::vector<std::int64_t>{1, 2}), error);
}

TEST(MropeMutants, FourPairToStreamMistakesApplyWhereTheyChangeTheMap) {
  const spec::encoding q25 = spec::parse_spec(kQwen25VL), q3 = spec::parse_spec(kQwen3VL);
  const spec::encoding plain = spec::parse_spec("rope:head_dim=128,rope_theta=1000000");
  for (const char* id : {"mrope-hw-swapped", "mrope-interleave-flipped", "mrope-sections-doubled",
                         "mrope-text-positions"}) {
    const impl::mutant_info& m = impl::find_mutant(id);
    EXPECT_TRUE(m.applies(q25)) << id;
    EXPECT_TRUE(m.applies(q3)) << id;
    EXPECT_FALSE(m.applies(plain)) << id;
    // The mutant's own map differs from the spec's, and its 1-D table is the correct one.
    const auto mu = impl::make_mutant(id, q25);
    EXPECT_NE(mu->stream_map(), spec::mrope_streams(std::get<spec::rope>(q25))) << id;
  }
  // Swapping h and w changes nothing when they have no pairs.
  EXPECT_FALSE(impl::find_mutant("mrope-hw-swapped")
                   .applies(spec::parse_spec("rope:head_dim=8,mrope_section=[4,0,0]")));
}

}  // namespace
}  // namespace pev

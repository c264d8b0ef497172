// Integration mistakes one table or q/k dump shows (docs/certify.md §3, docs/encodings.md §10.2):
// each made with pev's own kernels or mutants, NOT CERTIFIED, the mistake named and the parameter
// the data implies among the findings — and the genuine data of the same shape certified.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/rotated.h"
#include "pev/certify/certify.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/report/json.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

std::vector<std::int64_t> positions(std::int64_t n, std::int64_t first = 0) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = first + i;
  return p;
}

// The table of `im` at `pos` as a dump: cos and sin [P, pairs] (separate), or [P, 2·pairs] with
// duplicated halves (transformers' cat(freqs, freqs)).
certify::dump table_dump(const impl::implementation& im, const std::vector<std::int64_t>& pos,
                         bool halves = false) {
  const auto& r = std::get<spec::rope>(im.claimed_spec());
  const auto P = static_cast<std::int64_t>(pos.size()), n = r.pairs();
  std::vector<float> c(static_cast<std::size_t>(P * n)), s(c.size());
  im.rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  certify::dump d;
  if (halves) {
    std::vector<float> c2(2 * c.size()), s2(c2.size());
    for (std::int64_t row = 0; row < P; ++row) {
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t h = 0; h < 2; ++h) {
          const auto to = static_cast<std::size_t>(row * 2 * n + h * n + i);
          const auto from = static_cast<std::size_t>(row * n + i);
          c2[to] = c[from];
          s2[to] = s[from];
        }
      }
    }
    d.tensors.emplace("cos", io::array::from_values<float>({P, 2 * n}, c2));
    d.tensors.emplace("sin", io::array::from_values<float>({P, 2 * n}, s2));
  } else {
    d.tensors.emplace("cos", io::array::from_values<float>({P, n}, c));
    d.tensors.emplace("sin", io::array::from_values<float>({P, n}, s));
  }
  d.tensors.emplace("positions", io::array::from_int64({P}, pos));
  return d;
}

// q of 32 tokens and 2 heads (seeded standard-normal inputs) rotated by `im` at 0 … 31.
certify::dump rotated_q(const impl::implementation& im) {
  return test::rotated_q(im, 0, 32, 2, 20261128);
}

certify::options thd() {
  certify::options o;
  o.qk_layout = certify::qk_layout::thd;
  return o;
}

// The certificate is NOT CERTIFIED, names `id` (first), and a finding holds `finding`.
void expect_named(const certify::certificate& cert, const std::string& id,
                  const std::string& finding) {
  ASSERT_EQ(cert.exit_code(), 1) << certify::to_text(cert);
  ASSERT_TRUE(cert.certification->why.has_value()) << certify::to_text(cert);
  const report::diagnosis& w = *cert.certification->why;
  EXPECT_EQ(w.named.value_or("(none)"), id) << certify::to_text(cert);
  const bool found = std::any_of(w.findings.begin(), w.findings.end(), [&](const std::string& f) {
    return f.find(finding) != std::string::npos;
  });
  EXPECT_TRUE(found) << "no finding holds \"" << finding << "\"\n" << certify::to_text(cert);
}

void expect_certified(const certify::certificate& cert) {
  EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
}

std::unique_ptr<impl::implementation> hf(const spec::encoding& e) {
  return impl::make_builtin(e, kernel::strategy::hf);
}

// 1. A partial-rotary config given a table of the head's width: the whole head rotated.
TEST(IntegrationMistakes, AWholeHeadTableForAPartialConfigIsNamedWithItsWidth) {
  const spec::encoding partial =
      spec::parse_spec("rope:head_dim=128,partial_rotary_factor=0.25,rope_theta=10000");
  const spec::encoding whole = spec::parse_spec("rope:head_dim=128,rope_theta=10000");
  const auto pos = positions(512);
  for (const bool halves : {true, false}) {
    const auto cert = certify::certify_dump(partial, table_dump(*hf(whole), pos, halves), {});
    expect_named(cert, "partial-rotary-full",
                 "rotated over the whole head (rotary_dim 128; the config says 32)");
    // certificate.json carries the verdict, the failing rotary_dim check and the name.
    const auto back = report::from_json(certify::to_json(cert), "certificate.json");
    EXPECT_EQ(back.exit_code(), 1);
    EXPECT_EQ(back.certification->why->named, "partial-rotary-full");
    EXPECT_TRUE(std::any_of(back.checks.begin(), back.checks.end(), [](const report::check& c) {
      return c.id == "rotary_dim" && !c.pass;
    }));
    // The genuine table of the same layout.
    expect_certified(certify::certify_dump(partial, table_dump(*hf(partial), pos, halves), {}));
  }
}

// GLM-4.5 (head_dim 128, partial_rotary_factor 0.5): the whole head's separate cos [P, 64] has
// the width of the config's duplicated halves; the data, which show no duplicate pattern, decide.
TEST(IntegrationMistakes, AGlmWholeHeadTableOfTheConfigsWidthIsReadAsTheWholeHead) {
  const spec::encoding partial =
      spec::parse_spec("rope:head_dim=128,partial_rotary_factor=0.5,rope_theta=1000000");
  const spec::encoding whole = spec::parse_spec("rope:head_dim=128,rope_theta=1000000");
  const auto pos = positions(512);
  for (const bool halves : {false, true}) {
    expect_named(certify::certify_dump(partial, table_dump(*hf(whole), pos, halves), {}),
                 "partial-rotary-full",
                 "rotated over the whole head (rotary_dim 128; the config says 64)");
    expect_certified(certify::certify_dump(partial, table_dump(*hf(partial), pos, halves), {}));
  }
}

// A whole-head table that is not the whole head's rotation either: the width is still stated,
// partial-rotary-full does not explain it, and the whole head's own diagnosis is reported.
TEST(IntegrationMistakes, AWholeHeadTableWithAnotherMistakeSaysBoth) {
  const spec::encoding partial =
      spec::parse_spec("rope:head_dim=128,partial_rotary_factor=0.25,rope_theta=10000");
  const spec::encoding whole = spec::parse_spec("rope:head_dim=128,rope_theta=10000");
  const auto m = impl::make_mutant("sin-cos-swapped", whole);
  const auto cert = certify::certify_dump(partial, table_dump(*m, positions(512), true), {});
  ASSERT_EQ(cert.exit_code(), 1);
  const report::diagnosis& w = *cert.certification->why;
  EXPECT_FALSE(w.named) << certify::to_text(cert);
  EXPECT_NE(std::find(w.findings.begin(), w.findings.end(),
                      "as the whole head's rotation, explained by sin-cos-swapped"),
            w.findings.end())
      << certify::to_text(cert);
}

TEST(IntegrationMistakes, QkRotatedOverTheWholeHeadAreNamedWithTheirWidth) {
  const spec::encoding partial =
      spec::parse_spec("rope:head_dim=128,partial_rotary_factor=0.25,rope_theta=10000");
  const spec::encoding whole = spec::parse_spec("rope:head_dim=128,rope_theta=10000");
  expect_named(certify::certify_dump(partial, rotated_q(*hf(whole)), thd()), "partial-rotary-full",
               "rotated over the whole head (rotary_dim 128; the config says 32)");
  expect_certified(certify::certify_dump(partial, rotated_q(*hf(partial)), thd()));
}

// 2. rotary_dim pairs rotated, frequencies over head_dim (vLLM #43676, GLM-4.7).
TEST(IntegrationMistakes, FrequenciesOverTheHeadWidthAreNamedWithTheWidth) {
  for (const char* text : {"rope:head_dim=128,partial_rotary_factor=0.5,rope_theta=1000000",
                           "rope:head_dim=128,partial_rotary_factor=0.25,rope_theta=10000"}) {
    const spec::encoding e = spec::parse_spec(text);
    const auto m = impl::make_mutant("rotary-freq-over-head-dim", e);
    const std::string width = "frequencies over width 128";
    expect_named(certify::certify_dump(e, table_dump(*m, positions(1024)), {}),
                 "rotary-freq-over-head-dim", width);
    expect_named(certify::certify_dump(e, rotated_q(*m), thd()), "rotary-freq-over-head-dim",
                 width);
    expect_certified(certify::certify_dump(e, table_dump(*hf(e), positions(1024)), {}));
  }
}

// 3. ALiBi's extra slopes of a head count that is not a power of two, taken with step 1.
TEST(IntegrationMistakes, AlibiExtraSlopesWithStepOneAreNamedWithTheStep) {
  for (const std::int64_t H : {12, 24, 40}) {
    const spec::encoding e = spec::parse_spec(fmt::format("alibi:num_heads={}", H));
    const auto P = static_cast<std::int64_t>(std::bit_floor(static_cast<std::uint64_t>(H)));
    auto slopes_dump = [&](const impl::implementation& im) {
      std::vector<float> m(static_cast<std::size_t>(H));
      im.alibi_slopes(std::span<float>(m));
      certify::dump d;
      d.tensors.emplace("slopes", io::array::from_values<float>({H}, m));
      return d;
    };
    const auto bad = impl::make_mutant("alibi-extra-step-one", e);
    expect_named(certify::certify_dump(e, slopes_dump(*bad), {}), "alibi-extra-step-one",
                 fmt::format("the slopes of heads {}…{} are powers 1, 2, 3", P, H - 1));
    expect_named(certify::certify_dump(e, slopes_dump(*bad), {}), "alibi-extra-step-one",
                 "step 1 (the rule takes every other power, 1, 3, 5, …: step 2)");
    expect_certified(certify::certify_dump(e, slopes_dump(*hf(e)), {}));
    // The bias of queries and keys 0 … 7: the step read from it.
    auto bias_dump = [&](const impl::implementation& im) {
      const std::vector<std::int64_t> qk = positions(8);
      std::vector<float> b(static_cast<std::size_t>(H) * 64);
      im.alibi_bias(qk, qk, std::span<float>(b));
      certify::dump d;
      d.tensors.emplace("bias", io::array::from_values<float>({H, 8, 8}, b));
      return d;
    };
    expect_named(certify::certify_dump(e, bias_dump(*bad), {}), "alibi-extra-step-one",
                 "step 1 (the rule takes every other power, 1, 3, 5, …: step 2)");
    expect_certified(certify::certify_dump(e, bias_dump(*hf(e)), {}));
  }
}

// 4. The attention factor squared or dropped: YaRN's own, an explicit attention_factor (OLMo-3)
// and mscale / mscale_all_dim (DeepSeek's keys, with values whose factor is not 1).
TEST(IntegrationMistakes, AttentionFactorTwiceOrMissingIsNamedWithTheFactor) {
  for (const char* text :
       {"rope:head_dim=64,rope_type=yarn,factor=4,original_max_position_embeddings=2048",
        "rope:head_dim=128,rope_theta=500000,rope_type=yarn,factor=8,"
        "original_max_position_embeddings=8192,beta_fast=32,beta_slow=1,"
        "attention_factor=1.2079441541679836",
        "rope:head_dim=64,rope_theta=10000,rope_type=yarn,factor=40,"
        "original_max_position_embeddings=4096,beta_fast=32,beta_slow=1,mscale=1,"
        "mscale_all_dim=0.707"}) {
    const spec::encoding e = spec::parse_spec(text);
    const double m = hf(e)->attention_factor(std::nullopt);
    ASSERT_NE(m, 1.0) << text;
    for (const char* id : {"attention-factor-twice", "attention-factor-missing"}) {
      const auto bad = impl::make_mutant(id, e);
      const double got = bad->attention_factor(std::nullopt);
      expect_named(certify::certify_dump(e, table_dump(*bad, positions(1024)), {}), id,
                   fmt::format("attention factor {:.6g} (the spec's is {:.6g})", got, m));
      expect_named(certify::certify_dump(e, rotated_q(*bad), thd()), id,
                   fmt::format("attention factor {:.6g} (the spec's is {:.6g})", got, m));
    }
    expect_certified(certify::certify_dump(e, table_dump(*hf(e), positions(1024)), {}));
    expect_certified(certify::certify_dump(e, rotated_q(*hf(e)), thd()));
  }
}

// 5. T5: the decoder's buckets (bidirectional=false) against the encoder's config, and back.
TEST(IntegrationMistakes, T5BucketsOfTheOtherDirectionAreNamed) {
  const std::vector<std::int64_t> dist = positions(801, -400);
  auto buckets_dump = [&](const spec::encoding& made) {
    std::vector<std::int64_t> b(dist.size());
    hf(made)->t5_buckets(dist, b);
    certify::dump d;
    const auto n = static_cast<std::int64_t>(dist.size());
    d.tensors.emplace("buckets", io::array::from_int64({n}, b));
    d.tensors.emplace("distances", io::array::from_int64({n}, dist));
    return d;
  };
  const spec::encoding enc =
      spec::parse_spec("t5:num_buckets=32,max_distance=128,bidirectional=true");
  const spec::encoding dec =
      spec::parse_spec("t5:num_buckets=32,max_distance=128,bidirectional=false");
  expect_named(certify::certify_dump(enc, buckets_dump(dec), {}), "t5-unidirectional-buckets",
               "the buckets of bidirectional=false (the config's are bidirectional=true)");
  expect_named(certify::certify_dump(dec, buckets_dump(enc), {}), "t5-bidirectional-buckets",
               "the buckets of bidirectional=true (the config's are bidirectional=false)");
  expect_certified(certify::certify_dump(enc, buckets_dump(enc), {}));
  expect_certified(certify::certify_dump(dec, buckets_dump(dec), {}));
}

// 6. A sliding layer given the global θ: a table made with rope_theta 1e6 against 1e4.
TEST(IntegrationMistakes, ASlidingLayerWithTheGlobalThetaIsNamedWithTheTheta) {
  const spec::encoding local = spec::parse_spec("rope:head_dim=128,rope_theta=10000");
  for (const char* global :
       {"rope:head_dim=128,rope_theta=1000000", "rope:head_dim=128,rope_theta=500000"}) {
    const spec::encoding g = spec::parse_spec(global);
    const auto cert = certify::certify_dump(local, table_dump(*hf(g), positions(2048)), {});
    const double theta = std::get<spec::rope>(g).rope_theta;
    expect_named(cert, "rope-theta-wrong", fmt::format("rope_theta {:g} from the fastest", theta));
    const auto& x = cert.certification->why->explanations.front();
    EXPECT_NE(x.description.find(fmt::format("replayed with rope_theta {:g}, the data's", theta)),
              std::string::npos)
        << x.description;
  }
  expect_certified(certify::certify_dump(local, table_dump(*hf(local), positions(2048)), {}));
}

// The same in rotated q/k: the rotation's frequencies fitted (fit_rotation) imply the θ replayed.
TEST(IntegrationMistakes, QkOfASlidingLayerWithTheGlobalThetaAreNamedWithTheTheta) {
  const spec::encoding local = spec::parse_spec("rope:head_dim=128,rope_theta=10000");
  const spec::encoding g = spec::parse_spec("rope:head_dim=128,rope_theta=1000000");
  expect_named(certify::certify_dump(local, rotated_q(*hf(g)), thd()), "rope-theta-wrong",
               "rope_theta 1e+06 from the fastest pairs");
  expect_certified(certify::certify_dump(local, rotated_q(*hf(local)), thd()));
  // Pairs the data do not rotate as the spec's (NeoX weights rotated as GPT-J pairs): no
  // frequencies are read from them, and no θ is implied.
  const auto m = impl::make_mutant("neox-as-interleaved", local);
  const auto cert = certify::certify_dump(local, rotated_q(*m), thd());
  ASSERT_EQ(cert.exit_code(), 1);
  EXPECT_EQ(cert.certification->why->named, "neox-as-interleaved") << certify::to_text(cert);
  for (const std::string& f : cert.certification->why->findings) {
    EXPECT_EQ(f.find("rope_theta"), std::string::npos) << f;
  }
}

}  // namespace
}  // namespace pev

// Mistakes named where an attention factor ≠ 1 or a scaling changes the arithmetic (issue 26):
// bf16 autocast on YaRN configs (cos/sin rounded to bf16, then the factor in bf16: two roundings),
// a YaRN attention factor applied twice in bf16 (ggml's undivided factor gives the same ρ: listed
// indistinguishable), and dynamic NTK one position short of transformers' sequence length (no
// longer held by the ggml rung: its angles are hf's).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

// Qwen2.5 with YaRN (factor 4 over 32768: attention factor 1 + 0.1·ln 4), DeepSeek-style YaRN
// with mscale, and Phi-3-style LongRoPE are the configs whose factor is not 1.
constexpr const char* kYarn =
    "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
    "original_max_position_embeddings=32768";
constexpr const char* kYarnMscale =
    "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
    "original_max_position_embeddings=4096,mscale=1,mscale_all_dim=0.5";

std::vector<std::int64_t> positions() {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i < 512; ++i) p.push_back(i);
  for (std::int64_t i = 512; i < (std::int64_t{1} << 17); i = i * 9 / 8 + 7) p.push_back(i);
  return p;
}

template <class T>
certify::certificate certify_table(const impl::implementation& im, const spec::encoding& e,
                                   const std::vector<std::int64_t>& pos) {
  const auto& r = std::get<spec::rope>(e);
  const auto P = static_cast<std::int64_t>(pos.size());
  const std::int64_t n = r.pairs();
  std::vector<T> c(static_cast<std::size_t>(P * n)), s(c.size());
  std::optional<std::int64_t> seq;
  if (r.stateful()) seq = pos.back() + 1;
  im.rope_table(pos, seq, std::span<T>(c), std::span<T>(s));
  certify::dump d;
  d.tensors.emplace("cos", io::array::from_values<T>({P, n}, c));
  d.tensors.emplace("sin", io::array::from_values<T>({P, n}, s));
  d.tensors.emplace("positions", io::array::from_int64({P}, pos));
  return certify::certify_dump(e, d, {});
}

// Whether the diagnosis names `id` (first, or tied with the first: indistinguishable).
bool named(const certify::certificate& cert, const std::string& id) {
  const auto& why = cert.certification->why;
  if (!why || !why->named) return false;
  return *why->named == id ||
         std::find(why->indistinguishable.begin(), why->indistinguishable.end(), id) !=
             why->indistinguishable.end();
}

TEST(NamedOnScaling, Bf16AutocastIsNamedWhereTheAttentionFactorIsNotOne) {
  const auto pos = positions();
  for (const char* text : {kYarn, kYarnMscale}) {
    const spec::encoding e = spec::parse_spec(text);
    const auto m = impl::make_mutant("autocast-bf16", e);
    for (const auto& cert :
         {certify_table<float>(*m, e, pos), certify_table<bfloat16>(*m, e, pos)}) {
      EXPECT_EQ(cert.exit_code(), 1) << text;
      EXPECT_TRUE(named(cert, "autocast-bf16")) << text << "\n" << certify::to_text(cert);
    }
  }
}

TEST(NamedOnScaling, AYarnFactorAppliedTwiceListsWhatGivesTheSameRho) {
  const spec::encoding e = spec::parse_spec(kYarn);
  const auto m = impl::make_mutant("attention-factor-twice", e);
  const auto cert = certify_table<bfloat16>(*m, e, positions());
  EXPECT_EQ(cert.exit_code(), 1);
  EXPECT_TRUE(named(cert, "attention-factor-twice")) << certify::to_text(cert);
  const auto& why = *cert.certification->why;
  std::string list = why.named.value_or("none");
  for (const auto& x : why.indistinguishable) list += ", " + x;
  std::cout << "named with the same rho: " << list << "; closest:";
  for (std::size_t k = 0; k < why.explanations.size() && k < 3; ++k) {
    std::cout << " " << why.explanations[k].mutant << " " << why.explanations[k].max_rho;
  }
  std::cout << "\n";
  // Every mistake that explains the data within 2^−6 of the named one's ρ is listed.
  for (const auto& x : why.explanations) {
    if (x.explains && x.max_rho <= why.explanations.front().max_rho * (1 + 0x1p-6)) {
      EXPECT_TRUE(named(cert, x.mutant)) << x.mutant << " " << x.max_rho;
    }
  }
}

TEST(NamedOnScaling, DynamicNtkOneShortIsNotCertifiedAndNamed) {
  const spec::encoding e = spec::parse_spec(
      "rope:head_dim=128,rope_theta=10000,rope_type=dynamic,factor=4,max_position_embeddings=4096");
  const auto m = impl::make_mutant("dynamic-length-off-by-one", e);
  const auto cert = certify_table<float>(*m, e, positions());
  EXPECT_EQ(cert.exit_code(), 1) << certify::to_text(cert);
  EXPECT_TRUE(named(cert, "dynamic-length-off-by-one")) << certify::to_text(cert);
}

}  // namespace
}  // namespace pev

// What the rungs admit (docs/numerics.md §13.6–§13.8): fp32 q/k hold recipe:vllm only where their
// rotations applied a 16-bit cache of the spec (a wrong rope_theta in fp32 is not admitted at any
// length; genuine fp32, fp16-cache and bf16-cache rotations keep their grades), and a correctly
// rounded table's library is measured against the exact angles it follows (--max-trig-ulp 1 holds,
// and fast-math is never named for it), while a fast-math table still fails --max-trig-ulp 1.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/rotated.h"
#include "common/seed.h"
#include "pev/certify/certify.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/ref/fast.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

using certify::grade;

constexpr const char* kSpec = "rope:head_dim=128,rope_theta=10000";

certify::certificate certify_q(const char* made_by, kernel::strategy st, std::int64_t T,
                               const certify::options& o = {}) {
  const auto im = impl::make_builtin(spec::parse_spec(made_by), st);
  return certify::certify_dump(spec::parse_spec(kSpec),
                               test::rotated_q(*im, 0, T, 4, test::test_seed(3401)), o);
}

TEST(RungAdmission, Fp32QkWithAWrongThetaAreNotAdmittedByTheVllmRung) {
  for (const std::int64_t T : {64, 512, 4096}) {
    const auto cert = certify_q("rope:head_dim=128,rope_theta=10001", kernel::strategy::hf, T);
    EXPECT_EQ(cert.exit_code(), 1) << "T " << T << "\n" << certify::to_text(cert);
    EXPECT_NE(cert.certification->result, grade::recipe_vllm) << "T " << T;
    ASSERT_FALSE(cert.checks.empty());
    EXPECT_NE(cert.checks.front().note.find("vllm-bf16 adds nothing"), std::string::npos)
        << cert.checks.front().note;
  }
}

TEST(RungAdmission, GenuineRotationsKeepTheirGrades) {
  for (const std::int64_t T : {512, 4096}) {
    const auto hf = certify_q(kSpec, kernel::strategy::hf, T);
    EXPECT_EQ(hf.exit_code(), 0) << certify::to_text(hf);
    EXPECT_LE(hf.certification->result, grade::recipe_hf);
    for (const kernel::strategy st : {kernel::strategy::table_fp16, kernel::strategy::table_bf16}) {
      const auto cache = certify_q(kSpec, st, T);
      EXPECT_EQ(cache.exit_code(), 0) << "T " << T << "\n" << certify::to_text(cache);
      EXPECT_EQ(cache.certification->result, grade::recipe_vllm);
      certify::options vllm;
      vllm.recipe = "vllm";
      EXPECT_EQ(certify_q(kSpec, st, T, vllm).exit_code(), 0);
    }
  }
}

// A table correctly rounded to T from the exact values (pev's fast reference), positions 0 … n − 1.
template <class T>
certify::dump correctly_rounded(const spec::rope& r, std::int64_t n) {
  std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
  for (std::int64_t p = 0; p < n; ++p) pos[static_cast<std::size_t>(p)] = p;
  std::vector<T> c(static_cast<std::size_t>(n * r.pairs())), s(c.size());
  ref::fast_rope_reference(r).table<T>(pos, c, s);
  certify::dump d;
  d.tensors.emplace("cos", io::array::from_values<T>({n, r.pairs()}, c));
  d.tensors.emplace("sin", io::array::from_values<T>({n, r.pairs()}, s));
  return d;
}

TEST(RungAdmission, ACorrectlyRoundedTableIsMeasuredAgainstTheExactAngles) {
  for (const char* text : {kSpec,
                           "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
                           "original_max_position_embeddings=4096"}) {
    const spec::encoding e = spec::parse_spec(text);
    const auto& r = std::get<spec::rope>(e);
    certify::options o;
    o.max_trig_ulp = 1;
    const auto fp32 = certify::certify_dump(e, correctly_rounded<float>(r, 4096), o);
    const report::library_figures& lib = fp32.certification->library;
    EXPECT_EQ(fp32.exit_code(), 0) << text << "\n" << certify::to_text(fp32);
    EXPECT_EQ(fp32.certification->result, grade::correctly_rounded);
    EXPECT_EQ(lib.angles, "exact");
    ASSERT_TRUE(lib.trig_ulp);
    EXPECT_LE(*lib.trig_ulp, 0.5);
    EXPECT_EQ(lib.trig_class.find("fast-math"), std::string::npos) << lib.trig_class;
    // 16 bits: the library is not measurable (the claim stays unchecked), never named fast-math.
    const auto bf16 = certify::certify_dump(e, correctly_rounded<bfloat16>(r, 4096), o);
    const report::library_figures& lb = bf16.certification->library;
    EXPECT_EQ(bf16.certification->result, grade::correctly_rounded);
    EXPECT_EQ(lb.trig_class.find("fast-math"), std::string::npos) << lb.trig_class;
    EXPECT_EQ(lb.angles, "exact");
  }
}

TEST(RungAdmission, AFastMathTableStillFailsMaxTrigUlp) {
  const spec::encoding e = spec::parse_spec(kSpec);
  const auto& r = std::get<spec::rope>(e);
  const auto fast = impl::make_mutant("fast-math-trig", e);
  const std::int64_t n = 4096;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
  for (std::int64_t p = 0; p < n; ++p) pos[static_cast<std::size_t>(p)] = p;
  std::vector<float> c(static_cast<std::size_t>(n * r.pairs())), s(c.size());
  fast->rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  certify::dump d;
  d.tensors.emplace("cos", io::array::from_values<float>({n, r.pairs()}, c));
  d.tensors.emplace("sin", io::array::from_values<float>({n, r.pairs()}, s));
  certify::options o;
  o.max_trig_ulp = 1;
  const auto cert = certify::certify_dump(e, d, o);
  EXPECT_EQ(cert.exit_code(), 1) << certify::to_text(cert);
  EXPECT_NE(cert.certification->library.angles, "exact");
}

}  // namespace
}  // namespace pev

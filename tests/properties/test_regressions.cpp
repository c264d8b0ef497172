// Counterexamples found by the property suites, kept as deterministic regression cases
// (docs/design.md §11.4, §7.5): the shrunk cases of the mutant run (each mutant's table breaks the
// hf contract there while the hf kernel keeps it), and the three findings of the suite's
// development — each a semantic fact the properties now account for, pinned so that it cannot
// change silently.

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "pev/impl/contract.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/ref/fast.h"
#include "pev/ref/relative.h"
#include "pev/ref/rope.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

spec::rope rope_of(const std::string& text) { return std::get<spec::rope>(spec::parse_spec(text)); }

// max ρ = |ĉ − c|/B over the fp32 table at `pos` (B: the hf contract, pev/impl/contract.h).
double max_rho(const impl::implementation& im, const spec::rope& s, std::optional<std::int64_t> seq,
               const std::vector<std::int64_t>& pos) {
  const ref::fast_rope_reference ref(s, seq);
  const double m = ref.reference().attention_factor().convert_to<double>();
  const impl::rope_contract contract(s, kernel::strategy::hf, seq, m);
  const auto n = pos.size() * static_cast<std::size_t>(s.pairs());
  std::vector<float> c(n), sn(n);
  im.rope_table(pos, seq, std::span<float>(c), std::span<float>(sn));
  std::vector<double> rc(n), rs(n);
  ref.table<double>(pos, rc, rs);
  double rho = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::int64_t p = pos[k / static_cast<std::size_t>(s.pairs())];
    const auto i = static_cast<std::int64_t>(k % static_cast<std::size_t>(s.pairs()));
    for (int w = 0; w < 2; ++w) {
      const double want = w ? rs[k] : rc[k];
      const double got = w ? sn[k] : c[k];
      const double B = contract.table_bound(p, i, want, metric::kF32);
      rho = std::max(rho, std::isnan(got) ? INFINITY : std::fabs(got - want) / B);
    }
  }
  return rho;
}

struct mutant_case {
  const char* id;
  const char* spec;
  std::optional<std::int64_t> seq;
  std::int64_t position;
};

// Shrunk counterexamples of the mutant run (seed 20261122) that rope.table_exact reports.
const mutant_case kMutantCases[] = {
    {"sin-cos-swapped", "rope:head_dim=80,partial_rotary_factor=0.5,rope_type=ntk,factor=2", {}, 1},
    {"position-off-by-one",
     "rope:head_dim=8,partial_rotary_factor=0.5,rope_theta=100,"
     "rope_type=dynamic,factor=2,max_position_embeddings=2048",
     4096, 1},
    {"positions-bf16",
     "rope:head_dim=80,partial_rotary_factor=0.5,rope_type=ntk,factor=2",
     {},
     1025},
    {"positions-tf32",
     "rope:head_dim=80,partial_rotary_factor=0.5,rope_type=ntk,factor=2",
     {},
     8193},
    {"positions-fp16",
     "rope:head_dim=80,partial_rotary_factor=0.5,rope_type=ntk,factor=2",
     {},
     8193},
    {"positions-fp16", "rope:head_dim=64", {}, 65520},  // overflow: +inf position, NaN values
    {"angle-bf16", "rope:head_dim=80,partial_rotary_factor=0.5,rope_type=ntk,factor=2", {}, 1},
    {"inv-freq-bf16",
     "rope:head_dim=80,partial_rotary_factor=0.5,rope_type=ntk,factor=2",
     {},
     4096},
    {"attention-factor-missing",
     "rope:head_dim=4,rope_theta=500000,rope_type=longrope,factor=32,max_position_embeddings="
     "131072,original_max_position_embeddings=4096,short_factor=[1,1.6],long_factor=[1,45]",
     8192, 1},
    {"dynamic-wrong-length",
     "rope:head_dim=128,rope_type=dynamic,factor=4,max_position_embeddings=2048", 1024, 100},
};

TEST(PropertyRegressions, MutantCounterexamples) {
  for (const mutant_case& c : kMutantCases) {
    const spec::rope s = rope_of(c.spec);
    const auto hf = impl::make_builtin(spec::encoding{s}, kernel::strategy::hf);
    const auto bad = impl::make_mutant(c.id, spec::encoding{s});
    const std::vector<std::int64_t> pos{c.position};
    EXPECT_LE(max_rho(*hf, s, c.seq, pos), 1.0) << "hf at " << c.spec << " p=" << c.position;
    EXPECT_GT(max_rho(*bad, s, c.seq, pos), 1.0)
        << c.id << " no longer breaks the contract at " << c.spec << " p=" << c.position;
  }
}

// Finding 1 (rope.table_exact on ggml, seed 20261123): llama.cpp always truncates YaRN's
// correction range (docs/encodings.md §8.3), so the ggml strategy ignores truncate=false — its
// values there are those of the truncated spec and leave the contract against the spec's exact
// values (ρ ≫ 1 at p = 1). The ggml subject therefore does not generate truncate=false specs.
TEST(PropertyRegressions, GgmlIgnoresYarnTruncateFalse) {
  const std::string base =
      "rope:head_dim=4,rope_theta=500000,rope_type=yarn,factor=4,max_position_embeddings=131072,"
      "original_max_position_embeddings=32768";
  const spec::rope untruncated = rope_of(base + ",truncate=false");
  const spec::rope truncated = rope_of(base);
  const auto a = impl::make_builtin(spec::encoding{untruncated}, kernel::strategy::ggml);
  const auto b = impl::make_builtin(spec::encoding{truncated}, kernel::strategy::ggml);
  const std::vector<std::int64_t> pos{1, 1000, 65536};
  std::vector<float> ac(6), as(6), bc(6), bs(6);
  a->rope_table(pos, std::nullopt, std::span<float>(ac), std::span<float>(as));
  b->rope_table(pos, std::nullopt, std::span<float>(bc), std::span<float>(bs));
  EXPECT_EQ(ac, bc);
  EXPECT_EQ(as, bs);
  // The exact spec differs at p = 1, pair 1 (m·sin 0x1.200f1570b2b0fp-10 vs ggml's 0x1.07d368p-10).
  const ref::fast_rope_reference exact(untruncated);
  std::vector<double> rc(2), rs(2);
  exact.table<double>(std::vector<std::int64_t>{1}, rc, rs);
  EXPECT_GT(std::fabs(as[1] - rs[1]), 1e-5);
}

// Finding 2 (scaling.yarn_bands on hf, seed 20261122): with a tiny rotary dim and a long Lo,
// transformers' clamp high = min(high, d − 1) puts high below low; the ramp then interpolates
// every pair, pair 0 included (θ/f), so "pairs ≤ low keep θ" only holds when low < high.
TEST(PropertyRegressions, YarnDegenerateCorrectionRange) {
  const spec::rope s = rope_of(
      "rope:head_dim=4,rope_theta=100,rope_type=yarn,factor=4,max_position_embeddings=524288,"
      "original_max_position_embeddings=131072,beta_fast=16,beta_slow=2,truncate=false");
  const auto range = ref::yarn_correction_range(s);
  EXPECT_LT(range.high, range.low);
  const ref::rope_reference r(s);
  EXPECT_EQ(r.inv_freq()[0].convert_to<double>(), 0.25);  // θ_0/f = 1/4
  const auto hf = impl::make_builtin(spec::encoding{s}, kernel::strategy::hf);
  EXPECT_EQ(hf->inv_freq(std::nullopt)[0], 0.25f);
}

// Finding 3 (t5.exact on mutant t5-float64-log): at (20 buckets, 160, bidirectional) the log
// branch of r = 10 is exactly ln 2/ln 32·5 = 1; float32 (transformers) gives bucket 16 as the
// exact evaluation does, float64 0.99999999999999989 → 15.
TEST(PropertyRegressions, T5Float64LogAtIntegerBoundary) {
  const spec::t5 s = std::get<spec::t5>(spec::parse_spec("t5:num_buckets=20,max_distance=160"));
  const std::vector<std::int64_t> r{10, -10, 80};
  std::vector<std::int64_t> hf(3), bad(3);
  impl::make_builtin(spec::encoding{s}, kernel::strategy::hf)->t5_buckets(r, hf);
  impl::make_mutant("t5-float64-log", spec::encoding{s})->t5_buckets(r, bad);
  for (std::size_t k = 0; k < r.size(); ++k) EXPECT_EQ(hf[k], ref::t5_bucket(s, r[k])) << r[k];
  EXPECT_EQ(hf[0], 16);
  EXPECT_EQ(bad[0], 15);
}

}  // namespace
}  // namespace pev

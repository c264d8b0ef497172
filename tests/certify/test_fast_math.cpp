// Fast-math trig on the CPU (docs/numerics.md §5.5, §13.7): tables made by pev's model of CUDA's
// __sinf/__cosf (the mistake `fast-math-trig`) for ten RoPE configs × fp32, bf16 and fp16 up to
// position 2^17 are not certified in any dtype and the diagnosis names fast-math; the same tables
// with a conforming trig (pev's hf kernel) are certified. Printed: from which position on each
// dtype shows fast-math (the first octave where the replayed hf rung fails).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/seed.h"
#include "pev/certify/certify.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

constexpr const char* kConfigs[] = {
    "rope:head_dim=128,rope_theta=10000",
    "rope:head_dim=64,rope_theta=10000,partial_rotary_factor=0.5",
    "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
    "original_max_position_embeddings=4096,mscale=1,mscale_all_dim=0.5",
    "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
    "original_max_position_embeddings=32768",
    "rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
    "high_freq_factor=4,original_max_position_embeddings=8192",
    "rope:head_dim=128,rope_theta=10000,rope_type=dynamic,factor=4,max_position_embeddings=4096",
    "rope:head_dim=128,rope_theta=10000,rope_type=ntk,factor=4",
    "rope:head_dim=128,rope_theta=10000,rope_type=linear,factor=4",
    "rope:head_dim=256,rope_theta=1000000,rope_type=proportional,factor=8,"
    "partial_rotary_factor=0.25",
    "rope:head_dim=80,rope_theta=10000,partial_rotary_factor=0.4",
};

// 0 … 1023, then per octave 2^10 … 2^16 its first and last position and 32 seeded ones.
std::vector<std::int64_t> positions(std::uint64_t seed) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i < 1024; ++i) p.push_back(i);
  std::mt19937_64 rng(seed);
  for (int k = 10; k < 17; ++k) {
    const std::int64_t lo = std::int64_t{1} << k, hi = 2 * lo - 1;
    p.push_back(lo);
    std::uniform_int_distribution<std::int64_t> pick(lo, hi);
    for (int i = 0; i < 32; ++i) p.push_back(pick(rng));
    p.push_back(hi);
  }
  return p;
}

template <class T>
certify::dump table_dump(const impl::implementation& im, const spec::rope& r,
                         const std::vector<std::int64_t>& pos) {
  const auto P = static_cast<std::int64_t>(pos.size());
  const std::int64_t n = r.pairs();
  std::vector<T> c(static_cast<std::size_t>(P * n)), s(c.size());
  std::optional<std::int64_t> seq;
  if (r.stateful()) seq = *std::max_element(pos.begin(), pos.end()) + 1;
  im.rope_table(pos, seq, std::span<T>(c), std::span<T>(s));
  certify::dump d;
  d.tensors.emplace("cos", io::array::from_values<T>({P, n}, c));
  d.tensors.emplace("sin", io::array::from_values<T>({P, n}, s));
  d.tensors.emplace("positions", io::array::from_int64({P}, pos));
  return d;
}

// The first position of the first octave [2^(k−1), 2^k) where a check's replayed hf rung fails
// (check::recipe_replay::octave_rho by key k; −1: none).
std::int64_t first_visible(const certify::certificate& cert) {
  std::int64_t first = -1;
  for (const report::check& c : cert.checks) {
    if (!c.replayed || c.replayed->octave_rho.count("hf") == 0) continue;
    const std::vector<double>& rho = c.replayed->octave_rho.at("hf");
    for (std::size_t k = 0; k < rho.size(); ++k) {
      if (rho[k] > 1) {
        const std::int64_t lo = k == 0 ? 0 : std::int64_t{1} << (k - 1);
        if (first < 0 || lo < first) first = lo;
        break;
      }
    }
  }
  return first;
}

TEST(FastMath, TablesOfTheFastMathModelAreNeverCertifiedAndConformingOnesAre) {
  const std::uint64_t seed = test::test_seed(2611);
  std::cout << "positions seed " << seed << "\n";
  const std::vector<std::int64_t> pos = positions(seed);
  std::map<std::string, std::vector<std::int64_t>> visible;
  std::string table;
  for (const char* text : kConfigs) {
    const spec::encoding e = spec::parse_spec(text);
    const auto& r = std::get<spec::rope>(e);
    const auto fast = impl::make_mutant("fast-math-trig", e);
    const auto good = impl::make_builtin(e, kernel::strategy::hf);
    const auto run = [&](auto tag, const char* dt) {
      using T = decltype(tag);
      for (const bool claim : {false, true}) {
        certify::options o;
        if (claim) o.recipe = "hf";
        const auto bad = certify::certify_dump(e, table_dump<T>(*fast, r, pos), o);
        const std::string what = fmt::format("{} {}{}", text, dt, claim ? " --recipe hf" : "");
        EXPECT_EQ(bad.exit_code(), 1) << "fast-math certified: " << what << "\n"
                                      << certify::to_text(bad);
        const auto& why = bad.certification->why;
        ASSERT_TRUE(why) << what;
        bool named = false;
        for (const auto& x : why->explanations) {
          if (x.max_rho > why->explanations.front().max_rho) break;
          named = named || (x.mutant == "fast-math-trig" && x.explains);
        }
        EXPECT_TRUE(named) << "fast-math not named: " << what << "\n" << certify::to_text(bad);
        const auto ok = certify::certify_dump(e, table_dump<T>(*good, r, pos), o);
        EXPECT_EQ(ok.exit_code(), 0) << "conforming table not certified: " << what << "\n"
                                     << certify::to_text(ok);
        if (!claim) {
          const std::int64_t at = first_visible(bad);
          visible[dt].push_back(at);
          table +=
              fmt::format("  {:<5} {:<90} fast-math visible from position {}{}\n", dt,
                          std::string(text).substr(0, 90), at, named ? ", named" : ", NOT named");
        }
      }
    };
    run(float{}, "fp32");
    run(bfloat16{}, "bf16");
    run(half{}, "fp16");
  }
  std::cout << "fast-math tables (the CPU model) against the replayed hf rung:\n" << table;
  for (const auto& [dt, v] : visible) {
    std::cout << fmt::format("  {}: fast-math visible from positions {} … {}\n", dt,
                             *std::min_element(v.begin(), v.end()),
                             *std::max_element(v.begin(), v.end()));
  }
}

}  // namespace
}  // namespace pev

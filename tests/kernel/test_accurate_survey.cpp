// Survey of the `accurate` strategy on larger position sets (ctest label `exhaustive`): every
// p < PEV_SURVEY_POSITIONS (default 4096) and PEV_SURVEY_RANDOM (default 1024) random positions
// p < 2^PEV_SURVEY_RANDOM_BITS (default 31), for a few RoPE and sinusoidal configurations, all
// pairs, fp32/fp16/bf16. Prints the correctly-rounded and faithful rates (ulp distance to the
// correctly rounded value 0 and ≤ 1) and fails if any value is more than 1 ulp off (the contract).
//
// The exact values come from the MPFR reference (~0.2 ms per row of 32 pairs), which bounds the
// sizes; `every p < 2^16` for one configuration is PEV_SURVEY_POSITIONS=65536 (about a minute).

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "helpers.h"
#include "pev/kernel/absolute.h"
#include "pev/kernel/rope.h"
#include "pev/metric/ulp.h"
#include "pev/ref/rope.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"

namespace pev {
namespace {

struct tally {
  std::size_t n = 0, cr = 0, faithful = 0;
  std::uint64_t max_ulp = 0;
  std::string worst = "-";

  template <class T>
  void add(T got, const real& exact, const std::function<std::string()>& where) {
    const std::uint64_t d = metric::ulp_distance(got, round_to<T>(exact));
    ++n;
    cr += d == 0;
    faithful += d <= 1;
    if (d > max_ulp) {
      max_ulp = d;
      worst = where();
    }
  }
  void print(const std::string& what, const char* dtype) const {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%-5s %10zu values  CR %.7f%%  faithful %.7f%%  max ulp %llu",
                  dtype, n, 100.0 * double(cr) / double(n), 100.0 * double(faithful) / double(n),
                  static_cast<unsigned long long>(max_ulp));
    std::cout << what << "\n    " << buf << (max_ulp ? "  worst " + worst : std::string())
              << std::endl;
    EXPECT_EQ(faithful, n) << what << " " << dtype << ": " << worst;
  }
};

std::vector<std::int64_t> survey_positions() {
  const std::uint64_t dense = test::env_count("PEV_SURVEY_POSITIONS", 4096);
  const std::uint64_t random = test::env_count("PEV_SURVEY_RANDOM", 1024);
  const std::uint64_t bits = test::env_count("PEV_SURVEY_RANDOM_BITS", 31);
  std::vector<std::int64_t> p;
  for (std::uint64_t i = 0; i < dense; ++i) p.push_back(static_cast<std::int64_t>(i));
  test::splitmix rng(test::test_seed(99));
  for (std::uint64_t i = 0; i < random; ++i) {
    p.push_back(static_cast<std::int64_t>(rng.next() >> (64 - bits)));
  }
  std::cout << "positions: every p < " << dense << ", " << random << " random p < 2^" << bits
            << " (PEV_SURVEY_POSITIONS, PEV_SURVEY_RANDOM, PEV_SURVEY_RANDOM_BITS)\n";
  return p;
}

class KernelAccurateSurveyRope : public ::testing::TestWithParam<const char*> {};

TEST_P(KernelAccurateSurveyRope, Rates) {
  const auto s = test::parse_as<spec::rope>(GetParam());
  const auto pos = survey_positions();
  const ref::rope_reference ref(s);
  const kernel::rope_kernel k(s, kernel::strategy::accurate);
  const auto P = static_cast<std::size_t>(s.pairs());
  tally t32, t16, tb;
  std::vector<float> c32(P * pos.size()), s32(c32.size());
  std::vector<half> c16(c32.size()), s16(c32.size());
  std::vector<bfloat16> cb(c32.size()), sb(c32.size());
  k.table<float>(pos, c32, s32);
  k.table<half>(pos, c16, s16);
  k.table<bfloat16>(pos, cb, sb);
  for (std::size_t r = 0; r < pos.size(); ++r) {
    const auto row = ref.row(pos[r]);
    for (std::size_t i = 0; i < P; ++i) {
      const std::size_t j = r * P + i;
      auto where = [&] { return "p=" + std::to_string(pos[r]) + " i=" + std::to_string(i); };
      t32.add(c32[j], row[i].cos, where);
      t32.add(s32[j], row[i].sin, where);
      t16.add(c16[j], row[i].cos, where);
      t16.add(s16[j], row[i].sin, where);
      tb.add(cb[j], row[i].cos, where);
      tb.add(sb[j], row[i].sin, where);
    }
  }
  const std::string what = std::string("accurate ") + GetParam();
  t32.print(what, "fp32");
  t16.print(what, "fp16");
  tb.print(what, "bf16");
}

INSTANTIATE_TEST_SUITE_P(
    Survey, KernelAccurateSurveyRope,
    ::testing::Values("rope:head_dim=128,rope_theta=10000",
                      "rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,"
                      "low_freq_factor=1,high_freq_factor=4,original_max_position_embeddings=8192",
                      "rope:head_dim=64,rope_type=yarn,factor=16,original_max_position_embeddings="
                      "4096,rope_theta=1000000"),
    [](const auto& info) { return "config" + std::to_string(info.index); });

TEST(KernelAccurateSurveySinusoidal, Rates) {
  const auto s = test::parse_as<spec::sinusoidal>("sinusoidal:d_model=128");
  const auto pos = survey_positions();
  const auto d = static_cast<std::size_t>(s.d_model);
  tally t32, t16, tb;
  std::vector<float> f(d * pos.size());
  std::vector<half> h(f.size());
  std::vector<bfloat16> b(f.size());
  kernel::sinusoidal_table<float>(s, kernel::strategy::accurate, pos, f);
  kernel::sinusoidal_table<half>(s, kernel::strategy::accurate, pos, h);
  kernel::sinusoidal_table<bfloat16>(s, kernel::strategy::accurate, pos, b);
  // The reference's exact frequencies once, then sin/cos of p·ω at its working precision (what
  // ref::sinusoidal_row evaluates, without recomputing the frequencies for every row).
  const precision_scope work(precision_bits() + ref::kGuardBits);
  const auto w = ref::sinusoidal_frequencies(s);
  std::vector<real> row(d);
  for (std::size_t r = 0; r < pos.size(); ++r) {
    for (std::size_t j = 0; j < d; ++j) {
      const real a = real_from_int(pos[r]) * w[j];
      row[j] = j % 2 == 0 ? sin(a) : cos(a);
    }
    for (std::size_t j = 0; j < d; ++j) {
      const std::size_t k = r * d + j;
      auto where = [&] { return "p=" + std::to_string(pos[r]) + " col=" + std::to_string(j); };
      t32.add(f[k], row[j], where);
      t16.add(h[k], row[j], where);
      tb.add(b[k], row[j], where);
    }
  }
  t32.print("accurate sinusoidal:d_model=128", "fp32");
  t16.print("accurate sinusoidal:d_model=128", "fp16");
  tb.print("accurate sinusoidal:d_model=128", "bf16");
}

}  // namespace
}  // namespace pev

// Exhaustive sweep (label `exhaustive`): every position below 2^20 of a head_dim-32 table, every
// strategy and dtype, against the exact reference; the same verdicts as the sampled run.

#include <gtest/gtest.h>

#include "pev/spec/parse.h"
#include "pev/sweep/sweep.h"

namespace pev {
namespace {

TEST(SweepExhaustive, EveryPositionBelow2To20) {
  sweep::options o;
  o.exhaustive = true;
  o.max_position = (std::int64_t{1} << 20) - 1;  // included
  const auto r = sweep::run({{"llama2", spec::parse_spec("rope:head_dim=32"), ""}}, o);
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.pass) << c.id << " rho " << c.max_rho;
    EXPECT_EQ(c.positions, std::uint64_t{1} << 20) << c.id;
    if (c.strategy == "accurate") {
      EXPECT_LE(c.max_ulp_error, 1.0) << c.id;
    }
  }
}

}  // namespace
}  // namespace pev

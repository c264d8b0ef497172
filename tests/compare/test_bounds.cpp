// compare::rope_bounds::table_rows (the comparison engine's vectorised bounds of table rows)
// against rope_bounds::table (one value at a time, the contracts' own table_bound_at): equal bit
// for bit for every recipe bound certification uses, every output format, specs with and without
// an attention factor, positions small and large, blocks of 1 to 4 and of 65 rows; and the bound
// set is left at the block's last row, as at_position leaves it.

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "pev/compare/bounds.h"
#include "pev/compare/reference.h"
#include "pev/core/error.h"
#include "pev/metric/error_model.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

using compare::named_bound;

TEST(RopeBounds, TableRowsEqualsTable) {
  const unsigned seed = 20261124;
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  for (const char* text :
       {"rope:head_dim=128,rope_theta=500000",
        "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
        "original_max_position_embeddings=32768",
        "rope:head_dim=64,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
        "high_freq_factor=4,original_max_position_embeddings=8192"}) {
    const spec::rope s = std::get<spec::rope>(spec::parse_spec(text));
    const compare::rope_reference ref(s, std::nullopt, compare::reference_path::fast);
    for (const metric::libm* lib : {&metric::kAnyConforming, &metric::kGlibc}) {
      const std::vector<named_bound> names = {
          named_bound::one_ulp(),
          named_bound::drift_free(),
          named_bound::of("hf", kernel::strategy::hf, *lib, impl::rotation_arithmetic::output),
          named_bound::of("vllm-fp16", kernel::strategy::table_fp16, *lib),
          named_bound::of("vllm-bf16", kernel::strategy::table_bf16, *lib),
          named_bound::of("ggml", kernel::strategy::ggml, *lib),
          named_bound::of("accurate", kernel::strategy::accurate, *lib)};
      compare::rope_bounds row_bounds(s, std::nullopt, ref.attention_factor(), names);
      compare::rope_bounds one_bounds = row_bounds;
      const std::size_t P = static_cast<std::size_t>(s.pairs()), nb = names.size();
      std::vector<std::int64_t> pair_of(2 * P);
      for (std::size_t j = 0; j < pair_of.size(); ++j) {
        pair_of[j] = static_cast<std::int64_t>(j % P);
      }
      for (const format out : {metric::kF32, metric::kF16, metric::kBF16, metric::kF64}) {
        for (int r = 0; r < 40; ++r) {
          // R rows (1 to 4, or 65: more than a block of the ggml replay across rows), two planes
          // (cos, sin) of R·n values.
          const std::size_t R = r % 10 == 9 ? 65 : 1 + rng() % 4, n = pair_of.size(), N = 2 * R * n;
          std::vector<std::int64_t> pos(R);
          for (std::int64_t& p : pos) {
            p = r < 20 ? static_cast<std::int64_t>(rng() % 5000)
                       : static_cast<std::int64_t>(rng() >> (24 + r % 30));
          }
          std::vector<double> y(N);
          for (double& v : y) {
            const int kind = static_cast<int>(rng() % 8);
            v = kind == 0 ? 0.0
                : kind == 1
                    ? ref.attention_factor()
                    : ref.attention_factor() * static_cast<double>(rng() % (1 << 30)) * 0x1p-30;
          }
          std::vector<double> b(nb * N), one(nb);
          row_bounds.table_rows(pos, pair_of, y, out, b);
          for (std::size_t q = 0; q < R; ++q) {
            one_bounds.at_position(pos[q]);
            for (std::size_t v = q * n; v < N; v += R * n) {  // row q of each plane
              for (std::size_t k = 0; k < n; ++k) {
                one_bounds.table(pair_of[k], y[v + k], out, one);
                for (std::size_t j = 0; j < nb; ++j) {
                  ASSERT_EQ(b[j * N + v + k], one[j])
                      << text << " " << names[j].name << " p " << pos[q] << " value " << v + k
                      << " y " << y[v + k];
                }
              }
            }
          }
          // table_rows leaves the bound set at the last row, as at_position does.
          for (std::size_t i = 0; i < P; ++i) {
            std::vector<double> left(nb);
            row_bounds.table(static_cast<std::int64_t>(i), y[0], out, left);
            one_bounds.table(static_cast<std::int64_t>(i), y[0], out, one);
            for (std::size_t j = 0; j < nb; ++j) {
              ASSERT_EQ(left[j], one[j]) << text << " " << names[j].name << " pair " << i;
            }
          }
        }
      }
    }
  }
}

// A bound set fills its bounds by name, in the order of its names, whatever the order of the
// entries; a name without an entry, an entry of an unknown name and a name given twice are
// pev::error at construction (a rung added to certify's ladder cannot go to another's bound).
TEST(BoundSet, FillsByNameAndRejectsMissingOrUnknownNames) {
  const std::vector<std::string> known = {"exact", "drift-free", "hf", "ggml", "vllm-fp16"};
  using set = compare::bound_set<double>;
  const set b({"exact", "drift-free", "hf"}, known,
              {{"hf", [](double y) { return 3 * y; }},
               {"ggml", [](double) -> double { throw error("not asked for"); }},
               {"exact", [](double y) { return y; }},
               {"drift-free", [](double y) { return 2 * y; }}},
              "test");
  EXPECT_EQ(b.names(), (std::vector<std::string>{"exact", "drift-free", "hf"}));
  std::vector<double> v(b.size());
  b.fill(v, 1.5);
  EXPECT_EQ(v, (std::vector<double>{1.5, 3.0, 4.5}));
  const auto message = [&](std::vector<std::string> names, set::entries e) -> std::string {
    try {
      const set s(std::move(names), known, std::move(e), "family x");
      (void)s;
    } catch (const error& err) {
      return err.what();
    }
    return "";
  };
  const auto one = [](double) { return 1.0; };
  // A name without an entry (a new rung the family does not fill).
  EXPECT_EQ(message({"exact", "vllm-fp16"}, {{"exact", one}}), "family x: no bound 'vllm-fp16'");
  // An entry no bound is called.
  EXPECT_EQ(message({"exact"}, {{"exact", one}, {"vllm", one}}),
            "family x: no bound is called 'vllm'");
  EXPECT_EQ(message({"exact"}, {{"exact", one}, {"exact", one}}),
            "family x: bound 'exact' given twice");
  EXPECT_EQ(message({"exact"}, {{"exact", one}}), "");
  // by_name (certify's RoPE bound set) orders and checks the same way.
  EXPECT_EQ(compare::by_name<int>(std::vector<std::string>{"hf", "exact"}, known,
                                  {{"exact", 0}, {"hf", 2}}, "t"),
            (std::vector<int>{2, 0}));
  EXPECT_THROW(compare::by_name<int>(std::vector<std::string>{"hf"}, known, {{"exact", 0}}, "t"),
               error);
}

}  // namespace
}  // namespace pev

// The diagnosis bounded (docs/certify.md §3): a dump of more rows than the diagnosis replays is
// diagnosed on a deterministic sample of its rows that the certificate states — the rows of the
// first mismatches among them — and names the mistake as on every row; data that fails only where
// the claimed recipe's bound is vacuous is told so instead of a mistake hunted.

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

// 8 pairs and 2^16 rows: more than the diagnosis replays, and quick to compare.
constexpr const char* kSpec = "rope:head_dim=16,rope_theta=10000";
constexpr std::int64_t kRows = std::int64_t{1} << 16;

std::vector<std::int64_t> every_position(std::int64_t n) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  return p;
}

// The table of `im` at `pos` as a dump (cos, sin, positions); `edit` may change it first.
template <class Edit>
certify::dump table_dump(const impl::implementation& im, const spec::rope& r,
                         const std::vector<std::int64_t>& pos, Edit&& edit) {
  const auto P = static_cast<std::int64_t>(pos.size());
  std::vector<float> c(static_cast<std::size_t>(P * r.pairs())), s(c.size());
  im.rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  edit(c, s);
  certify::dump d;
  d.tensors.emplace("cos", io::array::from_values<float>({P, r.pairs()}, c));
  d.tensors.emplace("sin", io::array::from_values<float>({P, r.pairs()}, s));
  d.tensors.emplace("positions", io::array::from_int64({P}, pos));
  return d;
}

certify::dump table_dump(const impl::implementation& im, const spec::rope& r,
                         const std::vector<std::int64_t>& pos) {
  return table_dump(im, r, pos, [](auto&, auto&) {});
}

// Whether the diagnosis names `id` (first, or tied with the first: indistinguishable).
bool named(const report::diagnosis& w, const std::string& id) {
  return w.named == id || std::find(w.indistinguishable.begin(), w.indistinguishable.end(), id) !=
                              w.indistinguishable.end();
}

const report::diagnosis& why(const certify::certificate& cert) {
  EXPECT_TRUE(cert.certification->why.has_value()) << certify::to_text(cert);
  return *cert.certification->why;
}

TEST(DiagnosisBounded, NamesTheMistakeFromTheSampleAndSaysWhichRows) {
  const spec::encoding e = spec::parse_spec(kSpec);
  const auto& r = std::get<spec::rope>(e);
  for (const char* id : {"sin-cos-swapped", "position-off-by-one", "positions-bf16"}) {
    const auto m = impl::make_mutant(id, e);
    const auto cert = certify::certify_dump(e, table_dump(*m, r, every_position(kRows)), {});
    EXPECT_EQ(cert.exit_code(), 1) << id;
    const auto& w = why(cert);
    EXPECT_TRUE(named(w, id)) << certify::to_text(cert);
    // The certificate states the sample: at most 4096 of the 65536 rows.
    EXPECT_NE(w.replayed_on.find("of 65536 table rows"), std::string::npos) << w.replayed_on;
    EXPECT_LE(std::stoll(w.replayed_on), 4096) << w.replayed_on;
    EXPECT_NE(certify::to_text(cert).find("mistakes replayed on "), std::string::npos);
    // certificate.json carries it.
    const auto back = report::from_json(certify::to_json(cert), "certificate.json");
    EXPECT_EQ(back.certification->why->replayed_on, w.replayed_on);
  }
}

TEST(DiagnosisBounded, TheSampleIsDeterministic) {
  const spec::encoding e = spec::parse_spec(kSpec);
  const auto& r = std::get<spec::rope>(e);
  const auto m = impl::make_mutant("positions-tf32", e);
  const certify::dump d = table_dump(*m, r, every_position(kRows));
  const auto a = certify::certify_dump(e, d, {}), b = certify::certify_dump(e, d, {});
  const auto &x = why(a), &y = why(b);
  EXPECT_EQ(x.replayed_on, y.replayed_on);
  EXPECT_EQ(x.named, y.named);
  ASSERT_EQ(x.explanations.size(), y.explanations.size());
  for (std::size_t k = 0; k < x.explanations.size(); ++k) {
    EXPECT_EQ(x.explanations[k].mutant, y.explanations[k].mutant);
    EXPECT_EQ(x.explanations[k].max_rho, y.explanations[k].max_rho);
    EXPECT_EQ(x.explanations[k].rms_rho, y.explanations[k].rms_rho);
    EXPECT_EQ(x.explanations[k].digest, y.explanations[k].digest);
  }
}

TEST(DiagnosisBounded, EveryRowOfASmallDumpIsReplayed) {
  const spec::encoding e = spec::parse_spec(kSpec);
  const auto& r = std::get<spec::rope>(e);
  const auto m = impl::make_mutant("sin-cos-swapped", e);
  const auto cert = certify::certify_dump(e, table_dump(*m, r, every_position(4096)), {});
  EXPECT_TRUE(named(why(cert), "sin-cos-swapped"));
  EXPECT_EQ(why(cert).replayed_on, "");
}

// One row of a correct table zeroed, among rows the even spacing may skip: the sample holds the
// row of the first mismatch, so every mistake is compared with it and none explains the data.
TEST(DiagnosisBounded, TheRowsOfTheFirstMismatchesAreReplayed) {
  const spec::encoding e = spec::parse_spec(kSpec);
  const auto& r = std::get<spec::rope>(e);
  const auto hf = impl::make_builtin(e, kernel::strategy::hf);
  const auto P = static_cast<std::size_t>(r.pairs());
  for (const std::size_t row : {std::size_t{40001}, std::size_t{12345}, std::size_t{777}}) {
    const auto cert = certify::certify_dump(e,
                                            table_dump(*hf, r, every_position(kRows),
                                                       [&](auto& c, auto& s) {
                                                         for (std::size_t i = 0; i < P; ++i)
                                                           c[row * P + i] = s[row * P + i] = 0.0f;
                                                       }),
                                            {});
    EXPECT_EQ(cert.exit_code(), 1);
    const auto& w = why(cert);
    ASSERT_FALSE(w.first.empty());
    EXPECT_EQ(w.first.front().position, static_cast<std::int64_t>(row));
    EXPECT_FALSE(w.named) << certify::to_text(cert);
    ASSERT_FALSE(w.explanations.empty());
    // |cos − 0| or |sin − 0| is of order 1 at that row, a million times any bound.
    EXPECT_GT(w.explanations.front().max_rho, 1e3) << certify::to_text(cert);
  }
}

// A dump of q (64 tokens, 4 heads of 128) rotated by `im` at positions first, first + 1, …, of
// seeded standard-normal inputs.
certify::dump rotated_q(const impl::implementation& im, std::int64_t first) {
  return test::rotated_q(im, first, 64, 4, 20261127);
}

// Rotated q at positions near 4·10^6, as transformers' fp32 recipe makes them: the hf bound is
// vacuous at some values there, and the data lies within it everywhere else.
TEST(DiagnosisBounded, AVacuousRecipeBoundIsStatedInsteadOfAMistakeHunted) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=128,rope_theta=500000");
  const auto hf = impl::make_builtin(e, kernel::strategy::hf);
  const certify::dump d = rotated_q(*hf, 4000000);
  certify::options o;
  o.recipe = "hf";
  o.qk_layout = certify::qk_layout::thd;
  const auto cert = certify::certify_dump(e, d, o);
  ASSERT_EQ(cert.exit_code(), 1) << certify::to_text(cert);
  const auto& check = cert.checks.front();
  ASSERT_TRUE(check.vacuous.count("hf")) << certify::to_text(cert);
  const auto& w = why(cert);
  EXPECT_NE(w.vacuous.find(fmt::format("the hf recipe cannot certify {} value(s) of q_out, the "
                                       "first at position {}",
                                       check.vacuous.at("hf").values,
                                       check.vacuous.at("hf").first_position)),
            std::string::npos)
      << w.vacuous;
  EXPECT_FALSE(w.named);
  EXPECT_TRUE(w.explanations.empty());
  EXPECT_NE(certify::to_text(cert).find("cannot certify"), std::string::npos);
  const auto back = report::from_json(certify::to_json(cert), "certificate.json");
  EXPECT_EQ(back.certification->why->vacuous, w.vacuous);
  // The same data at small positions is certified: the statement is vacuity's alone.
  EXPECT_EQ(certify::certify_dump(e, rotated_q(*hf, 1000), o).exit_code(), 0);
}

// A mistake beyond the bound where it is not vacuous is still hunted and named. (Positions off by
// one are not: at 4·10^6 the hf bound holds a one-position shift, ρ 0.96, and the certificate says
// the recipe cannot certify the vacuous values.)
TEST(DiagnosisBounded, AMistakeAtLargePositionsIsStillNamed) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=128,rope_theta=500000");
  const auto m = impl::make_mutant("rotate-inverse", e);
  const certify::dump d = rotated_q(*m, 4000000);
  certify::options o;
  o.recipe = "hf";
  o.qk_layout = certify::qk_layout::thd;
  const auto cert = certify::certify_dump(e, d, o);
  ASSERT_EQ(cert.exit_code(), 1);
  EXPECT_EQ(why(cert).vacuous, "");
  EXPECT_TRUE(named(why(cert), "rotate-inverse")) << certify::to_text(cert);
}

}  // namespace
}  // namespace pev

// Real llama.cpp/ggml CPU RoPE (tests/data/ggml-real/README.md): tables and q/k made by ggml's own
// ggml_rope_ext from an FMA build (GGML_NATIVE: the compiler contracts the YaRN angle mix) and from
// a -ffp-contract=off build. Every genuine one is certified and holds `--recipe ggml`, its library
// measured against ggml's angles; the replay follows the build's mix (docs/numerics.md §8.7); the
// planted mistakes of an FMA build are named, never fast-math.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(PEV_SOURCE_DIR) / "tests" / "data" / "ggml-real";

certify::dump dump_of(const std::string& name) {
  return certify::read_dump({kData / (name + ".safetensors")});
}

certify::certificate certify_file(const std::string& name, const char* recipe) {
  const certify::dump d = dump_of(name);
  certify::options o;
  if (recipe) o.recipe = recipe;
  return certify::certify_dump(spec::parse_spec(d.metadata.at("spec")), d, o);
}

/// The replay's account of the ggml recurrence it followed (check::replayed), of a table's cos.
std::string replayed_recurrence(const certify::certificate& cert) {
  for (const report::check& c : cert.checks) {
    if (c.id == "cos" && c.replayed) return c.replayed->frequencies;
  }
  return "";
}

struct genuine {
  const char* file;
  bool table;  // a table (its library measured, its recurrence replayed), else q/k
  bool fused;  // made by the FMA build where the two builds differ
};

constexpr genuine kGenuine[] = {
    {"qwen2.5-yarn-fma", true, true},
    {"qwen2.5-yarn-nofma", true, false},
    {"deepseek-v3-yarn-fma", true, true},
    {"deepseek-v3-yarn-nofma", true, false},
    {"llama2-plain", true, false},         // both builds byte-identical (no product-sum)
    {"llama3.1-rope-freqs", true, false},  // the same
    {"qwen2.5-yarn-qk-fp32-fma", false, true},
};

TEST(GgmlReal, EveryGenuineDumpIsCertifiedAndTheGgmlRecipeHolds) {
  std::string table;
  for (const genuine& x : kGenuine) {
    for (const char* recipe : {static_cast<const char*>(nullptr), "ggml"}) {
      const certify::certificate cert = certify_file(x.file, recipe);
      const std::string what = fmt::format("{}{}", x.file, recipe ? " --recipe ggml" : "");
      const report::certification& z = *cert.certification;
      EXPECT_EQ(cert.exit_code(), 0) << what << "\n" << certify::to_text(cert);
      EXPECT_LE(z.result, report::grade::recipe_ggml) << what;
      EXPECT_FALSE(z.why) << what;  // nothing to explain: no mistake, fast-math least of all
      if (x.table) {
        // The library measured against ggml's own angles (the fit follows the build's mix).
        EXPECT_EQ(z.library.angles, "ggml") << what << "\n" << certify::to_text(cert);
        ASSERT_TRUE(z.library.trig_ulp) << what;
        EXPECT_LE(*z.library.trig_ulp, 1.0) << what;  // glibc's cosf/sinf
        // The replay names the fused mix exactly where the build fused it.
        const std::string r = replayed_recurrence(cert);
        EXPECT_EQ(r.find("fused by FMA") != std::string::npos, x.fused) << what << ": " << r;
      }
      std::string rhos;
      for (const report::check& c : cert.checks) {
        const auto it = c.ladder_rho.find("ggml");
        if (it != c.ladder_rho.end()) rhos += fmt::format(" {} {:.3g}", c.id, it->second);
      }
      table += fmt::format("  {:<40} exit {} {:<12} ggml rho:{}\n", what, cert.exit_code(),
                           report::to_string(z.result), rhos);
    }
  }
  std::cout << "real ggml verdicts:\n" << table;
}

/// The values of a `table` [P, pairs, 2] fixture.
std::vector<float> table_values(const certify::dump& d) {
  const io::array& t = *d.find("table");
  std::vector<float> v(static_cast<std::size_t>(t.elements()));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
  return v;
}

// The fixtures are what they claim: the FMA build's tables differ from the other build's, and
// only on YaRN's ramp pairs (those whose mix is neither 0 nor 1) — the contraction is real, and
// the rest of the recurrence has no product-sum to contract.
TEST(GgmlReal, TheTwoBuildsDifferOnTheRampPairsOnly) {
  const struct {
    const char* model;
    std::int64_t first, last;  // the ramp pairs, (corr_low, corr_high) of ggml_rope_yarn_corr_dims
  } cases[] = {{"qwen2.5-yarn", 24, 39}, {"deepseek-v3-yarn", 12, 22}};
  for (const auto& c : cases) {
    const certify::dump fma = dump_of(std::string(c.model) + "-fma");
    const certify::dump off = dump_of(std::string(c.model) + "-nofma");
    const std::vector<float> a = table_values(fma), b = table_values(off);
    ASSERT_EQ(a.size(), b.size());
    const auto pairs = fma.find("table")->shape[1];
    std::set<std::int64_t> differ;
    std::size_t values = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (a[k] == b[k]) continue;
      ++values;
      differ.insert(static_cast<std::int64_t>(k / 2) % pairs);
    }
    EXPECT_GT(values, 0u) << c.model;
    ASSERT_FALSE(differ.empty()) << c.model;
    EXPECT_GE(*differ.begin(), c.first) << c.model;
    EXPECT_LE(*differ.rbegin(), c.last) << c.model;
    std::cout << fmt::format("{}: {} of {} values differ between the builds, pairs {}–{}\n",
                             c.model, values, a.size(), *differ.begin(), *differ.rbegin());
  }
}

// llama.cpp's own mistakes planted in an FMA build's run: not certified, and the mistake named
// (or listed as indistinguishable from the one named) — the fused mix is no mistake.
TEST(GgmlReal, PlantedMistakesOfAnFmaBuildAreNamed) {
  const struct {
    const char* file;
    const char* planted;
  } cases[] = {{"qwen2.5-yarn-fma-ramp-off", "ggml-yarn-ramp-off"},
               {"deepseek-v3-yarn-fma-attn-not-divided", "ggml-attn-factor-not-divided"}};
  for (const auto& c : cases) {
    for (const char* recipe : {static_cast<const char*>(nullptr), "ggml"}) {
      const certify::certificate cert = certify_file(c.file, recipe);
      EXPECT_EQ(cert.exit_code(), 1) << c.file << "\n" << certify::to_text(cert);
      const report::certification& z = *cert.certification;
      ASSERT_TRUE(z.why && z.why->named) << c.file << "\n" << certify::to_text(cert);
      std::set<std::string> names(z.why->indistinguishable.begin(), z.why->indistinguishable.end());
      names.insert(*z.why->named);
      EXPECT_TRUE(names.count(c.planted)) << c.file << ": named " << *z.why->named;
      EXPECT_FALSE(names.count("fast-math-trig")) << c.file;
    }
  }
}

}  // namespace
}  // namespace pev

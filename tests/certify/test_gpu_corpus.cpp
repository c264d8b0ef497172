// RoPE computed on an NVIDIA H100 by real engines (tests/data/gpu-h100/README.md): every dump,
// certified from the config.json beside it, gets the verdict the README states — with and without
// a claim of the hf recipe — and the fast-math dumps are named as such (docs/numerics.md §13.7).
// The fast-math model of the mistake catalogue (pev/kernel/fast_math.h) is measured against the
// hardware's __sincosf on the same angles.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/kernel/fast_math.h"
#include "pev/metric/libm.h"
#include "pev/spec/config.h"

namespace pev {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(PEV_SOURCE_DIR) / "tests" / "data" / "gpu-h100";

struct expected {
  const char* model;
  const char* file;
  bool certified;     // with and without --recipe hf
  const char* named;  // the mistake the diagnosis names (not certified only)
};

constexpr expected kCases[] = {
    {"llama3.1-8b", "hf-eager-fp32", true, ""},
    {"llama3.1-8b", "hf-eager-bf16", true, ""},
    {"llama3.1-8b", "hf-compile-bf16", true, ""},
    {"llama3.1-8b", "cupy-sincosf-fp32", true, ""},
    {"llama3.1-8b", "cupy-fastmath-fp32", false, "fast-math-trig"},
    {"llama3.1-8b", "cupy-fastmath-bf16", false, "fast-math-trig"},
    {"llama3.1-8b", "bug-autocast-fp32", false, "autocast-bf16"},
    {"llama3.1-8b", "qk-eager-bf16", true, ""},
    {"llama3.1-8b", "qk-compile-bf16", true, ""},
    {"llama2-7b", "jax-fp32", true, ""},
    {"llama2-7b", "vllm-cache-bf16", true, ""},
};

// The rungs a summary marks holding (✓) with a printed ρ above 1: none may be (the printed ρ is
// the one that decides, docs/numerics.md §13.7).
std::vector<std::string> rho_marked_holding(const std::string& text) {
  std::vector<std::string> bad;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("recipes", 0) != 0) continue;
    std::istringstream cells(line.substr(line.find(':') + 1));
    std::vector<std::string> w{std::istream_iterator<std::string>(cells), {}};
    for (std::size_t k = 0; k + 2 < w.size(); ++k) {
      if (w[k + 2] == "✓" && std::stod(w[k + 1]) > 1) {
        bad.push_back(line);
      }
    }
  }
  return bad;
}

std::string rho_of(const report::check& c, const std::string& rung) {
  const auto it = c.ladder_rho.find(rung);
  return it == c.ladder_rho.end() ? "-" : fmt::format("{:.3g}", it->second);
}

TEST(GpuCorpus, EveryDumpGetsTheVerdictItsReadmeStates) {
  std::string table;
  for (const expected& x : kCases) {
    const fs::path dir = kCorpus / x.model;
    const spec::encoding e = spec::parse_config_encoding_file(dir / "config.json");
    const certify::dump d = certify::read_dump({dir / (std::string(x.file) + ".safetensors")});
    for (const bool claim : {false, true}) {
      certify::options o;
      if (claim) o.recipe = "hf";
      const certify::certificate cert = certify::certify_dump(e, d, o);
      const std::string what = fmt::format("{}/{}{}", x.model, x.file, claim ? " --recipe hf" : "");
      EXPECT_EQ(cert.exit_code(), x.certified ? 0 : 1) << what << "\n" << certify::to_text(cert);
      EXPECT_TRUE(rho_marked_holding(certify::to_text(cert)).empty()) << what;
      const auto& z = *cert.certification;
      if (!x.certified) {
        ASSERT_TRUE(z.why) << what;
        EXPECT_EQ(z.why->named.value_or("none"), x.named) << what << "\n" << certify::to_text(cert);
      }
      // The ladder: a grade implies every claim it ranks above (docs/numerics.md §13.1).
      if (!claim && cert.exit_code() == 0) {
        for (const char* r : {"exact", "hf", "ggml", "vllm"}) {
          certify::options oc;
          oc.recipe = r;
          const bool implied =
              z.result <= (std::string(r) == "exact"  ? report::grade::faithful
                           : std::string(r) == "hf"   ? report::grade::recipe_hf
                           : std::string(r) == "ggml" ? report::grade::recipe_ggml
                                                      : report::grade::recipe_vllm);
          if (!implied) continue;
          EXPECT_EQ(certify::certify_dump(e, d, oc).exit_code(), 0)
              << what << ": graded " << report::to_string(z.result) << " but --recipe " << r
              << " does not hold";
        }
      }
      std::string rhos;
      for (const report::check& c : cert.checks) {
        if (c.id == "cos" || c.id == "sin" || c.id == "q_out" || c.id == "k_out") {
          rhos += fmt::format(" {} {}", c.id, rho_of(c, "hf"));
        }
      }
      table += fmt::format("  {:<44} exit {} {:<14} hf rho:{}{}\n", what, cert.exit_code(),
                           report::to_string(z.result), rhos,
                           z.why && z.why->named ? " named " + *z.why->named : "");
    }
  }
  std::cout << "GPU corpus verdicts:\n" << table;
}

// The model takes the hardware's reduction (RZ of θ·fl32(1/2π)) and evaluates sin(2π·t) exactly:
// against the H100's __sincosf it differs by the hardware's approximation alone, within the
// fast-math absolute constant; against the accurate kernel's sincosf on the same angles it is far
// off (the reduction's error, 1.6e-7·|θ|), so the comparison could fail.
TEST(GpuCorpus, TheFastMathModelIsTheHardwareUpToItsApproximation) {
  const auto gap = [](const char* file) {
    const certify::dump d =
        certify::read_dump({kCorpus / "llama3.1-8b" / (std::string(file) + ".safetensors")});
    const io::array& pos = *d.find("positions");
    const io::array& f = *d.find("inv_freq");
    const io::array& c = *d.find("cos");
    const io::array& s = *d.find("sin");
    const auto P = static_cast<std::size_t>(pos.shape[0]);
    const auto pairs = static_cast<std::size_t>(f.shape[0]);
    const auto width = static_cast<std::size_t>(c.shape[1]);
    const auto at = [](const io::array& a, std::size_t k, auto tag) {
      decltype(tag) v;
      std::memcpy(&v, a.data.data() + k * sizeof(v), sizeof(v));
      return v;
    };
    double worst = 0;
    for (std::size_t r = 0; r < P; ++r) {
      const auto p = at(pos, r, std::int64_t{});
      for (std::size_t i = 0; i < pairs; ++i) {
        const float angle = static_cast<float>(p) * at(f, i, 0.0f);
        worst = std::max(worst, std::fabs(double(at(c, r * width + i, 0.0f)) -
                                          double(kernel::fast_math_trig(angle, false))));
        worst = std::max(worst, std::fabs(double(at(s, r * width + i, 0.0f)) -
                                          double(kernel::fast_math_trig(angle, true))));
      }
    }
    return worst;
  };
  const double fast = gap("cupy-fastmath-fp32"), accurate = gap("cupy-sincosf-fp32");
  std::cout << fmt::format(
      "fast-math model against the H100: {:.3g} (__sincosf), {:.3g} (sincosf); the class's "
      "absolute constant {:.3g}\n",
      fast, accurate, metric::kFastMathAbs);
  EXPECT_LE(fast, metric::kFastMathAbs);
  EXPECT_GT(accurate, 100 * metric::kFastMathAbs);
}

}  // namespace
}  // namespace pev

namespace pev {
namespace {

certify::certificate certify_corpus(const char* model, const char* file,
                                    const certify::options& o) {
  const fs::path dir = kCorpus / model;
  return certify::certify_dump(spec::parse_config_encoding_file(dir / "config.json"),
                               certify::read_dump({dir / (std::string(file) + ".safetensors")}), o);
}

// docs/numerics.md §13.4: a claim pev could not check does not hold (exit 1, and the certificate
// says what could not be measured); a measured one is decided by the measure.
TEST(GpuCorpus, AClaimPevCannotCheckDoesNotHold) {
  certify::options o;
  o.max_trig_ulp = 1;
  // bf16: the rounding leaves only a lower bound of the trig error.
  const auto bf16 = certify_corpus("llama3.1-8b", "hf-eager-bf16", o);
  EXPECT_EQ(bf16.exit_code(), 1) << certify::to_text(bf16);
  EXPECT_NE(bf16.certification->claim_unchecked.find("--max-trig-ulp"), std::string::npos);
  // fp32: measured against the recipe's angles — within 2 ulp (CUDA's class), above 0.5.
  o.max_trig_ulp = 2;
  const auto fp32 = certify_corpus("llama3.1-8b", "hf-eager-fp32", o);
  ASSERT_TRUE(fp32.certification->library.trig_ulp) << certify::to_text(fp32);
  EXPECT_EQ(fp32.exit_code(), 0) << certify::to_text(fp32);
  o.max_trig_ulp = 0.5;
  const auto tight = certify_corpus("llama3.1-8b", "hf-eager-fp32", o);
  EXPECT_EQ(tight.exit_code(), 1);
  EXPECT_TRUE(tight.certification->claim_unchecked.empty());
  // q/k alone: no table whose angles pev replays, so the library class cannot be measured.
  certify::options lib;
  lib.libm = &metric::kOneUlp;
  const auto qk = certify_corpus("llama3.1-8b", "qk-eager-bf16", lib);
  EXPECT_EQ(qk.exit_code(), 1) << certify::to_text(qk);
  EXPECT_NE(qk.certification->claim_unchecked.find("--libm"), std::string::npos);
  std::cout << "unchecked: " << bf16.certification->claim_unchecked << "\n"
            << "unchecked: " << qk.certification->claim_unchecked << "\n"
            << "measured trig of hf-eager-fp32: " << *fp32.certification->library.trig_ulp
            << " ulp\n";
}

// --libm fast-math accepts the fast-math tables explicitly, and the certificate names the class.
TEST(GpuCorpus, FastMathIsAcceptedOnlyWhenAskedFor) {
  certify::options o;
  o.libm = &metric::kFastMath;
  for (const char* file : {"cupy-fastmath-fp32", "cupy-fastmath-bf16"}) {
    const auto cert = certify_corpus("llama3.1-8b", file, o);
    EXPECT_EQ(cert.exit_code(), 0) << file << "\n" << certify::to_text(cert);
    EXPECT_EQ(cert.certification->library.assumed, metric::kFastMath.name);
  }
}

}  // namespace
}  // namespace pev

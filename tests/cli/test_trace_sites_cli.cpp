// `pev certify` of a trace of many sites (docs/certify.md §8.2): its output is bounded — plots and
// their CSVs, page rows and check rows for the worst 32 sites (report::kDetailedSites), every
// site's row and check in certificate.json — and a trace of more than
// certify::kMaxTraceSites sites is refused before any work, naming its count, the cap and
// --layers.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pev/io/array.h"
#include "pev/io/file.h"
#include "pev/io/safetensors.h"
#include "run.h"

namespace pev {
namespace {

using test::run_pev;

constexpr std::int64_t T = 4, D = 8;

// A llama-style config of `layers` layers of one head of 8 dims, and a trace of each layer's q
// [1, 1, T, D] rotated at 0 … T − 1 by RoPE θ = 10^4 (NeoX pairs), each value the fp32 rounding of
// the double rotation.
void write_trace(const std::string& dir, int layers) {
  std::ofstream(dir + "/config.json")
      << R"({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 1, "head_dim": 8,
    "num_key_value_heads": 1, "rope_theta": 10000.0, "max_position_embeddings": 4096,
    "num_hidden_layers": )"
      << layers << "}";
  io::tensor_file f;
  f.add("position_ids", io::array::from_int64({1, T}, {0, 1, 2, 3}));
  for (int l = 0; l < layers; ++l) {
    std::vector<float> in(static_cast<std::size_t>(T * D)), out(in.size());
    for (std::size_t k = 0; k < in.size(); ++k) {
      in[k] = static_cast<float>(std::sin(0.37 * double(k) + 1.3 * double(l)));
    }
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t i = 0; i < D / 2; ++i) {
        const double a = double(t) * std::pow(10000.0, -2.0 * double(i) / double(D));
        const auto j0 = static_cast<std::size_t>(t * D + i), j1 = j0 + D / 2;
        out[j0] = static_cast<float>(double(in[j0]) * std::cos(a) - double(in[j1]) * std::sin(a));
        out[j1] = static_cast<float>(double(in[j1]) * std::cos(a) + double(in[j0]) * std::sin(a));
      }
    }
    const std::string p = "layers." + std::to_string(l) + ".";
    f.add(p + "q_in", io::array::from_values<float>({1, 1, T, D}, in));
    f.add(p + "q_out", io::array::from_values<float>({1, 1, T, D}, out));
  }
  io::write_safetensors(dir + "/trace.safetensors", f);
}

std::size_t files_starting(const std::filesystem::path& dir, const std::string& prefix) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    n += e.path().filename().string().rfind(prefix, 0) == 0 ? 1 : 0;
  }
  return n;
}

TEST(CliTraceSites, OutputOfTheWorstSitesEveryRowInTheJson) {
  const std::string dir = test::temp_dir("cli_trace_sites");
  write_trace(dir, 200);
  const std::string out = dir + "/cert";
  const auto r = run_pev({"certify", "--config", dir + "/config.json", "--impl",
                          dir + "/trace.safetensors", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // 32 sites of one check each in detail: their plot CSVs (and plots, where gnuplot draws them).
  EXPECT_EQ(files_starting(out + "/data", "drift_"), 32u);
  EXPECT_LE(files_starting(out + "/plots", "error_"), 2 * 32u);  // script and SVG
  EXPECT_NE(r.out.find("32 of 200 sites shown"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(io::read_file(out + "/certificate.json"));
  ASSERT_EQ(j.at("model").at("layers").size(), 200u);
  EXPECT_EQ(j.at("checks").size(), 200u);
  for (const auto& l : j.at("model").at("layers")) EXPECT_EQ(l.at("checks").size(), 1u);
  EXPECT_NE(io::read_file(out + "/index.html").find("32 of 200 sites shown"), std::string::npos);
}

TEST(CliTraceSites, MoreSitesThanTheCapRefusedNamingTheCount) {
  const std::string dir = test::temp_dir("cli_trace_cap");
  write_trace(dir, 16385);
  const auto r = run_pev({"certify", "--config", dir + "/config.json", "--impl",
                          dir + "/trace.safetensors", "--out", dir + "/cert"});
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find("the trace holds 16385 sites"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at most 16384"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--layers"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/cert/certificate.json"));
}

}  // namespace
}  // namespace pev

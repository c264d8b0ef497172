// `pev certify` of a model trace end to end (docs/certify.md §8): a SmolLM3-style config (layer 1
// NoPE by no_rope_layers) and a safetensors trace of two layers; the certificate's layer rows and
// page, the NoPE layer rotated named at its layer, --layers, --layer-type refused, and `pev
// verify` re-running a trace's certificate.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "pev/io/array.h"
#include "pev/io/file.h"
#include "pev/io/npy.h"
#include "pev/io/safetensors.h"
#include "run.h"

namespace pev {
namespace {

using test::run_pev;

constexpr std::int64_t T = 40, H = 2, D = 32;

// q [1, H, T, D] (bhtd) rotated at 0 … T − 1 by RoPE θ = 10^4 (NeoX pairs), each value the fp32
// rounding of the double rotation: within an ulp of the exact one.
void add_layer(io::tensor_file& f, int layer, bool rotate, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> in(static_cast<std::size_t>(H * T * D)), out(in.size());
  for (float& v : in) v = normal(rng);
  out = in;
  if (rotate) {
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t t = 0; t < T; ++t) {
        const std::size_t row = static_cast<std::size_t>((h * T + t) * D);
        for (std::int64_t i = 0; i < D / 2; ++i) {
          const double a = static_cast<double>(t) * std::pow(10000.0, -2.0 * double(i) / double(D));
          const double x0 = in[row + static_cast<std::size_t>(i)];
          const double x1 = in[row + static_cast<std::size_t>(i + D / 2)];
          out[row + static_cast<std::size_t>(i)] =
              static_cast<float>(x0 * std::cos(a) - x1 * std::sin(a));
          out[row + static_cast<std::size_t>(i + D / 2)] =
              static_cast<float>(x1 * std::cos(a) + x0 * std::sin(a));
        }
      }
    }
  }
  const std::string p = "layers." + std::to_string(layer) + ".";
  f.add(p + "q_in", io::array::from_values<float>({1, H, T, D}, in));
  f.add(p + "q_out", io::array::from_values<float>({1, H, T, D}, out));
}

std::string write_trace(const std::string& dir, const std::string& name, bool rotate_nope) {
  io::tensor_file f;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) pos[static_cast<std::size_t>(t)] = t;
  f.add("position_ids", io::array::from_int64({1, T}, pos));
  add_layer(f, 0, true, 1);
  add_layer(f, 1, rotate_nope, 2);
  const std::string path = dir + "/" + name;
  io::write_safetensors(path, f);
  return path;
}

std::string write_config(const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::ofstream(path) << R"({"model_type": "smollm3", "hidden_size": 64,
    "num_attention_heads": 2, "num_hidden_layers": 2, "rope_theta": 10000.0,
    "max_position_embeddings": 4096, "no_rope_layers": [1, 0]})";
  return path;
}

TEST(CliTrace, ModelCertificateLayerByLayer) {
  const std::string dir = test::temp_dir("cli_trace");
  const std::string config = write_config(dir);
  const std::string genuine = write_trace(dir, "genuine.safetensors", false);
  auto r = run_pev({"certify", "--config", config, "--impl", genuine, "--out", dir + "/ok"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("identity (NoPE)"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(io::read_file(dir + "/ok/certificate.json"));
  ASSERT_EQ(j.at("model").at("layers").size(), 2u);
  EXPECT_EQ(j["model"]["layers"][1]["spec"], "none");
  EXPECT_NE(io::read_file(dir + "/ok/index.html").find("id=\"layers\""), std::string::npos);
  // pev verify re-runs the trace's certification and finds the same figures.
  auto v = run_pev({"verify", dir + "/ok"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  // The NoPE layer rotated: not certified, named at layer 1 with the RoPE it follows.
  const std::string planted = write_trace(dir, "planted.safetensors", true);
  r = run_pev({"certify", "--config", config, "--impl", planted, "--out", dir + "/bad"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("layer 1: rope-on-nope-layer"), std::string::npos) << r.out;
  // --layers: certify only the layer named (layer 0 holds); a layer not in the config: exit 2.
  r = run_pev(
      {"certify", "--config", config, "--impl", planted, "--layers", "0", "--out", dir + "/l0"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;  // the trace holds layer 1, not named
  EXPECT_NE(r.err.find("holds layer 1, which --layers leaves out"), std::string::npos) << r.err;
  r = run_pev({"certify", "--config", config, "--impl", genuine, "--layer-type", "full_attention",
               "--out", dir + "/lt"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--layer-type"), std::string::npos) << r.err;
  r = run_pev(
      {"certify", "--config", config, "--impl", genuine, "--layers", "0:x", "--out", dir + "/lx"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--layers"), std::string::npos) << r.err;
}

// A learned table's trace site certified against one --spec (its table=FILE, OPT's offset 2):
// the rows the model added at the input, embed.positions, without the checkpoint's table in the
// trace; the offset forgotten is named at the embed site.
TEST(CliTrace, LearnedEmbedSiteAgainstASpec) {
  const std::string dir = test::temp_dir("cli_trace_learned");
  const std::int64_t N = 64, d = 16, P = 20;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> table(static_cast<std::size_t>(N * d));
  for (float& v : table) v = normal(rng);
  io::write_npy(dir + "/wpe.npy", io::array::from_values<float>({N, d}, table));
  const auto trace = [&](std::int64_t offset, const std::string& name) {
    io::tensor_file f;
    std::vector<std::int64_t> pos;
    std::vector<float> rows;
    for (std::int64_t p = 0; p < P; ++p) {
      pos.push_back(p);
      const auto at = table.begin() + static_cast<std::ptrdiff_t>((p + offset) * d);
      rows.insert(rows.end(), at, at + d);
    }
    f.add("position_ids", io::array::from_int64({1, P}, pos));
    f.add("embed.positions", io::array::from_values<float>({1, P, d}, rows));
    io::write_safetensors(dir + "/" + name, f);
    return dir + "/" + name;
  };
  const std::string spec = "learned:num_positions=64,d_model=16,offset=2,table=" + dir + "/wpe.npy";
  auto r = run_pev(
      {"certify", "--spec", spec, "--impl", trace(2, "ok.safetensors"), "--out", dir + "/ok"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = run_pev(
      {"certify", "--spec", spec, "--impl", trace(0, "bad.safetensors"), "--out", dir + "/bad"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("embed: learned-offset"), std::string::npos) << r.out;
}

// Issue 34 through the CLI: --positions on a trace refused (it would replace the trace's
// position_ids); --layers naming layers the config lacks refused in --layers' own words; pev verify
// given the certificate.json itself; an unusable TMPDIR named.
TEST(CliTrace, PositionsLayersVerifyPathAndTmpdir) {
  const std::string dir = test::temp_dir("cli_trace_hostile");
  const std::string config = write_config(dir);
  const std::string genuine = write_trace(dir, "genuine.safetensors", false);
  auto r = run_pev({"certify", "--config", config, "--impl", genuine, "--positions", "0:40",
                    "--out", dir + "/p"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("a model trace holds its own position_ids"), std::string::npos) << r.err;
  std::ofstream(dir + "/positions.txt") << "0\n1\n";
  r = run_pev({"certify", "--config", config, "--impl", genuine, "--positions-file",
               dir + "/positions.txt", "--out", dir + "/pf"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  r = run_pev({"certify", "--config", config, "--impl", genuine, "--layers", "0:4,30", "--out",
               dir + "/l"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--layers names layers 2, 3, 30, which the config does not have (2 "
                       "layers: 0…1)"),
            std::string::npos)
      << r.err;
  r = run_pev(
      {"certify", "--config", config, "--impl", genuine, "--layers", "-1", "--out", dir + "/ln"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--layers: negative value -1"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--positions"), std::string::npos) << r.err;

  r = run_pev({"certify", "--config", config, "--impl", genuine, "--out", dir + "/ok"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto v = run_pev({"verify", dir + "/ok/certificate.json"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(v.err.find("certificate.json/certificate.json"), std::string::npos) << v.err;
  // TMPDIR a regular file: run through the shell (run_pev's own temporary files follow TMPDIR).
  std::ofstream(dir + "/a-file") << "x";
  const std::string cmd = "TMPDIR='" + dir + "/a-file' '" + PEV_BINARY + "' verify '" + dir +
                          "/ok' 2> '" + dir + "/verify.err' > /dev/null";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string err = io::read_file(dir + "/verify.err");
  EXPECT_NE(err.find("TMPDIR=" + dir + "/a-file is not a usable directory"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace pev

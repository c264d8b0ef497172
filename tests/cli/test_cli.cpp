// End-to-end tests of the `pev` tool: the contract of docs/design.md §5 (names, shapes, formats,
// exit codes).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pev/io/npy.h"
#include "pev/io/safetensors.h"
#include "run.h"

namespace pev {
namespace {

using test::run_pev;

std::vector<std::vector<double>> parse_rows(const std::string& text) {
  std::vector<std::vector<double>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<double> row;
    double v;
    while (ls >> v) row.push_back(v);
    rows.push_back(row);
  }
  return rows;
}

TEST(Cli, VersionHelpAndList) {
  auto v = run_pev({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("pev 0.1.0"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("MPFR"), std::string::npos);
  // The revision the binary was built from (cmake/git_revision.cmake, at every build), not the
  // one CMake was configured at: HEAD of the source tree, "-dirty" when tracked files differ.
  std::string head;
  if (FILE* git = popen(
          ("git -C '" + std::string(PEV_SOURCE_DIR) + "' rev-parse --short=12 HEAD 2>/dev/null")
              .c_str(),
          "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, git)) head = buf;
    pclose(git);
  }
  while (!head.empty() && (head.back() == '\n' || head.back() == ' ')) head.pop_back();
  if (head.size() == 12) {
    EXPECT_TRUE(v.out.find("(git " + head + ")") != std::string::npos ||
                v.out.find("(git " + head + "-dirty)") != std::string::npos)
        << "HEAD is " << head << ": " << v.out;
  }
  auto h = run_pev({"--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("reference"), std::string::npos);
  auto rh = run_pev({"reference", "--help"});
  EXPECT_EQ(rh.exit_code, 0);
  for (const char* flag : {"--spec", "--config", "--positions", "--positions-file", "--dtype",
                           "--what", "--format", "--out", "--recipe", "--precision"}) {
    EXPECT_NE(rh.out.find(flag), std::string::npos) << flag;
  }
  auto l = run_pev({"list"});
  EXPECT_EQ(l.exit_code, 0);
  for (const char* word : {"sinusoidal", "alibi", "t5", "llama3", "longrope", "proportional", "hf",
                           "ggml", "safetensors", "bf16"}) {
    EXPECT_NE(l.out.find(word), std::string::npos) << word;
  }
  // Every grade and every claim, in `pev list` and in certify's --help.
  const auto ch = run_pev({"certify", "--help"});
  for (const char* grade : {"correctly-rounded", "faithful", "drift-free", "recipe:hf",
                            "recipe:ggml", "recipe:vllm", "not certified"}) {
    EXPECT_NE(l.out.find(std::string("\n  ") + grade + " "), std::string::npos) << grade;
    EXPECT_NE(ch.out.find(grade), std::string::npos) << grade;
  }
  EXPECT_NE(l.out.find("--recipe`): exact (faithful or better), hf, ggml, vllm"), std::string::npos)
      << l.out;
  EXPECT_EQ(run_pev({}).exit_code, 2);
  EXPECT_EQ(run_pev({"frobnicate"}).exit_code, 2);
}

TEST(Cli, PaperSinusoidalTable) {
  auto r = run_pev(
      {"reference", "--spec", "sinusoidal:d_model=4", "--positions", "0:4", "--format", "text"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = parse_rows(r.out);
  ASSERT_EQ(rows.size(), 4u);
  const double row1[] = {0.84147098, 0.54030231, 0.00999983, 0.99995000};
  for (int j = 0; j < 4; ++j) {
    // 8 decimals as in the issue: rounding the printed exact value to 8 decimals gives the table.
    EXPECT_EQ(std::round(rows[1][j] * 1e8), std::round(row1[j] * 1e8)) << j;
  }
  // At least 17 significant digits for exact values.
  EXPECT_NE(r.out.find("0.841470984807896506"), std::string::npos) << r.out;
}

TEST(Cli, CsvAndJsonShapes) {
  auto c = run_pev({"reference", "--spec", "rope:head_dim=4", "--positions", "0:3", "--format",
                    "csv", "--dtype", "fp32"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out.substr(0, c.out.find('\n')), "position,cos_0,sin_0,cos_1,sin_1");
  EXPECT_NE(c.out.find("\n1,0.5403023,0.84147096,"), std::string::npos) << c.out;
  auto j =
      run_pev({"reference", "--spec", "rope:head_dim=8", "--positions", "5:7", "--format", "json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["shape"], nlohmann::json({2, 4, 2}));
  EXPECT_EQ(doc["positions"], nlohmann::json({5, 6}));
  EXPECT_EQ(doc["data"].size(), 16u);
  EXPECT_NEAR(doc["data"][0].get<double>(), std::cos(5.0), 1e-16);
  EXPECT_EQ(doc["dtype"], "exact");
  EXPECT_TRUE(doc.contains("precision_bits"));
}

TEST(Cli, NpyAndSafetensorsHoldTheRequestedDtype) {
  const std::string dir = test::temp_dir("binary");
  auto n = run_pev({"reference", "--spec", "rope:head_dim=16,rope_theta=500000", "--positions",
                    "0:10", "--format", "npy", "--dtype", "fp32", "--out", dir + "/t.npy"});
  ASSERT_EQ(n.exit_code, 0) << n.err;
  const auto a = io::read_npy(dir + "/t.npy");
  EXPECT_EQ(a.type, io::dtype::fp32);
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{10, 8, 2}));
  const auto v = a.to_doubles();
  EXPECT_EQ(v[2 * 8 * 3 + 0], static_cast<double>(static_cast<float>(std::cos(3.0))));

  auto s = run_pev({"reference", "--spec", "rope:head_dim=16", "--positions", "100:110:3",
                    "--format", "safetensors", "--dtype", "bf16", "--out", dir + "/t.safetensors"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const auto tf = io::read_safetensors(dir + "/t.safetensors");
  EXPECT_EQ(tf.at("cos").type, io::dtype::bf16);
  EXPECT_EQ(tf.at("cos").shape, (std::vector<std::int64_t>{4, 8}));
  EXPECT_EQ(tf.at("positions").to_int64(), (std::vector<std::int64_t>{100, 103, 106, 109}));
  EXPECT_EQ(tf.metadata.at("what"), "table");
  EXPECT_EQ(tf.metadata.at("dtype"), "bf16");

  auto e = run_pev({"reference", "--spec", "sinusoidal:d_model=6", "--positions", "0:2", "--format",
                    "npy", "--out", dir + "/pe.npy"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(io::read_npy(dir + "/pe.npy").type, io::dtype::fp64);  // exact is stored as float64
}

std::string file_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Cli, StreamedTablesAreTheMpfrPathsBytes) {
  // `reference` streams RoPE tables from the fast reference; --reference mpfr streams the MPFR
  // rows rounded to the dtype. Same bytes in every format and dtype, across chunk boundaries
  // (4096 rows of 8 pairs a chunk), with an attention factor; the
  // safetensors file written to a pipe (one pass per part) equals the one written to a file.
  const std::string dir = test::temp_dir("streamed");
  struct request {
    std::string spec, positions;
  };
  const std::vector<request> requests = {{"rope:head_dim=16", "0:4100"},
                                         {"rope:head_dim=8,rope_type=yarn,factor=4,"
                                          "original_max_position_embeddings=64",
                                          "0:300:7"}};
  int k = 0;
  for (const auto& q : requests) {
    for (const std::string dtype : {"fp64", "fp32", "fp16", "bf16"}) {
      for (const std::string format : {"text", "csv", "json", "npy", "safetensors"}) {
        std::string bytes[2];
        for (int mpfr = 0; mpfr < 2; ++mpfr) {
          const std::string file = dir + "/t" + std::to_string(k++) + "." + format;
          auto r = run_pev({"reference", "--spec", q.spec, "--positions=" + q.positions, "--dtype",
                            dtype, "--format", format, "--reference", mpfr ? "mpfr" : "fast",
                            "--out", file});
          ASSERT_EQ(r.exit_code, 0) << r.err;
          bytes[mpfr] = file_bytes(file);
        }
        ASSERT_FALSE(bytes[0].empty());
        EXPECT_TRUE(bytes[0] == bytes[1]) << q.spec << " " << dtype << " " << format;
        if (format == "safetensors") {
          auto r = run_pev({"reference", "--spec", q.spec, "--positions=" + q.positions, "--dtype",
                            dtype, "--format", format, "--out", "/dev/stdout"});
          ASSERT_EQ(r.exit_code, 0) << r.err;
          EXPECT_TRUE(r.out == bytes[0]) << q.spec << " " << dtype << " (pipe)";
        }
      }
    }
  }
  auto bad = run_pev(
      {"reference", "--spec", "rope:head_dim=8", "--positions", "0:4", "--reference", "slow"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--reference"), std::string::npos) << bad.err;
}

TEST(Cli, StreamedPeIsTheMpfrPathsBytes) {
  // Sinusoidal PE streams from the fast reference; --reference mpfr fills MPFR values in memory.
  // Same bytes in a 32-bit and a 16-bit dtype and in a text and a binary format (the writers are
  // the RoPE tables', tested above), across a chunk boundary (about 2^16 values a chunk: 126 rows
  // of 520 columns); a request beyond the in-memory limit of 2^26 values (65600 positions × 1024
  // columns) is written from one chunk's memory.
  const std::string dir = test::temp_dir("streamed_pe");
  for (const std::string dtype : {"fp32", "bf16"}) {
    for (const std::string format : {"csv", "safetensors"}) {
      std::string bytes[2];
      for (int mpfr = 0; mpfr < 2; ++mpfr) {
        const std::string file = dir + "/pe" + std::to_string(mpfr) + "." + format;
        auto r = run_pev({"reference", "--spec", "sinusoidal:d_model=520", "--positions=0:400:3",
                          "--dtype", dtype, "--format", format, "--reference",
                          mpfr ? "mpfr" : "fast", "--out", file});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        bytes[mpfr] = file_bytes(file);
      }
      ASSERT_FALSE(bytes[0].empty());
      EXPECT_TRUE(bytes[0] == bytes[1]) << dtype << " " << format;
    }
  }
  for (const std::string command : {"reference", "compute"}) {
    std::vector<std::string> args = {command,       "--spec",  "sinusoidal:d_model=1024",
                                     "--positions", "0:65600", "--format",
                                     "npy",         "--out",   "/dev/null",
                                     "--dtype",     "fp16"};
    if (command == "compute") args.insert(args.end(), {"--strategy", "hf"});
    auto r = run_pev(args);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
  }
}

TEST(CliCompute, StreamedTableEqualsTheKernelsRows) {
  // compute streams its table in chunks of rows: the values are the kernel's, row by row.
  const std::string dir = test::temp_dir("compute_streamed");
  auto r = run_pev({"compute", "--strategy", "hf", "--spec", "rope:head_dim=16", "--positions",
                    "0:5000", "--format", "npy", "--out", dir + "/c.npy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a = io::read_npy(dir + "/c.npy");
  ASSERT_EQ(a.shape, (std::vector<std::int64_t>{5000, 8, 2}));
  const auto v = a.to_doubles();
  for (const std::string p : {"0", "4095", "4096", "4999"}) {
    auto one = run_pev({"compute", "--strategy", "hf", "--spec", "rope:head_dim=16", "--positions",
                        p, "--format", "npy", "--out", dir + "/one.npy"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const auto w = io::read_npy(dir + "/one.npy").to_doubles();
    ASSERT_EQ(w.size(), 16u);
    for (std::size_t i = 0; i < 16; ++i) {
      EXPECT_EQ(v[std::stoul(p) * 16 + i], w[i]) << "p=" << p << " i=" << i;
    }
  }
}

TEST(Cli, OtherOutputs) {
  auto inv = run_pev({"reference", "--spec", "rope:head_dim=128", "--what", "inv_freq"});
  ASSERT_EQ(inv.exit_code, 0) << inv.err;
  EXPECT_EQ(parse_rows(inv.out).size(), 64u);
  auto m =
      run_pev({"reference", "--spec",
               "rope:head_dim=128,rope_type=yarn,factor=10,original_max_position_embeddings=2048",
               "--what", "attention_factor", "--digits", "11"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(m.out, "1.2302585093\n");
  auto b = run_pev(
      {"reference", "--spec", "alibi:num_heads=2", "--positions", "0:3", "--format", "csv"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out.substr(0, b.out.find('\n')), "head,query,key,bias");
  auto t = run_pev({"reference", "--spec", "t5", "--positions=-3:4"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out, "3\n2\n1\n0\n17\n18\n19\n");
}

TEST(Cli, RecipesAndDtypes) {
  // hf recipe at p = 2^24 + 1: the fp32 position rounds to 2^24, so pair 0 is cos(2^24).
  auto r = run_pev({"reference", "--spec", "rope:head_dim=2", "--positions", "16777217", "--recipe",
                    "hf", "--dtype", "fp32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = parse_rows(r.out);
  EXPECT_EQ(static_cast<float>(rows[0][0]), static_cast<float>(std::cos(16777216.0)));
  auto bad = run_pev(
      {"reference", "--spec", "rope:head_dim=2", "--positions", "0:1", "--recipe", "vllm-ish"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--recipe"), std::string::npos);
}

struct bad_case {
  std::vector<std::string> args;
  std::string expected;
};

TEST(Cli, BadUsageExitsTwoNamingTheFlag) {
  const std::vector<bad_case> cases = {
      {{"reference", "--spec", "rope:head_dim=8", "--positions=-1:4"}, "negative position"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "0:99999999999999999999"},
       "64-bit"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "5:5"}, "empty"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "0:4:0"}, "STEP"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "a:b"}, "--positions"},
      {{"reference", "--spec", "rope:head_dim=8"}, "--positions"},
      {{"reference", "--positions", "0:1"}, "--spec"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "0:4", "--what", "pe"},
       "--what pe"},
      {{"reference", "--spec", "sinusoidal:d_model=8", "--positions", "0:4", "--what", "table"},
       "--what table"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "0:4", "--dtype", "fp8"},
       "--dtype"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "0:4", "--format", "xml"},
       "--format"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "0:4", "--format", "npy"},
       "--out"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "0:4", "--out",
        "/nonexistent-dir/x.txt"},
       "/nonexistent-dir/x.txt"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions-file", "/nonexistent.txt"},
       "/nonexistent.txt"},
      {{"reference", "--config", "/nonexistent.json", "--positions", "0:1"}, "/nonexistent.json"},
      {{"reference", "--spec", "rope:head_dim=8", "--positions", "0:1", "--precision", "8"},
       "--precision"},
  };
  for (const auto& c : cases) {
    const auto r = run_pev(c.args);
    std::string cmd;
    for (const auto& a : c.args) cmd += a + " ";
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << cmd << "\nstderr: " << r.err;
  }
}

TEST(Cli, InvalidSpecsAndConfigsExitTwoNamingTheKey) {
  // The corpus shared with the spec unit tests: KIND<TAB>INPUT<TAB>EXPECTED.
  const std::string dir = std::string(PEV_SOURCE_DIR) + "/tests/spec";
  std::ifstream in(dir + "/invalid_specs.tsv");
  ASSERT_TRUE(in) << "missing " << dir << "/invalid_specs.tsv";
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    ASSERT_NE(t2, std::string::npos) << line;
    const std::string kind = line.substr(0, t1), input = line.substr(t1 + 1, t2 - t1 - 1),
                      expected = line.substr(t2 + 1);
    const auto r = kind == "spec"
                       ? run_pev({"reference", "--spec", input, "--positions", "0:2"})
                       : run_pev({"reference", "--config", dir + "/invalid_configs/" + input,
                                  "--positions", "0:2"});
    EXPECT_EQ(r.exit_code, 2) << line << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << line << "\nstderr: " << r.err;
    ++cases;
  }
  EXPECT_GE(cases, 25);
  std::cout << cases << " invalid specs/configs checked\n";
}

TEST(Cli, PositionsFile) {
  const std::string dir = test::temp_dir("posfile");
  {
    std::ofstream f(dir + "/p.txt");
    f << "# positions\n0\n\n4096\n1048576\n";
  }
  auto r = run_pev({"reference", "--spec", "rope:head_dim=2", "--positions-file", dir + "/p.txt",
                    "--format", "csv", "--dtype", "fp64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n1048576,"), std::string::npos) << r.out;
  {
    std::ofstream f(dir + "/bad.txt");
    f << "1\n2.5\n";
  }
  auto b =
      run_pev({"reference", "--spec", "rope:head_dim=2", "--positions-file", dir + "/bad.txt"});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("2"), std::string::npos) << b.err;  // names the line
}

}  // namespace
}  // namespace pev

namespace pev {
namespace {

TEST(CliCompute, SameShapesAndNamesAsReference) {
  const std::string dir = test::temp_dir("compute");
  for (const char* strategy : {"hf", "ggml", "table-fp16", "table-bf16", "accurate"}) {
    const std::string file = dir + "/" + strategy + ".safetensors";
    auto r = run_pev(
        {"compute", "--strategy", strategy, "--spec",
         "rope:head_dim=64,rope_type=yarn,factor=4,original_max_position_embeddings=4096",
         "--positions", "0:100:7", "--dtype", "bf16", "--format", "safetensors", "--out", file});
    ASSERT_EQ(r.exit_code, 0) << strategy << ": " << r.err;
    const auto tf = io::read_safetensors(file);
    EXPECT_EQ(tf.at("cos").shape, (std::vector<std::int64_t>{15, 32})) << strategy;
    EXPECT_EQ(tf.at("sin").type, io::dtype::bf16);
    EXPECT_EQ(tf.at("positions").to_int64().back(), 98);
    EXPECT_EQ(tf.metadata.at("recipe"), std::string("strategy:") + strategy);
  }
  // accurate equals the correctly rounded reference value for value.
  auto a = run_pev({"compute", "--strategy", "accurate", "--spec", "rope:head_dim=128",
                    "--positions", "1000000:1000003", "--format", "csv"});
  auto e = run_pev({"reference", "--spec", "rope:head_dim=128", "--positions", "1000000:1000003",
                    "--dtype", "fp32", "--format", "csv"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(a.out, e.out);
  // Other families and outputs.
  auto pe = run_pev(
      {"compute", "--strategy", "hf", "--spec", "sinusoidal:d_model=4", "--positions", "0:4"});
  ASSERT_EQ(pe.exit_code, 0) << pe.err;
  EXPECT_NE(pe.out.find("0.84147096"), std::string::npos) << pe.out;
  auto t5 = run_pev({"compute", "--strategy", "accurate", "--spec", "t5", "--positions=-3:4"});
  ASSERT_EQ(t5.exit_code, 0) << t5.err;
  EXPECT_EQ(t5.out, "3\n2\n1\n0\n17\n18\n19\n");
  auto inv =
      run_pev({"compute", "--strategy", "hf", "--spec", "rope:head_dim=8", "--what", "inv_freq"});
  ASSERT_EQ(inv.exit_code, 0) << inv.err;
  EXPECT_EQ(inv.out, "1\n0.1\n0.01\n0.001\n");
}

TEST(CliCompute, BadUsage) {
  auto no_strategy = run_pev({"compute", "--spec", "rope:head_dim=8", "--positions", "0:2"});
  EXPECT_EQ(no_strategy.exit_code, 2);
  EXPECT_NE(no_strategy.err.find("--strategy"), std::string::npos);
  auto unknown =
      run_pev({"compute", "--strategy", "fast", "--spec", "rope:head_dim=8", "--positions", "0:2"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("accurate"), std::string::npos) << unknown.err;
  auto ggml = run_pev(
      {"compute", "--strategy", "ggml", "--spec", "sinusoidal:d_model=8", "--positions", "0:2"});
  EXPECT_EQ(ggml.exit_code, 2);
  EXPECT_NE(ggml.err.find("ggml"), std::string::npos);
  auto exact = run_pev({"compute", "--strategy", "hf", "--spec", "rope:head_dim=8", "--positions",
                        "0:2", "--dtype", "exact"});
  EXPECT_EQ(exact.exit_code, 2);
  EXPECT_NE(exact.err.find("--dtype"), std::string::npos);
}

}  // namespace
}  // namespace pev

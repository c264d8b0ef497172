// `pev certify` end to end: dumps written by `pev compute`, certified through the CLI (exit codes,
// certificate.json, the spec from the dump's metadata, claims, bad usage).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run.h"

namespace pev {
namespace {

using test::run_pev;

nlohmann::json read_json(const std::string& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << file;
  return nlohmann::json::parse(in);
}

const std::string kSpec = "rope:head_dim=64,rope_theta=500000";

// SHA-256 of a file (coreutils' sha256sum), lowercase hex.
std::string sha256sum(const std::string& file) {
  const std::string out = test::temp_dir("sha256") + "/sum";
  EXPECT_EQ(std::system(("sha256sum '" + file + "' > '" + out + "'").c_str()), 0);
  std::ifstream in(out);
  std::string hex;
  in >> hex;
  return hex;
}

// MRoPE (docs/encodings.md §4.6): `pev compute` with a [3, T] positions file writes positions
// [3, T] and the spec; `pev certify` reads both, and its rows equal `pev reference`'s.
TEST(CliCertify, MropeDumpFromComputeIsCertified) {
  const std::string dir = test::temp_dir("certify_mrope");
  const std::string spec = "rope:head_dim=16,rope_theta=1000000,mrope_section=[2,3,3]";
  {
    std::ofstream pos(dir + "/pos.txt");
    for (const char* stream : {"5 6 7 70000", "10 6 9 70001", "100 6 40 3"}) {
      std::istringstream in(stream);
      for (std::int64_t p; in >> p;) pos << p << "\n";
    }
  }
  auto c = run_pev({"compute", "--strategy", "accurate", "--spec", spec, "--positions-file",
                    dir + "/pos.txt", "--dtype", "fp32", "--format", "safetensors", "--out",
                    dir + "/acc.safetensors"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto r = run_pev({"certify", "--impl", dir + "/acc.safetensors", "--out", dir + "/cert"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = read_json(dir + "/cert/certificate.json");
  EXPECT_EQ(j["spec"], spec);
  EXPECT_EQ(j["grade"], "correctly-rounded");
  EXPECT_EQ(j["positions"]["count"], 12);  // every stream's positions
  EXPECT_EQ(j["positions"]["max"], 70001);
  // The reference's text rows: token 1 has t = h = w = 6 (1-D RoPE at 6); token 0 mixes.
  auto ref = run_pev({"reference", "--spec", spec, "--positions-file", dir + "/pos.txt", "--dtype",
                      "fp32", "--format", "csv"});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  auto one = run_pev({"reference", "--spec", "rope:head_dim=16,rope_theta=1000000", "--positions",
                      "6", "--dtype", "fp32", "--format", "csv"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto line = [](const std::string& csv, int k) {
    std::istringstream in(csv);
    std::string l;
    for (int i = 0; i <= k; ++i) std::getline(in, l);
    return l;
  };
  EXPECT_EQ(line(ref.out, 2), line(one.out, 1)) << ref.out;
  // A wrong count of positions for the streams is refused, naming the input.
  auto bad = run_pev(
      {"certify", "--impl", dir + "/acc.safetensors", "--positions", "0:5", "--out", dir + "/bad"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("MRoPE rows need [3, 4]"), std::string::npos) << bad.err;
}

TEST(CliCertify, StrategiesDumpedByComputeGetTheirGrades) {
  const std::string dir = test::temp_dir("certify_cli");
  struct expect {
    const char* strategy;
    const char* dtype;
    const char* grade;
  };
  for (const expect& e :
       {expect{"accurate", "fp32", "correctly-rounded"}, expect{"hf", "fp32", "recipe:hf"},
        expect{"ggml", "fp32", "recipe:ggml"},
        // Below 2^15 the bf16 storage error (½ ulp) dominates the fp32 phase
        // error: the dump is within 2 bf16 ulps everywhere.
        expect{"table-bf16", "bf16", "drift-free"}, expect{"table-bf16", "fp32", "recipe:vllm"}}) {
    const std::string dump = dir + "/" + e.strategy + "_" + e.dtype + ".safetensors";
    auto c = run_pev({"compute", "--strategy", e.strategy, "--spec", kSpec, "--positions",
                      "0:20000:7", "--dtype", e.dtype, "--format", "safetensors", "--out", dump});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const std::string out = dir + "/out_" + e.strategy + "_" + e.dtype;
    // No --spec: the dump's metadata names it (said on stderr). The dump is hashed beside the
    // comparison, or after it with --threads 1: the same hash.
    std::vector<std::string> args = {"certify", "--impl", dump, "--out", out};
    if (std::string(e.strategy) == "ggml") args.insert(args.end(), {"--threads", "1"});
    auto r = run_pev(args);
    EXPECT_EQ(r.exit_code, 0) << e.strategy << " " << e.dtype << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("spec from the dump's metadata"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find(std::string("grade     ") + e.grade), std::string::npos) << r.out;
    const auto j = read_json(out + "/certificate.json");
    EXPECT_EQ(j["schema_version"], 1);
    EXPECT_EQ(j["grade"], e.grade) << e.strategy;
    EXPECT_EQ(j["spec"], kSpec);
    EXPECT_EQ(j["inputs"][0]["sha256"], sha256sum(dump));
    EXPECT_EQ(j["positions"]["count"], 2858);
    EXPECT_EQ(j["positions"]["exhaustive"], false);
    EXPECT_EQ(j["checks"].size(), 2u);
    // The report's files beside the certificate: a CI job summary, JUnit, HTML.
    for (const char* f : {"summary.md", "junit.xml", "index.html"}) {
      EXPECT_TRUE(std::filesystem::exists(out + "/" + f)) << out << "/" << f;
    }
    std::ifstream junit(out + "/junit.xml");
    std::stringstream ss;
    ss << junit.rdbuf();
    EXPECT_NE(ss.str().find("<testcase"), std::string::npos) << ss.str().substr(0, 400);
    EXPECT_EQ(ss.str().find("<failure"), std::string::npos) << ss.str().substr(0, 400);
  }
}

TEST(CliCertify, NpyTableAndClaims) {
  const std::string dir = test::temp_dir("certify_npy");
  // pev compute's npy table is [P, pairs, 2]; positions 0..P-1.
  auto c = run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "0:3000",
                    "--format", "npy", "--out", dir + "/table.npy"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto r = run_pev({"certify", "--spec", kSpec, "--impl", dir + "/table.npy", "--out", dir + "/out",
                    "--recipe", "hf", "--exhaustive"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("pairs layout, detected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("claim     recipe hf: holds"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exhaustive"), std::string::npos) << r.out;
  const auto fast = read_json(dir + "/out/certificate.json");
  EXPECT_EQ(fast["positions"]["exhaustive"], true);
  // --reference mpfr: MPFR for every value; the same rounded values, so the same counts, ρ,
  // worst cases and grade.
  auto m = run_pev({"certify", "--spec", kSpec, "--impl", dir + "/table.npy", "--out",
                    dir + "/mpfr", "--reference", "mpfr"});
  EXPECT_EQ(m.exit_code, 0) << m.out << m.err;
  const auto slow = read_json(dir + "/mpfr/certificate.json");
  EXPECT_EQ(slow["provenance"]["reference"], "mpfr");
  EXPECT_EQ(slow["grade"], fast["grade"]);
  for (std::size_t k = 0; k < 2; ++k) {
    for (const char* f : {"correctly_rounded", "faithful", "worst", "grade"}) {
      EXPECT_EQ(slow["checks"][k][f], fast["checks"][k][f]) << f;
    }
    // ρ = |error|/bound with the exact value as a double: the fast path's is within 2^−49 of it,
    // which moves an error of ≥ 2^−30 (the smallest nonzero errors here) by < 2^−19 relative.
    for (const auto& [r, v] : fast["checks"][k]["recipes"].items()) {
      EXPECT_NEAR(slow["checks"][k]["recipes"][r].get<double>(), v.get<double>(),
                  1e-5 * v.get<double>())
          << r;
    }
  }
  // The fp32 recipe is not faithful: claiming `exact` fails (exit 1), the grade stays.
  auto x = run_pev({"certify", "--spec", kSpec, "--impl", dir + "/table.npy", "--out", dir + "/out",
                    "--recipe", "exact"});
  EXPECT_EQ(x.exit_code, 1) << x.out << x.err;
  EXPECT_NE(x.out.find("does NOT hold"), std::string::npos) << x.out;
  EXPECT_EQ(read_json(dir + "/out/certificate.json")["certified"], false);
  // The wrong spec: not certified, with a diagnosis.
  auto w = run_pev({"certify", "--spec", "rope:head_dim=64,rope_theta=10000", "--impl",
                    dir + "/table.npy", "--out", dir + "/out"});
  EXPECT_EQ(w.exit_code, 1) << w.out << w.err;
  EXPECT_NE(w.out.find("first mismatch"), std::string::npos) << w.out;
  EXPECT_FALSE(read_json(dir + "/out/certificate.json")["diagnosis"].is_null());
}

TEST(CliCertify, LiveImplementations) {
  const std::string dir = test::temp_dir("certify_live");
  // The example C plugin: value checks and the property suites (RapidCheck, 20 cases each).
  auto p = run_pev({"certify", "--spec", kSpec, "--plugin", PEV_EXAMPLE_PLUGIN, "--max-position",
                    "65536", "--property-cases", "20", "--out", dir});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("grade     recipe:hf"), std::string::npos) << p.out;
  // Quiet when all is well: one line for the properties, nothing from RapidCheck on either stream.
  EXPECT_NE(p.out.find("\nproperties "), std::string::npos) << p.out;
  EXPECT_NE(p.out.find(" passed, 0 failed, "), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("RapidCheck"), std::string::npos) << p.out;
  EXPECT_EQ(p.err.find("RapidCheck"), std::string::npos) << p.err;
  EXPECT_EQ(p.err.find("RC_PARAMS"), std::string::npos) << p.err;
  const auto j = read_json(dir + "/certificate.json");
  // Isolated by default; the certificate hashes the library file itself (not its path).
  EXPECT_EQ(j["inputs"][0]["format"], "plugin (isolated)");
  EXPECT_EQ(j["inputs"][0]["sha256"], sha256sum(PEV_EXAMPLE_PLUGIN));
  int passed = 0;
  for (const auto& c : j["checks"]) passed += c["property"] == "passed";
  EXPECT_GE(passed, 8) << j["checks"].dump(1);
  // A subprocess with a planted mistake: not certified, the mistake named.
  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") == 0) {
    auto x = run_pev({"certify", "--spec", kSpec, "--exec",
                      "/usr/bin/python3 " + std::string(PEV_SOURCE_DIR) +
                          "/examples/exec/rope_numpy.py --bug sin-cos-swapped",
                      "--property-cases", "10", "--max-position", "65536", "--out", dir});
    EXPECT_EQ(x.exit_code, 1) << x.out << x.err;
    EXPECT_NE(x.out.find("explained by: sin-cos-swapped"), std::string::npos) << x.out;
    // A failed property: its counterexample and a pev command line that replays it (the
    // seed and the cases), no source paths or RapidCheck internals.
    EXPECT_NE(x.out.find("property  rope.table_exact FAILED"), std::string::npos) << x.out;
    EXPECT_NE(x.out.find("counterexample: pev::spec::rope: rope:"), std::string::npos) << x.out;
    EXPECT_NE(x.out.find("replay: pev certify --spec " + kSpec + " --exec "), std::string::npos)
        << x.out;
    EXPECT_NE(x.out.find(" --seed 20261122 --property-cases 10\n"), std::string::npos) << x.out;
    for (const char* internal : {".cpp:", "RC_FAIL", "RC_PARAMS", "RapidCheck"}) {
      EXPECT_EQ(x.out.find(internal), std::string::npos) << internal << "\n" << x.out;
      EXPECT_EQ(x.err.find(internal), std::string::npos) << internal << "\n" << x.err;
    }
    const auto jx = read_json(dir + "/certificate.json");
    bool replay = false;
    for (const auto& c : jx["checks"]) {
      if (c["property"] == "failed") replay = c["replay"].get<std::string>().starts_with("pev ");
    }
    EXPECT_TRUE(replay) << jx["checks"].dump(1);
  }
  // pev's own strategies through --exec (`pev serve`): the grades of their contracts, and the
  // property suites (10 cases each) on one of them.
  struct served {
    const char* strategy;
    const char* grade;
  };
  for (const served& v : {served{"accurate", "drift-free"}, served{"hf", "recipe:hf"},
                          served{"ggml", "recipe:ggml"}, served{"table-bf16", "recipe:vllm"}}) {
    std::vector<std::string> args = {"certify",
                                     "--spec",
                                     kSpec,
                                     "--exec",
                                     std::string(PEV_BINARY) + " serve --strategy " + v.strategy,
                                     "--max-position",
                                     "65536",
                                     "--out",
                                     dir};
    if (std::string(v.strategy) == "accurate") {
      args.insert(args.end(), {"--property-cases", "10"});
    } else {
      args.push_back("--no-properties");
    }
    auto r = run_pev(args);
    EXPECT_EQ(r.exit_code, 0) << v.strategy << "\n" << r.out << r.err;
    // accurate: its table is correctly rounded, its fp32 rotation drift-free (apply.h).
    EXPECT_NE(r.out.find(std::string("grade     ") + v.grade), std::string::npos)
        << v.strategy << "\n"
        << r.out;
  }
  // The example plugin in a child process (--isolate): the same grade.
  auto iso = run_pev({"certify", "--spec", kSpec, "--plugin", PEV_EXAMPLE_PLUGIN, "--isolate",
                      "--no-properties", "--max-position", "65536", "--out", dir});
  EXPECT_EQ(iso.exit_code, 0) << iso.out << iso.err;
  EXPECT_NE(iso.out.find("grade     recipe:hf"), std::string::npos) << iso.out;
  // A plugin that segfaults: in-process it would take pev down; isolated, it is a failed check
  // naming the signal (exit 1), and certificate.json is written.
  setenv("PEV_PLUGIN_MISBEHAVE", "segv", 1);
  auto crash = run_pev({"certify", "--spec", kSpec, "--plugin", PEV_BUILTIN_PLUGIN, "--isolate",
                        "--out", dir + "/crash"});
  unsetenv("PEV_PLUGIN_MISBEHAVE");
  EXPECT_EQ(crash.exit_code, 1) << crash.out << crash.err;
  EXPECT_NE(crash.out.find("killed by signal 11"), std::string::npos) << crash.out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/crash/certificate.json"));
  // pev killed (SIGKILL) while its isolated plugin hangs: the child dies with it. The plugin is
  // a copy of its own, so that the search finds this child, not another test's.
  const std::string hang_plugin = dir + "/hang_plugin.so";
  std::filesystem::copy_file(PEV_BUILTIN_PLUGIN, hang_plugin,
                             std::filesystem::copy_options::overwrite_existing);
  setenv("PEV_PLUGIN_MISBEHAVE", "hang", 1);
  const int pid = test::spawn_pev(
      {"certify", "--spec", kSpec, "--plugin", hang_plugin, "--isolate", "--out", dir + "/killed"});
  unsetenv("PEV_PLUGIN_MISBEHAVE");
  const auto child_running = [&] {
    return std::system(("pgrep -f 'serve --plugi[n] " + hang_plugin + "' > /dev/null").c_str()) ==
           0;
  };
  for (int k = 0; k < 200 && !child_running(); ++k) usleep(10000);
  EXPECT_TRUE(child_running()) << "the isolated child did not start";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  for (int k = 0; k < 100 && child_running(); ++k) usleep(10000);
  EXPECT_FALSE(child_running()) << "the isolated child outlived pev";
  EXPECT_FALSE(std::filesystem::exists(dir + "/killed"));
  // A command that never answers: a failed check after the timeout (a certificate says so), not
  // a hang.
  auto h = run_pev(
      {"certify", "--spec", kSpec, "--exec", "sleep 30", "--timeout", "1", "--out", dir + "/hang"});
  EXPECT_EQ(h.exit_code, 1) << h.out << h.err;
  EXPECT_NE(h.out.find("the process was killed"), std::string::npos) << h.out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/hang/certificate.json"));
}

// --shard I/N (docs/design.md §9.3) end to end: a shard is never certified on its own (3 when its
// rows hold, 1 when they fail), `pev merge` of the shard directories writes the unsharded run's
// certificate and exits with its code, and refuses a missing shard or a bad --shard naming it.
TEST(CliCertify, ShardsMergeIntoTheCertificate) {
  const std::string dir = test::temp_dir("certify_shard");
  auto c = run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "0:300",
                    "--format", "safetensors", "--out", dir + "/d.safetensors"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto whole = run_pev({"certify", "--impl", dir + "/d.safetensors", "--out", dir + "/whole"});
  ASSERT_EQ(whole.exit_code, 0) << whole.out << whole.err;
  std::vector<std::string> merge = {"merge"};
  for (int i = 0; i < 3; ++i) {
    const std::string out = dir + "/shard-" + std::to_string(i);
    auto r = run_pev({"certify", "--impl", dir + "/d.safetensors", "--shard",
                      std::to_string(i) + "/3", "--out", out});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.out.find("PARTIAL: shard " + std::to_string(i) + " of 3"), std::string::npos)
        << r.out;
    const auto j = read_json(out + "/certificate.json");
    EXPECT_EQ(j["shard"]["index"], i);
    EXPECT_EQ(j["shard"]["partial"], true);
    EXPECT_FALSE(j["certified"]);
    merge.push_back(out);
  }
  auto missing = run_pev({"merge", merge[1], merge[3], "--out", dir + "/m"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("2 of 3 shards given (missing: 1)"), std::string::npos) << missing.err;
  auto mixed = run_pev({"merge", merge[1], dir + "/whole", "--out", dir + "/m"});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("not a shard's"), std::string::npos) << mixed.err;
  merge.insert(merge.end(), {"--out", dir + "/merged"});
  auto m = run_pev(merge);
  EXPECT_EQ(m.exit_code, 0) << m.out << m.err;
  auto a = read_json(dir + "/whole/certificate.json");
  auto b = read_json(dir + "/merged/certificate.json");
  EXPECT_EQ(b["provenance"]["merged_shards"], nlohmann::json::array({0, 1, 2}));
  for (auto* j : {&a, &b}) {
    // The merge's own record, and the command (its --out) that `pev verify` re-runs.
    for (const char* k : {"seconds", "merged_from", "inputs_reverified", "command"}) j->erase(k);
    (*j)["provenance"].erase("merged_shards");
  }
  EXPECT_EQ(a, b);
  EXPECT_TRUE(std::filesystem::exists(dir + "/merged/index.html"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/merged/summary.md"));
  // A live implementation: each shard compares its rows of the positions the run evaluates; the
  // properties run in shard 0; the merge is the unsharded certificate.
  const std::vector<std::string> live = {"certify",
                                         "--spec",
                                         kSpec,
                                         "--exec",
                                         std::string(PEV_BINARY) + " serve --strategy hf",
                                         "--max-position",
                                         "20000",
                                         "--samples",
                                         "4",
                                         "--property-cases",
                                         "5"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = live;
    v.insert(v.end(), extra.begin(), extra.end());
    return run_pev(v);
  };
  auto lw = with({"--out", dir + "/live"});
  ASSERT_EQ(lw.exit_code, 0) << lw.out << lw.err;
  for (int i = 0; i < 2; ++i) {
    auto r =
        with({"--shard", std::to_string(i) + "/2", "--out", dir + "/live-" + std::to_string(i)});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  }
  auto lm = run_pev({"merge", dir + "/live-1", dir + "/live-0", "--out", dir + "/live-merged"});
  EXPECT_EQ(lm.exit_code, 0) << lm.out << lm.err;
  a = read_json(dir + "/live/certificate.json");
  b = read_json(dir + "/live-merged/certificate.json");
  for (auto* j : {&a, &b}) {
    // The merge's own record, and the command (its --out) that `pev verify` re-runs.
    for (const char* k : {"seconds", "merged_from", "inputs_reverified", "command"}) j->erase(k);
    (*j)["provenance"].erase("merged_shards");
  }
  EXPECT_EQ(a, b);
  // A shard whose rows fail: 1 (a dump of another theta fails everywhere).
  auto bad = run_pev({"certify", "--impl", dir + "/d.safetensors", "--spec",
                      "rope:head_dim=64,rope_theta=10000", "--no-diagnosis", "--shard", "1/2",
                      "--out", dir + "/failing"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  for (const char* shard : {"3/2", "x", "1/0", "-1/2", "1/2/3", "2"}) {
    auto r = run_pev(
        {"certify", "--impl", dir + "/d.safetensors", "--shard", shard, "--out", dir + "/x"});
    EXPECT_EQ(r.exit_code, 2) << shard;
    EXPECT_NE(r.err.find("--shard"), std::string::npos) << shard << ": " << r.err;
  }
}

// Learned tables (docs/certify.md §4): OPT's rows (offset 2) certified against their spec, the
// offset named against a spec without it, a table of another width refused (exit 2), and a
// table=FILE read and hashed as an input.
TEST(CliCertify, LearnedTableWithOffset) {
  const std::string dir = test::temp_dir("certify_learned");
  const std::string spec = "learned:num_positions=66,d_model=8,offset=2,seed=3";
  auto c = run_pev({"compute", "--strategy", "hf", "--spec", spec, "--positions", "0:64", "--dtype",
                    "bf16", "--format", "safetensors", "--out", dir + "/opt.safetensors"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto ok = run_pev({"certify", "--impl", dir + "/opt.safetensors", "--out", dir + "/ok"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_EQ(read_json(dir + "/ok/certificate.json")["grade"], "correctly-rounded");
  auto off = run_pev({"certify", "--impl", dir + "/opt.safetensors", "--spec",
                      "learned:num_positions=66,d_model=8,seed=3", "--out", dir + "/off"});
  EXPECT_EQ(off.exit_code, 1) << off.out << off.err;
  const auto j = read_json(dir + "/off/certificate.json");
  EXPECT_EQ(j["diagnosis"]["named"], "learned-offset");
  EXPECT_EQ(j["diagnosis"]["findings"][0], "offset: the rows imply 2, the spec says 0");
  auto bad = run_pev({"certify", "--impl", dir + "/opt.safetensors", "--spec",
                      "learned:num_positions=66,d_model=9,seed=3", "--out", dir + "/bad"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("tensor 'pe' has shape [64, 8], expected [P, 9] or [B, T, 9]"),
            std::string::npos)
      << bad.err;
  // The table from a file: the same seeded table, written by `pev compute` as rows 0 … 65.
  auto t = run_pev({"compute", "--strategy", "accurate", "--spec",
                    "learned:num_positions=66,d_model=8,seed=3", "--positions", "0:66", "--dtype",
                    "fp32", "--format", "npy", "--out", dir + "/table.npy"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  auto file = run_pev({"certify", "--impl", dir + "/opt.safetensors", "--spec",
                       "learned:num_positions=66,d_model=8,offset=2,table=" + dir + "/table.npy",
                       "--out", dir + "/file"});
  EXPECT_EQ(file.exit_code, 0) << file.out << file.err;
  const auto jf = read_json(dir + "/file/certificate.json");
  bool hashed = false;
  for (const auto& in : jf["inputs"]) {
    hashed = hashed ||
             (in["path"] == dir + "/table.npy" && in["sha256"] == sha256sum(dir + "/table.npy"));
  }
  EXPECT_TRUE(hashed);
}

TEST(CliCertify, BadUsageExitsTwo) {
  const std::string dir = test::temp_dir("certify_bad");
  auto c = run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "5:50",
                    "--format", "safetensors", "--out", dir + "/d.safetensors"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  {
    std::ofstream f(dir + "/d.txt");
    f << "not a dump\n";
  }
  struct bad {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<bad> cases = {
      {{"certify", "--spec", kSpec}, "--impl"},
      {{"certify", "--spec", kSpec, "--impl", dir + "/missing.safetensors"}, "missing"},
      {{"certify", "--spec", kSpec, "--impl", dir + "/d.txt"},
       "expected a .safetensors, .npy or .npz file, or a directory"},
      {{"certify", "--spec", kSpec, "--impl", dir + "/d.safetensors", "--layout", "diagonal"},
       "--layout"},
      {{"certify", "--spec", kSpec, "--impl", dir + "/d.safetensors", "--qk-layout", "hdt"},
       "--qk-layout: 'hdt' is not a q/k layout"},
      {{"certify", "--spec", kSpec, "--impl", dir + "/d.safetensors", "--qk-order", "halves"},
       "--qk-order: 'halves' is not an output order"},
      {{"certify", "--spec", kSpec, "--impl", dir},
       "a directory is read as one .npy file per tensor"},
      {{"certify", "--spec", kSpec, "--impl", dir + "/d.safetensors", "--recipe", "fast"},
       "--recipe"},
      {{"certify", "--spec", kSpec, "--impl", dir + "/d.safetensors", "--exhaustive"},
       "0 is missing"},
      {{"certify", "--spec", "rope:head_dim=48", "--impl", dir + "/d.safetensors"},
       "expected [P, 24]"},
      {{"certify", "--spec", "alibi:num_heads=8", "--impl", dir + "/d.safetensors"},
       "no ALiBi tensor"},
      {{"certify", "--spec", "t5", "--impl", dir + "/d.safetensors"}, "'buckets' and 'distances'"},
      {{"certify", "--spec", "shaw:max_relative_position=4", "--impl", dir + "/d.safetensors"},
       "not supported yet"},
      {{"certify", "--spec", kSpec, "--impl", dir + "/d.safetensors", "--out", dir + "/d.txt/sub"},
       "cannot create the directory"},
  };
  for (const auto& b : cases) {
    const auto r = run_pev(b.args);
    std::string cmd;
    for (const auto& a : b.args) cmd += a + " ";
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(b.message), std::string::npos) << cmd << "\nstderr: " << r.err;
  }
  const auto h = run_pev({"certify", "--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("correctly-rounded > faithful"), std::string::npos) << h.out;
}

}  // namespace
}  // namespace pev

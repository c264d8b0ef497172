// End-to-end tests of `pev report` and `pev merge` (docs/design.md §5.1, §9.2): files written, exit
// codes, bad usage, shards, the fast reference against the MPFR path, and determinism.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string_view>
#include <thread>

#include "pev/io/file.h"
#include "run.h"

namespace pev {
namespace {

using test::run_pev;
using test::temp_dir;

nlohmann::json report_json(const std::string& dir) {
  return nlohmann::json::parse(io::read_file(std::filesystem::path(dir) / "report.json"));
}

// Small but every family: positions < 8192 (two sampled octaves above the dense range).
const std::vector<std::string> kSmall = {"report",
                                         "--spec",
                                         "rope:head_dim=16,rope_theta=10000",
                                         "--spec",
                                         "sinusoidal:d_model=16",
                                         "--spec",
                                         "alibi:num_heads=4",
                                         "--spec",
                                         "t5:num_buckets=32,max_distance=128",
                                         "--max-position",
                                         "8192",
                                         "--samples-per-octave",
                                         "8"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(CliReport, HelpExplainsTheOptions) {
  const auto h = run_pev({"report", "--help"});
  EXPECT_EQ(h.exit_code, 0);
  for (const char* opt : {"--suite", "--spec", "--config", "--max-position", "--threads", "--seed",
                          "--shard", "--out", "--reference", "--exhaustive"}) {
    EXPECT_NE(h.out.find(opt), std::string::npos) << opt;
  }
  const auto m = run_pev({"merge", "--help"});
  EXPECT_EQ(m.exit_code, 0);
  EXPECT_NE(m.out.find("--out"), std::string::npos);
}

TEST(CliReport, WritesEveryOutputAndExitsZero) {
  const std::string dir = temp_dir("report_small");
  const auto r = run_pev(with(kSmall, {"--out", dir, "--threads", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;  // not a terminal: no progress
  EXPECT_NE(r.out.find(dir), std::string::npos);
  namespace fs = std::filesystem;
  for (const char* f : {"index.html", "report.json", "summary.md", "junit.xml", "data/checks.csv",
                        "data/octaves.csv"}) {
    EXPECT_TRUE(fs::is_regular_file(fs::path(dir) / f)) << f;
  }
  std::size_t svgs = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "plots")) {
    if (e.path().extension() != ".svg") continue;
    ++svgs;
    EXPECT_GT(fs::file_size(e.path()), 1000u) << e.path();
  }
  EXPECT_GE(svgs, 10u);
  const auto j = report_json(dir);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["provenance"]["reference"], "fast");
  EXPECT_EQ(j["provenance"]["suite"], "custom");
  EXPECT_FALSE(j["provenance"]["generated_at"].get<std::string>().empty());
  // rope 5×3, sinusoidal 4×3, alibi 4×3, t5 4.
  EXPECT_EQ(j["checks"].size(), 15u + 12u + 12u + 4u);
  for (const auto& c : j["checks"]) EXPECT_TRUE(c["pass"].get<bool>()) << c["id"];
}

TEST(CliReport, SameSeedIdenticalJsonApartFromTheTimestamp) {
  const std::string a = temp_dir("report_det_a"), b = temp_dir("report_det_b");
  ASSERT_EQ(run_pev(with(kSmall, {"--out", a, "--seed", "9"})).exit_code, 0);
  ASSERT_EQ(run_pev(with(kSmall, {"--out", b, "--seed", "9", "--threads", "1"})).exit_code, 0);
  auto ja = report_json(a), jb = report_json(b);
  ja["provenance"].erase("generated_at");
  jb["provenance"].erase("generated_at");
  EXPECT_EQ(ja.dump(), jb.dump());
  // Byte-identical files apart from that one line.
  std::string ta = io::read_file(std::filesystem::path(a) / "report.json");
  std::string tb = io::read_file(std::filesystem::path(b) / "report.json");
  auto drop = [](std::string t) {
    const auto p = t.find("\"generated_at\"");
    return t.erase(p, t.find('\n', p) - p);
  };
  EXPECT_EQ(drop(ta), drop(tb));
  const std::string c = temp_dir("report_det_c");
  ASSERT_EQ(run_pev(with(kSmall, {"--out", c, "--seed", "10"})).exit_code, 0);
  EXPECT_NE(report_json(c)["checks"].dump(), ja["checks"].dump());  // other samples
}

TEST(CliReport, FourShardsMergedEqualTheUnshardedRun) {
  const std::string whole = temp_dir("report_whole");
  ASSERT_EQ(run_pev(with(kSmall, {"--out", whole})).exit_code, 0);
  std::vector<std::string> merge_args = {"merge"};
  for (int i = 0; i < 4; ++i) {
    const std::string d = temp_dir("report_shard" + std::to_string(i));
    const auto r = run_pev(with(kSmall, {"--out", d, "--shard", std::to_string(i) + "/4"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    merge_args.push_back(d);
  }
  const std::string merged = temp_dir("report_merged");
  merge_args.push_back("--out");
  merge_args.push_back(merged);
  const auto m = run_pev(merge_args);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const auto jw = report_json(whole), jm = report_json(merged);
  for (const char* k : {"checks", "invariance", "wavelengths", "notes"}) {
    EXPECT_EQ(jw[k].dump(), jm[k].dump()) << k;
  }
  EXPECT_EQ(jm["provenance"]["merged_shards"].size(), 4u);
  // Three of four shards: bad input.
  merge_args.erase(merge_args.begin() + 1);
  EXPECT_EQ(run_pev(merge_args).exit_code, 2);
}

TEST(CliReport, FastReferenceGivesTheSameFiguresAsMpfr) {
  const std::vector<std::string> tiny = {"report",
                                         "--spec",
                                         "rope:head_dim=8,rope_theta=10000",
                                         "--spec",
                                         "sinusoidal:d_model=8",
                                         "--max-position",
                                         "300"};
  const std::string f = temp_dir("report_fast"), m = temp_dir("report_mpfr");
  ASSERT_EQ(run_pev(with(tiny, {"--out", f})).exit_code, 0);
  const auto r = run_pev(with(tiny, {"--out", m, "--reference", "mpfr"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto jf = report_json(f), jm = report_json(m);
  EXPECT_EQ(jm["provenance"]["reference"], "mpfr");
  EXPECT_EQ(jf["checks"].dump(), jm["checks"].dump());
  EXPECT_GT(jf["provenance"]["reference_values"].get<std::uint64_t>(), 0u);
}

TEST(CliReport, ExhaustiveCoversEveryPosition) {
  const std::string d = temp_dir("report_exhaustive");
  const auto r = run_pev({"report", "--spec", "rope:head_dim=8", "--max-position", "5000",
                          "--exhaustive", "--out", d});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = report_json(d);
  EXPECT_TRUE(j["provenance"]["exhaustive"].get<bool>());
  // --max-position is the largest position, included: 0 … 5000.
  for (const auto& c : j["checks"]) EXPECT_EQ(c["positions"], 5001) << c["id"];
}

TEST(CliReport, SmallestLargestPositionsGiveAReport) {
  // 1: positions 0 and 1; 16 and 17: the invariance drift (offset 16) has no query position above
  // 0, then one (plot d only from 17 on).
  for (const std::string n : {"1", "16", "17"}) {
    const std::string d = temp_dir("report_small_" + n);
    const auto r =
        run_pev({"report", "--spec", "rope:head_dim=8", "--max-position", n, "--out", d});
    ASSERT_EQ(r.exit_code, 0) << n << "\n" << r.err;
    const auto j = report_json(d);
    for (const auto& c : j["checks"]) EXPECT_EQ(c["positions"], std::stoi(n) + 1) << c["id"];
    EXPECT_EQ(std::filesystem::exists(std::filesystem::path(d) / "plots/invariance_spec1.svg"),
              n == "17")
        << n;
  }
}

TEST(CliReport, BadUsageExitsTwo) {
  const std::string d = temp_dir("report_bad");
  const std::vector<std::vector<std::string>> bad = {
      {"report", "--suite", "nope", "--out", d},
      {"report", "--spec", "rope:head_dim=7", "--out", d},
      {"report", "--spec", "shaw:max_relative_position=4", "--out", d},
      {"report", "--spec", "rope:head_dim=8", "--max-position", "0", "--out", d},
      {"report", "--spec", "rope:head_dim=8", "--name", "a/b", "--out", d},
      {"report", "--name", "x", "--spec", "rope:head_dim=8", "--out", d},
      {"report", "--spec", "rope:head_dim=8", "--name", "x", "--name", "y", "--out", d},
      {"report", "--spec", "rope:head_dim=8", "--name", "llama2", "--suite", "default", "--out", d},
      {"report", "--spec", "rope:head_dim=8", "--layer-type", "sliding_attention", "--out", d},
      {"report", "--spec", "rope:head_dim=8", "--shard", "4/4", "--out", d},
      {"report", "--spec", "rope:head_dim=8", "--shard", "x", "--out", d},
      {"report", "--spec", "rope:head_dim=8", "--reference", "exact", "--out", d},
      {"report", "--config", "/nonexistent/config.json", "--out", d},
      {"report", "--bogus"},
      {"merge", "--out", d},
      {"merge", "/nonexistent/dir", "--out", d},
  };
  for (const auto& args : bad) {
    const auto r = run_pev(args);
    std::string line;
    for (const auto& a : args) line += a + " ";
    EXPECT_EQ(r.exit_code, 2) << line << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << line;
  }
}

TEST(CliReport, FailedCheckExitsOne) {
  // A report whose check failed, merged as a single shard: the verdict is exit code 1.
  const std::string src = temp_dir("report_failed_src");
  ASSERT_EQ(run_pev({"report", "--spec", "rope:head_dim=8", "--max-position", "64", "--out", src})
                .exit_code,
            0);
  auto j = report_json(src);
  j["checks"][0]["pass"] = false;
  j["checks"][0]["max_rho"] = 2.5;
  std::ofstream(std::filesystem::path(src) / "report.json") << j.dump(1);
  const std::string out = temp_dir("report_failed_out");
  const auto r = run_pev({"merge", src, "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string md = io::read_file(std::filesystem::path(out) / "summary.md");
  EXPECT_NE(md.find("1 failed"), std::string::npos);
  EXPECT_NE(io::read_file(std::filesystem::path(out) / "junit.xml").find("<failure"),
            std::string::npos);
}

}  // namespace
}  // namespace pev

namespace pev {
namespace {

TEST(CliReport, ConfigFilesAreSweptUnderTheirNames) {
  const std::string d = temp_dir("report_config");
  const std::string cfg =
      std::string(PEV_SOURCE_DIR) + "/tests/spec/configs/llama3_1_8b_instruct.json";
  const auto r = test::run_pev({"report", "--config", cfg, "--max-position", "4096", "--out", d});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = report_json(d);
  ASSERT_EQ(j["checks"].size(), 15u);
  // A file not named config.json: model_type, then the file's stem.
  EXPECT_EQ(j["checks"][0]["spec_name"], "llama:llama3_1_8b_instruct");
  EXPECT_NE(j["checks"][0]["spec"].get<std::string>().find("rope_type=llama3"), std::string::npos);
  ASSERT_EQ(j["specs"].size(), 1u);
  EXPECT_EQ(j["specs"][0]["source"], "--config " + cfg);
  EXPECT_EQ(j["provenance"]["max_position"], 4096);
  // With --suite default too, the default suite comes first.
  const auto both = test::run_pev(
      {"report", "--suite", "default", "--config", cfg, "--max-position", "64", "--out", d});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(report_json(d)["provenance"]["suite"], "default+custom");
}

TEST(CliReport, TwoModelsGetTheirOwnChecksPlotsAndDefaultMaxPosition) {
  // Two Hugging Face model directories, each with its config.json (max_position_embeddings 512
  // and 300): checks named model_type:directory, every plot per model, the spec on the page, and
  // the largest position the configs' largest max_position_embeddings - 1.
  namespace fs = std::filesystem;
  const fs::path root = temp_dir("report_models");
  const std::string src = std::string(PEV_SOURCE_DIR) + "/tests/spec/configs/llama2_7b.json";
  std::vector<std::string> args = {"report"};
  for (const auto& [model, n] : {std::pair<std::string, int>{"org-a", 512}, {"org-b", 300}}) {
    auto cfg = nlohmann::json::parse(io::read_file(src));
    cfg["max_position_embeddings"] = n;
    fs::create_directories(root / model);
    std::ofstream(root / model / "config.json") << cfg.dump(1);
    args.insert(args.end(), {"--config", (root / model / "config.json").string()});
  }
  const std::string d = (root / "out").string();
  args.insert(args.end(), {"--out", d});
  const auto r = run_pev(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = report_json(d);
  EXPECT_EQ(j["provenance"]["max_position"], 511);
  std::set<std::string> names;
  for (const auto& c : j["checks"]) {
    names.insert(c["spec_name"].get<std::string>());
    EXPECT_EQ(c["positions"], 512) << c["id"];  // 0 … 511, every one below 4096
  }
  EXPECT_EQ(names, (std::set<std::string>{"llama:org-a", "llama:org-b"}));
  for (const std::string m : {"llama_org-a", "llama_org-b"}) {
    for (const std::string& plot : {"drift_" + m + "--hf.svg", "heatmap_" + m + "--hf--fp32.svg",
                                    "invariance_" + m + ".svg", "wavelength_" + m + ".svg"}) {
      EXPECT_TRUE(fs::is_regular_file(fs::path(d) / "plots" / plot)) << plot;
    }
  }
  // JUnit: no two test cases share classname and name.
  const std::string junit = io::read_file(fs::path(d) / "junit.xml");
  std::set<std::string> cases;
  std::size_t n_cases = 0;
  for (std::size_t at = junit.find("<testcase "); at != std::string::npos;
       at = junit.find("<testcase ", at + 1)) {
    cases.insert(junit.substr(at, junit.find(" time=", at) - at));
    ++n_cases;
  }
  EXPECT_EQ(n_cases, 30u);
  EXPECT_EQ(cases.size(), n_cases);
  // The page shows each spec, where it came from, and its plots.
  const std::string html = io::read_file(fs::path(d) / "index.html");
  EXPECT_NE(html.find("<code>" + j["specs"][0]["spec"].get<std::string>() + "</code>"),
            std::string::npos);
  EXPECT_NE(html.find("--config " + (root / "org-b" / "config.json").string()), std::string::npos);
  EXPECT_NE(html.find("href=\"#invariance_llama_org-b.svg\""), std::string::npos);

  // --name names the config before it; --layer-type picks Gemma-3's sliding layers (their own θ).
  const std::string gemma =
      std::string(PEV_SOURCE_DIR) + "/tests/spec/configs/gemma3_1b_v5_layer_types.json";
  const auto g = run_pev({"report", "--config", gemma, "--name", "gemma-local", "--layer-type",
                          "sliding_attention", "--max-position", "64", "--out", d});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const auto jg = report_json(d);
  EXPECT_EQ(jg["checks"][0]["spec_name"], "gemma-local");
  // The sliding layers: plain RoPE with θ 10000; the full ones: linear scaling (factor 8), θ 1e6.
  EXPECT_EQ(jg["specs"][0]["spec"].get<std::string>().find("linear"), std::string::npos)
      << jg["specs"][0]["spec"];
  EXPECT_EQ(jg["specs"][0]["source"], "--config " + gemma + " --layer-type sliding_attention");
  const auto full = run_pev({"report", "--config", gemma, "--max-position", "64", "--out", d});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_EQ(report_json(d)["checks"][0]["spec_name"], "gemma3_text:gemma3_1b_v5_layer_types");
  EXPECT_NE(report_json(d)["specs"][0]["spec"].get<std::string>().find("rope_type=linear"),
            std::string::npos);
}

// ---- a run killed with SIGKILL leaves the previous report or none, never a torn one ----------

// A report directory as {relative path: contents}, with the generation time blanked (the only
// thing that differs between two runs with the same seed).
std::string without_timestamps(std::string s) {
  // YYYY-MM-DDTHH:MM:SSZ → "T" (no std::regex: GCC 12 warns inside it at -O1, which -Werror
  // turns into an error in the sanitizer build).
  const std::string_view shape = "dddd-dd-ddTdd:dd:ddZ";
  for (std::size_t i = 0; i + shape.size() <= s.size(); ++i) {
    bool match = true;
    for (std::size_t k = 0; k < shape.size() && match; ++k) {
      const char c = s[i + k];
      match = shape[k] == 'd' ? (c >= '0' && c <= '9') : c == shape[k];
    }
    if (match) s.replace(i, shape.size(), "T");
  }
  return s;
}

std::map<std::string, std::string> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    files[std::filesystem::relative(e.path(), dir).string()] =
        without_timestamps(io::read_file(e.path()));
  }
  return files;
}

TEST(CliReport, KilledAtAnyMomentLeavesThePreviousReportOrTheNewOne) {
  const std::string dir = temp_dir("report_sigkill");
  const auto args = [&](const char* seed, const std::string& out) {
    return with(kSmall, {"--seed", seed, "--out", out});
  };
  // The two complete reports a killed run may leave: the previous (seed 1) and the new (seed 2).
  ASSERT_EQ(run_pev(args("1", dir + "/a")).exit_code, 0);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(run_pev(args("2", dir + "/b")).exit_code, 0);
  const double full = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto previous = snapshot(dir + "/a"), fresh = snapshot(dir + "/b");
  ASSERT_NE(previous, fresh);
  ASSERT_GT(previous.size(), 20u);  // report files, data/*.csv, plots/*.svg and *.gp

  // Kill the seed-2 run over `out` (holding the seed-1 report, or nothing) at times spread over
  // its whole run, writing phase included; each time `out` must equal one complete report.
  const std::uint64_t seed = std::random_device{}();
  std::cout << "kill-time seed " << seed << " (a full run takes " << full << " s)\n";
  std::mt19937_64 rng(seed);
  const int kills = 16;
  int left_previous = 0, left_new = 0, left_none = 0;
  for (int k = 0; k < kills; ++k) {
    const std::string out = dir + "/out";
    std::filesystem::remove_all(out);
    const bool had_previous = k % 4 != 3;  // a quarter of the runs start with no report
    if (had_previous)
      std::filesystem::copy(dir + "/a", out, std::filesystem::copy_options::recursive);
    const double at = full * 1.2 * (k + std::uniform_real_distribution<>(0, 1)(rng)) / kills;
    const pid_t pid = test::spawn_pev(args("2", out));
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::duration<double>(at));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    const bool killed = WIFSIGNALED(status);
    if (!std::filesystem::exists(out)) {
      EXPECT_FALSE(had_previous) << "the previous report vanished (kill at " << at << " s)";
      ++left_none;
      continue;
    }
    const auto now = snapshot(out);
    if (now == previous && had_previous) {
      ++left_previous;
    } else if (now == fresh) {
      ++left_new;
    } else {
      ADD_FAILURE() << "a torn report after a kill at " << at << " s (killed: " << killed
                    << "): " << now.size() << " files, previous " << previous.size() << ", new "
                    << fresh.size();
    }
  }
  std::cout << kills << " kills: previous report left " << left_previous << ", new report "
            << left_new << ", none " << left_none << "\n";
  EXPECT_GT(left_previous + left_none, 0) << "no kill landed before the report was complete";
  // The killed runs' staging directories are removed by the next run.
  ASSERT_EQ(run_pev(args("2", dir + "/out")).exit_code, 0);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find("pev-staging"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace pev

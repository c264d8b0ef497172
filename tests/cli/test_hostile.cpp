// Hostile inputs and conditions that the bad-input corpus (bad_inputs.tsv) cannot express: what
// is left on disk after a refusal, plugins that end the process, signals, floods and races. Each
// case asserts the exit code and the message, as the corpus does, and what must hold besides.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "run.h"

namespace pev {
namespace {

namespace fs = std::filesystem;
using test::run_pev;

const std::string kSpec = "rope:head_dim=64,rope_theta=500000";

std::string slurp(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const fs::path& f, const std::string& text) {
  fs::create_directories(f.parent_path());
  std::ofstream(f, std::ios::binary) << text;
}

// Sets an environment variable for one scope.
struct scoped_env {
  scoped_env(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~scoped_env() { ::unsetenv(name_); }
  const char* name_;
};

TEST(Hostile, AGitCheckoutOrAThesisIsNeverReplaced) {
  const fs::path dir = test::temp_dir("hostile_owned");
  write(dir / "repo" / ".git" / "HEAD", "ref: refs/heads/main\n");
  write(dir / "repo" / "report.json", "{}");
  const auto r = run_pev({"report", "--spec", "rope:head_dim=4", "--max-position", "64", "--out",
                          (dir / "repo").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("pev did not write (it has no .pev-manifest)"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir / "repo" / ".git" / "HEAD"), "ref: refs/heads/main\n");
  write(dir / "thesis" / "thesis.tex", "\\chapter{One}");
  write(dir / "thesis" / "certificate.json", "{}");
  const auto c = run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "0:8",
                          "--format", "safetensors", "--out", (dir / "t.safetensors").string()});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto k = run_pev(
      {"certify", "--impl", (dir / "t.safetensors").string(), "--out", (dir / "thesis").string()});
  EXPECT_EQ(k.exit_code, 2) << k.err;
  EXPECT_NE(k.err.find("pev did not write"), std::string::npos) << k.err;
  EXPECT_EQ(slurp(dir / "thesis" / "thesis.tex"), "\\chapter{One}");
  // A pev output with a user's file added is not replaced either; once it is moved out, it is.
  const auto first = run_pev(
      {"certify", "--impl", (dir / "t.safetensors").string(), "--out", (dir / "cert").string()});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  write(dir / "cert" / "notes.txt", "mine");
  const auto again = run_pev(
      {"certify", "--impl", (dir / "t.safetensors").string(), "--out", (dir / "cert").string()});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("holds 'notes.txt', which pev did not write"), std::string::npos)
      << again.err;
  EXPECT_EQ(slurp(dir / "cert" / "notes.txt"), "mine");
}

TEST(Hostile, ADeviceOrASymlinkIsWrittenThroughNotReplaced) {
  const fs::path dir = test::temp_dir("hostile_device");
  const fs::path dev = dir / "null";
  // A private /dev/null (1:3) as root; /dev/null itself otherwise (not replaceable unprivileged).
  const fs::path target =
      ::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0 ? dev : "/dev/null";
  const auto r = run_pev({"compute", "--strategy", "hf", "--spec", "rope:head_dim=4", "--positions",
                          "0:2", "--format", "npy", "--out", target.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << target << " became a regular file";
  // A symlink to a file: the file is replaced, the link stays a link.
  write(dir / "real.npy", "old");
  fs::create_symlink(dir / "real.npy", dir / "link.npy");
  const auto l = run_pev({"compute", "--strategy", "hf", "--spec", "rope:head_dim=4", "--positions",
                          "0:2", "--format", "npy", "--out", (dir / "link.npy").string()});
  EXPECT_EQ(l.exit_code, 0) << l.err;
  EXPECT_TRUE(fs::is_symlink(dir / "link.npy"));
  EXPECT_EQ(slurp(dir / "real.npy").substr(1, 5), "NUMPY");
}

// A plugin that calls exit(0) — in its constructor, in its ABI-version call, or in a call — must
// not make pev exit 0: isolated (the default) or in process, it is a failed check, and the
// certificate says so.
// An --exec implementation correct for the values pev certifies, then hanging in the property
// suites (where a failing call may only make a generated spec "not applicable"): a failed check
// says so, never a certificate of suites that did not run.
TEST(Hostile, AnImplementationThatHangsInThePropertySuitesIsAFailedCheck) {
  const std::string script = std::string(PEV_SOURCE_DIR) + "/tests/cli/inputs/late_hang_exec.py";
  const auto r = run_pev({"certify", "--spec", "rope:head_dim=64,rope_theta=10000", "--exec",
                          "/usr/bin/python3 " + script + " 2", "--timeout", "2", "--max-position",
                          "5000", "--samples", "4", "--property-cases", "5", "--out",
                          test::temp_dir("hostile_late_hang") + "/out"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("the process was killed (during the property suites)"), std::string::npos)
      << r.out;
}

TEST(Hostile, APluginThatExitsIsAFailedCheckWithACertificate) {
  const fs::path dir = test::temp_dir("hostile_plugin_exit");
  struct mode_case {
    const char* mode;
    const char* in_process_message;
  };
  for (const mode_case& m : {mode_case{"exit-load", "while pev was running loading it"},
                             mode_case{"exit-abi", "while pev was running pev_plugin_abi_version"},
                             mode_case{"exit", "while pev was running pev_rope_table"}}) {
    const scoped_env env("PEV_PLUGIN_MISBEHAVE", m.mode);
    for (const bool in_process : {false, true}) {
      const fs::path out = dir / (std::string(m.mode) + (in_process ? "_in" : "_iso"));
      std::vector<std::string> args = {"certify",  "--spec",           kSpec,
                                       "--plugin", PEV_BUILTIN_PLUGIN, "--no-properties",
                                       "--out",    out.string()};
      if (in_process) args.push_back("--in-process");
      const auto r = run_pev(args);
      const std::string what = std::string(m.mode) + (in_process ? " in process" : " isolated");
      EXPECT_EQ(r.exit_code, 1) << what << "\n" << r.out << r.err;
      EXPECT_NE(r.out.find("grade     not certified"), std::string::npos) << what << "\n" << r.out;
      const std::string want =
          in_process
              ? std::string("the plugin ended the process with exit(0) ") + m.in_process_message
              : std::string("the process exited");
      EXPECT_NE(r.out.find(want), std::string::npos) << what << "\n" << r.out;
      ASSERT_TRUE(fs::exists(out / "certificate.json")) << what;
      const auto j = nlohmann::json::parse(slurp(out / "certificate.json"));
      EXPECT_EQ(j["certified"], false) << what;
      EXPECT_NE(j["checks"][0]["note"].get<std::string>().find(want), std::string::npos) << what;
    }
  }
}

// Isolated, a plugin's prints to stdout go to stderr: the protocol channel is not its stdout.
TEST(Hostile, AnIsolatedPluginThatPrintsToStdoutIsStillCertified) {
  const fs::path dir = test::temp_dir("hostile_plugin_stdout");
  const scoped_env env("PEV_PLUGIN_MISBEHAVE", "stdout");
  const auto r = run_pev({"certify", "--spec", kSpec, "--plugin", PEV_BUILTIN_PLUGIN,
                          "--no-properties", "--max-position", "8192", "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("CERTIFIED"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("plugin loaded (a debug print on stdout)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pev_rope_table called"), std::string::npos) << r.err;
}

// SIGINT or SIGTERM during certify --exec: the child's whole process group goes with pev.
TEST(Hostile, ASignalToPevReachesTheChildsWholeProcessGroup) {
  const std::string script = std::string(PEV_SOURCE_DIR) + "/tests/cli/inputs/exec_grandchild.sh";
  for (const int sig : {SIGINT, SIGTERM}) {
    // A marker only this grandchild carries: `sleep MARKER`.
    const std::string marker = std::to_string(900000 + ::getpid() % 50000 + sig);
    const auto grandchild_running = [&] {
      return std::system(("pgrep -x -f 'sleep " + marker + "' > /dev/null").c_str()) == 0;
    };
    const int pid =
        test::spawn_pev({"certify", "--spec", kSpec, "--exec", "sh " + script + " " + marker,
                         "--timeout", "600", "--out", test::temp_dir("hostile_signal") + "/out"});
    for (int k = 0; k < 500 && !grandchild_running(); ++k) usleep(10000);
    ASSERT_TRUE(grandchild_running()) << "the grandchild did not start";
    usleep(200000);  // pev is waiting for the first answer
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status;
    for (int k = 0; k < 200 && grandchild_running(); ++k) usleep(10000);
    EXPECT_FALSE(grandchild_running()) << "signal " << sig << ": the grandchild outlived pev";
    std::system(("pkill -x -f 'sleep " + marker + "'").c_str());  // never leave it behind
  }
}

// A child's stderr is passed on up to 1 MiB; the rest is dropped, and pev says so.
TEST(Hostile, AChildsStderrIsCapped) {
  const std::string script = std::string(PEV_SOURCE_DIR) + "/tests/cli/inputs/exec_stderr_flood.sh";
  const auto r = run_pev({"certify", "--spec", kSpec, "--exec", "sh " + script, "--out",
                          test::temp_dir("hostile_stderr") + "/out"});
  // It greets serving nothing: bad input (exit 2), after its 8 MiB of stderr.
  EXPECT_EQ(r.exit_code, 2) << r.err.substr(r.err.size() -
                                            std::min<std::size_t>(r.err.size(), 500));
  EXPECT_LE(r.err.size(), (std::size_t{1} << 20) + 4096);
  EXPECT_GE(r.err.size(), std::size_t{1} << 20);
  EXPECT_NE(r.err.find("7340032 more bytes of its stderr were dropped (at most 1048576 pass)"),
            std::string::npos)
      << r.err.substr(r.err.size() - std::min<std::size_t>(r.err.size(), 500));
}

// Two runs writing the same fresh --out at once: both succeed, and a complete output stays.
TEST(Hostile, TwoRunsWritingTheSameFreshOutBothSucceed) {
  const fs::path dir = test::temp_dir("hostile_race");
  for (int round = 0; round < 3; ++round) {
    const fs::path out = dir / ("out" + std::to_string(round));
    const std::vector<std::string> args = {"report", "--spec", "rope:head_dim=4", "--max-position",
                                           "64",     "--out",  out.string()};
    const int a = test::spawn_pev(args);
    const int b = test::spawn_pev(args);
    int sa = 0, sb = 0;
    ::waitpid(a, &sa, 0);
    ::waitpid(b, &sb, 0);
    EXPECT_TRUE(WIFEXITED(sa) && WEXITSTATUS(sa) == 0) << "round " << round << ": " << sa;
    EXPECT_TRUE(WIFEXITED(sb) && WEXITSTATUS(sb) == 0) << "round " << round << ": " << sb;
    EXPECT_TRUE(fs::exists(out / "report.json"));
    EXPECT_TRUE(fs::exists(out / ".pev-manifest"));
    for (const auto& e : fs::directory_iterator(dir)) {
      EXPECT_EQ(e.path().filename().string().find(".pev-staging"), std::string::npos) << e.path();
    }
  }
}

TEST(Hostile, AFullStdoutIsExitTwoForEveryCommandAndFormat) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  std::vector<std::vector<std::string>> cases = {
      {"list"}, {"--help"}, {"--version"}, {"reference", "--help"}};
  // Text formats print to stdout; the binary ones need --out, and `--out -` is stdout.
  for (const char* format : {"text", "csv", "json", "npy", "safetensors"}) {
    const bool binary = std::string(format) == "npy" || std::string(format) == "safetensors";
    std::vector<std::string> to = {"--format", format};
    if (binary) to.insert(to.end(), {"--out", "-"});
    std::vector<std::string> ref = {"reference", "--spec", kSpec, "--positions", "0:8"};
    std::vector<std::string> com = {"compute", "--strategy",  "hf", "--spec",
                                    kSpec,     "--positions", "0:8"};
    ref.insert(ref.end(), to.begin(), to.end());
    com.insert(com.end(), to.begin(), to.end());
    cases.push_back(ref);
    cases.push_back(com);
  }
  // The commands that write a directory and print a summary: report, certify, merge, verify.
  const std::string dir = test::temp_dir("hostile_full");
  const std::string dump = dir + "/d.safetensors";
  ASSERT_EQ(run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "0:64",
                     "--format", "safetensors", "--out", dump})
                .exit_code,
            0);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(run_pev({"certify", "--impl", dump, "--shard", std::to_string(i) + "/2", "--out",
                       dir + "/s" + std::to_string(i)})
                  .exit_code,
              3);
  }
  ASSERT_EQ(run_pev({"certify", "--impl", dump, "--out", dir + "/c"}).exit_code, 0);
  cases.push_back(
      {"report", "--spec", "rope:head_dim=4", "--max-position", "64", "--out", dir + "/r"});
  cases.push_back({"certify", "--impl", dump, "--out", dir + "/c2"});
  cases.push_back({"merge", dir + "/s0", dir + "/s1", "--out", dir + "/m"});
  cases.push_back({"verify", dir + "/c"});
  for (const auto& args : cases) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    SCOPED_TRACE(line);
    const auto r = test::run_pev_with_stdout(args, "/dev/full");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    // Named: "standard output", or the `--out -` that stands for it (with its reason; standard
    // output's only when the failed write was the last, as errno is not kept by stdio).
    EXPECT_TRUE(r.err.find("cannot write to standard output") != std::string::npos ||
                r.err.find("cannot write '-': No space left on device") != std::string::npos)
        << r.err;
  }
  // The same command into a file that takes the writes: exit 0 (the check is of the writes, not of
  // the kind of file).
  EXPECT_EQ(run_pev({"reference", "--spec", kSpec, "--positions", "0:8"}).exit_code, 0);
}

// Issue 28's smaller cases. A shard count beyond 2^20 recorded in a shard (a forged or corrupt
// certificate.json or report.json) is refused naming the file and the key; it was read as int, so
// 2^40 became 0 and merge said "1 of 0 shards given (missing: )".
TEST(Hostile, AShardCountBeyondTheLimitIsRefusedByName) {
  const fs::path dir = test::temp_dir("hostile_shard_count");
  const std::string dump = (dir / "d.safetensors").string();
  ASSERT_EQ(run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "0:64",
                     "--format", "safetensors", "--out", dump})
                .exit_code,
            0);
  const fs::path cert = dir / "shard-0";
  auto r = run_pev({"certify", "--impl", dump, "--shard", "0/2", "--out", cert.string()});
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  const fs::path report = dir / "report-0";
  r = run_pev({"report", "--spec", "rope:head_dim=4", "--max-position", "64", "--shard", "0/2",
               "--out", report.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  struct edit {
    fs::path file;
    std::vector<std::string> keys;  // set to 2^40, the last one named in the message
    std::string message;
  };
  const std::vector<edit> edits = {
      {cert / "certificate.json",
       {"shard", "count"},
       "shard.count = 1099511627776 is not a shard count (1 ... 2^20 = 1048576, pev's limit)"},
      {cert / "certificate.json",
       {"provenance", "shard_count"},
       "provenance.shard_count = 1099511627776 is not a shard count"},
      {report / "report.json",
       {"provenance", "shard_count"},
       "provenance.shard_count = 1099511627776 is not a shard count"}};
  for (const edit& e : edits) {
    SCOPED_TRACE(e.message);
    const std::string original = slurp(e.file);
    nlohmann::json j = nlohmann::json::parse(original);
    j[e.keys[0]][e.keys[1]] = std::int64_t{1} << 40;
    write(e.file, j.dump(1));
    r = run_pev({"merge", e.file.parent_path().string(), "--out", (dir / "merged").string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(e.file.string() + ": " + e.message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("of 0"), std::string::npos) << r.err;
    write(e.file, original);
  }
}

// A dangling symbolic link as --out is refused naming the link and its target, and neither is
// touched (pev writes through a link, keeps it, and creates no directory it names); a directory
// whose .pev-manifest is not a manifest is refused saying so, and kept as it is.
TEST(Hostile, ADanglingOutLinkOrAnInvalidManifestIsNamedAndKept) {
  const fs::path dir = test::temp_dir("hostile_out_link");
  const fs::path link = dir / "out", target = dir / "missing" / "x";
  fs::create_symlink(target, link);
  auto r = run_pev(
      {"report", "--spec", "rope:head_dim=4", "--max-position", "64", "--out", link.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("'" + link.string() + "' is a symbolic link to '" + target.string() +
                       "', which does not exist"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_FALSE(fs::exists(dir / "missing"));

  const fs::path owned = dir / "owned";
  write(owned / ".pev-manifest",
        R"({"pev_output_manifest": 1, "directories": [], "files": ["../escape"]})");
  write(owned / "report.json", "{}");
  r = run_pev(
      {"report", "--spec", "rope:head_dim=4", "--max-position", "64", "--out", owned.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("'" + owned.string() +
                       "' is a non-empty directory whose .pev-manifest is not a valid pev "
                       "manifest (its \"files\" lists \"../escape\", not a path inside the "
                       "directory)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(owned / "report.json"), "{}");
}

// Issue 28: a plot gnuplot cannot draw never takes the verdict with it.
TEST(Hostile, APlotGnuplotCannotDrawIsSkippedNotTheVerdict) {
  const fs::path dir = test::temp_dir("hostile_gnuplot");
  // A gnuplot that fails on every script, and a PATH with none.
  write(dir / "failing" / "gnuplot", "#!/bin/sh\necho 'cannot draw this' >&2\nexit 1\n");
  fs::permissions(dir / "failing" / "gnuplot", fs::perms::owner_all);
  fs::create_directories(dir / "none");
  const auto c = run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "0:64",
                          "--format", "safetensors", "--out", (dir / "t.safetensors").string()});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  for (const auto& [path, reason] :
       {std::pair<std::string, std::string>{(dir / "failing").string(),
                                            "(exit status 1): cannot draw this"},
        {(dir / "none").string(), "(exit status 127)"}}) {
    scoped_env env("PATH", path.c_str());
    const fs::path out = dir / ("cert_" + fs::path(path).filename().string());
    const auto k =
        run_pev({"certify", "--impl", (dir / "t.safetensors").string(), "--out", out.string()});
    EXPECT_EQ(k.exit_code, 0) << k.err;
    const auto j = nlohmann::json::parse(slurp(out / "certificate.json"));
    EXPECT_EQ(j["certified"], true);
    ASSERT_TRUE(j.contains("plots_skipped")) << path;
    ASSERT_FALSE(j["plots_skipped"].empty());
    const std::string file = j["plots_skipped"][0]["file"];
    const std::string why = j["plots_skipped"][0]["reason"];
    EXPECT_EQ(file.rfind("plots/", 0), 0u) << file;
    EXPECT_NE(why.find("gnuplot failed on plots/"), std::string::npos) << why;
    EXPECT_NE(why.find(reason), std::string::npos) << why;
    const std::string html = slurp(out / "index.html");
    EXPECT_NE(html.find("plot " + file + " not drawn: gnuplot failed on"), std::string::npos);
    EXPECT_NE(k.err.find("pev: warning: plot " + file + " not drawn: "), std::string::npos)
        << k.err;
    // `pev report` the same: exit 0, report.json lists them, the page says so.
    const fs::path rep = dir / ("report_" + fs::path(path).filename().string());
    const auto r = run_pev(
        {"report", "--spec", "rope:head_dim=4", "--max-position", "64", "--out", rep.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto rj = nlohmann::json::parse(slurp(rep / "report.json"));
    ASSERT_TRUE(rj.contains("plots_skipped"));
    const std::string rfile = rj["plots_skipped"][0]["file"];
    EXPECT_NE(slurp(rep / "index.html").find("plot " + rfile + " not drawn: "), std::string::npos);
    EXPECT_NE(r.err.find("pev: warning: plot " + rfile + " not drawn: "), std::string::npos);
  }
}

// Issue 28: the extremes certify end to end — position 2^63 − 1 (its octave once overflowed the
// layout: exit 2 "beyond the check's layout"; 2^62's plot read a NaN octave end) and head_dim
// 65536 (a heatmap wider than gnuplot's cairo image: exit 2 "gnuplot failed").
TEST(Hostile, PositionTwoToTheSixtyThreeMinusOneAndHeadDim65536AreCertified) {
  const fs::path dir = test::temp_dir("hostile_extremes");
  write(dir / "far", "4611686018427387904\n9223372036854775806\n9223372036854775807\n");
  write(dir / "few", "0\n1\n7\n1000\n");
  struct extreme {
    std::string spec, positions;
    std::int64_t max;
  };
  for (const auto& e : {extreme{"rope:head_dim=128", "far", INT64_MAX},
                        extreme{"rope:head_dim=65536", "few", 1000}}) {
    const fs::path t = dir / (e.positions + ".safetensors");
    const auto ref =
        run_pev({"reference", "--spec", e.spec, "--positions-file", (dir / e.positions).string(),
                 "--dtype", "fp32", "--format", "safetensors", "--out", t.string()});
    ASSERT_EQ(ref.exit_code, 0) << ref.err;
    const fs::path out = dir / ("cert_" + e.positions);
    const auto k =
        run_pev({"certify", "--spec", e.spec, "--impl", t.string(), "--out", out.string()});
    EXPECT_EQ(k.exit_code, 0) << e.spec << ": " << k.err;
    EXPECT_NE(k.out.find("CERTIFIED"), std::string::npos) << k.out;
    const auto j = nlohmann::json::parse(slurp(out / "certificate.json"));
    EXPECT_EQ(j["certified"], true);
    EXPECT_EQ(j["grade"], "correctly-rounded");
    EXPECT_EQ(j["positions"]["max"].get<std::int64_t>(), e.max);
    for (const auto& c : j["checks"]) {
      const auto& last = c["octaves"].back();
      EXPECT_LE(last["lo"].get<std::int64_t>(), e.max);
      EXPECT_GE(last["hi"].get<std::int64_t>(), e.max) << c["id"];
    }
    // A plot gnuplot cannot draw (the 32768 pairs' heatmap, for one) is listed and noted.
    const std::string html = slurp(out / "index.html");
    for (const auto& p : j.value("plots_skipped", nlohmann::json::array())) {
      EXPECT_NE(html.find("plot " + p["file"].get<std::string>() + " not drawn: "),
                std::string::npos);
    }
  }
}

}  // namespace
}  // namespace pev

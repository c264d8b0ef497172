// Live implementations (pev/impl/live.h) certified end to end: the example C plugin and the
// example numpy subprocess (examples/), a subprocess with a planted mistake, and subprocesses that
// hang, die, flood or lie — each reported, none able to hang or crash pev.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/impl/live.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

const std::string kPython = "/usr/bin/python3";

bool have_numpy() {
  return std::system((kPython + " -c 'import numpy' > /dev/null 2>&1").c_str()) == 0;
}

certify::live_options quick() {
  certify::live_options lo;
  lo.max_position = 1 << 18;
  lo.samples = 16;
  return lo;
}

TEST(CertifyLive, ExamplePluginIsRecipeHf) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=128,rope_theta=500000");
  const auto im = impl::load_plugin(PEV_EXAMPLE_PLUGIN, e, kernel::strategy::hf);
  EXPECT_EQ(im->kind(), "plugin");
  EXPECT_TRUE(im->supports(impl::output::rope_table, dtype::fp32));
  EXPECT_TRUE(im->supports(impl::output::rope_rotate, dtype::fp32));
  EXPECT_FALSE(im->supports(impl::output::attention_factor, dtype::fp32));
  const auto cert = certify::certify_live(e, *im, {}, quick());
  EXPECT_EQ(cert.certification->result, certify::grade::recipe_hf) << certify::to_text(cert);
  EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
  ASSERT_EQ(cert.checks.size(), 4u) << certify::to_text(cert);  // inv_freq, cos, sin, q_out
  EXPECT_EQ(cert.certification->inputs.front().format, "plugin");
  EXPECT_EQ(cert.certification->inputs.front().sha256.size(), 64u);
  // A spec it does not serve: the table is "not supported" (pev::error naming the output).
  const auto yarn = im->rebind(spec::parse_spec(
      "rope:head_dim=64,rope_type=yarn,factor=4,original_max_position_embeddings=4096"));
  std::vector<std::int64_t> p = {0};
  std::vector<float> c(32), s(32);
  EXPECT_THROW(yarn->rope_table(p, std::nullopt, std::span<float>(c), std::span<float>(s)), error);
}

TEST(CertifyLive, ExamplePluginPassesThePropertySuitesItCanRun) {
  // Through the same entry point as `pev certify --plugin` minus the CLI: the property callback
  // lives in the CLI (pev::prop), so here only the value checks; the CLI test runs the properties.
  const spec::encoding e = spec::parse_spec(
      "rope:head_dim=64,rope_theta=10000,layout=interleaved,partial_rotary_factor=0.5");
  const auto im = impl::load_plugin(PEV_EXAMPLE_PLUGIN, e, kernel::strategy::hf);
  const auto cert = certify::certify_live(e, *im, {}, quick());
  EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
}

TEST(CertifyLive, EveryBuiltinStrategyThroughThePlugin) {
  // pev's own strategies behind the C ABI (tests/certify/builtin_plugin.cpp): each gets the grade
  // its contract implies, as through files (test_certify) and --exec (`pev serve`, test_cli).
  struct expect {
    const char* strategy;
    certify::grade worst;
  };
  for (const char* text : {"rope:head_dim=128,rope_theta=500000", "sinusoidal:d_model=128"}) {
    const spec::encoding e = spec::parse_spec(text);
    const bool rope = std::holds_alternative<spec::rope>(e);
    for (const expect& x :
         {expect{"accurate", rope ? certify::grade::drift_free : certify::grade::faithful},
          expect{"hf", certify::grade::recipe_hf}, expect{"ggml", certify::grade::recipe_ggml},
          expect{"table-fp16", certify::grade::recipe_vllm},
          expect{"table-bf16", certify::grade::recipe_vllm}}) {
      if (!rope && std::string(x.strategy) == "ggml") continue;  // RoPE only
      setenv("PEV_PLUGIN_STRATEGY", x.strategy, 1);
      const auto im = impl::load_plugin(PEV_BUILTIN_PLUGIN, e, kernel::parse_strategy(x.strategy));
      const auto cert = certify::certify_live(e, *im, {}, quick());
      EXPECT_EQ(cert.exit_code(), 0) << text << " " << x.strategy << "\n" << certify::to_text(cert);
      EXPECT_LE(cert.certification->result, x.worst)
          << text << " " << x.strategy << ": " << certify::to_string(cert.certification->result);
      std::cout << text << " " << x.strategy
                << " via plugin: " << certify::to_string(cert.certification->result) << "\n";
    }
  }
  unsetenv("PEV_PLUGIN_STRATEGY");
}

impl::plugin_options isolated(int timeout_ms = 60000) {
  impl::plugin_options o;
  o.isolate = true;
  o.server = PEV_EXECUTABLE;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  return o;
}

TEST(CertifyLive, IsolatedPluginGetsTheSameCertificate) {
  // The plugin in a `pev serve --plugin` child: the same checks, values and grade as loaded here.
  const spec::encoding e = spec::parse_spec(
      "rope:head_dim=64,rope_type=yarn,factor=4,"
      "original_max_position_embeddings=4096");
  for (const char* strategy : {"hf", "accurate"}) {
    setenv("PEV_PLUGIN_STRATEGY", strategy, 1);
    const auto acc = kernel::parse_strategy(strategy);
    const auto in_process = impl::load_plugin(PEV_BUILTIN_PLUGIN, e, acc);
    const auto child = impl::load_plugin(PEV_BUILTIN_PLUGIN, e, acc, isolated());
    EXPECT_EQ(child->kind(), "plugin (isolated)");
    const auto a = certify::certify_live(e, *in_process, {}, quick());
    const auto b = certify::certify_live(e, *child, {}, quick());
    EXPECT_EQ(a.certification->result, b.certification->result) << strategy;
    ASSERT_EQ(a.checks.size(), b.checks.size()) << strategy;
    for (std::size_t k = 0; k < a.checks.size(); ++k) {
      EXPECT_EQ(a.checks[k].id, b.checks[k].id);
      EXPECT_EQ(a.checks[k].best, b.checks[k].best) << a.checks[k].id;
      EXPECT_EQ(a.checks[k].property, b.checks[k].property) << a.checks[k].id;
      EXPECT_EQ(a.checks[k].values, b.checks[k].values) << a.checks[k].id;
      EXPECT_EQ(a.checks[k].recipe_rho, b.checks[k].recipe_rho) << a.checks[k].id;
    }
    std::cout << strategy << " isolated: " << certify::to_string(b.certification->result) << ", "
              << b.checks.size() << " checks as in process\n";
  }
  unsetenv("PEV_PLUGIN_STRATEGY");
}

TEST(CertifyLive, IsolatedPluginThatCrashesOrHangsIsAFailedCheck) {
  // A plugin that segfaults, aborts or hangs in pev_rope_table: with --isolate only its child
  // dies (or is killed after the timeout), and certification reports it as a failed check (exit
  // 1); an error status is a failed check that leaves the child serving.
  const spec::encoding e = spec::parse_spec("rope:head_dim=8");
  struct mode {
    const char* name;
    const char* note;
  };
  for (const mode m : {mode{"segv", "signal 11"}, mode{"abort", "signal 6"},
                       mode{"hang", "within 1500 ms"}, mode{"error", "this plugin refuses"}}) {
    setenv("PEV_PLUGIN_MISBEHAVE", m.name, 1);
    const auto t0 = std::chrono::steady_clock::now();
    const auto im = impl::load_plugin(PEV_BUILTIN_PLUGIN, e, kernel::strategy::hf, isolated(1500));
    const auto cert = certify::certify_live(e, *im, {}, quick());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(cert.exit_code(), 1) << m.name << "\n" << certify::to_text(cert);
    std::string notes;
    for (const auto& c : cert.checks) {
      if (!c.note.empty()) notes += c.id + ": " + c.note + "\n";
    }
    EXPECT_NE(notes.find(m.note), std::string::npos) << m.name << ": " << notes;
    std::cout << m.name << ": reported in " << s << " s: " << notes.substr(0, 200) << "\n";
  }
  unsetenv("PEV_PLUGIN_MISBEHAVE");
  // This process's children only (another test may have its own running).
  const std::string own_children =
      "pgrep -P " + std::to_string(getpid()) + " -f 'serve --plugi[n]' > /dev/null";
  EXPECT_NE(std::system(own_children.c_str()), 0) << "a child survived";
  // A library that cannot be loaded: the child refuses the greeting, which is bad input.
  EXPECT_THROW(impl::load_plugin("/nonexistent/plugin.so", e, kernel::strategy::hf, isolated()),
               error);
}

TEST(CertifyLive, BadPluginsAreRefused) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=8");
  EXPECT_THROW(impl::load_plugin("/nonexistent/plugin.so", e, kernel::strategy::hf), error);
  try {
    // A shared library that is not a pev plugin (no pev_plugin_abi_version).
    impl::load_plugin("libm.so.6", e, kernel::strategy::hf);
    ADD_FAILURE() << "libm accepted as a plugin";
  } catch (const error& ex) {
    EXPECT_NE(std::string(ex.what()).find("pev_plugin_abi_version"), std::string::npos)
        << ex.what();
  }
}

TEST(CertifyLive, ExampleNumpySubprocess) {
  if (!have_numpy()) GTEST_SKIP() << "no /usr/bin/python3 with numpy";
  const spec::encoding e = spec::parse_spec("rope:head_dim=128,rope_theta=500000");
  const std::string cmd = kPython + " " + PEV_SOURCE_DIR + "/examples/exec/rope_numpy.py";
  const auto im = impl::start_exec(cmd, e, kernel::strategy::hf);
  EXPECT_EQ(im->name(), "exec:example-numpy-hf-rope");
  const auto cert = certify::certify_live(e, *im, {}, quick());
  EXPECT_EQ(cert.certification->result, certify::grade::recipe_hf) << certify::to_text(cert);
  EXPECT_EQ(cert.exit_code(), 0);
  // The same program with a planted mistake: not certified, and the diagnosis names it.
  const auto bug = impl::start_exec(cmd + " --bug sin-cos-swapped", e, kernel::strategy::hf);
  const auto bad = certify::certify_live(e, *bug, {}, quick());
  EXPECT_EQ(bad.exit_code(), 1) << certify::to_text(bad);
  ASSERT_TRUE(bad.certification->why);
  EXPECT_EQ(bad.certification->why->named.value_or("none"), "sin-cos-swapped")
      << certify::to_text(bad);
}

TEST(CertifyLive, MisbehavingSubprocessesAreKilledAndReported) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=8");
  const std::string script = std::string(PEV_SOURCE_DIR) + "/tests/certify/misbehaving_exec.py";
  impl::exec_options xo;
  xo.timeout = std::chrono::milliseconds(1500);
  for (const char* mode : {"hang", "die", "flood", "lie"}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto im =
        impl::start_exec(kPython + " " + script + " " + mode, e, kernel::strategy::hf, xo);
    const auto cert = certify::certify_live(e, *im, {}, quick());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(cert.exit_code(), 1) << mode << "\n" << certify::to_text(cert);
    ASSERT_FALSE(cert.checks.empty()) << mode;
    EXPECT_EQ(cert.checks.front().id, "live") << mode;
    const std::string& note = cert.checks.front().note;
    const char* want = std::string(mode) == "hang"    ? "within 1500 ms"
                       : std::string(mode) == "die"   ? "exited"
                       : std::string(mode) == "flood" ? "flooding"
                                                      : "must be";
    EXPECT_NE(note.find(want), std::string::npos) << mode << ": " << note;
    std::cout << mode << ": reported in " << s << " s: " << note.substr(0, 160) << "\n";
  }
  // Nothing is left running: the killed processes' whole groups are gone.
  EXPECT_NE(std::system("pgrep -f 'misbehaving_exe[c].py' > /dev/null"), 0)
      << "a misbehaving subprocess survived";
  // A command that dies or hangs before it greets is a failed check like one that does so later
  // (its certificate says so); one the shell cannot find is bad input.
  for (const char* command : {"exit 3", "sleep 30"}) {
    const auto im = impl::start_exec(command, e, kernel::strategy::hf, xo);
    ASSERT_TRUE(im->failure().has_value()) << command;
    const auto cert = certify::certify_live(e, *im, {}, quick());
    EXPECT_EQ(cert.exit_code(), 1) << command;
    ASSERT_EQ(cert.checks.size(), 1u) << command;
    EXPECT_EQ(cert.checks.front().note, *im->failure()) << command;
  }
  EXPECT_NE(impl::start_exec("exit 3", e, kernel::strategy::hf, xo)
                ->failure()
                ->find("the process exited without answering (it exited with status 3)"),
            std::string::npos);
  EXPECT_THROW(impl::start_exec("pev-no-such-command-x", e, kernel::strategy::hf, xo), error);
}

}  // namespace
}  // namespace pev

// `pev report` and `pev merge` (docs/design.md §5.1, §8, §9.2): precision-drift sweeps of a suite
// into a report directory, and the merge of sharded runs.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "pev/app/certify.h"
#include "pev/app/choices.h"
#include "pev/app/inputs.h"
#include "pev/app/limits.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/core/sampling.h"
#include "pev/core/text.h"
#include "pev/io/file.h"
#include "pev/report/json.h"
#include "pev/report/merge.h"
#include "pev/report/write.h"
#include "pev/spec/config.h"
#include "pev/spec/parse.h"
#include "pev/sweep/sweep.h"

namespace pev::cli {
namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// The model_type a config.json names (its own, else its text_config's); empty when it names none
/// or the text is not plain JSON (the encoding is read by spec::parse_config_text, which reports
/// what is wrong with it).
std::string config_model_type(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  for (const nlohmann::json* o : {&j, j.contains("text_config") ? &j["text_config"] : nullptr}) {
    if (o && o->is_object() && o->contains("model_type") && (*o)["model_type"].is_string()) {
      return (*o)["model_type"].get<std::string>();
    }
  }
  return "";
}

/// The name of a config's checks: model_type:MODEL, MODEL the config's directory (Hugging Face's
/// <model>/config.json) or, for a file not named config.json, its stem; :LAYER_TYPE with
/// --layer-type.
std::string config_name(const std::filesystem::path& file, const std::string& model_type,
                        const std::string& layer_type) {
  namespace fs = std::filesystem;
  std::string model = file.stem().string();
  if (file.filename() == "config.json") {
    std::error_code ec;
    const fs::path dir = fs::absolute(file, ec).parent_path().filename();
    if (!ec && !dir.empty()) model = dir.string();
  }
  std::string name = model_type.empty() ? model : model_type + ":" + model;
  if (!layer_type.empty()) name += ":" + layer_type;
  return name;
}

/// A --name: what file names and JUnit names can carry.
void check_name(const std::string& name) {
  const bool ok =
      !name.empty() && name.size() <= 100 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("._:@+-").find(c) != std::string_view::npos;
      });
  if (!ok) {
    throw error("--name: '" + escaped(name) +
                "' is not a name (1 to 100 letters, digits and . _ : @ + -)");
  }
}

/// Writes the report and prints where it is; the exit code of the checks.
int finish(const report::results& r, const std::string& out) {
  app::warn_skipped_plots(report::write_report(r, out));
  std::size_t failed = 0;
  for (const auto& c : r.checks) failed += c.pass ? 0 : 1;
  std::printf(
      "pev: report in %s (index.html, summary.md, report.json, junit.xml): %zu checks, "
      "%zu failed\n",
      out.c_str(), r.checks.size(), failed);
  return failed == 0 ? 0 : 1;
}

/// The options of `pev report`, as given.
struct report_state {
  std::string suite;
  std::vector<std::string> specs;
  std::vector<std::string> configs;
  std::vector<std::string> names;
  std::string layer_type;
  std::optional<std::int64_t> max_position;
  std::int64_t threads = 0;
  std::uint64_t seed = kDefaultSeed;
  std::string shard;
  std::string out = "pev-report";
  std::string reference = "fast";
  bool exhaustive = false;
  std::int64_t samples = 64;
};

/// The sweep's options from the flags, checked before any work.
sweep::options sweep_options(const report_state& st) {
  sweep::options o;
  if (st.max_position) {
    app::require_range("--max-position", *st.max_position, 1, app::kMaxPositionLimit);
    if (st.exhaustive && *st.max_position >= (std::int64_t{1} << 26)) {
      // Every position is held in memory (8 bytes each) and computed: 2^26 is hours.
      throw error("--exhaustive: --max-position must be below 2^26 = 67108864, got " +
                  std::to_string(*st.max_position));
    }
  }
  // oneTBB's allocator fails beyond a few tens of thousands of threads.
  app::require_range("--threads", st.threads, 0, app::kMaxThreads);
  app::require_range("--samples-per-octave", st.samples, 0, app::kMaxSamples);
  const bool mpfr_reference = app::parse_mpfr_reference(st.reference);
  if (!st.suite.empty() && st.suite != "default") {
    throw error("--suite: the only built-in suite is 'default', got '" + st.suite + "'");
  }
  o.threads = static_cast<int>(st.threads);
  o.seed = st.seed;
  o.exhaustive = st.exhaustive;
  o.samples_per_octave = static_cast<int>(st.samples);
  o.mpfr_reference = mpfr_reference;
  if (!st.shard.empty()) std::tie(o.shard_index, o.shard_count) = app::parse_shard(st.shard);
  return o;
}

/// The suite swept: the built-in one and the --spec and --config given, each with its --name.
struct given_suite {
  std::vector<sweep::suite_entry> suite;
  bool custom = false;
  std::size_t builtin = 0;                        // the built-in entries first
  std::vector<std::optional<std::string>> names;  // the --name of each given entry
  std::int64_t config_max = -1;                   // the largest max_position_embeddings - 1
};

/// The options whose order matters: --spec and --config, each named by the --name after it.
struct suite_flags {
  const CLI::Option *spec, *config, *name;
};

/// A --config as a suite entry (its name from the config, its largest position into `g`).
sweep::suite_entry config_entry(const report_state& st, const std::string& c, given_suite& g) {
  spec::config_options co;
  co.layer_type = st.layer_type;
  const std::string text = io::read_file(c, spec::max_config_bytes);
  const spec::rope r = spec::parse_config_text(text, c, co);
  if (r.max_position_embeddings > 0) {
    g.config_max = std::max(g.config_max, r.max_position_embeddings - 1);
  }
  return {config_name(c, config_model_type(text), st.layer_type), spec::encoding(r),
          "--config " + c + (st.layer_type.empty() ? "" : " --layer-type " + st.layer_type)};
}

/// --spec and --config in command-line order, each with the --name after it.
given_suite read_suite(const report_state& st, const CLI::App& cmd, suite_flags flags) {
  given_suite g;
  g.custom = !st.specs.empty() || !st.configs.empty();
  if (!g.custom || st.suite == "default") g.suite = sweep::default_suite();
  g.builtin = g.suite.size();
  std::size_t next_spec = 0, next_config = 0, next_name = 0;
  for (const CLI::Option* opt : cmd.parse_order()) {
    if (opt == flags.spec) {
      const std::size_t k = next_spec++;
      g.suite.push_back({"spec" + std::to_string(k + 1), spec::parse_spec(st.specs[k]), "--spec"});
      g.names.emplace_back();
    } else if (opt == flags.config) {
      g.suite.push_back(config_entry(st, st.configs[next_config++], g));
      g.names.emplace_back();
    } else if (opt == flags.name) {
      const std::string& n = st.names[next_name++];
      check_name(n);
      if (g.names.empty() || g.names.back()) {
        throw error("--name " + escaped(n) +
                    ": names the --spec or --config just before it, and there is " +
                    (g.names.empty() ? "none" : "another --name for it"));
      }
      g.names.back() = n;
    }
  }
  return g;
}

/// Names are unique in their file-name form (plots, CSVs, JUnit): a given name that collides is
/// refused, a derived one gets a suffix.
void name_suite(given_suite& g) {
  std::map<std::string, std::string> taken;  // file form → name
  for (std::size_t k = 0; k < g.builtin; ++k) {
    taken[report::file_stem(g.suite[k].name)] = g.suite[k].name;
  }
  for (std::size_t k = g.builtin; k < g.suite.size(); ++k) {
    const auto& n = g.names[k - g.builtin];
    if (n) {
      const auto [it, fresh] = taken.emplace(report::file_stem(*n), *n);
      if (!fresh) {
        throw error("--name " + *n + ": the name of another spec (" + it->second +
                    ") has the same file name; choose another");
      }
      g.suite[k].name = *n;
      continue;
    }
    std::string name = g.suite[k].name;
    for (int j = 2; taken.count(report::file_stem(name)); ++j) {
      name = g.suite[k].name + "-" + std::to_string(j);
    }
    taken.emplace(report::file_stem(name), name);
    g.suite[k].name = name;
  }
}

/// --max-position, else the configs' largest position, else the sweep's default.
std::int64_t max_position(const report_state& st, std::int64_t config_max, std::int64_t fallback) {
  const std::int64_t m = st.max_position   ? *st.max_position
                         : config_max >= 1 ? config_max
                                           : fallback;
  if (st.exhaustive && m >= (std::int64_t{1} << 26)) {
    throw error(
        "--exhaustive: --max-position must be below 2^26 = 67108864 (the default from the "
        "configs is " +
        std::to_string(m) + "); give --max-position");
  }
  return m;
}

}  // namespace

command add_report(CLI::App& app) {
  auto st = std::make_shared<report_state>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Precision-drift report: every spec of the suite × strategy (hf, ggml for RoPE, table-fp16, "
      "table-bf16, accurate) × dtype (fp32, fp16, bf16), kernel output against the exact "
      "reference at every position below 4096, then deterministic samples in every octave up to "
      "--max-position (included) with a local worst-case search around each octave's maximum. A "
      "check passes when max ρ = error / analytic bound ≤ 1 (accurate: ≤ 1 ulp). Checks are "
      "named <spec>/<strategy>/<dtype>; a --config's spec is model_type:MODEL (MODEL: the "
      "config's directory, or the file's stem when it is not config.json), a --spec's specN, "
      "unless --name names it. Writes index.html (the specs, checks and plots), report.json, "
      "summary.md, junit.xml, plots/*.svg (gnuplot) and data/*.csv into --out.\n"
      "Exit codes: 0 every check passes, 1 a check failed, 2 bad usage or input.");
  cmd->add_option("--suite", st->suite,
                  "Built-in suite: 'default' (Llama-2, Llama-3.1, Qwen2.5 YaRN, DeepSeek-V3, "
                  "gpt-oss, Gemma-3, Phi-3 LongRoPE, sinusoidal, ALiBi, T5). Used when no "
                  "--spec/--config is given");
  auto* spec_opt =
      cmd->add_option("--spec", st->specs, "SPEC to sweep (repeatable), e.g. rope:head_dim=128");
  auto* config_opt =
      cmd->add_option("--config", st->configs, "HF config.json to sweep (repeatable)");
  auto* name_opt = cmd->add_option(
      "--name", st->names,
      "Name of the --spec or --config just before it (repeatable), e.g. --config "
      "a/config.json --name llama-a: its checks, JUnit names and plot files carry it");
  cmd->add_option("--layer-type", st->layer_type,
                  "Layer-type group of per-layer-type configs (e.g. Gemma-3's sliding_attention; "
                  "default: full_attention), for every --config; the name ends in :TYPE")
      ->needs(config_opt);
  cmd->add_option("--max-position", st->max_position,
                  "The largest position swept: positions 0 … N, N included (1 <= N <= 2^62; with "
                  "--exhaustive below 2^26). Default: max_position_embeddings - 1 of the "
                  "--config files (the largest, when several give it), the positions the model "
                  "was configured for; else 2^20 - 1 = 1048575");
  cmd->add_option("--threads", st->threads, "Worker threads (oneTBB), at most 1024; 0 = all cores")
      ->capture_default_str();
  cmd->add_option("--seed", st->seed,
                  "Seed of the deterministic position samples (pev's one default seed)")
      ->capture_default_str();
  cmd->add_option("--shard", st->shard,
                  "Run shard I of N (I/N, 0-based): every N-th check; combine with `pev merge`");
  cmd->add_option(
         "--out", st->out,
         "Output directory, replaced as a whole when the report is complete (absent, "
         "empty, or a previous pev output holding nothing else; inputs may not lie inside it)")
      ->capture_default_str();
  cmd->add_option("--reference", st->reference,
                  "Exact reference: fast (double/double-double with MPFR fallback, "
                  "bit-identical) or mpfr (the slow path)")
      ->capture_default_str();
  cmd->add_flag("--exhaustive", st->exhaustive,
                "Every position below --max-position (at most 2^26) instead of samples (slow)");
  cmd->add_option("--samples-per-octave", st->samples,
                  "Deterministic samples per octave above 4096 (at most 65536)")
      ->capture_default_str();
  return {cmd, [st, cmd, spec_opt, config_opt, name_opt]() -> int {
            sweep::options o = sweep_options(*st);
            // Inputs inside --out are refused before they are even parsed.
            std::vector<app::input_path> inputs;
            for (const auto& c : st->configs) inputs.push_back({"--config", c});
            app::refuse_inputs_inside_out(st->out, inputs);
            given_suite g = read_suite(*st, *cmd, {spec_opt, config_opt, name_opt});
            name_suite(g);
            o.max_position = max_position(*st, g.config_max, o.max_position);
            for (const auto& entry : g.suite) {
              for (auto& f : app::encoding_files(entry.encoding)) inputs.push_back(std::move(f));
            }
            app::refuse_inputs_inside_out(st->out, inputs);
            io::check_output_directory(st->out);  // before the sweep, not after it
            o.suite_name =
                g.custom ? (st->suite == "default" ? "default+custom" : "custom") : "default";
            if (isatty(STDERR_FILENO)) {
              o.progress = [](std::size_t done, std::size_t total) {
                std::fprintf(stderr, "\rpev: report %zu/%zu specs", done, total);
                if (done == total) std::fputc('\n', stderr);
              };
            }
            report::results r = sweep::run(g.suite, o);
            r.prov.generated_at = utc_now();
            return finish(r, st->out);
          }};
}

command add_merge(CLI::App& app) {
  struct state {
    std::vector<std::string> dirs;
    std::vector<std::string> impl;
    std::string out = "pev-report";
  };
  auto st = std::make_shared<state>();
  CLI::App* cmd = app.add_subcommand(
      "merge",
      "Combine the report directories of `pev report --shard I/N` runs (all N of them) into the "
      "report an unsharded run gives, or the certificate directories of `pev certify --shard "
      "I/N` runs into the certificate an unsharded run gives (certificate.json in every "
      "directory; its exit code is the certificate's: 0 certified, 1 not certified).\nExit "
      "codes: 0 every check passes (certified), 1 a check failed (not certified), 2 bad "
      "usage or input.\nShard certificates are verified, never trusted (docs/certify.md §6): "
      "each shard's rows must be its index's range, every check in every shard, its figures "
      "consistent with its rows, the digests of the shards' rows must add up to the dump's, and "
      "the inputs found (--impl, else the recorded paths) must have the recorded SHA-256; "
      "anything else is exit 2 naming the inconsistency. A certificate.json over 64 MiB is "
      "refused. The merged certificate records each shard certificate's SHA-256 and whether the "
      "inputs were re-hashed; `pev verify` re-runs it.");
  cmd->add_option("dirs", st->dirs,
                  "Directories of the shards (each with report.json, or each with "
                  "certificate.json); shards of different runs, missing or repeated shards are "
                  "refused (exit 2)")
      ->required();
  cmd->add_option("--impl", st->impl,
                  "Shard certificates: the dump's file(s), re-hashed against the SHA-256 the "
                  "shards recorded (default: the recorded paths, where they are files)")
      ->check(CLI::ExistingFile);
  cmd->add_option(
         "--out", st->out,
         "Output directory, replaced as a whole when the report is complete (absent, "
         "empty, or a previous pev output holding nothing else; inputs may not lie inside it)")
      ->capture_default_str();
  return {cmd, [st]() -> int {
            std::vector<app::input_path> inputs;
            for (const auto& d : st->dirs) inputs.push_back({"the shard", d});
            for (const auto& f : st->impl) inputs.push_back({"--impl", f});
            app::refuse_inputs_inside_out(st->out, inputs);
            io::check_output_directory(st->out);
            // Shard reports (report.json) or shard certificates (certificate.json), not both.
            std::vector<report::results> shards;
            certify::merge_options mo;
            for (const auto& f : st->impl) mo.inputs.emplace_back(f);
            std::size_t certificates = 0;
            for (const auto& d : st->dirs) {
              auto file = std::filesystem::path(d) / "certificate.json";
              if (std::filesystem::exists(file)) {
                certificates++;
                // An untrusted file (docs/certify.md §6): size-limited, hashed as read.
                const std::string text = io::read_file(file, report::max_certificate_bytes);
                mo.sha256.push_back(certify::sha256_bytes(text));
                shards.push_back(report::from_json(text, file.string()));
              } else {
                file = std::filesystem::path(d) / "report.json";
                shards.push_back(report::from_json(io::read_file(file), file.string()));
              }
            }
            if (certificates == 0) {
              if (!st->impl.empty()) throw error("merge: --impl is for shard certificates");
              return finish(report::merge(std::move(shards)), st->out);
            }
            if (certificates != shards.size()) {
              throw error(
                  "merge: give shard reports (report.json) or shard certificates "
                  "(certificate.json), not both");
            }
            const certify::certificate c = certify::merge_shards(std::move(shards), mo);
            app::warn_skipped_plots(app::write_certificate(c, st->out));
            std::cout << escaped(certify::to_text(c), {.keep_newlines = true}) << "certificate: "
                      << (std::filesystem::path(st->out) / "certificate.json").string()
                      << " (its page index.html, summary.md, junit.xml beside it)\n"
                      << std::flush;
            return c.exit_code();
          }};
}

}  // namespace pev::cli

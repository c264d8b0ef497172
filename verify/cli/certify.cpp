// `pev certify`: certify a third-party implementation from its dumped tensors (DESIGN §4–5).

#include "pev/certify/certify.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "certify_properties.h"
#include "commands.h"
#include "exit_guard.h"
#include "inputs.h"
#include "pev/core/error.h"
#include "pev/core/text.h"
#include "pev/core/version.h"
#include "pev/impl/live.h"
#include "pev/io/file.h"
#include "pev/kernel/strategy.h"
#include "pev/report/result.h"
#include "pev/report/write.h"
#include "pev/spec/config.h"
#include "pev/spec/parse.h"

namespace pev::cli {

namespace {

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// The certificate as report results: the report's writers then give summary.md, junit.xml,
// report.json and index.html for it, as for `pev report`.
report::results certificate_results(const certify::certificate& c) {
  report::results r;
  r.prov.pev_version = version();
  r.prov.git_revision = git_revision();
  r.prov.compiler = compiler();
  r.prov.fp_flags = fp_flags();
  r.prov.libc = libc_version();
  r.prov.mpfr_precision_bits = c.precision_bits;
  r.prov.reference = c.reference_backend;
  r.prov.reference_values = c.reference_values;
  r.prov.reference_fallbacks = c.reference_fallbacks;
  r.prov.suite = "certify";
  r.prov.max_position = c.max_position;
  r.prov.exhaustive = c.exhaustive;
  const std::string family = c.spec.substr(0, c.spec.find(':'));
  std::int64_t index = 0;
  for (const certify::check& k : c.checks) {
    report::check x;
    x.index = index++;
    x.id = k.name;
    x.spec_name = "certify";
    x.spec = c.spec;
    x.family = family;
    x.strategy = c.claimed_recipe ? "claims " + *c.claimed_recipe : "dump";
    x.dtype = k.dtype;
    x.bound_name = k.property_status.empty()
                       ? "hf recipe bound (rho); grade " + std::string(certify::to_string(k.best))
                       : "property: " + k.property_status;
    x.note = k.note.empty() ? k.source : k.source + "; " + k.note;
    x.pass = k.best != certify::grade::not_certified;
    x.values = k.count;
    x.positions = c.positions;
    x.max_position = c.max_position;
    x.max_abs = k.max_abs_error;
    const auto rho = k.max_rho.find("hf");
    x.max_rho = rho == k.max_rho.end() ? 0 : rho->second;
    x.max_ulp_error = k.max_ulp_error;
    const double n = k.count ? static_cast<double>(k.count) : 1;
    x.pct_correctly_rounded = 100.0 * static_cast<double>(k.correctly_rounded) / n;
    x.pct_faithful = 100.0 * static_cast<double>(k.faithful) / n;
    x.worst.position = k.worst.position;
    x.worst.index = k.worst.index;
    x.worst.component = k.name;
    x.worst.got = k.worst.got;
    x.worst.exact = k.worst.want;
    x.worst.got_hex = hex(k.worst.got);
    x.worst.exact_hex = hex(k.worst.want);
    r.checks.push_back(std::move(x));
  }
  r.notes.push_back(fmt::format("pev certify: grade {}{}", certify::to_string(c.result),
                                c.claimed_recipe
                                    ? fmt::format(", claimed recipe {} {}", *c.claimed_recipe,
                                                  c.claim_holds ? "holds" : "does not hold")
                                    : std::string()));
  if (c.why && c.why->named) {
    r.notes.push_back("diagnosis: explained by the known mistake " + *c.why->named);
  }
  return r;
}

// The certificate of an in-process plugin that ended pev's process with exit(): not certified,
// saying what it was running.
certify::certificate plugin_exit_certificate(const spec::encoding& e, const std::string& plugin,
                                             const std::string& sha256,
                                             const std::optional<std::string>& recipe,
                                             impl::dtype type, int status) {
  certify::certificate c;
  c.spec = spec::to_spec_string(e);
  c.inputs.push_back({plugin, "plugin", sha256});
  c.claimed_recipe = recipe;
  c.what = "live implementation plugin:" + plugin;
  certify::check k;
  k.name = "live";
  k.source = "plugin " + plugin;
  k.dtype = impl::to_string(type);
  const char* during = impl::plugin_call_in_progress();
  k.note = fmt::format(
      "--plugin {}: the plugin ended the process with exit({}) while pev was {}; no verdict "
      "was reached, so it is not certified",
      plugin, status, during ? fmt::format("running {}", during) : std::string("running"));
  k.best = certify::grade::not_certified;
  c.checks.push_back(k);
  c.result = certify::grade::not_certified;
  return c;
}

}  // namespace

command add_certify(CLI::App& app) {
  struct state {
    std::string spec_text, config_file, layer_type, recipe, layout, positions, positions_file;
    std::vector<std::string> impl;
    std::string plugin, exec, dtype = "fp32", accuracy = "hf";
    double timeout = 60;
    bool isolate = false, in_process = false;
    std::int64_t max_position = std::int64_t{1} << 20;
    std::int64_t samples = 64, property_cases = 100;
    std::uint64_t seed = 20261122;
    bool no_properties = false;
    std::string reference = "fast";
    std::string out = "pev-report";
    std::optional<std::int64_t> seq_len;
    bool no_diagnosis = false;
    bool exhaustive = false;
  };
  auto st = std::make_shared<state>();
  CLI::App* cmd = app.add_subcommand(
      "certify",
      "Certify an implementation from its dumped tensors (safetensors or npy): every value is "
      "compared with the exact reference rounded to the dump's dtype, and graded "
      "correctly-rounded > faithful > drift-free > recipe:hf > recipe:ggml > not certified. When "
      "not certified, pev tries the known mistakes of the field and names the one that explains "
      "the data.\n"
      "RoPE tables: tensors cos and sin [P, rot/2] (or [P, rot] with duplicated halves or "
      "repeated pairs, as transformers and GPT-J return them), cos_sin_cache [P, rot] (vLLM), or "
      "table/freqs_cis [P, rot/2, 2]; optional inv_freq [rot/2], attention_factor (scalar) and "
      "positions [P] (default 0..P-1). Sinusoidal: pe [P, d_model]. With npy files the tensor "
      "name is the file name (cos.npy, sin.npy). Writes certificate.json into --out.\n"
      "Exit codes: 0 certified (and the claimed recipe holds), 1 not certified, 2 bad usage or "
      "input.");
  auto* s = cmd->add_option("--spec", st->spec_text,
                            "The encoding the implementation claims (see `pev list`); default: "
                            "the `spec` entry of the safetensors metadata");
  auto* c = cmd->add_option("--config", st->config_file, "A Hugging Face config.json (RoPE)")
                ->check(CLI::ExistingFile);
  s->excludes(c);
  cmd->add_option("--layer-type", st->layer_type,
                  "Layer-type group of a per-layer-type config (default: full_attention)")
      ->needs(c);
  auto* impl_opt =
      cmd->add_option("--impl", st->impl,
                      "Dump file(s): one .safetensors, or .npy files named by tensor (repeatable)")
          ->check(CLI::ExistingFile);
  auto* plugin_opt =
      cmd->add_option("--plugin", st->plugin,
                      "A shared library implementing pev's C ABI (pev/plugin/pev_plugin.h)")
          ->check(CLI::ExistingFile);
  auto* exec_opt = cmd->add_option(
      "--exec", st->exec,
      "A command (run by /bin/sh -c) speaking pev's stdin/stdout protocol (docs/exec-protocol.md)");
  impl_opt->excludes(plugin_opt)->excludes(exec_opt);
  plugin_opt->excludes(exec_opt);
  auto* isolate_opt =
      cmd->add_flag("--isolate", st->isolate,
                    "--plugin: run the plugin in a child process (`pev serve --plugin LIB`, over "
                    "the --exec protocol; the default), so that a plugin that crashes, hangs or "
                    "exits is killed or reported as a failed check instead of taking pev down")
          ->needs(plugin_opt);
  cmd->add_flag("--in-process", st->in_process,
                "--plugin: load the plugin into pev itself (faster; trusts it: an exit() is "
                "caught and reported, a crash or _exit() ends pev without a certificate)")
      ->needs(plugin_opt)
      ->excludes(isolate_opt);
  cmd->add_option("--timeout", st->timeout,
                  "--exec and --plugin (isolated): seconds to wait for each response (at most "
                  "86400); a process that hangs is killed and reported as a failed check")
      ->capture_default_str();
  cmd->add_option("--dtype", st->dtype,
                  "Live implementations: output dtype asked for (fp32, fp16, "
                  "bf16)")
      ->capture_default_str();
  cmd->add_option("--max-position", st->max_position,
                  "Live implementations: every position below 4096, then --samples seeded ones "
                  "per octave up to this, at most 2^62 (every one with --exhaustive, below 2^26)")
      ->capture_default_str();
  cmd->add_option("--samples", st->samples,
                  "Live implementations: positions per octave (at most 65536)")
      ->capture_default_str();
  cmd->add_option("--seed", st->seed, "Seed of the sampled positions, inputs and properties")
      ->capture_default_str();
  cmd->add_option("--accuracy", st->accuracy,
                  "Live implementations: the strategy whose accuracy contract the property suites "
                  "hold it to (hf, ggml, table-fp16, table-bf16, accurate)")
      ->capture_default_str();
  cmd->add_flag("--no-properties", st->no_properties,
                "Live implementations: skip the property suites");
  cmd->add_option("--property-cases", st->property_cases,
                  "Live implementations: RapidCheck cases per property (1 to 1000000)")
      ->capture_default_str();
  cmd->add_option("--recipe", st->recipe,
                  "The recipe the implementation claims: exact (faithful or better), hf, vllm "
                  "(hf's bound: fp32 table stored in the model dtype) or ggml; default: report the "
                  "best grade that holds");
  cmd->add_option("--layout", st->layout,
                  "RoPE table layout: separate, halves, repeated, vllm or pairs (default: "
                  "detected from tensor names, shapes and data, and reported)");
  auto* p = cmd->add_option("--positions", st->positions,
                            "Positions of the dump's rows, A:B[:STEP] (default: the dump's "
                            "`positions` tensor, else 0..P-1)");
  auto* pf = cmd->add_option("--positions-file", st->positions_file,
                             "Positions of the rows from a file (text, .npy or .safetensors)")
                 ->check(CLI::ExistingFile);
  p->excludes(pf);
  cmd->add_option("--seq-len", st->seq_len,
                  "Sequence length selecting dynamic/longrope frequencies (default: max position "
                  "+ 1, as transformers)");
  cmd->add_flag("--no-diagnosis", st->no_diagnosis, "Skip the search for known mistakes");
  cmd->add_option("--reference", st->reference,
                  "fast (default: the fast exact reference, identical to MPFR, with MPFR only "
                  "where its rounding test cannot decide) or mpfr (MPFR for every value: slow)")
      ->capture_default_str();
  cmd->add_flag("--exhaustive", st->exhaustive,
                "Require the dump to hold every position 0 … max (bad input otherwise), so the "
                "certificate covers every position; every row is always checked");
  cmd->add_option("--out", st->out,
                  "Output directory for certificate.json and the report files, replaced as a whole "
                  "(absent, empty, or a previous pev output holding nothing else; inputs may not "
                  "lie inside it)")
      ->capture_default_str();
  return {cmd, [st]() -> int {
            if (st->impl.empty() && st->plugin.empty() && st->exec.empty()) {
              throw error("one of --impl FILE, --plugin LIB.so or --exec 'CMD' is required");
            }
            // NaN and 1e308 too: the timeout becomes milliseconds in a 64-bit integer.
            require_range("--timeout", st->timeout, 0.001, 86400);
            require_range("--max-position", st->max_position, 0, kMaxPositionLimit);
            require_range("--samples", st->samples, 0, kMaxSamples);
            require_range("--property-cases", st->property_cases, 1, 1000000);
            if (st->seq_len) require_range("--seq-len", *st->seq_len, 1, INT64_MAX);
            std::vector<std::filesystem::path> files(st->impl.begin(), st->impl.end());
            if (!st->plugin.empty() && !std::filesystem::is_regular_file(st->plugin)) {
              // dlopen, or hashing it, would wait forever on a FIFO.
              throw error("--plugin " + st->plugin + ": not a regular file");
            }
            // --out is replaced as a whole: an input inside it would be deleted.
            std::vector<input_path> inputs = {{"--config", st->config_file},
                                              {"--positions-file", st->positions_file},
                                              {"--plugin", st->plugin}};
            for (const auto& f : files) inputs.push_back({"--impl", f});
            for (const auto& f : impl::command_files(st->exec)) inputs.push_back({"--exec", f});
            refuse_inputs_inside_out(st->out, inputs);
            io::check_output_directory(st->out);  // before the work, not after it
            const certify::dump d = files.empty() ? certify::dump{} : certify::read_dump(files);
            // Every file used is hashed in the certificate: the config and positions files are
            // read once, and their bytes both parsed and hashed.
            std::vector<certify::input_file> used;
            spec::encoding e;
            if (!st->config_file.empty()) {
              spec::config_options co;
              co.layer_type = st->layer_type;
              const std::string text = io::read_file(st->config_file, spec::max_config_bytes);
              e = spec::parse_config_text(text, st->config_file, co);
              used.push_back({st->config_file, "config", certify::sha256_bytes(text)});
            } else if (!st->spec_text.empty()) {
              e = spec::parse_spec(st->spec_text);
            } else if (const auto it = d.metadata.find("spec"); it != d.metadata.end()) {
              e = spec::parse_spec(it->second);
              std::cerr << "pev: certify: spec from the dump's metadata: " << escaped(it->second)
                        << "\n";
            } else {
              throw error(
                  "one of --spec SPEC or --config config.json is required (the dump's "
                  "metadata names no spec)");
            }
            certify::options o;
            if (!st->recipe.empty()) o.recipe = st->recipe;
            if (!st->layout.empty()) o.layout = certify::parse_table_layout(st->layout);
            if (!st->positions.empty()) o.positions = parse_position_range(st->positions, false);
            if (!st->positions_file.empty()) {
              const std::string bytes =
                  io::read_file(st->positions_file, io::max_positions_file_bytes);
              o.positions = io::parse_positions(bytes, st->positions_file);
              used.push_back({st->positions_file, "positions", certify::sha256_bytes(bytes)});
            }
            o.seq_len = st->seq_len;
            o.diagnose = !st->no_diagnosis;
            if (st->reference != "fast" && st->reference != "mpfr") {
              throw error("--reference: expected fast or mpfr, got '" + st->reference + "'");
            }
            o.mpfr_reference = st->reference == "mpfr";
            o.exhaustive = st->exhaustive;
            const std::filesystem::path dir(st->out);
            // certificate.json and the report's files (summary.md for a CI job summary,
            // junit.xml, report.json, data/*.csv, index.html; one check per certificate check; no
            // plots: a dump has no position sweep to draw), replacing --out as one unit; then the
            // summary on stdout.
            const auto publish = [&dir, &used](certify::certificate c) {
              c.inputs.insert(c.inputs.end(), used.begin(), used.end());
              io::write_directory_atomic(dir, [&](const std::filesystem::path& staging) {
                io::write_file_atomic(staging / "certificate.json", certify::to_json(c));
                report::write_options wo;
                wo.gnuplot.clear();
                report::write_report_files(certificate_results(c), staging, wo);
              });
              // The summary quotes names and messages of the implementation: escaped.
              std::cout << escaped(certify::to_text(c), {.keep_newlines = true})
                        << "certificate: " << (dir / "certificate.json").string()
                        << " (summary.md, junit.xml, index.html beside it)\n"
                        << std::flush;
            };
            certify::certificate cert;
            if (files.empty()) {
              certify::live_options lo;
              lo.max_position = st->max_position;
              lo.samples = static_cast<int>(st->samples);
              lo.exhaustive = st->exhaustive;
              lo.seed = st->seed;
              try {
                lo.type = impl::parse_dtype(st->dtype);
              } catch (const error& e) {
                throw error(std::string("--dtype: ") + e.what());
              }
              lo.properties = !st->no_properties;
              lo.property_cases = static_cast<int>(st->property_cases);
              lo.property_checks = live_property_checks;
              const kernel::strategy acc = kernel::parse_strategy(st->accuracy);
              const auto timeout =
                  std::chrono::milliseconds(static_cast<long long>(st->timeout * 1000));
              std::unique_ptr<impl::live_implementation> im;
              std::optional<exit_guard> guard;
              if (!st->plugin.empty()) {
                impl::plugin_options po;
                po.isolate = !st->in_process;
                po.timeout = timeout;
                // The child is this very executable, running `serve --plugin`.
                if (po.isolate) po.server = std::filesystem::read_symlink("/proc/self/exe");
                if (!po.isolate) {
                  // In this process, a plugin's exit() would end pev with the plugin's status.
                  // Hashed before the guard is armed: OpenSSL registers its own exit cleanup
                  // when first used, and must not have run it when the guard needs it.
                  const std::string sha256 = certify::sha256_file(st->plugin);
                  guard.emplace([&, sha256, type = lo.type](int status) {
                    publish(plugin_exit_certificate(e, st->plugin, sha256, o.recipe, type, status));
                  });
                }
                im = impl::load_plugin(st->plugin, e, acc, po);
              } else {
                im = impl::start_exec(st->exec, e, acc, impl::exec_options{timeout});
              }
              o.exhaustive = false;  // live: --exhaustive chooses the positions (live_options)
              cert = certify::certify_live(e, *im, o, lo);
              im.reset();  // a plugin's destructors run here, still guarded
            } else {
              cert = certify::certify_dump(e, d, o);
            }
            publish(cert);
            return cert.exit_code();
          }};
}

}  // namespace pev::cli

// `pev certify` (docs/design.md §5.1, §6): certify a third-party implementation from its dumped
// tensors or as a live implementation.

#include "pev/certify/certify.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "exit_guard.h"
#include "pev/app/certify.h"
#include "pev/app/encoding.h"
#include "pev/app/inputs.h"
#include "pev/app/limits.h"
#include "pev/app/positions.h"
#include "pev/app/properties.h"
#include "pev/certify/trace.h"
#include "pev/core/error.h"
#include "pev/core/sampling.h"
#include "pev/core/text.h"
#include "pev/core/version.h"
#include "pev/impl/live.h"
#include "pev/io/file.h"
#include "pev/io/positions.h"
#include "pev/kernel/strategy.h"
#include "pev/report/result.h"
#include "pev/report/write.h"
#include "pev/spec/config.h"
#include "pev/spec/model.h"
#include "pev/spec/parse.h"

namespace pev::cli {

namespace {

// The certificate of an in-process plugin that ended pev's process with exit(): not certified,
// saying what it was running.
certify::certificate plugin_exit_certificate(const spec::encoding& e, const std::string& plugin,
                                             const std::string& sha256,
                                             const std::optional<std::string>& recipe, dtype type,
                                             int status) {
  const char* during = impl::plugin_call_in_progress();
  return certify::failed_certificate(
      e, "live implementation plugin:" + plugin, {{plugin, "plugin", sha256}}, recipe,
      "plugin " + plugin, type,
      fmt::format("--plugin {}: the plugin ended the process with exit({}) while pev was {}; no "
                  "verdict was reached, so it is not certified",
                  plugin, status, during ? fmt::format("running {}", during) : "running"));
}

// --layers: indices and half-open ranges A:B, separated by commas; empty: none given.
std::vector<std::int64_t> parse_layers(const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, comma - start);
    const auto v = app::parse_position_range(part, false, "--layers");
    out.insert(out.end(), v.begin(), v.end());
    start = comma + 1;
  }
  return out;
}

// A trace certified against one --spec: every layer and model-level site it holds under that
// encoding.
spec::model_spec uniform_model(const spec::encoding& e, const certify::dump& d) {
  spec::model_spec m;
  const std::vector<std::int64_t> layers = certify::traced_layers(d);
  m.num_layers = layers.empty() ? 0 : layers.back() + 1;
  for (const char* site : {"decoder", "embed", "encoder"}) {
    const std::string prefix = std::string(site) + ".";
    const bool held = std::any_of(d.tensors.begin(), d.tensors.end(), [&](const auto& t) {
      return t.first.compare(0, prefix.size(), prefix) == 0;
    });
    if (held) m.layers.push_back({-1, site, site, e, "--spec"});
  }
  for (const std::int64_t i : layers) {
    spec::layer_spec l;
    l.index = i;
    l.type = "full_attention";
    l.encoding = e;
    l.rule = "--spec";
    m.layers.push_back(std::move(l));
  }
  return m;
}

}  // namespace

command add_certify(CLI::App& app) {
  struct state {
    std::string spec_text, config_file, layer_type, recipe, layout, positions, positions_file;
    std::string qk_layout, qk_order;
    std::vector<std::string> impl;
    std::string plugin, exec, dtype = "fp32", accuracy = "hf";
    double timeout = 60;
    bool isolate = false, in_process = false;
    std::int64_t max_position = (std::int64_t{1} << 20) - 1;
    std::int64_t samples = 64, property_cases = 100;
    std::uint64_t seed = kDefaultSeed;
    bool no_properties = false;
    std::string reference = "fast";
    std::string out = "pev-certificate";
    std::optional<std::int64_t> seq_len;
    bool no_diagnosis = false;
    bool exhaustive = false;
    std::string libm = "any";
    std::optional<double> max_trig_ulp;
    std::int64_t threads = 0;
    std::string shard;
    std::string layers;
  };
  auto st = std::make_shared<state>();
  CLI::App* cmd = app.add_subcommand(
      "certify",
      "Certify an implementation from its dumped tensors (safetensors or npy): every value is "
      "compared with the exact reference rounded to the dump's dtype, and graded "
      "correctly-rounded > faithful > drift-free > recipe:hf > recipe:ggml > recipe:vllm > not "
      "certified: a ladder, each grade implying every claim (--recipe) it ranks above. Recipe "
      "bounds assume any conforming math library (--libm); the library the data used is measured "
      "against the recipe's own angles and reported. When not certified, pev tries the known "
      "mistakes of the field and names the one that explains the data.\n"
      "RoPE tables: tensors cos and sin [P, rot/2] (or [P, rot] with duplicated halves or "
      "repeated pairs, as transformers and GPT-J return them; a batch [B, P, rot] too), "
      "cos_sin_cache [P, rot] (vLLM), or table/freqs_cis [P, rot/2, 2] (or complex [P, rot/2]); "
      "rotated q/k: q_in/q_out, k_in/k_out in [B, H, T, D], [B, T, H, D], [T, H, D] or [T, H*D] "
      "(--qk-layout); optional inv_freq [rot/2], attention_factor (scalar) and positions [P] or "
      "position_ids [B, P] (default 0..P-1). Sinusoidal: pe [P, d_model]. A model trace (tensors "
      "layers.{i}.q_in/q_out/k_in/k_out or layers.{i}.cos/sin, layers.{i}.none for a layer "
      "that applies no rotation, position_ids [B, T]; docs/certify.md §8) is certified layer by "
      "layer against the encoding --config gives each layer: a row per layer, the model graded "
      "by its worst layer, integration mistakes (NoPE layers rotated, sliding layers with the "
      "global theta, batch rows at row 0's positions, ...) named at their layers. With npy files "
      "the "
      "tensor name is the file name (cos.npy, sin.npy). The layout read is stated in the "
      "certificate (`layouts`). Writes certificate.json, its page (index.html: what was checked, "
      "the recipes, grade, diagnosis, properties, error-against-position plots), summary.md and "
      "junit.xml into --out.\n"
      "Exit codes: 0 certified (and the claimed recipe holds), 1 not certified, 2 bad usage or "
      "input, 3 (--shard only) this shard's rows hold: no verdict yet, `pev merge` the shards.");
  auto* s = cmd->add_option("--spec", st->spec_text,
                            "The encoding the implementation claims (see `pev list`); default: "
                            "the `spec` entry of the safetensors metadata");
  auto* c = cmd->add_option("--config", st->config_file,
                            "A Hugging Face config.json, read as its model family does in "
                            "transformers (docs/encodings.md §7.8)")
                ->check(CLI::ExistingFile);
  s->excludes(c);
  cmd->add_option("--layer-type", st->layer_type,
                  "Layer-type group of a per-layer-type config (default: full_attention)")
      ->needs(c);
  auto* impl_opt =
      cmd->add_option("--impl", st->impl,
                      "Dump file(s) (repeatable): a .safetensors file, .npy files named by tensor "
                      "(cos.npy holds cos), an .npz archive (numpy.savez), or a directory of .npy "
                      "files; complex tensors (Meta's freqs_cis, complex64) are read as "
                      "(real, imag) pairs")
          ->check(CLI::ExistingPath);
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
                  "Live implementations: the largest position asked for, included: every "
                  "position below 4096, then --samples seeded ones per octave up to this, at most "
                  "2^62 (every position 0 … N with --exhaustive, N below 2^26)")
      ->capture_default_str();
  cmd->add_option("--samples", st->samples,
                  "Live implementations: positions per octave (at most 65536)")
      ->capture_default_str();
  cmd->add_option("--seed", st->seed,
                  "Live implementations: seed of the sampled positions, inputs and properties "
                  "(pev's one default seed); a failed property's replay line gives it")
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
                  "The recipe the implementation claims: exact (faithful or better), hf "
                  "(transformers: fp32 table; q/k rotated in the model dtype), ggml (llama.cpp's "
                  "fp32 recurrence), vllm (the table cached in fp16/bf16, q/k rotated in fp32). "
                  "It holds when the grade ranks at or above it; default: report the grade");
  cmd->add_option("--libm", st->libm,
                  "The math library class the recipe bounds assume: any (default: any conforming "
                  "library, as CUDA's libdevice: sin/cos 2 ulp, pow 4), one-ulp (glibc, SLEEF, "
                  "PyTorch CPU), glibc (pev's own kernels), cr (correctly rounded), or fast-math "
                  "(__sinf/__cosf, -use_fast_math: error 1.6e-7·|angle| + 2^-21.19; only when "
                  "asked, and only for RoPE tables, whose angles pev replays). A claim whose "
                  "library pev cannot measure (a 16-bit table, q/k) is not certified")
      ->capture_default_str();
  cmd->add_option("--max-trig-ulp", st->max_trig_ulp,
                  "Tighten the claim: the trig error measured against the recipe's own angles "
                  "must not exceed this many ulps; where pev cannot measure it (16-bit tables "
                  "leave only a lower bound, q/k none) the claim is not certified (exit 1)");
  cmd->add_option("--threads", st->threads,
                  "Worker threads (oneTBB) comparing a dump's table rows and rotated q/k tokens, "
                  "at most 1024; 0 = all cores. The certificate is the same for any number. The "
                  "dump's SHA-256 runs beside them on a thread of its own (after them with 1)")
      ->capture_default_str();
  cmd->add_option("--layout", st->layout,
                  "RoPE table layout: separate (cos, sin [P, rot/2]), halves (cos, sin [P, rot], "
                  "transformers), repeated (cos, sin [P, rot], GPT-J), vllm ([P, rot] = [cos | "
                  "sin] per row: vLLM's cos_sin_cache, ggml's NEOX order) or pairs ([P, rot/2, 2] "
                  "or [P, rot] of (cos, sin) pairs: freqs_cis, ggml's NORMAL order). Default: "
                  "detected from tensor names, shapes and data, and stated in the certificate; "
                  "where two fit, pev asks for this option (exit 2)");
  // Both describe a dump's tensors: --impl only.
  cmd->add_option("--qk-layout", st->qk_layout,
                  "Layout of rotated q/k (q_in/q_out, k_in/k_out; D = head_dim last): bhtd "
                  "[B, H, T, D] (transformers), bthd [B, T, H, D], thd [T, H, D], or t(hd) "
                  "[T, H*D] (vLLM; quote it in a shell). Default: from the dump's metadata "
                  "(qk_layout), the positions (position_ids [B, T]), the shapes and the data, "
                  "stated in the certificate; where two fit, pev asks for this option (exit 2)")
      ->needs(impl_opt);
  cmd->add_option("--qk-order", st->qk_order,
                  "Where q_out/k_out hold the rotated pairs: input (each pair where its input "
                  "pair was) or half-split (pair i at (i, i + rot/2) after an interleaved "
                  "rotation, as DeepSeek-V3's apply_rotary_pos_emb_interleave writes them). "
                  "Default: from the metadata (qk_order) or the data, stated in the certificate")
      ->needs(impl_opt);
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
  cmd->add_option("--layers", st->layers,
                  "A model trace (docs/certify.md §8): the decoder layers it holds, as a list of "
                  "indices and ranges A:B (half-open), e.g. 0:4,30,31; default: every layer of "
                  "the config, each of which the trace must hold");
  cmd->add_option("--shard", st->shard,
                  "Certify shard I of N (I/N, 0-based): compare only rows [floor(I*R/N), "
                  "floor((I+1)*R/N)) of every row-wise check of R rows (table rows, q/k tokens, "
                  "PE rows; live: the positions the run evaluates); checks without rows, the "
                  "library fit and the properties run in shard 0. Writes a shard certificate "
                  "(never certified on its own: exit 1 when its rows already fail, else 3); "
                  "`pev merge DIR...` of all N gives the unsharded run's certificate");
  cmd->add_option("--out", st->out,
                  "Output directory for certificate.json and its page, replaced as a whole "
                  "(absent, empty, or a previous pev output holding nothing else; inputs may not "
                  "lie inside it); not pev report's default, so a certificate never replaces a "
                  "report")
      ->capture_default_str();
  return {cmd, [st]() -> int {
            if (st->impl.empty() && st->plugin.empty() && st->exec.empty()) {
              throw error("one of --impl FILE, --plugin LIB.so or --exec 'CMD' is required");
            }
            // NaN and 1e308 too: the timeout becomes milliseconds in a 64-bit integer.
            app::require_range("--timeout", st->timeout, 0.001, 86400);
            app::require_range("--max-position", st->max_position, 0, app::kMaxPositionLimit);
            app::require_range("--samples", st->samples, 0, app::kMaxSamples);
            app::require_range("--property-cases", st->property_cases, 1, 1000000);
            app::require_range("--threads", st->threads, 0, app::kMaxThreads);
            if (st->seq_len) app::require_range("--seq-len", *st->seq_len, 1, INT64_MAX);
            const std::pair<int, int> shard =
                st->shard.empty() ? std::pair{0, 1} : parse_shard(st->shard);
            std::vector<std::filesystem::path> files(st->impl.begin(), st->impl.end());
            if (!st->plugin.empty() && !std::filesystem::is_regular_file(st->plugin)) {
              // dlopen, or hashing it, would wait forever on a FIFO.
              throw error("--plugin " + st->plugin + ": not a regular file");
            }
            // --out is replaced as a whole: an input inside it would be deleted.
            std::vector<app::input_path> inputs = {{"--config", st->config_file},
                                                   {"--positions-file", st->positions_file},
                                                   {"--plugin", st->plugin}};
            for (const auto& f : files) inputs.push_back({"--impl", f});
            for (const auto& f : impl::command_files(st->exec)) inputs.push_back({"--exec", f});
            app::refuse_inputs_inside_out(st->out, inputs);
            io::check_output_directory(st->out);  // before the work, not after it
            // Hashed beside the comparison (certify_dump).
            certify::dump d =
                files.empty() ? certify::dump{} : certify::read_dump(files, /*hash=*/false);
            // Every file used is hashed in the certificate: the config and positions files are
            // read once, and their bytes both parsed and hashed.
            std::vector<certify::input_file> used;
            spec::encoding e;
            // A model trace (docs/certify.md §8) is held to the config layer by layer.
            const bool trace = !files.empty() && certify::is_trace(d);
            std::optional<spec::model_spec> model;
            if (!st->config_file.empty()) {
              spec::config_options co;
              co.layer_type = st->layer_type;
              const std::string text = io::read_file(st->config_file, spec::max_config_bytes);
              if (trace) {
                model = spec::parse_config_model_text(text, st->config_file);
              } else {
                e = spec::parse_config_encoding_text(text, st->config_file, co);
              }
              used.push_back({st->config_file, "config", certify::sha256_bytes(text)});
            } else if (!st->spec_text.empty()) {
              // A learned table's table=FILE is read, refused inside --out, and hashed.
              e = app::parse_encoding(st->spec_text);
              for (const app::input_path& f : app::encoding_files(e)) {
                app::refuse_inputs_inside_out(st->out, {f});
                used.push_back({f.path.string(), f.flag, certify::sha256_file(f.path)});
              }
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
            o.threads = static_cast<int>(st->threads);
            if (!st->recipe.empty()) o.recipe = st->recipe;
            if (!st->layout.empty()) o.layout = certify::parse_table_layout(st->layout);
            if (!st->qk_layout.empty()) o.qk_layout = certify::parse_qk_layout(st->qk_layout);
            if (!st->qk_order.empty()) o.qk_order = certify::parse_qk_order(st->qk_order);
            if (!st->positions.empty())
              o.positions = app::parse_position_range(st->positions, false);
            if (!st->positions_file.empty()) {
              const std::string bytes =
                  io::read_file(st->positions_file, io::max_positions_file_bytes);
              o.positions = io::parse_positions(bytes, st->positions_file);
              used.push_back({st->positions_file, "positions", certify::sha256_bytes(bytes)});
            }
            o.seq_len = st->seq_len;
            o.diagnose = !st->no_diagnosis;
            app::set_certify_options(o, st->reference, st->libm, st->max_trig_ulp);
            o.exhaustive = st->exhaustive;
            o.shard_index = shard.first;
            o.shard_count = shard.second;
            const std::filesystem::path dir(st->out);
            // certificate.json and its own pages (summary.md for a CI job summary, junit.xml,
            // index.html with the error-against-position plots, data/*.csv), replacing --out as
            // one unit; then the summary on stdout.
            const auto publish = [&dir, &used](certify::certificate c) {
              auto& in = c.certification->inputs;
              in.insert(in.end(), used.begin(), used.end());
              // What `pev verify` re-runs (docs/certify.md §7).
              c.certification->command = invocation();
              std::error_code ec;
              c.certification->cwd = std::filesystem::current_path(ec).string();
              app::warn_skipped_plots(app::write_certificate(c, dir));
              // The summary quotes names and messages of the implementation: escaped.
              std::cout << escaped(certify::to_text(c), {.keep_newlines = true})
                        << "certificate: " << (dir / "certificate.json").string()
                        << " (its page index.html, summary.md, junit.xml beside it)\n"
                        << std::flush;
            };
            certify::certificate cert;
            if (!files.empty() && certify::is_trace(d)) {
              // A model trace: every layer against the encoding its config gives it.
              if (!st->layer_type.empty()) {
                throw error(
                    "--layer-type: a model trace is certified layer by layer, each layer under "
                    "its own type's encoding (docs/certify.md §8); leave --layer-type out");
              }
              certify::trace_options to;
              to.layers = parse_layers(st->layers);
              // A long trace says how far it is, on a terminal (docs/design.md §5.7).
              if (isatty(STDERR_FILENO)) {
                to.on_site = [](std::size_t done, std::size_t total) {
                  std::fprintf(stderr, "\rpev: certify: %zu/%zu trace sites", done, total);
                  if (done == total) std::fputc('\n', stderr);
                };
              }
              if (!model) model = uniform_model(e, d);
              // Moved: the trace's blocks are let go site by site (docs/certify.md §8.2).
              cert = certify::certify_trace(*model, std::move(d), o, to);
              publish(cert);
              return cert.exit_code();
            }
            if (!st->layers.empty()) {
              throw error(
                  "--layers: only for a model trace (docs/certify.md §8), and the dump "
                  "holds no layers.{i}.* tensor");
            }
            if (files.empty()) {
              certify::live_options lo;
              lo.max_position = st->max_position;
              lo.samples = static_cast<int>(st->samples);
              lo.exhaustive = st->exhaustive;
              lo.seed = st->seed;
              try {
                lo.type = parse_float_dtype(st->dtype);
              } catch (const error& e) {
                throw error(std::string("--dtype: ") + e.what());
              }
              lo.properties = !st->no_properties;
              lo.property_cases = static_cast<int>(st->property_cases);
              lo.property_checks = app::live_property_checks;
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
                    auto c = plugin_exit_certificate(e, st->plugin, sha256, o.recipe, type, status);
                    c.prov.seed = st->seed;
                    publish(std::move(c));
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

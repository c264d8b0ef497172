// `pev certify` (docs/design.md §5.1, §6): certify a third-party implementation from its dumped
// tensors or as a live implementation — the options registered into one request (pev/app/request.h,
// docs/certify.md §9), certified by app::certify, the certificate written to --out.

#include "pev/app/certify.h"

#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "exit_guard.h"
#include "pev/app/request.h"
#include "pev/certify/certify.h"
#include "pev/core/text.h"

namespace pev::cli {

namespace {

// certificate.json and its own pages (summary.md for a CI job summary, junit.xml, index.html with
// the error-against-position plots, data/*.csv), replacing --out as one unit; then the summary on
// stdout.
void publish(const certify::certificate& c, const std::filesystem::path& dir) {
  app::warn_skipped_plots(app::write_certificate(c, dir));
  // The summary quotes names and messages of the implementation: escaped.
  std::cout << escaped(certify::to_text(c), {.keep_newlines = true})
            << "certificate: " << (dir / "certificate.json").string()
            << " (its page index.html, summary.md, junit.xml beside it)\n"
            << std::flush;
}

/// What pev certify's options fill: the request, and the flags it reads from them.
struct certify_state : app::certify_request {
  std::vector<std::string> impl;
  std::string dtype_text = to_string(certify::live_options{}.type), out_text = "pev-certificate";
  bool isolate = false, no_properties = false, no_diagnosis = false;
};

/// --spec, --config, --layer-type: the encoding claimed (app::certify_request resolves it).
void add_spec_options(CLI::App* cmd, certify_state& st) {
  auto* s = cmd->add_option("--spec", st.spec_text,
                            "The encoding the implementation claims (see `pev list`); default: "
                            "the `spec` entry of the safetensors metadata");
  auto* c = cmd->add_option("--config", st.config_file,
                            "A Hugging Face config.json, read as its model family does in "
                            "transformers (docs/encodings.md §7.8)")
                ->check(CLI::ExistingFile);
  s->excludes(c);
  cmd->add_option("--layer-type", st.layer_type,
                  "Layer-type group of a per-layer-type config (default: full_attention)")
      ->needs(c);
}

/// --impl, --plugin, --exec and how a plugin runs; returns --impl (options of a dump's tensors need
/// it).
CLI::Option* add_input_options(CLI::App* cmd, certify_state& st) {
  auto* impl_opt =
      cmd->add_option("--impl", st.impl,
                      "Dump file(s) (repeatable): a .safetensors file, .npy files named by tensor "
                      "(cos.npy holds cos), an .npz archive (numpy.savez), or a directory of .npy "
                      "files; complex tensors (Meta's freqs_cis, complex64) are read as "
                      "(real, imag) pairs")
          ->check(CLI::ExistingPath);
  auto* plugin_opt =
      cmd->add_option("--plugin", st.plugin,
                      "A shared library implementing pev's C ABI (pev/plugin/pev_plugin.h)")
          ->check(CLI::ExistingFile);
  auto* exec_opt = cmd->add_option(
      "--exec", st.exec,
      "A command (run by /bin/sh -c) speaking pev's stdin/stdout protocol (docs/exec-protocol.md)");
  impl_opt->excludes(plugin_opt)->excludes(exec_opt);
  plugin_opt->excludes(exec_opt);
  auto* isolate_opt =
      cmd->add_flag("--isolate", st.isolate,
                    "--plugin: run the plugin in a child process (`pev serve --plugin LIB`, over "
                    "the --exec protocol; the default), so that a plugin that crashes, hangs or "
                    "exits is killed or reported as a failed check instead of taking pev down")
          ->needs(plugin_opt);
  cmd->add_flag("--in-process", st.in_process,
                "--plugin: load the plugin into pev itself (faster; trusts it: an exit() is "
                "caught and reported, a crash or _exit() ends pev without a certificate)")
      ->needs(plugin_opt)
      ->excludes(isolate_opt);
  cmd->add_option("--timeout", st.timeout,
                  "--exec and --plugin (isolated): seconds to wait for each response (at most "
                  "86400); a process that hangs is killed and reported as a failed check")
      ->capture_default_str();
  return impl_opt;
}

/// What a live implementation is asked: dtype, positions, seed, properties.
void add_live_options(CLI::App* cmd, certify_state& st) {
  cmd->add_option("--dtype", st.dtype_text,
                  "Live implementations: output dtype asked for (fp32, fp16, "
                  "bf16)")
      ->capture_default_str();
  cmd->add_option("--max-position", st.max_position,
                  "Live implementations: the largest position asked for, included: every "
                  "position below 4096, then --samples seeded ones per octave up to this, at most "
                  "2^62 (every position 0 … N with --exhaustive, N below 2^26)")
      ->capture_default_str();
  cmd->add_option("--samples", st.samples,
                  "Live implementations: positions per octave (at most 65536)")
      ->capture_default_str();
  cmd->add_option("--seed", st.seed,
                  "Live implementations: seed of the sampled positions, inputs and properties "
                  "(pev's one default seed); a failed property's replay line gives it")
      ->capture_default_str();
  cmd->add_option("--accuracy", st.accuracy,
                  "Live implementations: the strategy whose accuracy contract the property suites "
                  "hold it to (hf, ggml, table-fp16, table-bf16, accurate)")
      ->capture_default_str();
  cmd->add_flag("--no-properties", st.no_properties,
                "Live implementations: skip the property suites");
  cmd->add_option("--property-cases", st.property_cases,
                  "Live implementations: RapidCheck cases per property (1 to 1000000)")
      ->capture_default_str();
}

/// The claim and what it assumes: recipe, library class, trig ulps, threads.
void add_claim_options(CLI::App* cmd, certify_state& st) {
  cmd->add_option("--recipe", st.recipe,
                  "The recipe the implementation claims: exact (faithful or better), hf "
                  "(transformers: fp32 table; q/k rotated in the model dtype), ggml (llama.cpp's "
                  "fp32 recurrence), vllm (the table cached in fp16/bf16, q/k rotated in fp32). "
                  "It holds when the grade ranks at or above it; default: report the grade");
  cmd->add_option("--libm", st.libm,
                  "The math library class the recipe bounds assume: any (default: any conforming "
                  "library, as CUDA's libdevice: sin/cos 2 ulp, pow 4), one-ulp (glibc, SLEEF, "
                  "PyTorch CPU), glibc (pev's own kernels), cr (correctly rounded), or fast-math "
                  "(__sinf/__cosf, -use_fast_math: error 1.6e-7·|angle| + 2^-21.19; only when "
                  "asked, and only for RoPE tables, whose angles pev replays). A claim whose "
                  "library pev cannot measure (a 16-bit table, q/k) is not certified")
      ->capture_default_str();
  cmd->add_option("--max-trig-ulp", st.max_trig_ulp,
                  "Tighten the claim: the trig error measured against the recipe's own angles "
                  "must not exceed this many ulps; where pev cannot measure it (16-bit tables "
                  "leave only a lower bound, q/k none) the claim is not certified (exit 1)");
  cmd->add_option("--threads", st.threads,
                  "Worker threads (oneTBB) comparing a dump's table rows and rotated q/k tokens, "
                  "at most 1024; 0 = all cores. The certificate is the same for any number. The "
                  "dump's SHA-256 runs beside them on a thread of its own (after them with 1)")
      ->capture_default_str();
}

/// How a dump's tensors are read: layouts, positions, reference, diagnosis, layers, shard.
void add_dump_options(CLI::App* cmd, certify_state& st, CLI::Option* impl_opt) {
  cmd->add_option("--layout", st.layout,
                  "RoPE table layout: separate (cos, sin [P, rot/2]), halves (cos, sin [P, rot], "
                  "transformers), repeated (cos, sin [P, rot], GPT-J), vllm ([P, rot] = [cos | "
                  "sin] per row: vLLM's cos_sin_cache, ggml's NEOX order) or pairs ([P, rot/2, 2] "
                  "or [P, rot] of (cos, sin) pairs: freqs_cis, ggml's NORMAL order). Default: "
                  "detected from tensor names, shapes and data, and stated in the certificate; "
                  "where two fit, pev asks for this option (exit 2)");
  // Both describe a dump's tensors: --impl only.
  cmd->add_option("--qk-layout", st.qk_layout,
                  "Layout of rotated q/k (q_in/q_out, k_in/k_out; D = head_dim last): bhtd "
                  "[B, H, T, D] (transformers), bthd [B, T, H, D], thd [T, H, D], or t(hd) "
                  "[T, H*D] (vLLM; quote it in a shell). Default: from the dump's metadata "
                  "(qk_layout), the positions (position_ids [B, T]), the shapes and the data, "
                  "stated in the certificate; where two fit, pev asks for this option (exit 2)")
      ->needs(impl_opt);
  cmd->add_option("--qk-order", st.qk_order,
                  "Where q_out/k_out hold the rotated pairs: input (each pair where its input "
                  "pair was) or half-split (pair i at (i, i + rot/2) after an interleaved "
                  "rotation, as DeepSeek-V3's apply_rotary_pos_emb_interleave writes them). "
                  "Default: from the metadata (qk_order) or the data, stated in the certificate")
      ->needs(impl_opt);
  auto* p = cmd->add_option("--positions", st.positions,
                            "Positions of the dump's rows, A:B[:STEP] (default: the dump's "
                            "`positions` tensor, else 0..P-1)");
  auto* pf = cmd->add_option("--positions-file", st.positions_file,
                             "Positions of the rows from a file (text, .npy or .safetensors)")
                 ->check(CLI::ExistingFile);
  p->excludes(pf);
  cmd->add_option("--seq-len", st.seq_len,
                  "Sequence length selecting dynamic/longrope frequencies (default: max position "
                  "+ 1, as transformers)");
  cmd->add_flag("--no-diagnosis", st.no_diagnosis, "Skip the search for known mistakes");
  cmd->add_option("--reference", st.reference,
                  "fast (default: the fast exact reference, identical to MPFR, with MPFR only "
                  "where its rounding test cannot decide) or mpfr (MPFR for every value: slow)")
      ->capture_default_str();
  cmd->add_flag("--exhaustive", st.exhaustive,
                "Require the dump to hold every position 0 … max (bad input otherwise), so the "
                "certificate covers every position; every row is always checked");
  cmd->add_option("--layers", st.layers,
                  "A model trace (docs/certify.md §8): the decoder layers it holds, as a list of "
                  "indices and ranges A:B (half-open), e.g. 0:4,30,31; default: every layer of "
                  "the config, each of which the trace must hold");
  cmd->add_option("--shard", st.shard,
                  "Certify shard I of N (I/N, 0-based): compare only rows [floor(I*R/N), "
                  "floor((I+1)*R/N)) of every row-wise check of R rows (table rows, q/k tokens, "
                  "PE rows; live: the positions the run evaluates); checks without rows, the "
                  "library fit and the properties run in shard 0. Writes a shard certificate "
                  "(never certified on its own: exit 1 when its rows already fail, else 3); "
                  "`pev merge DIR...` of all N gives the unsharded run's certificate");
}

/// --out.
void add_output_option(CLI::App* cmd, certify_state& st) {
  cmd->add_option("--out", st.out_text,
                  "Output directory for certificate.json and its page, replaced as a whole "
                  "(absent, empty, or a previous pev output holding nothing else; inputs may not "
                  "lie inside it); not pev report's default, so a certificate never replaces a "
                  "report")
      ->capture_default_str();
}

}  // namespace

command add_certify(CLI::App& app) {
  // The request's defaults are the options' (pev/app/request.h: written there once).
  auto st = std::make_shared<certify_state>();
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
  add_spec_options(cmd, *st);
  CLI::Option* impl_opt = add_input_options(cmd, *st);
  add_live_options(cmd, *st);
  add_claim_options(cmd, *st);
  add_dump_options(cmd, *st, impl_opt);
  add_output_option(cmd, *st);
  return {
      cmd, [st]() -> int {
        app::certify_request r = *st;
        r.files.assign(st->impl.begin(), st->impl.end());
        r.dtype = st->dtype_text;
        r.properties = !st->no_properties;
        r.diagnose = !st->no_diagnosis;
        r.out = st->out_text;
        r.command = invocation();
        r.note = [](const std::string& text) { std::cerr << "pev: certify: " << text << "\n"; };
        const std::filesystem::path dir = r.out;
        r.guard_exit = [](std::function<void(int)> on_exit) {
          return std::static_pointer_cast<void>(std::make_shared<exit_guard>(std::move(on_exit)));
        };
        r.publish = [dir](const certify::certificate& c) { publish(c, dir); };
        const certify::certificate c = app::certify(std::move(r));
        publish(c, dir);
        return c.exit_code();
      }};
}

}  // namespace pev::cli

#pragma once
// pev::certify — is an implementation a correct implementation of SPEC, and how precise is it?
// (docs/design.md §6). The implementation's output comes as tensors in safetensors or npy files
// (a dump) or from a live implementation (a plugin or a subprocess, pev/impl/live.h); pev compares
// every value against the exact reference with the comparison engine (pev/compare/), grades it,
// and when it is not certified tries the known mistakes of the field (the mutant catalogue,
// pev/impl/mutants.h) to name the one that explains the data.
//
// The result is a certificate: pev's one result model (pev/report/result.h) — check rows,
// provenance — with its certification block (claim, grade, diagnosis, inputs with SHA-256),
// written by the report's writers.
//
// clang-format off
// Grades, best first (docs/numerics.md §13.1). Below correctly-rounded they are the rungs of a
// nested ladder: a rung holds when every error is within the largest bound of itself and every
// tighter rung, none of them vacuous, so each grade implies every grade below it:
//   correctly-rounded  every value is RN_T of the exact value (ulp error ≤ 0.5);
//   faithful           every value within 1 ulp of the exact value (ulp error ≤ 1);
//   drift-free         every absolute error ≤ 2 ulp_T at the magnitude scale of the values (m, the
//                      attention factor, for a table; m·(|x0| + |x1|) for a rotated pair; the
//                      largest frequency for inv_freq; 1 for PE; the value itself for ALiBi):
//                      bounded independently of position, over the positions given;
//   recipe:hf          every error within the analytic bound of transformers' recipe (fp32
//                      table; 16-bit q/k rotated in the model dtype, each op rounded;
//                      pev/impl/contract.h, docs/numerics.md §8, §9.4, §13.3): the error grows
//                      with position as that recipe's does, no faster;
//   recipe:ggml        the same for llama.cpp's fp32 θ recurrence;
//   recipe:vllm        transformers' table stored in fp16 or bf16 before the dump's dtype (vLLM
//                      keeps its cos/sin cache in the model dtype; q/k rotated in fp32): the
//                      contract of the table-fp16 / table-bf16 strategies;
//   not certified      none of the above.
// Every recipe bound is derived for a math-library class (options::libm, default any conforming
// library; docs/numerics.md §5.4).
// clang-format on
// The grade of a dump is the worst over its checks (one check per tensor role).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pev/core/sampling.h"
#include "pev/impl/live.h"
#include "pev/io/array.h"
#include "pev/metric/libm.h"
#include "pev/report/json.h"
#include "pev/report/result.h"
#include "pev/report/write.h"
#include "pev/spec/spec.h"

namespace pev::certify {

// The result model is the report's (pev/report/result.h).
using certificate = report::results;
using report::check;
using report::diagnosis;
using report::explanation;
using report::grade;
using report::input_file;
using report::mismatch;
using report::to_string;  // of a grade

// ---- Inputs ---------------------------------------------------------------------------------

/// The tensors of a dump: every tensor of a safetensors file, every array of an npz archive, or
/// one tensor per npy file named by the file's stem ("cos.npy" holds tensor "cos"; a directory
/// gives every .npy file in it). Several files may be combined; a name given twice is an error.
/// Complex tensors (safetensors C64, npy '<c8'/'<c16': Meta's freqs_cis) are read as (real, imag)
/// pairs along a last axis of 2 (io::array::complex).
struct dump {
  std::vector<input_file> files;
  std::map<std::string, io::array> tensors;
  std::map<std::string, std::string> metadata;  // safetensors __metadata__ (merged)
  /// What a directory held besides its .npy files: not read, and said so in the certificate.
  std::vector<std::string> skipped;

  const io::array* find(std::string_view name) const;
};

/// Reads the files: .safetensors, .npy, .npz, or a directory of .npy files (pev::error for
/// unreadable or malformed files, naming the file; each must be a regular file, since it is
/// hashed as well as read). With `hash` false the files' sha256 are left empty: certify_dump
/// hashes them beside the comparison (hash_inputs).
dump read_dump(const std::vector<std::filesystem::path>& files, bool hash = true);
/// Fills the SHA-256 of every file whose sha256 is empty (sha256_file).
void hash_inputs(std::vector<input_file>& files);

/// SHA-256 of a file, lowercase hex (OpenSSL).
std::string sha256_file(const std::filesystem::path& file);
/// SHA-256 of bytes already read (a config or positions file), lowercase hex.
std::string sha256_bytes(std::string_view bytes);
/// The SHA-256 an input of a certificate has now, for re-verifying it (`pev merge`, `pev verify`;
/// docs/certify.md §6, §7): its file's, where it is a regular file here; nothing for a command
/// (an `--exec` text, which only a re-run checks) or a file not found.
std::optional<std::string> sha256_now(const input_file& f);

// clang-format off
/// How a RoPE cos/sin table is laid out in the dump (docs/encodings.md §4.4):
///   separate      tensors `cos` and `sin` (or `cos_cached`, `sin_cached`), [P, pairs]
///                 (FlashAttention, pev compute);
///   halves        `cos` and `sin` [P, rotary_dim] with duplicated halves, as transformers returns
///                 them (cos[:, j] = cos[:, j + pairs]);
///   repeated      `cos` and `sin` [P, rotary_dim] with each value repeated twice (GPT-J /
///                 interleaved layouts: cos[:, 2i] = cos[:, 2i + 1]);
///   vllm          [P, rotary_dim] = [cos | sin] per row: vLLM's `cos_sin_cache`, and ggml's
///                 NEOX order (ggml_rope in NEOX mode on [1…1 | 0…0] writes exactly this row);
///   pairs         [P, pairs, 2] of (cos, sin): `table` (pev reference npy), `freqs_cis` (Meta's
///                 complex64, or as real pairs), `cos_sin`, a lone 3-d tensor, or a lone
///                 [P, rotary_dim] = (cos, sin) pairs flattened (ggml's NORMAL order and its own
///                 cache).
/// Size-1 dimensions before the last two (three for pairs) are dropped ([1, P, …] from a batch of
/// one, [B, 1, P, rot] unsqueezed for heads); a leading batch B > 1 is read as B·P rows with
/// position_ids [B, P] (or positions [P] shared), or once when every batch is the same.
// clang-format on
enum class table_layout { separate, halves, repeated, vllm, pairs };
const char* to_string(table_layout l);
/// Parses a layout name; pev::error listing the names otherwise.
table_layout parse_table_layout(std::string_view name);

// clang-format off
/// How rotated q/k (`q_in`/`q_out`, `k_in`/`k_out`) are laid out, D = head_dim last
/// (docs/certify.md §4):
///   bhtd   [B, H, T, D]: transformers' own (query_states after transpose(1, 2)); [H, T, D]
///          without the batch;
///   bthd   [B, T, H, D]: FlashAttention, before transformers' transpose;
///   thd    [T, H, D]: pev's own dumps (bthd without the batch);
///   t_hd   [T, H·D] ("t(hd)"), or [B, T, H·D]: vLLM's flattened heads.
// clang-format on
enum class qk_layout { bhtd, bthd, thd, t_hd };
const char* to_string(qk_layout l);
/// Parses "bhtd", "bthd", "thd" or "t(hd)"; pev::error listing the names otherwise.
qk_layout parse_qk_layout(std::string_view name);

/// Where q_out/k_out hold the rotated pairs: `input`, each pair where its input pair was (the
/// spec's layout: (2i, 2i + 1) interleaved, (i, i + rot/2) NeoX); `half_split`, pair i at
/// (i, i + rot/2) whatever the input layout (DeepSeek-V3's apply_rotary_pos_emb_interleave, which
/// rotates interleaved inputs and leaves its outputs de-interleaved).
enum class qk_order { input, half_split };
const char* to_string(qk_order o);
/// Parses "input" or "half-split"; pev::error listing the names otherwise.
qk_order parse_qk_order(std::string_view name);

/// A RoPE table read as certify_dump reads it, as cos and sin planes [rows, pairs].
struct table_read {
  io::array cos, sin;  // [rows, pairs], in the tensors' dtype
  table_layout layout = table_layout::separate;
  bool detected = true;  // from names, shapes and data (not `layout`)
  std::string source;    // which tensors
};
/// The cos/sin table the tensors of `d` hold for `s`, in any layout certify_dump reads (detected,
/// or `layout`): for embedders whose implementation answers with such tensors (pev's Python module,
/// docs/python.md §4). A duplicated layout (halves, repeated) must duplicate bit for bit:
/// pev::error naming the first row and column that differ otherwise, as for no table or a shape
/// that does not fit.
table_read read_rope_table(const dump& d, const spec::rope& s,
                           std::optional<table_layout> layout = std::nullopt);

// ---- Certification ------------------------------------------------------------------------------

/// ρ (data against a mistaken implementation, in units of the hf bound) under which a mistake
/// explains the data: 2 for two fp32 implementations of the same recipe (each within one bound of
/// the mistaken exact value), times 2 for the bound's reliance on the correct frequencies
/// (docs/numerics.md §13.5).
inline constexpr double kExplainRho = 4.0;

struct options {
  /// The recipe the implementation claims (exact, hf, ggml, vllm); none: report the best grade.
  std::optional<std::string> recipe;
  std::optional<table_layout> layout;
  /// The layout of rotated q/k and the order of their outputs; none: from the dump's metadata
  /// (`qk_layout`, `qk_order`), the positions, the shapes and the data, and exit 2 (pev::error
  /// naming the option) where two readings still fit.
  std::optional<certify::qk_layout> qk_layout;
  std::optional<certify::qk_order> qk_order;
  /// Positions of the dump's rows; empty: a `positions` (or `position_ids`) tensor, else 0..P−1.
  std::vector<std::int64_t> positions;
  /// Sequence length of stateful rope types; none: max(position) + 1 (transformers).
  std::optional<std::int64_t> seq_len;
  bool diagnose = true;
  /// Require the rows to cover every position 0 … max (an exhaustive certificate); pev::error
  /// naming the first missing position otherwise. Every row of a dump is always checked.
  bool exhaustive = false;
  /// The reference path: the fast one (default; identical values, MPFR only where its rounding
  /// test cannot decide) or MPFR directly (`--reference mpfr`, slow: a cross-check).
  bool mpfr_reference = false;
  /// The math library class the recipe bounds assume (docs/numerics.md §5): by default any
  /// conforming library, so that a claim does not depend on the platform the data was made on.
  const metric::libm* libm = &metric::kAnyConforming;
  /// The largest trig error (ulps) the measured library may show: a tighter claim (none: any).
  std::optional<double> max_trig_ulp;
  /// Worker threads (oneTBB) comparing a table's rows; 0: every core. The certificate does not
  /// depend on it (rows are compared in fixed chunks whose figures merge in order).
  int threads = 0;
  /// `--shard I/N` (docs/design.md §9.3): compare only rows [⌊I·R/N⌋, ⌊(I+1)·R/N⌋) of every
  /// row-wise check of R rows; checks without rows, the table's library fit and a live
  /// implementation's properties run in shard 0. The certificate is shard I of N: its checks
  /// carry their figures' state for `pev merge`, and it is never certified on its own
  /// (report::kExitPartial when its rows hold).
  int shard_index = 0;
  int shard_count = 1;
  /// Progress of a long certification (docs/certify.md §9.1): called one call at a time (on the
  /// certifying thread; a trace's from the worker that certified the site) as rows are compared —
  /// `what` names them ("table rows", "q_out tokens", "trace sites") — with how many of `total`
  /// are done (`done` == `total` last). None: nothing. It changes nothing in the certificate.
  std::function<void(std::string_view what, std::size_t done, std::size_t total)> progress;
};

/// The options of a run that its shards must agree on, as canonical text (written in a shard's
/// certificate; `pev merge` refuses shards whose texts differ).
std::string run_options(const options& o);

/// How `pev merge` verifies what it merges (merge_shards).
struct merge_options {
  /// Each shard certificate's SHA-256 (of its certificate.json), in the order of `shards`:
  /// recorded in the merged certificate (certification::merged_from). Empty: not recorded.
  std::vector<std::string> sha256;
  /// Re-hash the inputs the shards name: `inputs` (the dump's files, `pev merge --impl`), else
  /// each input at its recorded path where it is a file (docs/certify.md §6).
  bool rehash = true;
  std::vector<std::filesystem::path> inputs;
};
/// Merges the certificates of the N shards of one run (`pev certify --shard I/N`, each index
/// once) into the certificate the unsharded run gives (docs/design.md §9.3): each check's figures
/// merged in shard order, grades and the claim by the unsharded run's code, the library figures
/// of shard 0 (which fits the whole table), the first mismatches in the unsharded comparison
/// order, the diagnosis of the first failing shard (a failing shard diagnoses the whole dump).
/// A shard is an untrusted file (docs/certify.md §6): pev::error naming the problem for missing
/// or repeated shards, shards of different runs (spec, inputs' SHA-256, options, seed, shard
/// count, pev revision), rows that are not the shard's index's range, a check missing from a
/// shard, figures inconsistent with themselves or their rows, row digests that do not add up to
/// the dump's, or an input whose file is found with another SHA-256.
certificate merge_shards(std::vector<certificate> shards, const merge_options& mo = {});

/// Certifies the dump against `e`. Throws pev::error for input that cannot be certified as given
/// (no tensor for the encoding, ambiguous layout, shape or dtype mismatches), naming the tensor.
certificate certify_dump(const spec::encoding& e, const dump& d, const options& o);

/// What pev asks a live implementation (plugin or subprocess) for.
struct live_options {
  /// Positions: every p < 4096, then `samples` seeded positions in every octave up to
  /// max_position (pev/core/sampling.h; max_position itself included); with `exhaustive`, every
  /// p ≤ max_position.
  std::int64_t max_position = (std::int64_t{1} << 20) - 1;
  int samples = 64;
  bool exhaustive = false;
  std::uint64_t seed = kDefaultSeed;
  dtype type = dtype::fp32;
  /// Run the property suites (pev::prop, with shrinking) on the implementation too: each property
  /// of the family becomes a check (its counterexample in the note when it fails).
  bool properties = true;
  int property_cases = 100;
  /// The math-library class the properties' contracts assume: none, certify_live passes its
  /// options::libm (the recipe bounds' class).
  const metric::libm* libm = nullptr;
  /// Runs the property suites on the implementation (pev::prop lives above this library: the CLI
  /// passes it; none: no property checks).
  std::function<std::vector<check>(const impl::live_implementation&, const live_options&)>
      property_checks;
};

/// Certifies a live implementation: pev computes the positions, asks the implementation for every
/// output it supports (table, inv_freq, rotated q/k of seeded random inputs; PE), certifies them
/// as a dump would be, then runs the property suites on it. A call that fails (the process hung,
/// flooded or died; the plugin returned an error) is a failed check, not a crash.
/// The certificate of an implementation that failed before a verdict (it hung, died, broke the
/// protocol, ended the process): one failed check "live" whose note says what happened; not
/// certified, so its exit code is 1.
certificate failed_certificate(const spec::encoding& e, const std::string& what,
                               std::vector<input_file> inputs,
                               const std::optional<std::string>& recipe, const std::string& source,
                               dtype t, const std::string& note);
/// The failed check "live" of an implementation that failed (failed_certificate's), for spec `e`
/// claiming `recipe`, its outputs of type `t` from `source`, saying what happened (`note`).
check failed_check(const spec::encoding& e, const std::optional<std::string>& recipe,
                   const std::string& source, dtype t, const std::string& note);

certificate certify_live(const spec::encoding& e, const impl::live_implementation& im,
                         const options& o, const live_options& lo);

/// certificate.json: the report's JSON writer (pev/report/json.h) with the certification block.
inline std::string to_json(const certificate& c) { return report::to_json(c); }
/// The human-readable summary printed by `pev certify` (pev/report/write.h).
inline std::string to_text(const certificate& c) { return report::certificate_text(c); }

}  // namespace pev::certify

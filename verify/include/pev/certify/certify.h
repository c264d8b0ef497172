#pragma once
// pev::certify — is a dumped implementation a correct implementation of SPEC, and how precise is
// it? (DESIGN §5). The implementation's output comes as tensors in safetensors or npy files; pev
// compares every value against the exact reference (the fast path of pev/ref/fast.h, identical to
// MPFR), grades it, and when it is not certified tries the known mistakes of the field (the mutant
// catalogue, pev/impl/mutants.h) to name the one that explains the data.
//
// Grades, best first (each also requires every better-graded figure to be measured):
//   correctly-rounded  every value is RN_T of the exact value (ulp error ≤ 0.5);
//   faithful           every value within 1 ulp of the exact value (ulp error ≤ 1);
//   drift-free         every absolute error ≤ 2 ulp_T(m) (m the attention factor): bounded
//                      independently of position, over the positions given;
//   recipe:hf          every error within the analytic bound of transformers' fp32 recipe
//                      (pev/impl/contract.h, notes/numerics.md §3): the error grows with position
//                      as that recipe's does, no faster;
//   recipe:vllm        the same recipe with the cache stored in fp16 or bf16 before the dump's
//                      dtype (vLLM keeps its cos/sin cache in the model dtype): the hf bound plus
//                      half an ulp of the storage format;
//   recipe:ggml        the same for llama.cpp's fp32 θ recurrence;
//   not certified      none of the above.
// The grade of a dump is the worst over its checks (one check per tensor role).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pev/impl/live.h"
#include "pev/io/array.h"
#include "pev/spec/spec.h"

namespace pev::certify {

// ---- Inputs ---------------------------------------------------------------------------------

/// One input file: its path, format ("safetensors" or "npy") and SHA-256 (hex).
struct input_file {
  std::string path;
  std::string format;
  std::string sha256;
};

/// The tensors of a dump: every tensor of a safetensors file, or one tensor per npy file named by
/// the file's stem ("cos.npy" holds tensor "cos"). Several files may be combined; a name given
/// twice is an error.
struct dump {
  std::vector<input_file> files;
  std::map<std::string, io::array> tensors;
  std::map<std::string, std::string> metadata;  // safetensors __metadata__ (merged)

  const io::array* find(std::string_view name) const;
};

/// Reads the files (pev::error for unreadable or malformed files, naming the file; each must be a
/// regular file, since it is hashed as well as read).
dump read_dump(const std::vector<std::filesystem::path>& files);

/// SHA-256 of a file, lowercase hex (OpenSSL).
std::string sha256_file(const std::filesystem::path& file);
/// SHA-256 of bytes already read (a config or positions file), lowercase hex.
std::string sha256_bytes(std::string_view bytes);

/// How a RoPE cos/sin table is laid out in the dump (notes/numerics.md §10):
///   separate      tensors `cos` and `sin`, [P, pairs] (FlashAttention, pev compute);
///   halves        `cos` and `sin` [P, rotary_dim] with duplicated halves, as transformers returns
///                 them (cos[:, j] = cos[:, j + pairs]);
///   repeated      `cos` and `sin` [P, rotary_dim] with each value repeated twice (GPT-J /
///                 interleaved layouts: cos[:, 2i] = cos[:, 2i + 1]);
///   vllm          `cos_sin_cache` [P, rotary_dim] = [cos | sin] (vLLM);
///   pairs         [P, pairs, 2] of (cos, sin): `table` (pev reference npy), `freqs_cis` (Meta
///                 complex as real pairs) or a lone 3-d tensor.
/// Leading dimensions of size 1 ([1, P, …] from a batch of one) are dropped.
enum class table_layout { separate, halves, repeated, vllm, pairs };
const char* to_string(table_layout l);
/// Parses a layout name; pev::error listing the names otherwise.
table_layout parse_table_layout(std::string_view name);

// ---- Results --------------------------------------------------------------------------------

enum class grade {
  correctly_rounded,
  faithful,
  drift_free,
  recipe_hf,
  recipe_vllm,
  recipe_ggml,
  not_certified
};
const char* to_string(grade g);

/// The worst value of a check: where, what it is, what it should be (hex in JSON).
struct worst_value {
  std::int64_t position = 0;
  std::int64_t index = 0;  // pair, column or element
  double got = 0, want = 0;
  double abs_error = 0;
  double ulp_error = 0;
};

/// One compared tensor role (inv_freq, attention factor, cos, sin, pe).
struct check {
  std::string name;    // e.g. "cos"
  std::string source;  // where in the dump it came from
  std::string dtype;   // fp32, fp16, bf16, fp64
  std::uint64_t count = 0;
  std::uint64_t correctly_rounded = 0;  // ulp distance 0 to RN_T(exact)
  std::uint64_t faithful = 0;           // ulp error ≤ 1
  std::uint64_t non_finite = 0;         // NaN or Inf where the exact value is finite
  /// From doubles within 2^−49·m of the exact values (the fast path's own), so its last bits may
  /// differ from --reference mpfr's; the worst value's figures are recomputed in MPFR.
  double max_abs_error = 0;
  double max_ulp_error = 0;
  /// max ρ = |error| / bound of each recipe the check was measured against ("hf", "vllm-fp16",
  /// "vllm-bf16", "ggml").
  std::map<std::string, double> max_rho;
  double drift_free_bound = 0;  // the absolute bound of the drift-free grade
  worst_value worst;            // the value of max_ulp_error
  grade best = grade::not_certified;
  std::string note;  // e.g. a property's shrunk counterexample, or why a live call failed
  /// For property checks: "passed", "failed" or "not applicable" (empty for value checks).
  std::string property_status;
};

/// A known mistake tried by the diagnosis, with how well it explains the data.
struct explanation {
  std::string mutant;       // mutant id (pev/impl/mutants.h)
  std::string description;  // the bug class
  double max_rho = 0;       // max |data − mutant| / hf bound
  double rms_rho = 0;
  bool explains = false;  // max_rho ≤ kExplainRho
};

/// ρ (data against a mistaken implementation, in units of the hf bound) under which a mistake
/// explains the data: 2 for two fp32 implementations of the same recipe (each within one bound of
/// the mistaken exact value), times 2 for the bound's reliance on the correct frequencies.
inline constexpr double kExplainRho = 4.0;

/// Where the data first leaves the bound of the claimed (or hf) recipe.
struct mismatch {
  std::string check;
  std::int64_t position = 0;
  std::int64_t index = 0;
  double got = 0, want = 0, bound = 0;
};

struct diagnosis {
  std::vector<mismatch> first;            // the first few, in row order
  std::vector<explanation> explanations;  // every applicable mistake, best first
  std::optional<std::string> named;       // the mistake that explains the data, if one does
  double max_rho_without = 0;             // data vs exact, in hf bounds
};

struct options {
  /// The recipe the implementation claims (exact, hf, ggml, vllm); none: report the best grade.
  std::optional<std::string> recipe;
  std::optional<table_layout> layout;
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
};

struct certificate {
  std::string spec;  // canonical SPEC string
  std::vector<input_file> inputs;
  std::string what;  // "rope table", "sinusoidal pe", …
  std::uint64_t positions = 0;
  std::int64_t min_position = 0, max_position = 0;
  bool exhaustive = false;  // the rows cover every position 0 … max_position
  std::optional<std::string> claimed_recipe;
  bool claim_holds = true;
  std::vector<check> checks;
  grade result = grade::not_certified;
  std::optional<diagnosis> why;
  std::string reference_backend = "fast";  // "fast" or "mpfr"
  std::uint64_t reference_values = 0;      // values of the fast reference
  std::uint64_t reference_fallbacks = 0;   // of which taken from MPFR
  unsigned precision_bits = 0;
  double seconds = 0;

  /// 0 certified (and the claimed recipe holds), 1 otherwise (DESIGN §4).
  int exit_code() const;
};

/// Certifies the dump against `e`. Throws pev::error for input that cannot be certified as given
/// (no tensor for the encoding, ambiguous layout, shape or dtype mismatches), naming the tensor.
certificate certify_dump(const spec::encoding& e, const dump& d, const options& o);

/// What pev asks a live implementation (plugin or subprocess) for.
struct live_options {
  /// Positions: every p < 4096, then `samples` seeded positions in every octave up to
  /// max_position (and max_position itself); with `exhaustive`, every p ≤ max_position.
  std::int64_t max_position = std::int64_t{1} << 20;
  int samples = 64;
  bool exhaustive = false;
  std::uint64_t seed = 20261122;
  impl::dtype type = impl::dtype::fp32;
  /// Run the property suites (pev::prop, with shrinking) on the implementation too: each property
  /// of the family becomes a check (its counterexample in the note when it fails).
  bool properties = true;
  int property_cases = 100;
  /// Runs the property suites on the implementation (pev::prop lives above this library: the CLI
  /// passes it; none: no property checks).
  std::function<std::vector<check>(const impl::live_implementation&, const live_options&)>
      property_checks;
};

/// Certifies a live implementation: pev computes the positions, asks the implementation for every
/// output it supports (table, inv_freq, rotated q/k of seeded random inputs; PE), certifies them
/// as a dump would be, then runs the property suites on it. A call that fails (the process hung,
/// flooded or died; the plugin returned an error) is a failed check, not a crash.
certificate certify_live(const spec::encoding& e, const impl::live_implementation& im,
                         const options& o, const live_options& lo);

/// certificate.json (schema_version 1; DESIGN §5): spec, inputs with SHA-256, pev version, git
/// revision, reference precision, every check with its figures, grade and diagnosis.
std::string to_json(const certificate& c);
/// The human-readable summary printed by `pev certify`.
std::string to_text(const certificate& c);

}  // namespace pev::certify

#pragma once
// The one result model of pev (docs/design.md §3.10, §4.2): plain, versioned data that the writers
// only read. A precision-drift report is `results`; a certificate is the same results — the same
// check rows, the same provenance, the same writers — plus the certification block (claim, grade,
// diagnosis, inputs and their hashes). Nothing here depends on the reference or the kernels, so
// writers can be tested on synthetic results.
//
// Units are named in every field: `abs` = absolute error |ŷ − y| against the exact value y (in the
// value's own units, cos/sin are dimensionless), `ulp_error` = |ŷ − y| / ulp_T(y)
// (docs/numerics.md §3.1), `ulp_distance` = ordinal distance to RN_T(y) (docs/numerics.md §3.2),
// ρ = |ŷ − y| / B with B the analytic bound of a contract or recipe (docs/numerics.md §3.5).

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pev::report {

/// Exit code of a shard certificate whose rows hold: no verdict yet, merge the shards
/// (docs/design.md §5.6).
inline constexpr int kExitPartial = 3;

/// Version of the report.json layout; bumped on any incompatible change.
inline constexpr int kSchemaVersion = 1;

/// The fixed ulp-error buckets of docs/numerics.md §3.6: {0, (0, 0.5], (0.5, 1], (1, 2], (2, 4],
/// (4, 8], > 8}, in ulps of the output type against the exact value.
inline constexpr int kUlpBuckets = 7;
inline constexpr std::array<const char*, kUlpBuckets> kUlpBucketNames = {
    "0", "(0,0.5]", "(0.5,1]", "(1,2]", "(2,4]", "(4,8]", ">8"};
/// The same buckets as labels without commas (CSV columns, plot tics): (lo, hi] as "lo-hi".
inline constexpr std::array<const char*, kUlpBuckets> kUlpBucketLabels = {
    "0", "0-0.5", "0.5-1", "1-2", "2-4", "4-8", ">8"};
/// Bucket index of an ulp error (NaN and +Inf go to the last bucket).
int ulp_bucket(double ulp_error);

/// Error statistics of one check over the positions of one octave [lo, hi) (the first octave
/// starts at 0).
struct octave {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  std::uint64_t positions = 0;  // distinct positions evaluated
  std::uint64_t values = 0;
  double max_abs = 0;                // max |ŷ − y|
  double p99_abs = 0;                // 99th percentile of |ŷ − y| (nearest rank)
  double max_bound = 0;              // max analytic bound B over the octave's values
  double max_rho = 0;                // max |ŷ − y| / B
  std::vector<double> rho_by_index;  // max ρ per frequency index (pair or column)
};

/// The value with the largest ρ: inputs and outputs in C99 hex (%a) next to decimals.
struct worst_case {
  std::int64_t position = 0;
  std::int64_t index = 0;  // pair (RoPE), column (PE) or head (ALiBi)
  std::string component;   // "cos", "sin", "pe", "slope"
  double got = 0;
  double exact = 0;
  double bound = 0;
  double rho = 0;
  std::string got_hex;
  std::string exact_hex;
  /// The pipeline's intermediates at the worst case next to their exact values ("which step
  /// lost the bits"), e.g. the frequency and the angle, in hex.
  struct step {
    std::string name;
    std::string got_hex;
    std::string exact_hex;
  };
  std::vector<step> intermediates;
  double ulp_error = 0;  // |got − exact| / ulp_T(|exact|)
};

/// The plain state of one check's figures (compare::figures::state): every accumulator its merge
/// combines, so that the figures of a shard's rows can be written, read back and merged in shard
/// order into the figures of every row (docs/design.md §9.3). Histograms are sparse: only the
/// non-zero bins, as (bin, count).
struct figure_state {
  struct histogram {
    std::vector<std::pair<std::uint32_t, std::uint64_t>> bins;  // (bin, count), count > 0
    std::uint64_t count = 0;
    std::uint64_t zeros = 0;
  };
  struct octave {
    std::uint64_t positions = 0, values = 0;
    double max_abs = 0, max_bound = 0, max_rho = 0;
    std::int64_t argmax = -1;
    std::vector<double> rho_by_index;
    histogram hist;
  };
  /// The layout (compare::figures::options): octaves below max_position, indices, bound names.
  std::int64_t max_position = 2;
  std::int64_t indices = 1;
  std::vector<std::string> bounds;
  std::vector<octave> octaves;
  std::int64_t max_pos = 0;
  std::uint64_t values = 0, correctly_rounded = 0, faithful = 0, non_finite = 0;
  std::uint64_t max_ulp_distance = 0;
  double max_abs = 0, max_ulp_error = 0;
  std::vector<double> max_rho, max_bound;  // per bound
  std::vector<double> ladder_rho;          // per rung
  std::vector<std::uint64_t> vacuous;      // per bound
  std::vector<std::int64_t> first_vacuous;
  std::array<std::uint64_t, kUlpBuckets> ulp_histogram{};
  worst_case worst;
  double worst_ulp = 0;  // ulp_T(|exact|) of the worst value
  /// A row-wise check of a shard (docs/certify.md §6): the rows [first, end) it compared of the
  /// check's `total`, the values each row holds, and digests of the data — its own rows' and every
  /// row's — that bind the figures to the dump (values_digest's: additive over rows, so the shards'
  /// own digests add up to the dump's). Absent: a check without rows (shard 0's alone).
  struct rows_of {
    std::int64_t first = 0, end = 0, total = 0, width = 0;
    std::string digest, dump_digest;  // 16 hex digits each
    bool operator==(const rows_of&) const = default;
  };
  std::optional<rows_of> rows;
};

/// Certification grades, best first (docs/design.md §6.5, docs/numerics.md §13.1): each implies
/// every figure the grades after it require.
enum class grade {
  correctly_rounded,
  faithful,
  drift_free,
  recipe_hf,
  recipe_ggml,
  recipe_vllm,
  not_certified
};
const char* to_string(grade g);
/// The grade named `name` as to_string writes it, or nothing.
std::optional<grade> parse_grade(std::string_view name);

/// One check: a spec × strategy × dtype (a report) or one tensor role of an implementation (a
/// certificate) against the exact reference, gated by ρ ≤ 1.
struct check {
  std::int64_t index = 0;  // position in the unsharded run's list of checks (merge order)
  std::string id;          // "<spec name>/<strategy>/<dtype>", unique in a report
  std::string spec_name;   // suite name, e.g. "llama3.1"
  std::string spec;        // canonical SPEC string
  std::string family;      // "rope", "sinusoidal", ...
  std::string strategy;
  std::string dtype;       // "fp32", "fp16", "bf16"
  std::string bound_name;  // what B is, e.g. "hf model + bf16 store", "1 ulp"
  std::string note;        // anything a reader must know (e.g. sequence length of stateful types)
  bool pass = false;
  std::uint64_t values = 0;
  std::uint64_t positions = 0;
  std::int64_t max_position = 0;
  double max_abs = 0;
  double max_rho = 0;
  double max_ulp_error = 0;            // ulps vs exact
  std::uint64_t max_ulp_distance = 0;  // ulps vs correctly rounded
  double pct_correctly_rounded = 0;    // % with ulp distance 0
  double pct_faithful = 0;             // % with ulp distance ≤ 1
  std::array<std::uint64_t, kUlpBuckets> ulp_histogram{};
  worst_case worst;
  std::vector<octave> octaves;

  // Written for certificates (the JSON of a report leaves them out):
  std::string source;                   // where in the implementation's output the values came from
  std::uint64_t correctly_rounded = 0;  // values with ulp distance 0
  std::uint64_t faithful = 0;           // values with ulp distance ≤ 1
  std::uint64_t non_finite = 0;         // NaN or ±Inf where the exact value is finite
  /// max ρ against each recipe's own bound ("exact", "drift-free", "hf", "ggml", "vllm-fp16",
  /// "vllm-bf16").
  std::map<std::string, double> recipe_rho;
  /// max ρ on the grade ladder: against the largest of the bounds of that rung and every tighter
  /// one, so that a rung holds (ρ ≤ 1, not vacuous) whenever a tighter one does.
  std::map<std::string, double> ladder_rho;
  /// Bounds that are vacuous (≥ the output's range) somewhere: how many values and the first
  /// position. A vacuous bound certifies nothing there.
  struct vacuity {
    std::uint64_t values = 0;
    std::int64_t first_position = 0;
    bool operator==(const vacuity&) const = default;
  };
  std::map<std::string, vacuity> vacuous;
  double drift_free_bound = 0;  // the largest absolute bound of the drift-free grade used
  std::optional<grade> best;    // the best grade the check's figures support
  std::string property;         // property checks: "passed", "failed" or "not applicable"
  /// A failed property: its shrunk counterexample (one "type: value" per line) and the command
  /// line that replays it (a pev command with its seed).
  std::string counterexample;
  std::string replay;
  /// A shard's certificate (`pev certify --shard I/N`): the figures of this check over the shard's
  /// rows, for `pev merge` (none otherwise).
  std::optional<figure_state> state;
  /// RoPE tables: the recipes replayed on the table's own angles (docs/numerics.md §13.7) — the
  /// rungs they decide hold when every value lies in what the recipe's arithmetic can produce from
  /// its fp32 angles with the assumed library. Absent: the rungs are the bounds' (ladder_rho).
  struct recipe_replay {
    /// Per replayed rung ("hf", "vllm-fp16", "vllm-bf16", "ggml"): max ρ of |got − m·cos θ̂|
    /// against what the recipe's trig, attention factor and roundings allow around its own
    /// angle θ̂. A rung is left out where the data cannot follow it (vllm: values not in that
    /// 16-bit format).
    std::map<std::string, double> rho;
    /// Per rung left out (vllm-fp16, vllm-bf16): how many values its 16-bit format does not hold
    /// (so the data is no such cache).
    std::map<std::string, std::uint64_t> not_followed;
    /// How the replayed hf frequencies and ggml's ratio were taken.
    std::string frequencies;
    /// Per replayed rung, per key k = bit_width(position) (positions [2^(k−1), 2^k); k = 0:
    /// position 0): the largest bound the rung's replay implies on |got − exact| (max(H − y,
    /// y − L) of its interval) and the largest ρ against it; up to the last key with values.
    std::map<std::string, std::vector<double>> octave_bound, octave_rho;
    /// 16-bit tables: the least trig error every value implies around the hf recipe's angles
    /// (absolute, and over |θ̂| beyond the fast-math constant): what the output's rounding leaves
    /// resolvable of the library's error.
    double trig_at_least = 0, trig_at_least_ulp = 0, trig_slope_at_least = 0;
    /// The same around the exact angles p·θ_i. Both are kept, each merged over shards, so that
    /// which angles the values follow is decided over every row (docs/numerics.md §13.7).
    double exact_at_least = 0, exact_at_least_ulp = 0, exact_slope_at_least = 0;
  };
  std::optional<recipe_replay> replayed;
};

/// Whether each rung of `rungs` (tightest first) holds for a certified check: its ladder ρ ≤ 1
/// and, where no replay decided the check (check::replayed), no bound up to it vacuous (a replay
/// folds vacuity into its ladder ρ). One rule for grading and for every page that marks a rung.
std::vector<bool> rungs_holding(const check& c, const std::vector<std::string>& rungs);

/// Relative-position invariance drift |⟨R(m)q, R(n)k⟩ − ⟨q, R(n−m)k⟩| (exact right-hand side) for
/// one spec × strategy × dtype, n − m fixed, per position m.
struct invariance_series {
  std::int64_t index = 0;  // merge order
  std::string spec_name;
  std::string strategy;
  std::string dtype;
  std::int64_t offset = 0;  // n − m
  std::vector<std::int64_t> position;
  std::vector<double> max_drift;  // max over the sampled (q, k) pairs, in units of |q|·|k| = 1
};

/// Effective wavelength 2π/θ_i (tokens) per frequency pair of a RoPE spec (scaled or not) and of
/// the plain RoPE with the same head_dim and θ.
struct wavelength_series {
  std::int64_t index = 0;  // merge order
  std::string spec_name;
  std::vector<double> scaled;
  std::vector<double> plain;
};

/// Provenance of a run (docs/design.md §3.10, docs/numerics.md §6.5): what produced the figures.
struct provenance {
  std::string pev_version;
  std::string git_revision;
  std::string compiler;
  std::string fp_flags;
  std::string build_flags;
  std::string libc;
  std::string host;
  std::string cpu;
  unsigned mpfr_precision_bits = 0;
  std::string reference;  // "fast" or "mpfr"
  std::uint64_t reference_values = 0;
  std::uint64_t reference_fallbacks = 0;  // values the fast path took from MPFR
  std::uint64_t seed = 0;
  std::string suite;              // "default" or "custom"
  std::int64_t max_position = 0;  // the largest position evaluated (included)
  bool exhaustive = false;
  std::int64_t dense_below = 0;  // every position below this is evaluated
  int samples_per_octave = 0;    // deterministic samples per octave above dense_below
  int search_radius = 0;         // local worst-case search: ± this many positions
  int shard_index = 0;
  int shard_count = 1;
  std::vector<int> merged_shards;  // shard indices combined by `pev merge` (empty: not merged)
  std::string generated_at;        // UTC timestamp (ISO 8601): differs between runs
};

/// The provenance of this process: pev's version and git revision, compiler, FP and build
/// flags, libc, host and CPU, MPFR precision. Run-specific fields (reference, seed, suite,
/// sampling, timestamp) are the caller's.
provenance this_build();

/// One input of a certificate: its path (or command), format and SHA-256 (hex).
struct input_file {
  std::string path;
  std::string format;
  std::string sha256;
};

/// A value beyond the bound a certificate holds the data to.
struct mismatch {
  std::string check;
  std::int64_t position = 0;
  std::int64_t index = 0;
  double got = 0, want = 0, bound = 0;
};

/// A known mistake tried by the diagnosis, with how well it explains the data.
struct explanation {
  std::string mutant;       // mutant id (pev/impl/mutants.h)
  std::string description;  // the bug class
  double max_rho = 0;       // max |data − mistaken value| / bound
  double rms_rho = 0;
  bool explains = false;  // max_rho ≤ the explain threshold
  /// A digest of the mistaken outputs: mistakes with equal digests make the same data and cannot
  /// be told apart (not written; diagnosis::indistinguishable names them).
  std::uint64_t digest = 0;
};

struct diagnosis {
  std::vector<mismatch> first;            // the first few, in row order
  std::vector<explanation> explanations;  // every applicable mistake, best first
  std::optional<std::string> named;       // the mistake that explains the data, if one does
  /// Other mistakes that make exactly the named one's data: the data cannot tell them apart.
  std::vector<std::string> indistinguishable;
  /// What the data implies about the parameters it was made with, beyond the catalogue: e.g.
  /// "rope_theta: the frequencies imply 10000 (the spec says 500000)".
  std::vector<std::string> findings;
  double max_rho_without = 0;  // data vs exact, in the bound the data is held to
  /// The rows the mistakes were replayed on when not every row (docs/certify.md §3): "4096 of
  /// 4194304 table rows (…)"; empty: every row.
  std::string replayed_on;
  /// Data that fails only where the bound it is held to is vacuous (and lies within it at every
  /// other position): which positions that recipe cannot certify, instead of a mistake hunted
  /// (docs/certify.md §3); empty otherwise.
  std::string vacuous;
};

/// The math library behind a certificate's data: the class its recipe bounds assume, and what
/// the data shows of the library it actually used (docs/numerics.md §5).
struct library_figures {
  std::string assumed;                 // the library class of the recipe bounds
  std::optional<double> max_trig_ulp;  // --max-trig-ulp: the largest measured trig error allowed
  /// Measured on fp32 tables whose angles are the hf recipe's own: max trig error (ulps of the
  /// fp32 value, against m̂·cos θ̂ of the recipe's angle) and pow/reciprocal error (ulps, against
  /// the recipe's own exponent), and the tightest class the trig error fits.
  std::optional<double> trig_ulp;
  std::optional<double> trig_abs;  // the same trig error, absolute (fast-math bounds are absolute)
  std::optional<double> pow_ulp;
  std::string trig_class;
  std::string angles;  // whose angles the data follows ("hf", "ggml"), when measured
  std::string note;    // why a figure was not measured
  /// The rows the figures were measured on when not every row: "16384 of 1048576 positions".
  std::string measured_on;
  /// Where the fit did not measure the trig error (16-bit tables; angles it did not recognise,
  /// as fast-math's): the least error the table's values imply around the hf recipe's replayed
  /// angles (docs/numerics.md §13.7), in ulps and absolute, and its growth with the angle
  /// (max (least − the fast-math constant)/|θ̂|); trig_class then names what they show.
  std::optional<double> trig_ulp_at_least, trig_abs_at_least, trig_slope_at_least;
  /// The data's library lies outside the class the bounds assume, shown by more than its grade:
  /// e.g. a table within two ulps of the exact values whose values are fast-math's bit for bit
  /// where they are not the exact ones' (docs/numerics.md §13.7). A claim then does not hold.
  std::string outside_class;
};

/// How certification read one role of a dump (docs/design.md §6.2): which tensors, in which
/// layout, as which shape, and what decided it.
struct layout_reading {
  std::string role;        // "table", "q/k"
  std::string layout;      // "halves", "vllm", "bhtd", …
  std::string tensors;     // the tensors and their shapes as dumped
  std::string read_as;     // "[B=1, H=4, T=512, D=128]; outputs in half-split order", …
  std::string decided_by;  // "--qk-layout", "the positions 'position_ids' [1, 512]", "the data: …"
};

/// What certification adds to a report (docs/design.md §4.2, §6.9).
/// One site of a model trace (docs/certify.md §8): a decoder layer's rotation, or a model-level
/// site (a learned table at the input, T5's buckets), held to the encoding its config gives it.
struct layer_result {
  std::int64_t index = -1;  // the decoder layer; −1 for a model-level site
  std::string site;         // "" (the attention's rotation), "indexer", "embed", "encoder", …
  std::string type;         // the config's layer type ("sliding_attention", …)
  std::string spec;         // the expected encoding's canonical SPEC; "none" for a NoPE layer
  std::string rule;         // which config keys decided it
  std::string read;         // what the trace holds for it ("q, k (bhtd)", "none: not rotated")
  std::vector<std::string> checks;  // the ids of its check rows
  grade result = grade::not_certified;
  double max_rho = 0;                 // in the bound the data is held to
  std::optional<std::string> named;   // the mistake that explains this site's data
  std::vector<std::string> findings;  // what the data implies (parameters, the spec it follows)

  bool operator==(const layer_result&) const = default;
};

struct certification {
  std::string spec;  // canonical SPEC string
  /// The recipe bound the data is held to ("hf", "ggml", "vllm-bf16", "exact"): the claimed
  /// recipe's (vllm: its looser cache), else hf (ggml for the ggml form, which has no hf
  /// pipeline). The checks' max ρ, the first mismatches and the diagnosis's max ρ are in this
  /// bound.
  std::string held_to = "hf";
  std::string what;                     // "rope table (separate layout, detected)", …
  std::vector<layout_reading> layouts;  // how each role was read (RoPE tables and q/k)
  std::vector<input_file> inputs;
  std::uint64_t positions = 0;
  std::int64_t min_position = 0, max_position = 0;
  bool exhaustive = false;  // the rows cover every position 0 … max_position
  std::optional<std::string> claimed_recipe;
  bool claim_holds = true;
  /// --libm named a class (not the default): a claim on the library, which holds only where pev
  /// measured the library (docs/numerics.md §13.4).
  bool libm_claimed = false;
  /// A claim pev could not check (it then does not hold): what could not be measured.
  std::string claim_unchecked;
  /// A live implementation (plugin or command): pev drew its positions and inputs, and ran the
  /// property suites, from provenance.seed. A dump's certification draws nothing at random.
  bool live = false;
  grade result = grade::not_certified;
  library_figures library;
  std::optional<diagnosis> why;
  double explain_threshold = 0;  // ρ under which a mistake explains the data
  double seconds = 0;            // wall time: differs between identical runs
  /// A shard's certificate (`pev certify --shard I/N`, docs/design.md §9.3): which rows it
  /// compared, the options of the run (shards of one run agree on them) — never certified on its
  /// own.
  struct shard_of {
    int index = 0, count = 1;
    std::string options;  // the run's options, canonical text
    bool operator==(const shard_of&) const = default;
  };
  std::optional<shard_of> shard;
  /// A merged certificate (`pev merge`, docs/certify.md §6): each shard certificate's SHA-256 (of
  /// its certificate.json as read), in shard order, and whether merge re-hashed the inputs the
  /// shards name (present where merge ran; absent: not merged).
  struct merged_shard {
    int index = 0;
    std::string sha256;
    bool operator==(const merged_shard&) const = default;
  };
  std::vector<merged_shard> merged_from;
  std::optional<bool> inputs_reverified;
  /// The `pev certify` arguments that produced the certificate (after `pev`, --out included) and
  /// the directory it ran in: what `pev verify` re-runs (docs/certify.md §7). Empty: not recorded
  /// (a certificate of pev's Python module or the library).
  std::vector<std::string> command;
  std::string cwd;
  /// A model trace's certificate (docs/certify.md §8): the config's model type and every site,
  /// in the config's order; the grade is the worst site's. Empty: one dump.
  std::string model;
  std::vector<layer_result> layers;

  /// 0 certified (and the claimed recipe holds), 1 otherwise; a shard whose rows hold:
  /// kExitPartial (its verdict is the merged certificate's).
  int exit_code() const;
};

/// One spec of a report's suite: the name its checks carry (check::spec_name), its family, its
/// canonical SPEC and where it came from ("built-in suite", "--spec", "--config PATH").
struct suite_spec {
  std::string name;
  std::string family;
  std::string spec;
  std::string source;
  bool operator==(const suite_spec&) const = default;
};

/// A plot the writers could not draw (gnuplot missing or failing on its script): the report or
/// certificate stands without it (docs/design.md §8.3).
struct skipped_plot {
  std::string file;    // the SVG's path in the output directory, e.g. "plots/heatmap_cos.svg"
  std::string reason;  // why, e.g. "gnuplot failed (exit status 1): …"
  bool operator==(const skipped_plot&) const = default;
};

/// Everything a report shows; with `certification`, a certificate.
struct results {
  int schema_version = kSchemaVersion;
  provenance prov;
  std::vector<suite_spec> specs;  // a report's suite, in order (empty for a certificate)
  std::vector<check> checks;
  std::vector<invariance_series> invariance;
  std::vector<wavelength_series> wavelengths;
  std::vector<std::string> notes;  // suite-level remarks (e.g. cells left out and why)
  std::optional<report::certification> certification;
  /// Plots not drawn and why (set by the writers; the JSON's "plots_skipped", written only when
  /// some are): never part of a verdict.
  std::vector<skipped_plot> plots_skipped;

  bool all_pass() const {
    for (const auto& c : checks) {
      if (!c.pass) return false;
    }
    return true;
  }
  /// 0 when every check passes (a report) or the implementation is certified (a certificate).
  int exit_code() const;
};

}  // namespace pev::report

#pragma once
// The recipe replay of a RoPE table (docs/numerics.md §13.7): the hf recipe's angles are
// deterministic, θ̂ = fl32(fl32(p)·f̂_i) for the table's fp32 frequencies f̂_i, so a table holds on
// the hf rung when every value lies in what that recipe's arithmetic can produce from θ̂ — the
// library's sin/cos within its class around cos θ̂, times the fp32 attention factor, rounded to
// the output type (vLLM: through its 16-bit cache first). The position-growing analytic bound of
// the contracts stays for what has no replay (q/k, the ggml form, MRoPE tables).

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "detail.h"
#include "layout.h"
#include "pev/compare/reference.h"
#include "pev/impl/contract.h"
#include "pev/kernel/rope.h"
#include "pev/metric/libm.h"

namespace pev::certify::detail {

/// The rungs a replay decides, in ladder order of the accumulators (hf, its vLLM caches, ggml).
inline constexpr std::array<const char*, 4> kReplayRungs = {"hf", "vllm-fp16", "vllm-bf16", "ggml"};

/// A pipeline's fp32 attention factor m̂: the exact m and a bound on |m̂ − m|.
struct replay_magnitude {
  double m = 1, err = 0;
  /// m̂ is exactly 1: the product by it is exact (impl::times_m).
  bool exact() const { return m == 1.0 && err == 0.0; }
};

/// How a table is replayed: the hf recipe's fp32 frequencies, ggml's recurrence with its ratio,
/// and each pipeline's attention factor.
struct replay_plan {
  bool on = false;          // a replay exists (a 1-D RoPE table)
  bool hf_on = false;       // the hf recipe's (and vLLM's caches): an hf pipeline
  std::vector<float> freq;  // per pair: the fp32 frequency f̂_i of the hf angles
  /// The hf choice's check on every row (a pair whose choice leaves a value beyond every rung
  /// there is chosen again on every row) is left to the caller, whose replay of every row tells
  /// it (pairs_beyond_every_rung; docs/numerics.md §13.9).
  bool every_row_deferred = false;
  /// The vLLM caches the hf choice weighs (kReplayRungs 1, 2): every value on the cache's grid.
  std::array<bool, 2> caches_weighed{};
  /// With every_row_deferred: per pair, the candidate frequencies the choice weighed.
  std::vector<std::vector<float>> candidates;
  replay_magnitude hf_m;
  std::string frequencies;  // how freq was taken, for the certificate
  /// ggml's recurrence (kernel::ggml_angle_plan) with the ratio ts that fits the table best.
  std::optional<kernel::ggml_angle_plan> ggml;
  replay_magnitude ggml_m;
  std::string ratio;  // how ts was taken, for the certificate
  const metric::libm* lib = nullptr;
};

/// One check's replay figures over its rows (mergeable: maxima and counts).
struct replay_acc {
  std::array<double, 4> rho{};                // per kReplayRungs
  std::array<std::uint64_t, 2> off_grid{};    // values not in fp16, bf16 (vllm-fp16, vllm-bf16)
  double trig_least = 0, trig_least_ulp = 0;  // the least trig error the values imply
  double slope_least = 0;                     // max (least − kFastMathAbs)/|θ̂|
  /// The same three around the exact angles p·θ_i (the values against the exact m·cos, m·sin).
  double exact_least = 0, exact_least_ulp = 0, exact_slope_least = 0;
  /// Per kReplayRungs, by octave key bit_width(p): the replay's largest bound on |got − exact|
  /// and largest ρ.
  std::array<std::array<double, 65>, 4> oct_bound{}, oct_rho{};
  /// Per pair: the rungs (bit g of kReplayRungs hf, vllm-fp16, vllm-bf16) some value of the pair
  /// lies beyond (ρ > 1), for a deferred check of the hf choice (pairs_beyond_every_rung).
  std::vector<std::uint8_t> beyond;
  void merge(const replay_acc& o);
};

/// The replay of table `t` (dtype T) of spec `s` (`seq`: stateful types' sequence length), off
/// (plan.on false) for MRoPE tables; `hf` null: no hf pipeline (the ggml form), `ggml` the ggml
/// contract; m the exact attention factor, theta the exact frequencies. hf frequencies: the dump's
/// fp32 `inv_freq` where it lies within the hf contract's bound of every pair's exact frequency;
/// else, per pair, the fp32 frequency within that bound (up to 64 nearest the exact one) whose
/// replay fits every row of the table best (on the rung that fits it best: hf or a vLLM cache).
/// ggml's ratio: of the 17 fp32 values nearest powf(b, −2/d), the one that fits every row best.
/// The same in every shard; chosen on `threads` threads, on the `rows` rows of the largest
/// positions (0: every row). `defer`: the choice's check on every row is left to the caller
/// (replay_plan::every_row_deferred), whose replay of every row tells it (docs/numerics.md §13.9).
template <class T>
replay_plan plan_replay(const spec::rope& s, std::optional<std::int64_t> seq,
                        const impl::rope_contract* hf, const impl::rope_contract& ggml, double m,
                        const std::vector<double>& theta, const table_source& t,
                        const std::vector<std::int64_t>& pos, const io::array* inv_freq,
                        const metric::libm& lib, int threads, std::size_t rows = 0,
                        bool defer = false);

/// Replays rows [first, end) of `t` (positions `pos`) again under plan `p` into `cos` and `sin`,
/// emptied first, with the exact values from a copy of `ref`: the replay of a plan whose
/// deferred check chose other frequencies.
template <class T>
void replay_again(const replay_plan& p, const compare::rope_reference& ref, const table_source& t,
                  const std::vector<std::int64_t>& pos, std::size_t first, std::size_t end,
                  replay_acc& cos, replay_acc& sin);

/// The pairs whose hf choice leaves a value of the replay of every row (`cos`, `sin`) beyond
/// every rung the choice weighs: those a deferred check chooses again on every row.
std::vector<std::size_t> pairs_beyond_every_rung(const replay_plan& p, const replay_acc& cos,
                                                 const replay_acc& sin);

/// A deferred check of the hf choice (replay_plan::every_row_deferred): `pairs` chosen again on
/// every row of `t`, each its best candidate; whether a frequency changed.
template <class T>
bool choose_again_on_every_row(replay_plan& p, const std::vector<std::size_t>& pairs,
                               const table_source& t, const std::vector<std::int64_t>& pos,
                               int threads);

/// Replays rows r0 … r0 + positions.size() − 1 of `t` into the cos and sin checks' figures;
/// exact_cos/exact_sin: the reference's exact values of those rows, [rows, pairs].
template <class T>
void replay_rows(const replay_plan& p, const table_source& t, std::size_t r0,
                 std::span<const std::int64_t> positions, std::span<const double> exact_cos,
                 std::span<const double> exact_sin, std::int64_t pairs, replay_acc& cos,
                 replay_acc& sin);

/// The choice's check on every row, deferred to the replay of every row (docs/numerics.md
/// §13.9): the pairs it leaves a value beyond every rung chosen again on every row, and the rows
/// [first_row, end_row) replayed again where that changed a frequency.
template <class T>
void finish_choice(const context& k, const compare::rope_reference& ref, const table_source& t,
                   const std::vector<std::int64_t>& pos, std::size_t first_row, std::size_t end_row,
                   replay_plan& plan, replay_acc& rcos, replay_acc& rsin);

/// The rungs the replay decides on the last two checks of `k` (the table's cos and sin); the
/// library's least error around the angles the values follow (docs/numerics.md §13.7).
void record_table_replay(context& k, const replay_plan& plan, const replay_acc& rcos,
                         const replay_acc& rsin);

/// Whether the replayed checks' values (a table's cos and sin) imply a smaller trig error around
/// the exact angles p·θ_i than around the hf recipe's (a correctly rounded or faithful table): the
/// angles its library is measured against (docs/numerics.md §13.7). Decided from the checks'
/// records, so a merge of shards decides as the unsharded run does.
bool follows_exact_angles(const std::vector<check>& checks);

/// The least trig error in ulps the replayed checks imply around the angles they follow.
double least_trig_ulp(const std::vector<check>& checks);

/// Records a check's replay (check::replayed, its octaves mapped onto c.octaves), with its least
/// trig error around both sets of angles; settle() then grades it on the deciding ladder.
void record_replay(check& c, const replay_acc& a, const replay_plan& p);

/// The library a replayed table shows where the fit did not measure it (a 16-bit table, or angles
/// the fit did not take for the hf recipe's — fast-math's): the least trig error the values of
/// `checks`' replays imply around the angles they follow (follows_exact_angles: the exact ones,
/// then `angles` "exact", else hf's), and the class that names it. Unchanged where the fit
/// measured the library (trig_ulp) or nothing was replayed.
void library_from_replay(report::library_figures& lib, const std::vector<check>& checks);

/// Merges the replay of a later shard's rows into `into` (maxima; a rung either cannot follow is
/// left out, its counts added).
void merge_replay(check::recipe_replay& into, const check::recipe_replay& later);

/// The deciding ladder ρ of a replayed check, from its figures' ladder (check::ladder_rho as
/// compare::figures wrote it): exact and drift-free keep theirs; each recipe rung k takes
/// min(ρ of rung k − 1, its own), its own being the replay's ρ where the data can follow the
/// recipe (vLLM: values in its 16-bit format), else none (+∞: the rung adds nothing). The max ρ is
/// then the held rung's, and the octave figures the held rung's replay where it decides.
void decide_ladder(check& c, const std::string& held);

}  // namespace pev::certify::detail

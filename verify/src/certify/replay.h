#pragma once
// The recipe replay of a RoPE table (docs/numerics.md §13.7): the hf recipe's angles are
// deterministic, θ̂ = fl32(fl32(p)·f̂_i) for the table's fp32 frequencies f̂_i, so a table holds on
// the hf rung when every value lies in what that recipe's arithmetic can produce from θ̂ — the
// library's sin/cos within its class around cos θ̂, times the fp32 attention factor, rounded to
// the output type (vLLM: through its 16-bit cache first). The position-growing analytic bound of
// the contracts stays for what has no replay (q/k, the ggml form, MRoPE tables).

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "detail.h"
#include "layout.h"
#include "pev/impl/contract.h"
#include "pev/metric/libm.h"

namespace pev::certify::detail {

/// The rungs a replay decides, in ladder order, and the storage format of each (none: hf).
inline constexpr std::array<const char*, 3> kReplayRungs = {"hf", "vllm-fp16", "vllm-bf16"};

/// How a table is replayed: its fp32 frequencies and attention factor.
struct replay_plan {
  bool on = false;         // a replay exists (a 1-D RoPE table of an hf pipeline)
  std::vector<float> freq;  // per pair: the fp32 frequency f̂_i of the replayed angles
  double m = 1;             // the exact attention factor
  double m_err = 0;         // bound on |m̂ − m| of the pipeline's fp32 factor
  bool m_exact = true;      // m̂ is exactly 1: the product by it is exact
  const metric::libm* lib = nullptr;
  std::string frequencies;  // how freq was taken, for the certificate
};

/// One check's replay figures over its rows (mergeable: maxima and counts).
struct replay_acc {
  std::array<double, 3> rho{};               // per kReplayRungs
  std::array<std::uint64_t, 2> off_grid{};   // values not in fp16, bf16 (vllm-fp16, vllm-bf16)
  double trig_least = 0, trig_least_ulp = 0;  // the least trig error the values imply
  double slope_least = 0;                     // max (least − kFastMathAbs)/|θ̂|
  /// By octave key bit_width(p): the hf replay's largest bound on |got − exact| and largest ρ.
  std::array<double, 65> oct_bound{}, oct_rho{};
  void merge(const replay_acc& o);
};

/// The replay of table `t` (dtype T) of spec `s`: off (plan.on false) for the ggml form and MRoPE
/// tables. Frequencies: the dump's fp32 `inv_freq` where it lies within the hf contract's bound
/// of every pair's exact frequency; else, per pair, the fp32 frequency within that bound (up to
/// 64 nearest the exact one) whose replay fits the table's rows best (ρ of the hf rung over a
/// fixed sample of rows, the largest positions first; the same in every shard).
template <class T>
replay_plan plan_replay(const spec::rope& s, const impl::rope_contract& hf, double m,
                        const std::vector<double>& theta, const table_source& t,
                        const std::vector<std::int64_t>& pos, const io::array* inv_freq,
                        const metric::libm& lib);

/// Replays rows r0 … r0 + positions.size() − 1 of `t` into the cos and sin checks' figures;
/// exact_cos/exact_sin: the reference's exact values of those rows, [rows, pairs].
template <class T>
void replay_rows(const replay_plan& p, const table_source& t, std::size_t r0,
                 std::span<const std::int64_t> positions, std::span<const double> exact_cos,
                 std::span<const double> exact_sin, std::int64_t pairs, replay_acc& cos,
                 replay_acc& sin);

/// Records a check's replay (check::replayed, its octaves mapped onto c.octaves) and settles its
/// grade: decide_ladder, then grade_of.
void record_replay(check& c, const replay_acc& a, const replay_plan& p, format out,
                   bool ggml_angles);

/// The deciding ladder ρ of a replayed check, from its figures' ladder (check::ladder_rho as
/// compare::figures wrote it): exact and drift-free keep theirs; each recipe rung k takes
/// min(ρ of rung k − 1, its own), its own being the replay's ρ (hf, vllm: where the data follows
/// the cache), the figures' ρ (ggml: where the angles are ggml's recurrence and no bound up to it
/// is vacuous), else none (+∞: the rung adds nothing). The max ρ is then the held rung's.
void decide_ladder(check& c, const std::string& held);

}  // namespace pev::certify::detail

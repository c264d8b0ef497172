#pragma once
// Precision-drift sweeps (docs/design.md §8, issue 5): every (spec, strategy, dtype) cell of a
// suite is evaluated by its production kernel and compared, value by value, with the exact
// reference (the fast exact reference of ref/fast.h by default, bit-identical to the MPFR path), at
//   - every position below `dense_below`,
//   - then, per octave [2^k, 2^(k+1)) up to max_position (included): its two ends, 2^k + 1 and
//     `samples_per_octave` deterministic samples drawn from the seed,
//   - then a local worst-case search: every position within ±search_radius of the octave's
//     largest-ρ position (per check, so a check's figures never depend on the others),
// or every position 0 … max_position with `exhaustive`. max_position is the largest position, as
// everywhere in pev (docs/design.md §5.3).
//
// A check passes when max ρ ≤ 1, ρ = |ŷ − y| / B with B the analytic bound of the strategy's
// contract (pev/impl/contract.h; accurate: 1 ulp of the output type). Results are
// pev::report::results.
//
// Threads: reference evaluations run on the calling thread (the reference is single-threaded);
// kernels and comparisons of the checks run on a oneTBB arena of `threads` workers. Results do not
// depend on the thread count. Sharding (`shard_index`/`shard_count`) splits the checks (and the
// invariance series) round-robin in suite order, so merged shards equal the unsharded run.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pev/core/sampling.h"
#include "pev/report/result.h"
#include "pev/spec/spec.h"

namespace pev::sweep {

/// A named encoding of a suite.
struct suite_entry {
  std::string name;
  spec::encoding encoding;
  /// Where it came from, for the report's table of specs ("built-in suite", "--spec",
  /// "--config path/config.json"); empty: "built-in suite".
  std::string source;
};

/// The embedded default suite (issue 5): Llama-2, Llama-3.1, Qwen2.5 YaRN, DeepSeek-V3's rope part,
/// gpt-oss, Gemma-3 global layers, a Phi-3-shaped LongRoPE, sinusoidal d_model 512, ALiBi with 32
/// and 12 heads, T5 buckets (32, max_distance 128, bidirectional).
std::vector<suite_entry> default_suite();

struct options {
  std::int64_t max_position = (std::int64_t{1} << 20) - 1;  // the largest position (included)
  bool exhaustive = false;
  std::int64_t dense_below = 4096;
  int samples_per_octave = 64;
  int search_radius = 16;
  std::uint64_t seed = kDefaultSeed;
  bool mpfr_reference = false;  // the MPFR path instead of the fast exact reference
  int threads = 0;              // 0: all hardware threads
  int shard_index = 0;
  int shard_count = 1;
  std::string suite_name = "default";
  /// Called on the calling thread after each spec with (specs done, specs total).
  std::function<void(std::size_t, std::size_t)> progress;
};

/// The sampled positions of `o` (before the local search), sorted and unique.
std::vector<std::int64_t> sample_positions(const options& o);

/// Runs the sweep; provenance is filled except `generated_at` (the caller's clock).
report::results run(const std::vector<suite_entry>& suite, const options& o);

}  // namespace pev::sweep

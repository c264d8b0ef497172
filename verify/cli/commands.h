#pragma once
// Subcommands of the `pev` tool. Each registers its options on the CLI11 app and returns the
// callback that runs it; callbacks throw pev::error for bad usage or input (exit 2) and return the
// exit code.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "output.h"
#include "pev/kernel/strategy.h"
#include "pev/ref/recipe.h"
#include "pev/spec/spec.h"

namespace pev::cli {

/// A registered subcommand and what runs it when it was selected.
struct command {
  CLI::App* app;
  std::function<int()> run;
};

command add_list(CLI::App& app);
command add_reference(CLI::App& app);
command add_compute(CLI::App& app);
command add_certify(CLI::App& app);
command add_serve(CLI::App& app);
command add_report(CLI::App& app);
command add_merge(CLI::App& app);

/// Options shared by commands that evaluate one encoding at a set of positions.
struct encoding_options {
  std::string spec_text;
  std::string config_file;
  std::string layer_type;
  std::string positions;
  std::string positions_file;
  std::string what;
  std::string format = "text";
  std::string out;
  std::optional<std::int64_t> seq_len;
  int digits = 0;

  void add_to(CLI::App& cmd);
  /// The encoding from --spec or --config (learned tables loaded from their file); warnings go to
  /// `warn`.
  spec::encoding encoding(const warning_sink& warn = warn_to_stderr) const;
  /// The positions from --positions or --positions-file; `allow_negative` for relative distances.
  std::vector<std::int64_t> read_positions(bool allow_negative) const;
  /// The positions a request for `what` of `e` needs (relative distances may be negative; outputs
  /// without positions read them only when given, and then use {0}).
  std::vector<std::int64_t> positions_for(const spec::encoding& e, const std::string& what) const;
  /// An output with the provenance fields filled (what, dtype, spec, digits).
  output start_output(const spec::encoding& e, std::optional<dtype> t) const;
  /// Checks the numeric options' ranges (pev::error naming the flag).
  void check_ranges() const;
  /// Refuses an input (--config, --positions-file, a learned table of `e`) that is --out.
  void refuse_inputs_inside_out(const spec::encoding& e) const;
};

/// The largest --max-position (report, certify): positions are sampled per octave [2^k, 2^(k+1)),
/// and the octave above 2^62 does not fit in int64.
inline constexpr std::int64_t kMaxPositionLimit = std::int64_t{1} << 62;

/// The most worker threads (oneTBB's allocator crashes with tens of thousands).
inline constexpr std::int64_t kMaxThreads = 1024;
/// The most sampled positions per octave (report --samples-per-octave, certify --samples).
inline constexpr std::int64_t kMaxSamples = 65536;

/// Throws pev::error "FLAG: expected a value in [LO, HI], got V" unless lo ≤ v ≤ hi (NaN is
/// outside every range). Every numeric option is checked so before any work.
void require_range(const char* flag, double v, double lo, double hi);
void require_range(const char* flag, std::int64_t v, std::int64_t lo, std::int64_t hi);

/// Parses --shard I/N (0-based, 0 ≤ I < N; report and certify); pev::error naming --shard.
std::pair<int, int> parse_shard(const std::string& text);

/// Sequence length of a stateful rope type: --seq-len, else max(position) + 1 (transformers).
std::int64_t stateful_seq_len(const std::vector<std::int64_t>& pos,
                              std::optional<std::int64_t> seq_len);

/// Parses A:B[:STEP] (half-open, STEP > 0) or a single integer N; throws pev::error naming the
/// flag.
std::vector<std::int64_t> parse_position_range(const std::string& text, bool allow_negative);

/// Checks positions given as a list (a positions file; pev's Python module): at least one, at most
/// 2^24 (one request), none negative unless `allow_negative`; pev::error naming `source`.
void check_positions(const std::vector<std::int64_t>& v, bool allow_negative,
                     const std::string& source);

// The values of `pev reference` and `pev compute`, shared with pev's Python module (docs/python.md
// §3) so that both give the same bits. `out` comes from encoding_options::start_output (what,
// dtype); the shapes are those of docs/design.md §5.4. pev::error for a `what` the family does not
// have or a request of more than 2^26 values.

/// The output of `pev reference` as rows produced chunk by chunk, for the outputs that stream
/// (docs/design.md §5.4: RoPE tables and sinusoidal PE in a float dtype with the exact recipe;
/// `mpfr`: --reference mpfr): shapes set in `out`, the positions moved into it. None for the
/// outputs fill_reference holds in memory.
std::optional<row_stream> reference_rows(output& out, const spec::encoding& e,
                                         const std::string& recipe, std::vector<std::int64_t>& pos,
                                         std::optional<std::int64_t> seq_len, bool mpfr);
/// The recipe's exact values of `e` at `pos` (stateful rope types: `seq_len`, else max + 1).
void fill_reference(output& out, const spec::encoding& e, const ref::recipe& r,
                    const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len);
/// Strategy `st`'s kernel output of `e` at `pos` in out.dtype (fp32, fp16 or bf16).
void fill_compute(output& out, const spec::encoding& e, kernel::strategy st,
                  const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len);

}  // namespace pev::cli

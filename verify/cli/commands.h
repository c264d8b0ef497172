#pragma once
// Subcommands of the `pev` tool. Each registers its options on the CLI11 app and returns the
// callback that runs it; callbacks throw pev::error for bad usage or input (exit 2) and return the
// exit code.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "output.h"
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
  /// The encoding from --spec or --config (learned tables loaded from their file).
  spec::encoding encoding() const;
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

/// Sequence length of a stateful rope type: --seq-len, else max(position) + 1 (transformers).
std::int64_t stateful_seq_len(const std::vector<std::int64_t>& pos,
                              std::optional<std::int64_t> seq_len);

/// Parses A:B[:STEP] (half-open, STEP > 0) or a single integer N; throws pev::error naming the
/// flag.
std::vector<std::int64_t> parse_position_range(const std::string& text, bool allow_negative);

}  // namespace pev::cli

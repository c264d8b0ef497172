#pragma once
// Subcommands of the `pev` tool. Each registers its options on the CLI11 app and returns the
// callback that runs it, which hands them to pev::app (what the CLI shares with pev's Python
// module, docs/design.md §3.2); callbacks throw pev::error for bad usage or input (exit 2) and
// return the exit code.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pev/app/output.h"
#include "pev/core/error.h"
#include "pev/scalar/dtype.h"
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
command add_verify(CLI::App& app);

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
  app::output start_output(const spec::encoding& e, std::optional<dtype> t) const;
  /// Checks the numeric options' ranges (pev::error naming the flag).
  void check_ranges() const;
  /// Refuses an input (--config, --positions-file, a learned table of `e`) that is --out.
  void refuse_inputs_inside_out(const spec::encoding& e) const;
};

/// The arguments of this pev process after the program name (set by main before parsing): what
/// a certificate records for `pev verify` to re-run (docs/certify.md §7).
std::vector<std::string>& invocation();

}  // namespace pev::cli

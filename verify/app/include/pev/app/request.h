#pragma once
// One certify request (docs/certify.md §9): what `pev certify` and pev.certify (docs/python.md §4)
// ask for, resolved and run in one place — the spec (--spec, --config [--layer-type], or the dump's
// metadata), the inputs (dump files, tensors, a plugin, a command, a front end's live
// implementation), their hashes, trace vs dump vs live, and the defaults, which are written here
// once: each front end takes them from a default-constructed request.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/core/sampling.h"
#include "pev/kernel/strategy.h"

namespace pev::app {

/// Which front end asks: the flags of its messages are `--max-position` (cli) or `max_position`
/// (python).
enum class front_end { cli, python };

struct certify_request {
  front_end front = front_end::cli;

  // ---- The encoding: one of these, else the dump's metadata `spec` -----------------------------
  std::string spec_text;    // --spec
  std::string config_file;  // --config (a trace: every layer under its own type's encoding)
  std::string layer_type;   // --layer-type (a dump of one layer type; refused for a trace)
  /// Already parsed by the front end (pev.Spec), with the files it was read from.
  std::optional<spec::encoding> encoding;
  std::vector<certify::input_file> encoding_inputs;

  // ---- The implementation: one of these --------------------------------------------------------
  std::vector<std::filesystem::path> files;  // --impl: dump files (a model trace too)
  /// Tensors given in memory (pev.certify of a dict), each hashed as its row-major bytes.
  std::map<std::string, io::array> tensors;
  std::string plugin;       // --plugin
  bool in_process = false;  // --in-process (else the plugin runs isolated, `pev serve`)
  std::string exec;         // --exec
  /// A live implementation the front end makes (pev.certify of a callable) for the claimed
  /// encoding and --accuracy; it may set the live options it knows (the dtype of its answers,
  /// property_checks).
  std::function<std::unique_ptr<impl::live_implementation>(const spec::encoding&, kernel::strategy,
                                                           certify::live_options&)>
      live;

  // ---- How a dump is read and held (certify::options) ------------------------------------------
  std::string recipe, layout, qk_layout, qk_order;
  std::string positions;                                     // --positions A:B[:STEP]
  std::string positions_file;                                // --positions-file
  std::optional<std::vector<std::int64_t>> positions_given;  // positions as an array
  std::optional<std::int64_t> seq_len;
  bool diagnose = true;
  bool exhaustive = false;
  std::string reference = "fast";
  std::string libm = "any";
  std::optional<double> max_trig_ulp;
  std::int64_t threads = 0;
  std::string shard;   // --shard I/N; empty: the whole run
  std::string layers;  // --layers of a model trace: indices and ranges A:B

  // ---- A live implementation (certify::live_options; docs/certify.md §9) -----------------------
  // The defaults are the engine's own live_options' (written there once); pev certify shows them
  // in its --help and pev.certify takes them from here (pev._pev.certify_defaults()).
  /// Output dtype asked for; none: fp32 (a callable: the dtype of its first answer).
  std::optional<std::string> dtype;
  std::int64_t max_position = certify::live_options{}.max_position;
  std::int64_t samples = certify::live_options{}.samples;
  std::uint64_t seed = certify::live_options{}.seed;
  std::string accuracy = "hf";
  bool properties = certify::live_options{}.properties;
  std::int64_t property_cases = certify::live_options{}.property_cases;
  /// Seconds each response of --exec or an isolated --plugin may take.
  double timeout = 60;

  // ---- The front end's part --------------------------------------------------------------------
  /// --out: inputs inside it are refused before any work (empty: nothing is written yet).
  std::filesystem::path out;
  /// The command line `pev verify` re-runs (with the working directory); none: not recorded.
  std::optional<std::vector<std::string>> command;
  /// Progress on a terminal (docs/certify.md §9.1).
  bool progress = true;
  /// What pev says on the way ("spec from the dump's metadata: …"); none: nothing.
  std::function<void(const std::string&)> note;
  /// An in-process plugin: arms a guard against its exit() while it runs (the CLI's exit_guard),
  /// calling `on_exit` then; the guard is disarmed when what it returns is released.
  std::function<std::shared_ptr<void>(std::function<void(int status)> on_exit)> guard_exit;
  /// Where the certificate of a plugin that ended pev's process goes (written before the exit).
  std::function<void(const certify::certificate&)> publish;
};

/// `flag` ("--max-position") as the request's front end names it ("max_position" in Python).
std::string flag_name(const certify_request& r, const std::string& flag);

/// The live options (certify::live_options) of a request, checked: pev::error naming the flag.
certify::live_options live_options(const certify_request& r);

/// Certifies what the request asks for: a model trace layer by layer, a dump, or a live
/// implementation, with the request's inputs hashed in the certificate (docs/certify.md §9).
/// pev::error (exit 2) naming the flag for a request that cannot be certified as given.
certify::certificate certify(certify_request r);

}  // namespace pev::app

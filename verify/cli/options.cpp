// The options that `pev reference` and `pev compute` share (encoding_options) and --shard: CLI11
// registration, and the flags handed to pev::app.

#include <fmt/format.h>

#include <optional>
#include <string>

#include "commands.h"
#include "pev/app/encoding.h"
#include "pev/app/inputs.h"
#include "pev/app/limits.h"
#include "pev/app/positions.h"
#include "pev/app/shapes.h"
#include "pev/core/error.h"
#include "pev/io/positions.h"
#include "pev/spec/config.h"

namespace pev::cli {

void encoding_options::add_to(CLI::App& cmd) {
  auto* s = cmd.add_option("--spec", spec_text,
                           "Encoding as family[:key=value,...], e.g. sinusoidal:d_model=512 or "
                           "rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,"
                           "low_freq_factor=1,high_freq_factor=4,"
                           "original_max_position_embeddings=8192 (see `pev list`)");
  auto* c =
      cmd.add_option("--config", config_file,
                     "A Hugging Face config.json, read as its model family does in transformers "
                     "(RoPE; ALiBi, T5, sinusoidal families too; docs/encodings.md §7.8)")
          ->check(CLI::ExistingFile);
  s->excludes(c);
  cmd.add_option("--layer-type", layer_type,
                 "Layer-type group of a per-layer-type config (default: full_attention)")
      ->needs(c);
  auto* p = cmd.add_option("--positions", positions,
                           "Positions A:B[:STEP] (half-open, 64-bit) or a single N; for --what "
                           "buckets, relative distances key − query (negative allowed: "
                           "--positions=-8:9)");
  auto* pf = cmd.add_option("--positions-file", positions_file,
                            "Positions from a file: text (one integer per line), .npy or "
                            ".safetensors (int32/int64)")
                 ->check(CLI::ExistingFile);
  p->excludes(pf);
  cmd.add_option("--what", what,
                 "table, inv_freq, attention_factor (rope); pe (sinusoidal, learned); bias, slopes "
                 "(alibi); buckets (t5, shaw). Default: the family's main output");
  cmd.add_option("--format", format, "Output format: text, csv, json, npy, safetensors")
      ->capture_default_str();
  cmd.add_option("--out", out,
                 "Output file (default: stdout for text, csv and json): a regular file is replaced "
                 "atomically; '-' is stdout; a device or FIFO is written, a symlink followed");
  cmd.add_option("--seq-len", seq_len,
                 "Sequence length that selects dynamic/longrope frequencies (default: max "
                 "position + 1, as transformers)");
  cmd.add_option("--digits", digits,
                 "Significant digits of printed values (default: shortest round-trip for "
                 "fp32/fp16/bf16, 17 for fp64, 21 for exact)")
      ->check(CLI::Range(1, 100));
}

spec::encoding encoding_options::encoding(const warning_sink& warn) const {
  if (spec_text.empty() && config_file.empty()) {
    throw error("one of --spec SPEC or --config config.json is required");
  }
  if (!config_file.empty()) {
    spec::config_options o;
    o.layer_type = layer_type;
    return spec::parse_config_encoding_file(config_file, o, warn);
  }
  return app::parse_encoding(spec_text, warn);
}

std::vector<std::int64_t> encoding_options::read_positions(bool allow_negative) const {
  if (positions.empty() && positions_file.empty()) {
    throw error("one of --positions A:B[:STEP] or --positions-file FILE is required");
  }
  if (!positions.empty()) return app::parse_position_range(positions, allow_negative);
  auto v = io::read_positions_file(positions_file);
  app::check_positions(v, allow_negative, "--positions-file " + positions_file);
  return v;
}

std::vector<std::int64_t> encoding_options::positions_for(const spec::encoding& e,
                                                          const std::string& what) const {
  const bool relative =
      std::holds_alternative<spec::t5>(e) || std::holds_alternative<spec::shaw>(e);
  if (!(app::what_needs_positions(what) || !positions.empty() || !positions_file.empty()))
    return {0};
  // MRoPE (docs/encodings.md §4.6): positions are [streams, T].
  return app::stream_positions(
      e, read_positions(relative), !positions.empty(),
      positions.empty() ? "--positions-file " + positions_file : std::string("--positions"));
}

app::output encoding_options::start_output(const spec::encoding& e, std::optional<dtype> t) const {
  app::output out = app::start_output(e, what, t, digits);
  app::parse_out_format(format);  // reject a bad --format before any work
  return out;
}

void encoding_options::check_ranges() const {
  if (seq_len) app::require_range("--seq-len", *seq_len, 1, INT64_MAX);
}

void encoding_options::refuse_inputs_inside_out(const spec::encoding& e) const {
  std::vector<app::input_path> inputs = {{"--config", config_file},
                                         {"--positions-file", positions_file}};
  for (auto& f : app::encoding_files(e)) inputs.push_back(std::move(f));
  app::refuse_inputs_inside_out(out, inputs);
}

std::vector<std::string>& invocation() {
  static std::vector<std::string> args;
  return args;
}

}  // namespace pev::cli

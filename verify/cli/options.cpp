#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

#include "commands.h"
#include "inputs.h"
#include "layout.h"
#include "pev/core/error.h"
#include "pev/io/npy.h"
#include "pev/io/positions.h"
#include "pev/io/safetensors.h"
#include "pev/spec/config.h"
#include "pev/spec/parse.h"

namespace pev::cli {
namespace {

// At most this many positions per request: beyond it the exact reference takes hours and memory
// grows without bound; sweeps belong to `pev report`.
constexpr std::int64_t kMaxPositions = std::int64_t(1) << 24;

std::int64_t parse_int(std::string_view s, const std::string& whole) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec == std::errc::result_out_of_range) {
    throw error("--positions: '" + std::string(s) + "' is outside the 64-bit integer range (in '" +
                whole + "')");
  }
  if (ec != std::errc() || ptr != end || s.empty()) {
    throw error("--positions: expected A:B[:STEP] or N with integers, got '" + whole + "'");
  }
  return v;
}

void load_learned_table(spec::learned& l) {
  if (l.table_file.empty()) return;
  const std::filesystem::path path(l.table_file);
  io::array a;
  if (path.extension() == ".npy") {
    a = io::read_npy(path);
  } else if (path.extension() == ".safetensors") {
    const auto tf = io::read_safetensors(path);
    if (tf.names.size() == 1) {
      a = tf.tensors.at(tf.names[0]);
    } else if (const auto it = tf.tensors.find("table"); it != tf.tensors.end()) {
      a = it->second;
    } else {
      std::string names;
      for (const auto& n : tf.names) names += (names.empty() ? "'" : ", '") + n + "'";
      throw error("learned: table=" + l.table_file +
                  ": expected a tensor named 'table' or a single tensor, found " +
                  (names.empty() ? std::string("no tensors") : names));
    }
  } else {
    throw error("learned: table=" + l.table_file + ": expected a .npy or .safetensors file");
  }
  if (a.shape.size() != 2 || a.shape[0] != l.num_positions || a.shape[1] != l.d_model) {
    std::string shape;
    for (auto d : a.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw error("learned: table=" + l.table_file + " has shape [" + shape + "], expected [" +
                std::to_string(l.num_positions) + ", " + std::to_string(l.d_model) +
                "] (num_positions, d_model)");
  }
  l.table = a.to_doubles();
}

}  // namespace

std::vector<std::int64_t> parse_position_range(const std::string& text, bool allow_negative) {
  std::vector<std::string_view> parts;
  std::string_view rest(text);
  for (;;) {
    const auto colon = rest.find(':');
    parts.push_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  if (parts.size() > 3) throw error("--positions: expected A:B[:STEP], got '" + text + "'");
  std::vector<std::int64_t> out;
  if (parts.size() == 1) {
    out.push_back(parse_int(parts[0], text));
  } else {
    const std::int64_t a = parse_int(parts[0], text);
    const std::int64_t b = parse_int(parts[1], text);
    const std::int64_t step = parts.size() == 3 ? parse_int(parts[2], text) : 1;
    if (step <= 0) throw error("--positions: STEP must be positive, got " + std::to_string(step));
    if (b <= a) {
      throw error("--positions: the range " + text +
                  " is empty (A:B is half-open, B must exceed A)");
    }
    // Count without overflow: (b − a) can exceed INT64_MAX when a < 0.
    const unsigned long long span =
        static_cast<unsigned long long>(b) - static_cast<unsigned long long>(a);
    const unsigned long long count = (span - 1) / static_cast<unsigned long long>(step) + 1;
    if (count > static_cast<unsigned long long>(kMaxPositions)) {
      throw error("--positions: " + text + " has " + std::to_string(count) +
                  " positions; at most " + std::to_string(kMaxPositions) +
                  " per request (use a STEP, or split the range)");
    }
    out.reserve(count);
    for (unsigned long long k = 0; k < count; ++k) {
      out.push_back(static_cast<std::int64_t>(static_cast<unsigned long long>(a) + k * step));
    }
  }
  if (!allow_negative) {
    for (auto p : out) {
      if (p < 0) {
        throw error("--positions: negative position " + std::to_string(p) +
                    " (positions are ≥ 0; only relative distances for --what buckets may be "
                    "negative)");
      }
    }
  }
  return out;
}

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
  spec::encoding e = spec::parse_spec(spec_text, warn);
  if (auto* l = std::get_if<spec::learned>(&e)) load_learned_table(*l);
  return e;
}

std::vector<std::int64_t> encoding_options::read_positions(bool allow_negative) const {
  if (positions.empty() && positions_file.empty()) {
    throw error("one of --positions A:B[:STEP] or --positions-file FILE is required");
  }
  if (!positions.empty()) return parse_position_range(positions, allow_negative);
  auto v = io::read_positions_file(positions_file);
  check_positions(v, allow_negative, "--positions-file " + positions_file);
  return v;
}

void check_positions(const std::vector<std::int64_t>& v, bool allow_negative,
                     const std::string& source) {
  if (v.empty()) throw error(source + ": no positions");
  if (static_cast<std::int64_t>(v.size()) > kMaxPositions) {
    throw error(source + ": more than " + std::to_string(kMaxPositions) + " positions");
  }
  if (!allow_negative) {
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (v[k] < 0) {
        throw error(source + ": negative position " + std::to_string(v[k]) + " at index " +
                    std::to_string(k));
      }
    }
  }
}

std::vector<std::int64_t> encoding_options::positions_for(const spec::encoding& e,
                                                          const std::string& what) const {
  const bool relative =
      std::holds_alternative<spec::t5>(e) || std::holds_alternative<spec::shaw>(e);
  if (!(what_needs_positions(what) || !positions.empty() || !positions_file.empty())) return {0};
  std::vector<std::int64_t> v = read_positions(relative);
  // MRoPE (docs/encodings.md §4.6): positions are [streams, T]. A range is text tokens (every
  // stream equal); a file holds the streams one after another.
  const auto* r = std::get_if<spec::rope>(&e);
  const std::int64_t S = r ? r->streams() : 1;
  if (S == 1) return v;
  if (!positions.empty()) {
    std::vector<std::int64_t> all;
    for (std::int64_t k = 0; k < S; ++k) all.insert(all.end(), v.begin(), v.end());
    if (static_cast<std::int64_t>(all.size()) > kMaxPositions) {
      throw error("--positions: more than " + std::to_string(kMaxPositions) +
                  " positions over the MRoPE streams");
    }
    return all;
  }
  if (static_cast<std::int64_t>(v.size()) % S != 0) {
    throw error("--positions-file " + positions_file + ": " + std::to_string(v.size()) +
                " positions do not form the spec's [" + std::to_string(S) +
                ", T] MRoPE position streams (one row per mrope_section entry)");
  }
  return v;
}

output encoding_options::start_output(const spec::encoding& e, std::optional<dtype> t) const {
  output out;
  out.what = what.empty() ? default_what(e) : what;
  out.dtype = t;
  out.spec = spec::to_spec_string(e);
  out.digits = digits;
  parse_out_format(format);  // reject a bad --format before any work
  return out;
}

void encoding_options::check_ranges() const {
  if (seq_len) require_range("--seq-len", *seq_len, 1, INT64_MAX);
}

void encoding_options::refuse_inputs_inside_out(const spec::encoding& e) const {
  std::vector<input_path> inputs = {{"--config", config_file},
                                    {"--positions-file", positions_file}};
  for (auto& f : encoding_files(e)) inputs.push_back(std::move(f));
  cli::refuse_inputs_inside_out(out, inputs);
}

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  auto bad = [&]() -> std::pair<int, int> {
    throw error("--shard: expected I/N with integers 0 <= I < N, got '" + text + "'");
  };
  if (slash == std::string::npos) return bad();
  try {
    std::size_t a = 0, b = 0;
    const int i = std::stoi(text.substr(0, slash), &a);
    const int n = std::stoi(text.substr(slash + 1), &b);
    if (a != slash || b != text.size() - slash - 1 || n < 1 || i < 0 || i >= n) return bad();
    return {i, n};
  } catch (const std::exception&) {
    return bad();
  }
}

void require_range(const char* flag, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    throw error(fmt::format("{}: expected a value in [{}, {}], got {}", flag, lo, hi, v));
  }
}

void require_range(const char* flag, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  if (v < lo || v > hi) {
    throw error(fmt::format("{}: expected an integer in [{}, {}], got {}", flag, lo, hi, v));
  }
}

std::int64_t stateful_seq_len(const std::vector<std::int64_t>& pos,
                              std::optional<std::int64_t> seq_len) {
  if (seq_len) {
    if (*seq_len < 1) throw error("--seq-len must be at least 1, got " + std::to_string(*seq_len));
    return *seq_len;
  }
  const std::int64_t max_pos = pos.empty() ? 0 : *std::max_element(pos.begin(), pos.end());
  return max_pos == INT64_MAX ? max_pos : max_pos + 1;
}

}  // namespace pev::cli

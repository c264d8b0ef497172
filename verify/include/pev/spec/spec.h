#pragma once
// pev::spec — the one description of a positional encoding that parsing, the reference, the kernels
// and certification share (docs/design.md §3.4). Plain structs with named fields; parameter names
// follow Hugging Face `rope_parameters` so that a model's config.json is valid input. Structs are
// validated when they are built by the parsers (spec/parse.h, spec/config.h); `validate` re-checks
// a struct built by hand.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "pev/core/error.h"

namespace pev::spec {

// clang-format off
/// Sinusoidal absolute encoding (docs/encodings.md §2.1, §2.2).
/// interleaved (paper): PE(p, 2i) = sin(p·ω_i), PE(p, 2i+1) = cos(p·ω_i),
///   ω_i = base^(−2i/d_model); odd d_model: column j uses ω_{⌊j/2⌋} as in HF
///   create_sinusoidal_embeddings.
/// blocked (fairseq / tensor2tensor): [sin … | cos …], h = ⌊d/2⌋,
///   ω_j = exp(−j·ln(base)/(h − freq_shift)); freq_shift 1 is fairseq (last frequency exactly
///   1/base), 0 the paper's frequencies (diffusers downscale_freq_shift); odd d appends one zero
///   column.
// clang-format on
enum class sinusoidal_layout { interleaved, blocked };
struct sinusoidal {
  std::int64_t d_model = 0;
  double base = 10000.0;
  sinusoidal_layout layout = sinusoidal_layout::interleaved;
  double freq_shift = 1.0;  // blocked only

  bool operator==(const sinusoidal&) const = default;
};

/// Learned absolute table [num_positions, d_model], optionally linearly interpolated to
/// target_positions (PyTorch interpolate conventions; docs/encodings.md §2.4):
/// align_corners: new index t ↦ t·(L−1)/(L′−1); otherwise (t+½)·L/L′ − ½, clamped to [0, L−1].
/// Position p reads row p + offset of the (interpolated) table (OPT's embed_positions: offset 2).
/// The table comes from a file (`table`) or is generated deterministically from `seed`.
struct learned {
  std::int64_t num_positions = 0;
  std::int64_t d_model = 0;
  std::int64_t target_positions = 0;  // 0: no interpolation (lookup)
  bool align_corners = true;
  std::int64_t offset = 0;  // row of position p: p + offset (0 ≤ offset < rows)
  std::string table_file;   // npy or safetensors; empty: generated from seed
  std::uint64_t seed = 0;
  std::vector<double> table;  // row-major [num_positions, d_model], filled by the parser

  bool operator==(const learned&) const = default;
};
/// The rows of a learned encoding's table as positions index it: target_positions when it
/// interpolates, else num_positions.
std::int64_t learned_rows(const learned& s);
/// The row position p reads, p + offset; none when it lies outside [0, learned_rows).
std::optional<std::int64_t> learned_index(const learned& s, std::int64_t p);

/// ALiBi (Press et al.; docs/encodings.md §3.1). Slopes for any head count (non-powers of two by
/// the interleaving rule); bias(h, i, j) = m_h·(j − i) for query i and key j (the causal mask is
/// separate). max_bias replaces the 8 of 2^(−8h/H) (MPT alibi_bias_max).
struct alibi {
  std::int64_t num_heads = 0;
  double max_bias = 8.0;

  bool operator==(const alibi&) const = default;
};

/// T5 relative-position buckets (docs/encodings.md §3.2), r = key − query.
struct t5 {
  std::int64_t num_buckets = 32;
  std::int64_t max_distance = 128;
  bool bidirectional = true;

  bool operator==(const t5&) const = default;
};

/// Shaw et al. clipped relative distances: clip(r, −k, k) for r = key − query.
struct shaw {
  std::int64_t max_relative_position = 0;

  bool operator==(const shaw&) const = default;
};

/// `ggml` is not a transformers rope_type: it is llama.cpp's ggml_rope_ext stated with its own
/// parameters (the `ggml:` SPEC form, docs/encodings.md §8.7), never read from a config.json.
enum class rope_type { default_, linear, ntk, dynamic, yarn, llama3, longrope, proportional, ggml };
enum class rope_layout { neox, interleaved };

/// RoPE and its scalings (docs/encodings.md §4, §5). Frequencies are per pair i = 0 … pairs()−1.
struct rope {
  std::int64_t head_dim = 0;
  double partial_rotary_factor = 1.0;
  /// int(head_dim·partial_rotary_factor) (truncation, as HF); for `proportional` it equals head_dim
  /// and partial_rotary_factor instead sets how many leading pairs rotate.
  std::int64_t rotary_dim = 0;
  double rope_theta = 10000.0;
  rope_layout layout = rope_layout::neox;
  rope_type type = rope_type::default_;

  double factor = 1.0;      // linear, ntk, dynamic, yarn, llama3, longrope, proportional
  double freq_scale = 1.0;  // ggml-style frequency scaling θ_i·freq_scale (rope_type default only)
  std::int64_t max_position_embeddings = 0;           // L; 0 = not given
  std::int64_t original_max_position_embeddings = 0;  // Lo; 0 = not given

  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
  // As given (a config's null is nullopt; docs/encodings.md §5.7). transformers uses
  // get_mscale(f, mscale)/get_mscale(f, mscale_all_dim) only when both are truthy, so a 0 here
  // selects get_mscale(f).
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  // yarn and longrope
  std::optional<double> attention_factor;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // longrope
  std::vector<double> short_factor;
  std::vector<double> long_factor;

  // clang-format off
  // ggml: ggml_rope_ext(a, pos, freq_factors, n_dims, mode, n_ctx_orig, freq_base, freq_scale,
  // ext_factor, attn_factor, beta_fast, beta_slow) stated as it is called (docs/encodings.md §8.7):
  //   n_dims      rotary_dim            freq_base    rope_theta
  //   mode        layout (0 NORMAL: interleaved, 2 NEOX: neox)
  //   n_ctx_orig  original_max_position_embeddings (0 allowed)
  //   freq_scale, beta_fast, beta_slow   the fields above
  // ggml's parameters are floats: the reference and the kernels take each value as the float32
  // ggml receives (fl32 of the double given).
  // clang-format on
  double ext_factor = 0.0;   // YaRN mix weight, in [0, 1]
  double attn_factor = 1.0;  // multiplies cos and sin (times 1 + 0.1·ln(1/freq_scale) if ext ≠ 0)
  std::vector<double> freq_factors;  // per-pair divisors of θ (GGUF rope_freqs); empty: none
  std::string freq_factors_file;     // npy/safetensors the factors were read from (empty: a list)

  // MRoPE (docs/encodings.md §4.6): pair i takes its position from stream mrope_stream(*this, i)
  // of a [streams(), T] position array; every value is a plain RoPE value of that position.
  // Empty: one position per token. Three entries are transformers' mrope_section (t, h, w pairs,
  // summing to pairs()); four are ggml's sections (t, h, w, e, summing to at most pairs(): the
  // map repeats with period their sum).
  std::vector<std::int64_t> mrope_section;
  /// Qwen3-VL's apply_interleaved_mrope / ggml IMROPE instead of consecutive sections.
  bool mrope_interleaved = false;

  /// Number of position streams: 1 without mrope_section, else one per section.
  std::int64_t streams() const {
    return mrope_section.empty() ? 1 : static_cast<std::int64_t>(mrope_section.size());
  }
  /// Number of frequency pairs: rotary_dim / 2.
  std::int64_t pairs() const { return rotary_dim / 2; }
  /// True for rope types whose frequencies depend on the sequence length (dynamic, longrope).
  bool stateful() const { return type == rope_type::dynamic || type == rope_type::longrope; }

  /// Field-wise equality (exact for doubles: NaN never compares equal).
  bool operator==(const rope&) const = default;
};

/// The two dims of pair i within a head: i and i + rotary_dim/2 (neox, transformers'
/// rotate_half) or 2i and 2i + 1 (interleaved, GPT-J / Meta).
std::pair<std::int64_t, std::int64_t> pair_dims(const rope& s, std::int64_t i);
/// The pair of every dim of a head, −1 for the pass-through dims ≥ rotary_dim.
std::vector<std::int64_t> dim_pairs(const rope& s);

/// The position stream of pair i (0 t, 1 h, 2 w, 3 e; docs/encodings.md §4.6): 0 without
/// mrope_section. The one owner of the pair → stream rule.
std::int64_t mrope_stream(const rope& s, std::int64_t i);
/// mrope_stream of every pair.
std::vector<std::int64_t> mrope_streams(const rope& s);

/// The multi-stream composition (docs/encodings.md §4.6): out [rows, pairs] takes pair i of row t
/// from row t of stream stream_of_pair[i] of `per_stream` [streams, rows, pairs].
template <class T>
void select_streams(std::span<const std::int64_t> stream_of_pair, std::int64_t rows,
                    std::span<const T> per_stream, std::span<T> out) {
  const auto P = stream_of_pair.size();
  const auto R = static_cast<std::size_t>(rows);
  for (std::size_t t = 0; t < R; ++t) {
    for (std::size_t i = 0; i < P; ++i) {
      out[t * P + i] = per_stream[(static_cast<std::size_t>(stream_of_pair[i]) * R + t) * P + i];
    }
  }
}

/// Any encoding.
using encoding = std::variant<sinusoidal, learned, alibi, t5, shaw, rope>;

/// Names used in SPEC strings, `pev list` and reports.
const char* family_name(const encoding& e);
const char* to_string(rope_type t);
const char* to_string(rope_layout l);
const char* to_string(sinusoidal_layout l);
/// Parses a rope_type name ("default", "linear", …); throws pev::error naming `key` otherwise.
rope_type parse_rope_type(std::string_view name, std::string_view key = "rope_type");

/// Canonical SPEC string of an encoding (every non-default field, in a fixed order). Parsing it
/// gives back an equal encoding, except that a learned table read from a file is referenced by its
/// path (and a learned table filled by hand, from neither a file nor `seed`, cannot be written).
std::string to_spec_string(const encoding& e);

/// Checks the rules pev relies on (positive sizes, even rotary dim, finite positive parameters,
/// list lengths, …); throws pev::error naming the field and the rule.
void validate(const encoding& e);

}  // namespace pev::spec

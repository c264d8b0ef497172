#pragma once
// Hugging Face config.json → spec::rope (docs/encodings.md §5.1, §7). Follows transformers v5:
// `rope_parameters` (flat or per layer type) or the older `rope_scaling` + `rope_theta`; head_dim
// or hidden_size / num_attention_heads; partial_rotary_factor; max_position_embeddings;
// original_max_position_embeddings (config attribute wins); `text_config` nesting;
// `rope_interleave` selects the interleaved layout. What transformers treats as an error (missing
// required keys, unknown rope_type) throws pev::error naming the key; what it only warns about goes
// to the warning sink.
//
// clang-format off
// Details, where transformers' behaviour needed a decision:
// - A non-empty `rope_scaling` wins over `rope_parameters` (`rope_scaling or rope_parameters` in
//   convert_rope_params_to_dict); when both are given and differ, pev also warns.
// - A dict is per layer type when its keys are all in `layer_types` (transformers' test) or when
//   all its values are objects. Every group is checked (errors and warnings, as transformers
//   validates and initializes every group); the chosen one is returned and validated.
// - `truncate` is read only from a flat dict (default true; null is falsy); per-layer groups are
//   always truncated, as in transformers.
// - head_dim: `qk_rope_head_dim` (DeepSeek MLA) when present, else `head_dim`, else hidden_size //
//   num_attention_heads; for dynamic/yarn/longrope an explicit null head_dim is an error
//   (transformers reads None there and fails), for the other types null or 0 falls back
//   (docs/encodings.md §7.5).
// - Layout: `rope_interleave` when given, else interleaved for model_type deepseek_v2/deepseek_v3
//   (their attention rotates interleaved pairs), else neox.
// - rope_type `ntk` (not in released transformers) is accepted with a warning and read like linear.
// - When max_position_embeddings is absent (transformers would use the model class default), the
//   checks that need it (implicit yarn factor, llama3 Lo < L) are skipped, and what would be
//   derived from it (factor None → L/Lo, Lo := L, dynamic's L) is an error.
// - JSON booleans are not numbers; integral floats (8192.0) are accepted where an integer is
//   needed.
// - A model class's own defaults (e.g. Gemma-3's rope_theta 1e6) are unknown to pev: an absent
//   rope_theta is 10000 (default_theta).
// clang-format on

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "pev/core/error.h"
#include "pev/spec/spec.h"

namespace pev::spec {

struct config_options {
  /// Layer-type group of a per-layer-type `rope_parameters` ("full_attention", "sliding_attention",
  /// …). Empty: "full_attention" when present, else the only group; an error if ambiguous.
  std::string layer_type;
};

/// The largest config.json read (Hugging Face configs are a few KiB).
inline constexpr std::uint64_t max_config_bytes = std::uint64_t{64} << 20;

/// Parses a config.json file (at most max_config_bytes; a pipe or FIFO within
/// io::input_timeout()).
rope parse_config_file(const std::filesystem::path& file, const config_options& options = {},
                       const warning_sink& warn = warn_to_stderr);

/// Parses config.json text; `source` names it in messages.
rope parse_config_text(std::string_view json_text, std::string_view source,
                       const config_options& options = {},
                       const warning_sink& warn = warn_to_stderr);

}  // namespace pev::spec

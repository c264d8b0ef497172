#pragma once
// Hugging Face config.json → pev's spec (docs/encodings.md §5.1, §7). Follows transformers v5:
// `rope_parameters` (flat or per layer type) or the older `rope_scaling` + `rope_theta`; head_dim
// or hidden_size / num_attention_heads; partial_rotary_factor; max_position_embeddings;
// original_max_position_embeddings (config attribute wins); `text_config` nesting;
// `rope_interleave` selects the interleaved layout. What transformers treats as an error (missing
// required keys, unknown rope_type) throws pev::error naming the key; what it only warns about goes
// to the warning sink.
//
// Model families (docs/encodings.md §7.8): the config class of `model_type` decides how its keys
// map onto RoPE parameters, as its `attribute_map`, class defaults and
// `convert_rope_params_to_dict` do in transformers — GPT-NeoX's `rotary_pct`/`rotary_emb_base`,
// GPT-J's and CodeGen's `n_embd`/`n_head`/`rotary_dim` (fixed base 10000, interleaved pairs),
// Falcon's `n_head`, DBRX's `attn_config.rope_theta`, Phi-3's legacy `su`/`yarn` (longrope),
// Gemma-3's sliding layers
// (`rope_local_base_freq`), Gemma-4's and OLMo-3's groups, ModernBERT's global/local bases,
// HunYuan's NTK `alpha`, the classes' own defaults (Gemma-3's
// rope_theta 1e6, Phi's partial_rotary_factor 0.5, …) and which families rotate interleaved pairs
// (GPT-J, CodeGen, Cohere, GLM, Llama-4, DeepSeek). Families without RoPE map onto pev's own
// encodings where transformers' semantics are those (BLOOM, MPT, Falcon-RW: ALiBi; T5: buckets;
// DistilBERT with sinusoidal_pos_embds: sinusoidal) or get an error naming what pev would need
// (a learned table's file, …). MRoPE sections (Qwen2-VL … Qwen3.5) are read into rope's
// mrope fields (docs/encodings.md §4.6). Which layer takes which group, and which layers apply no
// encoding: pev/spec/model.h (docs/encodings.md §7.9).
//
// Python's json.dump writes NaN, Infinity and -Infinity for non-finite floats; they are accepted
// wherever they appear and are an error only where pev needs the value ("must be finite").
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
// - Layout: the family's (interleaved for gptj, codegen, cohere, cohere2, glm, glm4, llama4,
//   deepseek_v2; deepseek_v3 reads `rope_interleave`, default true), else `rope_interleave` for a
//   model_type pev does not know, else neox.
// - rope_type `ntk` (not in released transformers) is accepted with a warning and read like linear.
// - When max_position_embeddings is absent and pev does not know the class default, the checks
//   that need it (implicit yarn factor, llama3 Lo < L) are skipped, and what would be derived from
//   it (factor None → L/Lo, Lo := L, dynamic's L) is an error.
// - JSON booleans are not numbers; integral floats (8192.0) are accepted where an integer is
//   needed.
// - An absent rope_theta is the class's default_theta (10000 for a model_type pev does not know);
//   the families' defaults pev knows are listed in docs/encodings.md §7.8.
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
  /// …). Empty: "full_attention" when present, else the only group; an error if ambiguous. For T5
  /// configs: "encoder" (default, bidirectional buckets) or "decoder" (causal buckets).
  std::string layer_type;
};

/// The largest config.json read (Hugging Face configs are a few KiB).
inline constexpr std::uint64_t max_config_bytes = std::uint64_t{64} << 20;

/// Parses a config.json file (at most max_config_bytes; a pipe or FIFO within
/// io::input_timeout()) into the encoding its model family uses: RoPE, or ALiBi, T5 buckets or a
/// sinusoidal table for the families that use those. pev::error for a family pev cannot check from
/// the config alone, naming what is missing.
encoding parse_config_encoding_file(const std::filesystem::path& file,
                                    const config_options& options = {},
                                    const warning_sink& warn = warn_to_stderr);

/// Parses config.json text into an encoding; `source` names it in messages.
encoding parse_config_encoding_text(std::string_view json_text, std::string_view source,
                                    const config_options& options = {},
                                    const warning_sink& warn = warn_to_stderr);

/// Parses a config.json file of a RoPE model (pev::error naming the family's encoding otherwise).
rope parse_config_file(const std::filesystem::path& file, const config_options& options = {},
                       const warning_sink& warn = warn_to_stderr);

/// Parses config.json text of a RoPE model; `source` names it in messages.
rope parse_config_text(std::string_view json_text, std::string_view source,
                       const config_options& options = {},
                       const warning_sink& warn = warn_to_stderr);

}  // namespace pev::spec

#pragma once
// Internal to the config.json reader (config.cpp): the model families transformers' config classes
// define (docs/encodings.md §7.8) — their defaults, attribute maps and special rules — and the
// reader of the families without RoPE.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config_json.h"
#include "pev/spec/config.h"
#include "pev/spec/spec.h"

namespace pev::spec::config_detail {

enum class family_kind {
  rope,        // read by the RoPE rules below
  container,   // a multimodal wrapper: the language model is its text_config
  alibi,       // ALiBi (BLOOM, MPT)
  t5,          // T5 relative buckets
  learned,     // learned absolute positions: the table is in the weights
  distilbert,  // sinusoidal_pos_embds: the paper's table, else learned
  none,        // no positional encoding
};

// What a family's config class does beyond the generic RotaryEmbeddingConfigMixin.
enum class special {
  none,
  gpt_neox,     // rotary_emb_base, rotary_pct (GPTNeoXConfig.convert_rope_params_to_dict)
  gptj,         // n_embd/n_head/rotary_dim, fixed base 10000, no rope_scaling
  falcon,       // n_head; `alibi: true` is ALiBi
  dbrx,         // attn_config.rope_theta
  gemma3,       // per-layer groups from rope_theta, rope_local_base_freq and rope_scaling
  modernbert,   // per-layer groups from global_rope_theta, local_rope_theta
  phi3,         // legacy su/yarn → longrope; Lo the class attribute
  phimoe,       // legacy su/yarn → longrope; short/long mscale not modelled
  cohere2,      // full-attention layers have no positional encoding
  deepseek_v3,  // rope_interleave (default true)
  mpt,          // ALiBi always (attn_config ignored by transformers' MptModel)
  olmo3,        // per-layer groups: rope_scaling on full-attention layers only
  gemma4,       // per-layer groups; full-attention layers over global_head_dim
  hunyuan,      // rope_scaling.alpha: dynamic NTK-alpha, a changed base
  ministral3,   // rope_parameters.llama_4_scaling_beta: a q scale, not a rotation
};

struct family {
  std::string_view model_type;
  std::string_view config_class;
  family_kind kind = family_kind::rope;
  special sp = special::none;
  double default_theta = 10000.0;
  std::optional<double> default_prf = std::nullopt;
  std::optional<std::int64_t> default_head_dim = std::nullopt;
  std::optional<std::int64_t> default_max_position = std::nullopt;
  rope_layout layout = rope_layout::neox;
  // attribute_map: the attribute transformers reads ← the key the config.json stores.
  std::vector<std::pair<std::string_view, std::string_view>> aliases = {};
  // containers: the model_type of the text config when it names none.
  std::string_view text_family = {};
};

/// Every family pev knows (docs/encodings.md §7.8).
const std::vector<family>& families();
/// The family of a model_type, or null.
const family* find_family(std::string_view model_type);
/// The value of a family attribute: the key transformers' attribute_map stores it under (n_embd,
/// n_head, …), else the attribute's own name. `name` receives the key found.
const json* attribute(const json& cfg, const family* fam, std::string_view attr,
                      std::string* name = nullptr);
/// Whether an object holds keys of the attention shape (head_dim, hidden_size, n_head, …).
bool has_attention_keys(const json& object);

/// The language model of a config.json: the root, or its text_config when the root has no
/// attention keys (multimodal wrappers), with its model_type (text_config's own, else the root's)
/// and family (a wrapper resolved to its text family; null for a model_type pev does not know).
struct language_model {
  const json* cfg;
  std::string at;  // "text_config." or ""
  std::string model_type;
  const family* fam;
};
language_model find_language_model(const json& root);

/// The config reader behind parse_config_encoding_text (config.cpp). With `all_groups`, every
/// layer-type group of a per-layer-type rope dict is read, validated and stored by its name (a
/// dict for every layer under ""), and options.layer_type is not consulted; for a family without
/// RoPE nothing is stored. The per-layer reader (model.cpp) uses it.
encoding read_config(std::string_view json_text, std::string_view source,
                     const config_options& options, const warning_sink& warn,
                     std::map<std::string, rope>* all_groups);

/// The encoding of a family without RoPE, or an error naming what pev would need
/// (config_non_rope.cpp).
encoding non_rope(const reader& in, const json& cfg, const std::string& at, const family& fam,
                  const config_options& options);

}  // namespace pev::spec::config_detail

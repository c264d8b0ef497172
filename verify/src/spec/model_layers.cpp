// The families' per-layer rules (model_layers.h; docs/encodings.md §7.9): layer types given or
// derived as transformers' config classes derive them, NoPE layers, and the rule strings.

#include "model_layers.h"

#include <fmt/format.h>

#include <optional>
#include <string_view>

#include "detail.h"

namespace pev::spec::config_detail {
namespace {

// A positive integer key with the config class's default.
std::int64_t positive(const reader& in, const json& cfg, const std::string& at, const char* key,
                      std::int64_t fallback) {
  const json* v = find(cfg, key);
  if (v == nullptr || v->is_null()) return fallback;
  const std::int64_t n = in.integer(*v, at + key);
  if (n < 1) in.fail(fmt::format("{}{} must be a positive integer, got {}", at, key, n));
  return n;
}

std::string quoted(std::string_view model_type) {
  return model_type.empty() ? std::string("(not given)") : fmt::format("'{}'", model_type);
}

// The rope dict a family's keys sit in: rope_parameters, else rope_scaling.
const json* rope_dict(const json& cfg) {
  for (const char* k : {"rope_scaling", "rope_parameters"}) {
    if (const json* d = find(cfg, k); d != nullptr && d->is_object() && !d->empty()) return d;
  }
  return nullptr;
}

}  // namespace

bool derives_layer_types(std::string_view mt) {
  for (const char* m : {"gemma3_text", "cohere2", "gemma4_text", "olmo3", "qwen3_next",
                        "qwen3_5_text", "modernbert", "llama4_text", "smollm3"}) {
    if (mt == m) return true;
  }
  return false;
}

std::vector<layer_plan> plan_layers(const reader& in, const json& cfg, const std::string& at,
                                    const family* fam, std::int64_t num_layers) {
  const std::string_view mt = fam != nullptr ? fam->model_type : std::string_view();
  const auto L = static_cast<std::size_t>(num_layers);
  std::vector<layer_plan> plan(L);

  // --- NoPE layers: Llama4TextAttention and SmolLM3Attention read use_rope =
  // no_rope_layers[layer_idx] (1: RoPE, 0: NoPE, despite the name); absent, both config classes
  // build int((i + 1) % no_rope_layer_interval != 0) (Llama-4 also for an empty list).
  const bool llama4 = mt == "llama4_text";
  const bool reads_nope = llama4 || mt == "smollm3";
  std::vector<bool> rope_on;
  std::vector<std::string> rope_why(L);
  const json* nrl = find(cfg, "no_rope_layers");
  if (nrl != nullptr && !nrl->is_null() && !reads_nope) {
    in.fail(fmt::format(
        "{}no_rope_layers is given, but pev knows its meaning only for Llama-4 (llama4_text) and "
        "SmolLM3 (smollm3), whose attention reads use_rope = no_rope_layers[i]; model_type {}: "
        "not modelled (docs/encodings.md §7.9)",
        at, quoted(mt)));
  }
  if (reads_nope) {
    rope_on.resize(L);
    const bool use_list = nrl != nullptr && (llama4 ? truthy(*nrl) : !nrl->is_null());
    if (use_list) {
      if (!nrl->is_array()) {
        in.fail(fmt::format("{}no_rope_layers must be a list of 0/1 per layer, got {}", at,
                            json_text(*nrl)));
      }
      if (nrl->size() < L) {
        in.fail(fmt::format(
            "{}no_rope_layers has {} entries, fewer than num_hidden_layers = {} (layer i reads "
            "no_rope_layers[i])",
            at, nrl->size(), num_layers));
      }
      for (std::size_t i = 0; i < L; ++i) {
        const json& v = (*nrl)[i];
        const auto n = v.is_boolean() ? std::optional<std::int64_t>(v.get<bool>()) : as_integer(v);
        if (!n || (*n != 0 && *n != 1)) {
          in.fail(fmt::format("{}no_rope_layers[{}] must be 0 (NoPE) or 1 (RoPE), got {}", at, i,
                              json_text(v)));
        }
        rope_on[i] = *n == 1;
        rope_why[i] = fmt::format("{}no_rope_layers[{}] = {} ({})", at, i, json_text(v),
                                  rope_on[i] ? "1: RoPE" : "0: NoPE");
      }
    } else {
      const std::int64_t n = positive(in, cfg, at, "no_rope_layer_interval", 4);
      for (std::size_t i = 0; i < L; ++i) {
        rope_on[i] = (static_cast<std::int64_t>(i) + 1) % n != 0;
        rope_why[i] = fmt::format(
            "{}no_rope_layer_interval = {} (no_rope_layers {}): NoPE where (i + 1) % {} == 0", at,
            n, nrl == nullptr || nrl->is_null() ? "absent" : "empty", n);
      }
    }
  }

  // --- Layer types: given (legacy names remapped as transformers' remap_legacy_layer_types),
  // else as the family's config class derives them.
  const json* lt = find(cfg, "layer_types");
  if (lt != nullptr && !lt->is_null()) {
    if (!lt->is_array() || lt->size() != L) {
      in.fail(fmt::format(
          "{}layer_types must be a list of one layer type per layer (num_hidden_layers = {}), "
          "got {}",
          at, num_layers, lt->is_array() ? fmt::format("{} entries", lt->size()) : json_text(*lt)));
    }
    for (std::size_t i = 0; i < L; ++i) {
      const json& v = (*lt)[i];
      if (!v.is_string()) {
        in.fail(fmt::format("{}layer_types[{}] must be a string, got {}", at, i, json_text(v)));
      }
      std::string t = v.get<std::string>();
      std::string why = fmt::format("{}layer_types[{}] = {}", at, i, t);
      if (t == "attention") t = "full_attention";
      if (t == "mamba") t = "linear_attention";
      plan[i].type = t;
      plan[i].why = why;
    }
  } else {
    // The pattern a config class builds, as (i + 1) % n: the layers where it is 0 are of type
    // `at_zero`, the others `other`.
    const auto every = [&](std::int64_t n, const char* other, const char* at_zero,
                           const std::string& why) {
      for (std::size_t i = 0; i < L; ++i) {
        plan[i].type = (static_cast<std::int64_t>(i) + 1) % n != 0 ? other : at_zero;
        plan[i].why = fmt::format("{} → {}", why, plan[i].type);
      }
    };
    if (mt == "gemma3_text" || mt == "cohere2" || mt == "gemma4_text") {
      const std::int64_t n = mt == "gemma4_text" ? 6
                                                 : positive(in, cfg, at, "sliding_window_pattern",
                                                            mt == "cohere2" ? 4 : 6);
      every(n, "sliding_attention", "full_attention",
            fmt::format("layer_types absent: {} with sliding_window_pattern {} (full where (i + "
                        "1) % {} == 0)",
                        fam->config_class, n, n));
    } else if (mt == "olmo3") {
      every(4, "sliding_attention", "full_attention",
            "layer_types absent: Olmo3Config's pattern (full where (i + 1) % 4 == 0)");
    } else if (mt == "qwen3_next" || mt == "qwen3_5_text") {
      const std::int64_t n = positive(in, cfg, at, "full_attention_interval", 4);
      every(n, "linear_attention", "full_attention",
            fmt::format("layer_types absent: {} with full_attention_interval {} (full where (i "
                        "+ 1) % {} == 0)",
                        fam->config_class, n, n));
    } else if (mt == "modernbert") {
      // ModernBertAttention: global attention where layer_id % global_attn_every_n_layers == 0,
      // local (sliding window, local_rope_theta) elsewhere.
      const std::int64_t n = positive(in, cfg, at, "global_attn_every_n_layers", 3);
      for (std::size_t i = 0; i < L; ++i) {
        plan[i].type =
            static_cast<std::int64_t>(i) % n == 0 ? "full_attention" : "sliding_attention";
        plan[i].why = fmt::format(
            "layer_types absent: ModernBertConfig global_attn_every_n_layers {} (global where i "
            "% {} == 0) → {}",
            n, n, plan[i].type);
      }
    } else if (llama4) {
      // Llama4TextConfig: "chunked_attention" if no_rope_layers[i] else "full_attention".
      for (std::size_t i = 0; i < L; ++i) {
        plan[i].type = rope_on[i] ? "chunked_attention" : "full_attention";
        plan[i].why = fmt::format("layer_types absent: Llama4TextConfig → {}", plan[i].type);
      }
    } else if (mt == "smollm3") {
      // SmolLM3Config: sliding_attention where use_sliding_window, sliding_window is set and the
      // layer is NoPE; else full_attention.
      const json* use = find(cfg, "use_sliding_window");
      const json* sw = find(cfg, "sliding_window");
      const bool sliding = use != nullptr && truthy(*use) && sw != nullptr && !sw->is_null();
      for (std::size_t i = 0; i < L; ++i) {
        plan[i].type = sliding && !rope_on[i] ? "sliding_attention" : "full_attention";
        plan[i].why = fmt::format("layer_types absent: SmolLM3Config → {}", plan[i].type);
      }
    } else {
      for (std::size_t i = 0; i < L; ++i) {
        plan[i].type = "full_attention";
        plan[i].why = "full_attention (no layer_types)";
      }
    }
  }

  // Gemma4TextConfig forces the last layer to full_attention (with a warning).
  if (mt == "gemma4_text" && L > 0 && plan[L - 1].type != "full_attention") {
    in.warning(
        fmt::format("Last layer must use `full_attention`, but got `{}`. Forcing last layer "
                    "to `full_attention` (Gemma4TextConfig)",
                    plan[L - 1].type));
    plan[L - 1].type = "full_attention";
    plan[L - 1].why += " → full_attention (Gemma4TextConfig forces the last layer)";
  }

  // --- Which layers rotate.
  for (std::size_t i = 0; i < L; ++i) {
    layer_plan& p = plan[i];
    p.group = p.type;
    const std::string& t = p.type;
    if (t == "linear_attention") {
      p.rotates = false;
      p.why += ": a linear-attention layer has no positional encoding (identity expected)";
      continue;
    }
    const bool dsa =
        mt == "deepseek_v32" && (t == "deepseek_sparse_attention" || t == "indexed_attention" ||
                                 t == "dynamic_sparse_attention");
    if (t != "full_attention" && t != "sliding_attention" && t != "chunked_attention" && !dsa) {
      in.fail(fmt::format(
          "{}layer_types[{}] = '{}': pev does not know which positional encoding a '{}' layer of "
          "model_type {} applies (docs/encodings.md §7.9)",
          at, i, t, t, quoted(mt)));
    }
    if (!rope_on.empty()) {
      p.why += "; " + rope_why[i];
      if (!rope_on[i]) {
        p.rotates = false;
        p.why += ": NoPE, identity expected";
        if (llama4) {
          p.why +=
              " (Llama4TextAttention then scales q by attn_temperature_tuning, a scale, not a "
              "rotation)";
        }
      }
    }
    if (mt == "cohere2" && t == "full_attention") {
      p.rotates = false;
      p.why +=
          ": Cohere2Attention rotates only its sliding-window layers; full-attention layers "
          "apply no positional encoding (identity expected)";
    }
  }
  return plan;
}

std::string rope_note(const json& cfg, const std::string& at, const family* fam, const rope& r,
                      const std::string& group) {
  const std::string_view mt = fam != nullptr ? fam->model_type : std::string_view();
  std::string note;
  const auto has = [&](const char* key) {
    const json* v = find(cfg, key);
    return v != nullptr && !v->is_null();
  };
  if (mt == "gemma3_text" && group == "sliding_attention" && has("rope_local_base_freq")) {
    note += fmt::format("; rope_theta = {}rope_local_base_freq", at);
  }
  if (mt == "modernbert") {
    const char* key = group == "sliding_attention" ? "local_rope_theta" : "global_rope_theta";
    if (has(key)) note += fmt::format("; rope_theta = {}{}", at, key);
  }
  if (mt == "gemma4_text" && group == "full_attention" && has("global_head_dim")) {
    note += fmt::format("; head_dim = {}global_head_dim", at);
  }
  if (mt == "olmo3" && group == "sliding_attention") {
    note += "; OLMo-3 applies its rope scaling to full-attention layers only";
  }
  if (const json* d = rope_dict(cfg)) {
    if (fam != nullptr && fam->sp == special::hunyuan) {
      if (const json* a = find(*d, "alpha"); a != nullptr && truthy(*a)) {
        note += fmt::format(
            "; rope_scaling.alpha = {}: HunYuan's dynamic NTK-alpha, default RoPE with rope_theta "
            "= rope_theta·alpha^(head_dim/(head_dim−2)) = {} (positions below "
            "max_position_embeddings)",
            json_text(*a), detail::format_number(r.rope_theta));
      }
    }
    if (fam != nullptr && fam->sp == special::ministral3) {
      if (const json* b = find(*d, "llama_4_scaling_beta"); b != nullptr && !b->is_null()) {
        note += fmt::format(
            "; llama_4_scaling_beta = {}: Ministral3Attention multiplies q by 1 + β·ln(1 + "
            "⌊p / original_max_position_embeddings⌋) after the rotation — a scale, not a "
            "rotation: the RoPE is unchanged",
            json_text(*b));
      }
    }
  }
  if (r.type != rope_type::proportional && r.rotary_dim < r.head_dim) {
    note += fmt::format("; partial rotary: rotary_dim {} of head_dim {}", r.rotary_dim, r.head_dim);
  }
  if (!r.mrope_section.empty()) {
    std::string s;
    for (const auto v : r.mrope_section) s += (s.empty() ? "" : ",") + std::to_string(v);
    note += fmt::format("; MRoPE mrope_section [{}]{}", s,
                        r.mrope_interleaved ? ", mrope_interleaved" : "");
  }
  if (has("qk_rope_head_dim")) {
    note += fmt::format("; MLA: qk_rope_head_dim {}, {} pairs", r.head_dim, to_string(r.layout));
  }
  return note;
}

}  // namespace pev::spec::config_detail

#include "pev/spec/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "config_family.h"
#include "config_json.h"
#include "config_rope.h"
#include "pev/io/file.h"

// config.json → spec::rope following transformers v5 (`RotaryEmbeddingConfigMixin` in
// configuration_utils / modeling_rope_utils; docs/encodings.md §5, §7). The steps mirror
// transformers' own: find the model family's config class (its attribute_map, class defaults and
// convert_rope_params_to_dict; docs/encodings.md §7.8), pick the dict (`rope_scaling` or
// `rope_parameters`, one group of a per-layer-type dict), standardize it (rope_type from the legacy
// `type`, rope_theta and partial_rotary_factor moved in, original_max_position_embeddings filled in
// for llama3/yarn/longrope), check required keys (KeyError there → pev::error here), emit the
// warnings its `_validate_*_rope_parameters` emit, then read the values the way its
// `_compute_*_parameters` do (`or` defaults, factor None → L/Lo, …). A value transformers only
// warns about but then cannot compute with (a string factor, a null Lo) is an error after the
// warning, and so is what validate() rejects.

namespace pev::spec {

using namespace config_detail;

namespace config_detail {

language_model find_language_model(const json& root) {
  // Multimodal configs (Gemma-3, Llava, Qwen-VL …) keep the language model under text_config.
  language_model lm{&root, "", "", nullptr};
  if (!has_attention_keys(root)) {
    if (const json* text = find(root, "text_config"); text != nullptr && text->is_object()) {
      lm.cfg = text;
      lm.at = "text_config.";
    }
  }
  // The family: the model_type of the config read (text_config's own, else the wrapper's text
  // family), else the root's.
  const auto model_type_of = [](const json& o) -> std::string {
    const json* mt = find(o, "model_type");
    return mt != nullptr && mt->is_string() ? mt->get<std::string>() : std::string();
  };
  std::string& mt = lm.model_type;
  mt = model_type_of(*lm.cfg);
  if (mt.empty()) mt = model_type_of(root);
  const family* fam = mt.empty() ? nullptr : find_family(mt);
  if (fam != nullptr && fam->kind == family_kind::container) {
    // A wrapper read at its root (no text_config), or a text_config without a model_type.
    fam = find_family(lm.cfg == &root ? mt : fam->text_family);
    if (fam != nullptr && fam->kind == family_kind::container) fam = find_family(fam->text_family);
  }
  lm.fam = fam;
  return lm;
}

encoding read_config(std::string_view json_text_in, std::string_view source,
                     const config_options& options, const warning_sink& warn,
                     std::map<std::string, rope>* all_groups) {
  const reader in(source, warn);
  const json root = parse_json(in, json_text_in);
  if (!root.is_object()) {
    in.fail(fmt::format("a config.json must be a JSON object, got {}", root.type_name()));
  }
  const language_model lm = find_language_model(root);
  const json* cfg = lm.cfg;
  const std::string& at = lm.at;  // prefix of key names in messages
  const std::string& mt = lm.model_type;
  const family* fam = lm.fam;
  if (fam == nullptr && !mt.empty()) {
    in.warning(fmt::format(
        "model_type '{}' is not among the families pev knows (docs/encodings.md §7.8): read with "
        "transformers' generic rules (head_dim or hidden_size // num_attention_heads, "
        "partial_rotary_factor, rope_theta default 10000, NeoX pairs)",
        mt));
  }
  if (fam != nullptr && fam->kind != family_kind::rope) {
    return non_rope(in, *cfg, at, *fam, options);
  }
  if (fam != nullptr && fam->sp == special::falcon) {
    // FalconConfig.alibi: Falcon-RW uses BLOOM's ALiBi instead of rotary embeddings.
    if (const json* a = find(*cfg, "alibi"); a != nullptr && truthy(*a)) {
      static const family kFalconAlibi = {.model_type = "falcon",
                                          .config_class = "FalconConfig (alibi: true)",
                                          .kind = family_kind::alibi,
                                          .aliases = {{"num_attention_heads", "n_head"}}};
      return non_rope(in, *cfg, at, kFalconAlibi, options);
    }
  }

  // --- The attribute object transformers' config class sees: the attribute_map applied (n_embd
  // is hidden_size, …), the family's own keys and defaults.
  context ctx{in, cfg, &root, at, fam, {}};
  json norm = *cfg;
  if (fam != nullptr) {
    for (const auto& [a, stored] : fam->aliases) {
      if (const json* v = find(*cfg, stored)) {
        norm[std::string(a)] = *v;
        ctx.names[std::string(a)] = std::string(stored);
      }
    }
    ctx.theta = fam->default_theta;
    ctx.theta_name = fmt::format("{}'s default_theta", fam->config_class);
    if (fam->default_prf) {
      ctx.prf = fam->default_prf;
      ctx.prf_name = fmt::format("{}'s default partial_rotary_factor", fam->config_class);
    }
    if (fam->default_head_dim && !find(norm, "head_dim")) {
      norm["head_dim"] = *fam->default_head_dim;
      ctx.names["head_dim"] = fmt::format("head_dim ({} default)", fam->config_class);
    }
    if (fam->default_max_position && !find(norm, "max_position_embeddings")) {
      norm["max_position_embeddings"] = *fam->default_max_position;
      ctx.names["max_position_embeddings"] =
          fmt::format("max_position_embeddings ({} default)", fam->config_class);
    }
  }
  const auto ignored = [&](std::string_view key, std::string_view why) {
    if (const json* v = find(norm, key); v != nullptr && !v->is_null()) {
      in.warning(
          fmt::format("{}{} = {} is not read by transformers' {}: {}; pev follows "
                      "transformers",
                      at, key, json_text(*v), fam->config_class, why));
      norm.erase(std::string(key));
    }
  };
  switch (fam ? fam->sp : special::none) {
    case special::gpt_neox:
      // GPTNeoXConfig.convert_rope_params_to_dict: rope_parameters.setdefault("rope_theta",
      // rotary_emb_base or default_theta), setdefault("partial_rotary_factor", rotary_pct or the
      // class's 0.25 (GPT-NeoX-Japanese: 1.0)); a top-level rope_theta is not read.
      ignored("rope_theta", "the base is rotary_emb_base");
      if (const json* b = find(*cfg, "rotary_emb_base"); b != nullptr && !b->is_null()) {
        ctx.theta = in.number(*b, at + "rotary_emb_base");
        ctx.theta_name = "rotary_emb_base";
      }
      if (const json* p = find(*cfg, "rotary_pct"); p != nullptr && !p->is_null()) {
        ctx.prf = in.number(*p, at + "rotary_pct");
        ctx.prf_name = "rotary_pct";
      }
      break;
    case special::gptj:
      // GPTJAttention / CodeGenAttention: create_sinusoidal_positions(max_positions, rotary_dim)
      // with the base 10000 written into the formula; no rope_scaling.
      ignored("rope_theta", "its base is 10000, written into create_sinusoidal_positions");
      ignored("rope_scaling", "it has no RoPE scaling");
      ignored("rope_parameters", "it has no RoPE scaling");
      ignored("partial_rotary_factor", "the rotated width is rotary_dim");
      norm.erase("head_dim");  // head_dim = embed_dim // num_attention_heads
      break;
    case special::dbrx:
      // DbrxConfig: the base lives in attn_config (DbrxAttentionConfig.rope_theta, 10000).
      if (const json* ac = find(*cfg, "attn_config"); ac != nullptr && ac->is_object()) {
        if (const json* b = find(*ac, "rope_theta"); b != nullptr && !b->is_null()) {
          ctx.theta = in.number(*b, at + "attn_config.rope_theta");
          ctx.theta_name = "attn_config.rope_theta";
        }
      }
      break;
    case special::falcon:
      norm.erase("head_dim");  // FalconConfig.head_dim = hidden_size // num_attention_heads
      break;
    case special::phi3:
      // Phi3Config has the attribute original_max_position_embeddings (default 4096), which
      // standardize_rope_params moves into a llama3/yarn/longrope dict with priority.
      if (!find(norm, "original_max_position_embeddings")) {
        norm["original_max_position_embeddings"] = 4096;
        ctx.names["original_max_position_embeddings"] =
            "original_max_position_embeddings (Phi3Config default)";
      }
      break;
    default:
      break;
  }
  // recurrent_gemma: head_dim is a property, hidden_size // num_attention_heads.
  if (fam != nullptr && fam->model_type == "recurrent_gemma") norm.erase("head_dim");
  ctx.cfg = &norm;
  const auto top = [&](std::string_view key) { return find(norm, key); };

  // --- The rope dict. convert_rope_params_to_dict: `rope_scaling or rope_parameters`, so a
  // non-empty legacy rope_scaling wins.
  const json* scaling = top("rope_scaling");
  const json* params = top("rope_parameters");
  for (const auto& [p, name] :
       {std::pair{scaling, "rope_scaling"}, std::pair{params, "rope_parameters"}}) {
    if (p != nullptr && !p->is_null() && !p->is_object()) {
      in.fail(fmt::format("{}{} must be an object or null, got {}", at, name, json_text(*p)));
    }
  }
  json dict = json::object();
  std::string dict_name = "rope_parameters";
  bool synthesized = false;  // per-layer groups built from the family's own keys
  if (ctx.is(special::gemma3) || ctx.is(special::modernbert)) {
    // Gemma3TextConfig.convert_rope_params_to_dict: rope_parameters (per layer type) as given,
    // else {"sliding_attention": default, "full_attention": default}; a legacy rope_scaling
    // updates the full_attention group; full_attention's rope_theta defaults to rope_theta (else
    // 1e6), sliding_attention's to rope_local_base_freq (else 10000). ModernBERT likewise with
    // global_rope_theta (160000) and local_rope_theta (10000; null: the global base, as
    // ModernBertAttention falls back).
    const bool gemma = ctx.is(special::gemma3);
    const bool per_layer = params != nullptr && params->is_object() && !params->empty() &&
                           std::all_of(params->begin(), params->end(),
                                       [](const json& v) { return v.is_object() || v.is_null(); });
    if (per_layer || (params != nullptr && params->is_object() && !params->empty())) {
      dict = *params;
    } else {
      dict = {{"sliding_attention", {{"rope_type", "default"}}},
              {"full_attention", {{"rope_type", "default"}}}};
      synthesized = true;
    }
    if (per_layer || synthesized) {
      for (const char* g : {"full_attention", "sliding_attention"}) {
        if (!dict.contains(g) || dict[g].is_null()) dict[g] = {{"rope_type", "default"}};
      }
      if (gemma && scaling != nullptr && scaling->is_object())
        dict["full_attention"].update(*scaling);
      // The base of a group: the config's key (a null is passed on, and fails where the group
      // reads it), else the class default; ModernBERT's null local base is the global one.
      const auto base_of = [&](const char* key, double fallback, const json* if_null) -> json {
        if (const json* v = find(norm, key)) return v->is_null() && if_null ? *if_null : *v;
        return fallback;
      };
      const json global =
          base_of(gemma ? "rope_theta" : "global_rope_theta", gemma ? 1e6 : 160000.0, nullptr);
      const json local = base_of(gemma ? "rope_local_base_freq" : "local_rope_theta", 10000.0,
                                 gemma ? nullptr : &global);
      if (!dict["full_attention"].contains("rope_theta")) {
        dict["full_attention"]["rope_theta"] = global;
      }
      if (!dict["sliding_attention"].contains("rope_theta")) {
        dict["sliding_attention"]["rope_theta"] = local;
      }
      if (gemma && scaling != nullptr && truthy(*scaling)) dict_name = "rope_scaling";
      norm.erase("rope_theta");  // moved into the groups
    }
  } else if (ctx.is(special::gemma4)) {
    if (!find(norm, "global_head_dim")) {
      norm["global_head_dim"] = 512;
      ctx.names["global_head_dim"] = "global_head_dim (Gemma4TextConfig default)";
    }
    // Gemma4TextConfig: rope_parameters per layer type as given (no legacy rope_scaling); absent,
    // {"sliding_attention": default, θ 1e4; "full_attention": proportional, partial_rotary_factor
    // 0.25, θ 1e6}.
    if (params != nullptr && params->is_object() && !params->empty()) {
      dict = *params;
    } else {
      dict = {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
              {"full_attention",
               {{"rope_type", "proportional"},
                {"partial_rotary_factor", 0.25},
                {"rope_theta", 1000000.0}}}};
      synthesized = true;
    }
  } else if (ctx.is(special::olmo3)) {
    // OLMo-3 scales only its full-attention layers: Olmo3Config.convert_rope_params_to_dict
    // (transformers v5) builds {"sliding_attention": default, "full_attention": default updated
    // with rope_scaling}; v4.57's Olmo3Model gave the sliding layers rope_type "default" and the
    // full layers config.rope_scaling. A flat dict (legacy rope_scaling or a flat
    // rope_parameters) is the full_attention group; both groups' rope_theta default to the
    // config's rope_theta, else the class default 500000 (docs/encodings.md §7.9).
    const bool per_layer = params != nullptr && params->is_object() && !params->empty() &&
                           std::all_of(params->begin(), params->end(),
                                       [](const json& v) { return v.is_object() || v.is_null(); });
    const json* flat = scaling != nullptr && truthy(*scaling) ? scaling
                       : !per_layer && params != nullptr && params->is_object() && !params->empty()
                           ? params
                           : nullptr;
    if (per_layer) {
      dict = *params;
    } else {
      synthesized = true;
    }
    for (const char* g : {"full_attention", "sliding_attention"}) {
      if (!dict.contains(g) || dict[g].is_null()) dict[g] = {{"rope_type", "default"}};
    }
    if (flat != nullptr) {
      json& full = dict["full_attention"];
      if (per_layer) {
        full.update(*flat);
      } else {
        full = *flat;
      }
      if (!full.contains("rope_type") && full.contains("type")) full["rope_type"] = full["type"];
      full.erase("type");
      dict_name = flat == scaling ? "rope_scaling" : "rope_parameters";
    }
    const json* theta = find(norm, "rope_theta");
    for (const char* g : {"full_attention", "sliding_attention"}) {
      if (!dict[g].contains("rope_theta")) {
        dict[g]["rope_theta"] = theta != nullptr ? *theta : json(500000.0);
      }
    }
    norm.erase("rope_theta");  // moved into the groups
  } else if (scaling != nullptr && truthy(*scaling)) {
    dict = *scaling;
    dict_name = "rope_scaling";
    if (params != nullptr && truthy(*params) && *params != *scaling) {
      in.warning(
          fmt::format("{0}rope_scaling and {0}rope_parameters differ; transformers uses "
                      "rope_scaling, and so does pev",
                      at));
    }
  } else if (params != nullptr && params->is_object()) {
    dict = *params;
  }

  // --- Per-layer-type dicts (Gemma-3/4: {"full_attention": {...}, "sliding_attention": {...}}).
  // transformers recognizes them by keys ⊆ layer_types; pev also when every value is an object,
  // which no flat dict has, so a config without layer_types is read the same way.
  bool nested = false;
  if (!dict.empty()) {
    bool all_objects = true;
    bool in_layer_types = false;
    for (const auto& [key, value] : dict.items()) all_objects = all_objects && value.is_object();
    if (const json* lt = top("layer_types"); lt != nullptr && lt->is_array()) {
      // A set of the names: a search of the list per key was quadratic in the layer count.
      std::set<std::string> names;
      for (const json& v : *lt) {
        if (v.is_string()) names.insert(v.get<std::string>());
      }
      in_layer_types = true;
      for (const auto& [key, value] : dict.items()) {
        in_layer_types = in_layer_types && names.count(key) != 0;
      }
    }
    nested = all_objects || in_layer_types;
  }
  const std::string dict_path = at + dict_name;
  const auto cohere2_full = [&] {
    in.fail(
        "layer_type 'full_attention': Cohere2's full-attention layers apply no positional "
        "encoding (Cohere2Attention rotates only its sliding-window layers); choose "
        "sliding_attention");
  };
  if (!nested) {
    if (all_groups != nullptr) {
      rope r = read_group(ctx, dict, dict_path, false, true);
      (*all_groups)[""] = r;
      return r;
    }
    const std::string& lt = options.layer_type;
    if (ctx.is(special::cohere2) && lt == "full_attention") cohere2_full();
    if (!lt.empty() && !(ctx.is(special::cohere2) && lt == "sliding_attention")) {
      in.fail(fmt::format("layer_type '{}' given, but {} is one dict for every layer", lt,
                          dict_path.empty() ? "the config" : dict_path));
    }
    return read_group(ctx, dict, dict_path, false, true);
  }

  // transformers validates (and the model initializes) every group: their errors and warnings are
  // reported, the chosen group is returned.
  std::set<std::string> groups;
  for (const auto& [key, value] : dict.items()) groups.insert(key);
  std::string group = options.layer_type;
  if (all_groups != nullptr) {
    group = *groups.begin();  // every group is read, validated and returned
  } else if (!group.empty()) {
    if (groups.count(group) == 0) {
      in.fail(fmt::format("layer_type '{}' is not a group of {} (groups: {})", group, dict_path,
                          join(groups)));
    }
  } else if (ctx.is(special::cohere2) && groups.count("sliding_attention") != 0) {
    group = "sliding_attention";  // the only layers Cohere2 rotates
  } else if (groups.count("full_attention") != 0) {
    group = "full_attention";
  } else if (groups.size() == 1) {
    group = *groups.begin();
  } else {
    in.fail(
        fmt::format("{} has several layer_type groups ({}) and none is full_attention; choose "
                    "one (--layer-type)",
                    dict_path, join(groups)));
  }
  if (all_groups == nullptr && ctx.is(special::cohere2) && group == "full_attention") {
    cohere2_full();
  }
  std::optional<rope> chosen;
  for (const auto& name : groups) {
    const json& d = dict[name];
    const std::string path = (synthesized ? at + "rope_parameters" : dict_path) + "." + name;
    if (!d.is_object()) in.fail(fmt::format("{} must be an object, got {}", path, json_text(d)));
    // Gemma-4's full-attention layers have their own head width, global_head_dim (the
    // proportional initializer reads it: head_dim_key="global_head_dim").
    const json* global_hd = ctx.is(special::gemma4) && name == "full_attention"
                                ? find(norm, "global_head_dim")
                                : nullptr;
    json wide;
    context wide_ctx = ctx;
    if (global_hd != nullptr && !global_hd->is_null()) {
      wide = norm;
      wide["head_dim"] = *global_hd;
      wide_ctx.cfg = &wide;
      const auto named = ctx.names.find("global_head_dim");
      wide_ctx.names["head_dim"] =
          named != ctx.names.end() ? named->second : std::string("global_head_dim");
    }
    rope r = read_group(wide.is_null() ? ctx : wide_ctx, d, path, true,
                        name == group || all_groups != nullptr);
    if (all_groups != nullptr) (*all_groups)[name] = r;
    if (name == group) chosen = std::move(r);
  }
  return *chosen;
}

}  // namespace config_detail

encoding parse_config_encoding_text(std::string_view json_text, std::string_view source,
                                    const config_options& options, const warning_sink& warn) {
  return read_config(json_text, source, options, warn, nullptr);
}

encoding parse_config_encoding_file(const std::filesystem::path& file,
                                    const config_options& options, const warning_sink& warn) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    throw error(fmt::format("{}: is a directory, expected a config.json file", file.string()));
  }
  // Bounded (size, and time for a pipe or a FIFO): a config.json is a few KiB; /dev/zero or a
  // FIFO nobody writes to is an error naming the file.
  return parse_config_encoding_text(io::read_file(file, max_config_bytes), file.string(), options,
                                    warn);
}

rope parse_config_text(std::string_view json_text, std::string_view source,
                       const config_options& options, const warning_sink& warn) {
  encoding e = parse_config_encoding_text(json_text, source, options, warn);
  if (auto* r = std::get_if<rope>(&e)) return std::move(*r);
  throw error(fmt::format("{}: this model family uses {}, not RoPE ({})", source, family_name(e),
                          to_spec_string(e)));
}

rope parse_config_file(const std::filesystem::path& file, const config_options& options,
                       const warning_sink& warn) {
  encoding e = parse_config_encoding_file(file, options, warn);
  if (auto* r = std::get_if<rope>(&e)) return std::move(*r);
  throw error(fmt::format("{}: this model family uses {}, not RoPE ({})", file.string(),
                          family_name(e), to_spec_string(e)));
}

}  // namespace pev::spec

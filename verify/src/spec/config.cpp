#include "pev/spec/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "detail.h"
#include "pev/core/json_check.h"
#include "pev/io/file.h"

// config.json → spec::rope following transformers v5 (`RotaryEmbeddingConfigMixin` in
// configuration_utils / modeling_rope_utils; docs/encodings.md §5, §7). The steps mirror
// transformers' own: pick the dict (`rope_scaling` or `rope_parameters`, one group of a
// per-layer-type dict), standardize it (rope_type from the legacy `type`, rope_theta and
// partial_rotary_factor moved in, original_max_position_embeddings filled in for
// llama3/yarn/longrope), check required keys (KeyError there → pev::error here), emit the warnings
// its `_validate_*_rope_parameters` emit, then read the values the way its `_compute_*_parameters`
// do (`or` defaults, factor None → L/Lo, …). A value transformers only warns about but then cannot
// compute with (a string factor, a null Lo) is an error after the warning, and so is what
// validate() rejects.

namespace pev::spec {
namespace {

using json = nlohmann::json;

// How Python prints a value in transformers' f-string messages (None, True, 8.0, [1.0, 2.0]).
std::string py_repr(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return v.get<bool>() ? "True" : "False";
    case json::value_t::string:
      return v.get<std::string>();
    case json::value_t::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) out += ", ";
        out += v[i].is_string() ? "'" + v[i].get<std::string>() + "'" : py_repr(v[i]);
      }
      return out + "]";
    }
    default:
      return v.dump();
  }
}

// Python truthiness of a JSON value (None, False, 0, 0.0, "", [], {} are false).
bool truthy(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return false;
    case json::value_t::boolean:
      return v.get<bool>();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return v.get<double>() != 0.0;
    case json::value_t::string:
      return !v.get<std::string>().empty();
    default:
      return !v.empty();
  }
}

const json* find(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string join(const std::set<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

// An integral JSON number as int64 (8192 or 8192.0); nothing otherwise.
std::optional<std::int64_t> as_integer(const json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<std::int64_t>();
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9223372036854775808.0) {
      return static_cast<std::int64_t>(d);
    }
  }
  return std::nullopt;
}

class reader {
 public:
  reader(std::string_view source, const warning_sink& warn) : source_(source), warn_(warn) {}

  [[noreturn]] void fail(std::string_view message) const {
    throw error(fmt::format("{}: {}", source_, message));
  }
  void warning(std::string_view message) const { warn_(fmt::format("{}: {}", source_, message)); }

  // A number (JSON booleans are not numbers here), or an error naming `key`.
  double number(const json& v, std::string_view key) const {
    if (!v.is_number()) fail(fmt::format("{} must be a number, got {}", key, v.dump()));
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(fmt::format("{} must be finite, got {}", key, v.dump()));
    return d;
  }

  std::int64_t integer(const json& v, std::string_view key) const {
    const auto i = as_integer(v);
    if (!i) fail(fmt::format("{} must be an integer, got {}", key, v.dump()));
    return *i;
  }

 private:
  std::string source_;
  const warning_sink& warn_;
};

// transformers' keys per rope_type (`_validate_*_rope_parameters`). partial_rotary_factor is always
// optional (`_check_received_keys` adds it); `ntk` is pev's (transformers@0044e3b had it, read
// like linear).
struct key_sets {
  std::set<std::string> required;
  std::set<std::string> optional;
};

key_sets keys_of(rope_type t) {
  switch (t) {
    case rope_type::default_:
      return {{"rope_type"}, {"rope_theta"}};
    case rope_type::linear:
    case rope_type::ntk:
    case rope_type::dynamic:
      return {{"rope_type", "factor"}, {"rope_theta"}};
    case rope_type::yarn:
      return {{"rope_type", "factor", "original_max_position_embeddings"},
              {"rope_theta", "attention_factor", "beta_fast", "beta_slow", "mscale",
               "mscale_all_dim", "truncate"}};
    case rope_type::longrope:
      return {{"rope_type", "short_factor", "long_factor", "original_max_position_embeddings"},
              {"rope_theta", "attention_factor", "factor"}};
    case rope_type::llama3:
      return {{"rope_type", "factor", "original_max_position_embeddings", "low_freq_factor",
               "high_freq_factor", "rope_theta"},
              {}};
    case rope_type::proportional:
      return {{"rope_type", "rope_theta"}, {}};
  }
  return {};
}

bool has_attention_keys(const json& object) {
  return find(object, "head_dim") || find(object, "hidden_size") ||
         find(object, "num_attention_heads") || find(object, "qk_rope_head_dim");
}

// What every group's reader needs: the message helper, the config object holding the attention
// keys (the root or its text_config), the root, and the key prefix for messages ("text_config.").
struct context {
  const reader& in;
  const json* cfg;
  const json* root;
  std::string at;
};

rope read_group(const context& ctx, const json& d, const std::string& path, bool nested,
                bool selected);

}  // namespace

rope parse_config_text(std::string_view json_text, std::string_view source,
                       const config_options& options, const warning_sink& warn) {
  const reader in(source, warn);
  json root;
  // Nesting is limited before the value is built: nlohmann's parser is iterative, but building
  // and walking a value nested 10^5 deep recurses once per level and overflows the stack (a crash
  // found by fuzzing). No config.json nests more than a few levels. check_json is linear; the
  // parser callback used before rescanned a container after each nested value (quadratic).
  constexpr int max_depth = 64;
  json_limits limits;
  limits.max_depth = max_depth;
  limits.too_deep = [&](int) {
    in.fail(fmt::format("invalid JSON: nested more than {} levels deep", max_depth));
  };
  check_json(json_text, limits);
  try {
    root = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    // A syntax error (parse_error) or a number beyond double's range (out_of_range 406, e.g.
    // 2e308). nlohmann's message says "parse error at line L, column C: …" after a bracketed id.
    std::string what = e.what();
    if (const auto pos = what.find("] ");
        what.rfind("[json.exception", 0) == 0 && pos != what.npos) {
      what = what.substr(pos + 2);
    }
    in.fail(fmt::format("invalid JSON: {}", what));
  }
  if (!root.is_object()) {
    in.fail(fmt::format("a config.json must be a JSON object, got {}", root.type_name()));
  }

  // Multimodal configs (Gemma-3, Llava, Qwen-VL …) keep the language model under text_config.
  const json* cfg = &root;
  std::string at;  // prefix of key names in messages
  if (!has_attention_keys(root)) {
    if (const json* text = find(root, "text_config"); text != nullptr && text->is_object()) {
      cfg = text;
      at = "text_config.";
    }
  }
  const auto top = [&](std::string_view key) { return find(*cfg, key); };

  // --- The rope dict. convert_rope_params_to_dict: `rope_scaling or rope_parameters`, so a
  // non-empty legacy rope_scaling wins.
  const json* scaling = top("rope_scaling");
  const json* params = top("rope_parameters");
  for (const auto& [p, name] :
       {std::pair{scaling, "rope_scaling"}, std::pair{params, "rope_parameters"}}) {
    if (p != nullptr && !p->is_null() && !p->is_object()) {
      in.fail(fmt::format("{}{} must be an object or null, got {}", at, name, p->dump()));
    }
  }
  json dict = json::object();
  std::string dict_name = "rope_parameters";
  if (scaling != nullptr && truthy(*scaling)) {
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
  const context ctx{in, cfg, &root, at};
  const std::string dict_path = at + dict_name;
  if (!nested) return read_group(ctx, dict, dict_path, false, true);

  // transformers validates (and the model initializes) every group: their errors and warnings are
  // reported, the chosen group is returned.
  std::set<std::string> groups;
  for (const auto& [key, value] : dict.items()) groups.insert(key);
  std::string group = options.layer_type;
  if (!group.empty()) {
    if (groups.count(group) == 0) {
      in.fail(fmt::format("layer_type '{}' is not a group of {} (groups: {})", group, dict_path,
                          join(groups)));
    }
  } else if (groups.count("full_attention") != 0) {
    group = "full_attention";
  } else if (groups.size() == 1) {
    group = *groups.begin();
  } else {
    in.fail(
        fmt::format("{} has several layer_type groups ({}) and none is full_attention; choose "
                    "one (config_options::layer_type)",
                    dict_path, join(groups)));
  }
  std::optional<rope> chosen;
  for (const auto& name : groups) {
    const json& d = dict[name];
    const std::string path = dict_path + "." + name;
    if (!d.is_object()) in.fail(fmt::format("{} must be an object, got {}", path, d.dump()));
    rope r = read_group(ctx, d, path, true, name == group);
    if (name == group) chosen = std::move(r);
  }
  return *chosen;
}

namespace {

// Reads one flat rope dict `d` (the whole dict, or one layer-type group when `nested`); validates
// the result when `selected`.
rope read_group(const context& ctx, const json& d, const std::string& path, bool nested,
                bool selected) {
  const reader& in = ctx.in;
  const std::string& at = ctx.at;
  const auto top = [&](std::string_view key) { return find(*ctx.cfg, key); };
  const auto key_name = [&](std::string_view key) { return fmt::format("{}.{}", path, key); };
  const auto get = [&](std::string_view key) { return find(d, key); };

  // --- standardize_rope_params.
  // rope_type: `rope_type`, else the legacy `type`, else "default". transformers has no
  // initializer for an unknown type and fails when the model is built: an error here.
  rope r;
  {
    const char* type_key = get("rope_type") ? "rope_type" : (get("type") ? "type" : nullptr);
    if (type_key != nullptr) {
      const json& v = *get(type_key);
      if (!v.is_string()) {
        in.fail(fmt::format("{} must be a string, got {}", key_name(type_key), v.dump()));
      }
      try {
        r.type = parse_rope_type(v.get<std::string>(), key_name(type_key));
      } catch (const error& e) {
        in.fail(e.what());
      }
    }
  }
  const rope_type t = r.type;
  const std::string type_name = to_string(t);
  if (t == rope_type::ntk) {
    in.warning(
        fmt::format("{}: rope_type 'ntk' (static NTK-aware) is not in released transformers "
                    "(only transformers@0044e3b); pev reads it like 'linear'",
                    path));
  }

  // Keys the dict holds after standardization: its own, rope_type and rope_theta (always set),
  // partial_rotary_factor (copied from the top level), Lo (set for llama3/yarn/longrope).
  std::set<std::string> received;
  for (const auto& [key, value] : d.items()) received.insert(key);
  received.erase("type");
  received.insert("rope_type");
  received.insert("rope_theta");

  // rope_theta: the dict's, else the top-level attribute, else default_theta 10000.
  if (const json* v = get("rope_theta")) {
    r.rope_theta = in.number(*v, key_name("rope_theta"));
  } else if (const json* v2 = top("rope_theta")) {
    r.rope_theta = in.number(*v2, at + "rope_theta");
  }

  // partial_rotary_factor: a top-level value overwrites the dict's (standardize_rope_params assigns
  // it); a top-level null counts as absent.
  std::optional<double> prf;
  if (const json* v = top("partial_rotary_factor"); v != nullptr && !v->is_null()) {
    prf = in.number(*v, at + "partial_rotary_factor");
    received.insert("partial_rotary_factor");
  } else if (const json* v2 = get("partial_rotary_factor")) {
    prf = in.number(*v2, key_name("partial_rotary_factor"));
  }

  // max_position_embeddings (L): a model attribute; null or absent is "not given" (0).
  if (const json* v = top("max_position_embeddings"); v != nullptr && !v->is_null()) {
    r.max_position_embeddings = in.integer(*v, at + "max_position_embeddings");
    if (r.max_position_embeddings < 0) {
      in.fail(fmt::format("{}max_position_embeddings must be >= 0, got {}", at,
                          r.max_position_embeddings));
    }
  }
  const std::int64_t L = r.max_position_embeddings;

  // Lo for llama3/yarn/longrope: in a flat dict the config attribute wins (Phi-3 keeps it at the
  // top level), else the dict's, else L (setdefault). Per-layer groups only get the setdefault.
  const bool uses_lo = t == rope_type::llama3 || t == rope_type::yarn || t == rope_type::longrope;
  json lo_value;  // null: not given
  std::string lo_name = key_name("original_max_position_embeddings");
  if (uses_lo) {
    const json* attr = nested ? nullptr : top("original_max_position_embeddings");
    if (attr != nullptr) {
      lo_value = *attr;
      lo_name = at + "original_max_position_embeddings";
      received.insert("original_max_position_embeddings");
    } else if (const json* v = get("original_max_position_embeddings")) {
      lo_value = *v;
    } else if (L > 0) {
      lo_value = L;
      lo_name = at + "max_position_embeddings";
      received.insert("original_max_position_embeddings");
    }
  }

  // --- _check_received_keys: missing required keys raise KeyError, unknown keys warn.
  const key_sets keys = keys_of(t);
  std::set<std::string> missing;
  for (const auto& k : keys.required) {
    if (received.count(k) == 0) missing.insert(k);
  }
  if (!missing.empty()) {
    in.fail(
        fmt::format("Missing required keys in `rope_parameters` for 'rope_type'='{}': {} (in {})",
                    type_name, join(missing), path));
  }
  std::set<std::string> unknown;
  for (const auto& k : received) {
    if (keys.required.count(k) == 0 && keys.optional.count(k) == 0 &&
        k != "partial_rotary_factor") {
      unknown.insert(k);
    }
  }
  if (!unknown.empty()) {
    in.warning(
        fmt::format("Unrecognized keys in `rope_parameters` for 'rope_type'='{}': {} (in {})",
                    type_name, join(unknown), path));
  }

  // --- head_dim (docs/encodings.md §7.5). DeepSeek MLA rotates qk_rope_head_dim channels (its
  // config class sets head_dim from it). Otherwise two lookups coexist in transformers: dynamic,
  // yarn and longrope use getattr(config, "head_dim", hidden_size // num_attention_heads), where an
  // explicit null stays None and the initializer fails; the others use `getattr(config, "head_dim",
  // None) or hidden_size // num_attention_heads`, where null (or 0) falls back.
  if (const json* qk = top("qk_rope_head_dim"); qk != nullptr && !qk->is_null()) {
    r.head_dim = in.integer(*qk, at + "qk_rope_head_dim");
  } else {
    const json* hd = top("head_dim");
    const bool attribute_lookup =
        t == rope_type::dynamic || t == rope_type::yarn || t == rope_type::longrope;
    if (hd != nullptr && attribute_lookup && hd->is_null()) {
      in.fail(
          fmt::format("{}head_dim is null: transformers' {} initializer reads "
                      "getattr(config, 'head_dim', hidden_size // num_attention_heads), gets None "
                      "and fails; give head_dim a value or remove it",
                      at, type_name));
    }
    if (hd != nullptr && (attribute_lookup || truthy(*hd))) {
      r.head_dim = in.integer(*hd, at + "head_dim");
    } else {
      const json* hidden = top("hidden_size");
      const json* heads = top("num_attention_heads");
      if (hidden == nullptr || heads == nullptr || hidden->is_null() || heads->is_null()) {
        in.fail(
            fmt::format("cannot determine head_dim: {0}head_dim is not given, nor are both "
                        "{0}hidden_size and {0}num_attention_heads",
                        at));
      }
      const std::int64_t h = in.integer(*hidden, at + "hidden_size");
      const std::int64_t n = in.integer(*heads, at + "num_attention_heads");
      if (n <= 0) {
        in.fail(
            fmt::format("{}num_attention_heads must be a positive integer (head_dim = "
                        "hidden_size // num_attention_heads), got {}",
                        at, n));
      }
      // Python floor division.
      r.head_dim = h / n - ((h % n != 0 && h < 0) ? 1 : 0);
    }
  }

  // --- Layout. DeepSeek-V2/V3 rotate interleaved pairs (V3: `rope_interleave`, default true in its
  // config class, applied by apply_rotary_pos_emb_interleave; V2: complex freqs_cis).
  if (const json* ri = top("rope_interleave"); ri != nullptr && !ri->is_null()) {
    if (!ri->is_boolean()) {
      in.fail(fmt::format("{}rope_interleave must be true or false, got {}", at, ri->dump()));
    }
    r.layout = ri->get<bool>() ? rope_layout::interleaved : rope_layout::neox;
  } else {
    const json* mt = top("model_type");
    if (mt == nullptr) mt = find(*ctx.root, "model_type");
    if (mt != nullptr && mt->is_string() && (*mt == "deepseek_v3" || *mt == "deepseek_v2")) {
      r.layout = rope_layout::interleaved;
    }
  }

  // --- Values, with the warnings of _validate_<type>_rope_parameters.
  const auto factor_warning = [&](const json& v) {
    in.warning(
        fmt::format("`rope_parameters`'s factor field must be a float or int >= 1, got {} "
                    "(in {})",
                    py_repr(v), path));
  };
  const json null_value;
  const json* factor = get("factor");
  // linear, dynamic, yarn, llama3: None, a non-number or < 1 warns.
  const auto check_factor = [&] {
    const json& v = factor != nullptr ? *factor : null_value;
    if (!v.is_number() || v.get<double>() < 1.0) factor_warning(v);
  };
  const auto lo_integer = [&] {
    if (lo_value.is_null()) {
      in.fail(fmt::format("{} must be an integer, got None", lo_name));
    }
    return in.integer(lo_value, lo_name);
  };
  const auto optional_number = [&](std::string_view key) -> std::optional<double> {
    const json* v = get(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return in.number(*v, key_name(key));
  };

  switch (t) {
    case rope_type::default_:
      break;

    case rope_type::linear:
    case rope_type::ntk:
    case rope_type::dynamic:
      check_factor();
      r.factor = in.number(*factor, key_name("factor"));
      if (t == rope_type::dynamic && L <= 0) {
        in.fail(
            fmt::format("{}max_position_embeddings is required for rope_type 'dynamic' (the "
                        "length dynamic NTK scales from)",
                        at));
      }
      break;

    case rope_type::yarn: {
      check_factor();
      if (const json* v = get("attention_factor"); v != nullptr && !v->is_null()) {
        // transformers requires a Python float here: a JSON integer warns too.
        if (!v->is_number_float() || v->get<double>() < 0.0) {
          in.warning(
              fmt::format("`rope_parameters`'s attention_factor field must be a float greater "
                          "than 0, got {} (in {})",
                          py_repr(*v), path));
        }
        r.attention_factor = in.number(*v, key_name("attention_factor"));
      }
      const json* bf = get("beta_fast");
      const json* bs = get("beta_slow");
      for (const auto& [v, name] : {std::pair{bf, "beta_fast"}, std::pair{bs, "beta_slow"}}) {
        if (v != nullptr && !v->is_null() && !v->is_number()) {
          in.warning(
              fmt::format("`rope_parameters`'s {} field must be a float or int, got {} (in {})",
                          name, py_repr(*v), path));
          in.number(*v, key_name(name));  // cannot compute with it: error
        }
      }
      // `rope_parameters.get("beta_fast") or 32`: absent, null and 0 take the default.
      r.beta_fast = bf != nullptr && truthy(*bf) ? bf->get<double>() : 32.0;
      r.beta_slow = bs != nullptr && truthy(*bs) ? bs->get<double>() : 1.0;
      if (r.beta_fast < r.beta_slow) {
        in.warning(
            fmt::format("`rope_parameters`'s beta_fast field must be greater than beta_slow, "
                        "got beta_fast={} (defaults to 32 if None) and beta_slow={} (defaults "
                        "to 1 if None) (in {})",
                        bf ? py_repr(*bf) : "None", bs ? py_repr(*bs) : "None", path));
      }
      const std::int64_t lo = lo_integer();
      if (lo <= 0) in.fail(fmt::format("{} must be >= 1, got {}", lo_name, lo));
      r.original_max_position_embeddings = lo;
      // Implicit factor L/Lo (PR #40320: the explicit factor wins, with a warning). transformers
      // always has an L (its class default); pev checks only when the config gives one.
      const bool factor_given = factor != nullptr && !factor->is_null();
      if (factor_given) r.factor = in.number(*factor, key_name("factor"));
      if (L > 0) {
        const double implicit = static_cast<double>(L) / static_cast<double>(lo);
        if ((!factor_given || implicit != r.factor) && implicit != 1.0) {
          in.warning(fmt::format(
              "The explicitly set RoPE scaling factor (config.rope_parameters['factor'] = {}) does "
              "not match the ratio implicitly set by other parameters (implicit factor = "
              "post-yarn context length / pre-yarn context length = config.max_position_embeddings "
              "/ config.rope_parameters['original_max_position_embeddings'] = {}). Using the "
              "explicit factor ({}) in YaRN (in {})",
              factor_given ? detail::format_number(r.factor) : "None",
              detail::format_number(implicit),
              factor_given ? detail::format_number(r.factor) : "None", path));
        }
      }
      if (!factor_given) {
        // _compute_yarn_parameters: factor None → max_position_embeddings / Lo.
        if (L <= 0) {
          in.fail(
              fmt::format("{} is null and {}max_position_embeddings is not given (factor None "
                          "means max_position_embeddings / original_max_position_embeddings)",
                          key_name("factor"), at));
        }
        r.factor = static_cast<double>(L) / static_cast<double>(lo);
      }
      r.mscale = optional_number("mscale");
      r.mscale_all_dim = optional_number("mscale_all_dim");
      // truncate is read from the top-level rope_parameters with default True: a per-layer group's
      // value is never read (nested configs are always truncated), and a null is falsy.
      if (!nested) {
        if (const json* v = get("truncate")) {
          if (!v->is_null() && !v->is_boolean() && !v->is_number()) {
            in.fail(
                fmt::format("{} must be true or false, got {}", key_name("truncate"), v->dump()));
          }
          r.truncate = truthy(*v);
        }
      }
      break;
    }

    case rope_type::longrope: {
      const bool prf_ok = !prf || (*prf > 0.0 && *prf <= 1.0);
      const std::int64_t dim =
          prf_ok ? detail::expected_rotary_dim(r.head_dim, prf.value_or(1.0), t) : 0;
      for (const auto* name : {"short_factor", "long_factor"}) {
        const json& v = *get(name);
        const bool numbers = v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) {
                               return x.is_number();
                             });
        if (!numbers) {
          in.warning(
              fmt::format("`rope_parameters`'s {} field must be a list of numbers, got {} (in "
                          "{})",
                          name, py_repr(v), path));
          if (!v.is_array()) {
            in.fail(fmt::format("{} must be a list of numbers, got {}", key_name(name), v.dump()));
          }
        }
        if (static_cast<std::int64_t>(v.size()) != dim / 2) {
          in.warning(fmt::format("`rope_parameters`'s {} field must have length {}, got {} (in {})",
                                 name, dim / 2, v.size(), path));
        }
        std::vector<double> list;
        for (std::size_t i = 0; i < v.size(); ++i) {
          list.push_back(in.number(v[i], fmt::format("{}[{}]", key_name(name), i)));
        }
        (std::string_view(name) == "short_factor" ? r.short_factor : r.long_factor) =
            std::move(list);
      }
      const bool factor_given = factor != nullptr && !factor->is_null();
      if (!factor_given && !lo_value.is_null()) {
        in.warning(
            "This model config has set a `rope_parameters['original_max_position_embeddings']` "
            "field, "
            "to be used together with `max_position_embeddings` to determine a scaling factor. "
            "Please "
            "set the `factor` field of `rope_parameters`with this ratio instead -- we recommend "
            "the use "
            "of this field over `original_max_position_embeddings`, as it is compatible with most "
            "model architectures.");
      } else if (!factor_given) {
        in.warning("Missing required keys in `rope_parameters`: 'factor'");
      } else if (!factor->is_number() || factor->get<double>() < 1.0) {
        factor_warning(*factor);
      }
      if (const json* v = get("attention_factor"); v != nullptr && !v->is_null()) {
        if (!v->is_number() || v->get<double>() < 0.0) {
          in.warning(
              fmt::format("`rope_parameters`'s attention_factor field must be a float or int "
                          "greater than 0, got {} (in {})",
                          py_repr(*v), path));
        }
        r.attention_factor = in.number(*v, key_name("attention_factor"));
      }
      const std::int64_t lo = lo_integer();
      if (lo <= 0) in.fail(fmt::format("{} must be >= 1, got {}", lo_name, lo));
      r.original_max_position_embeddings = lo;
      if (factor_given) {
        r.factor = in.number(*factor, key_name("factor"));
      } else {
        // _compute_longrope_parameters: factor None → max_position_embeddings / Lo.
        if (L <= 0) {
          in.fail(
              fmt::format("{} is not given and neither is {}max_position_embeddings (factor "
                          "None means max_position_embeddings / original_max_position_embeddings)",
                          key_name("factor"), at));
        }
        r.factor = static_cast<double>(L) / static_cast<double>(lo);
      }
      break;
    }

    case rope_type::llama3: {
      check_factor();
      const json& low = *get("low_freq_factor");
      const json& high = *get("high_freq_factor");
      if (!low.is_number()) {
        in.warning(
            fmt::format("`rope_parameters`'s low_freq_factor field must be a float, or int got "
                        "{} (in {})",
                        py_repr(low), path));
      }
      if (!high.is_number()) {
        in.warning(
            fmt::format("`rope_parameters`'s high_freq_factor field must be a float or int, "
                        "got {} (in {})",
                        py_repr(high), path));
      }
      r.low_freq_factor = in.number(low, key_name("low_freq_factor"));
      r.high_freq_factor = in.number(high, key_name("high_freq_factor"));
      if (r.high_freq_factor <= r.low_freq_factor) {
        in.warning(
            fmt::format("`rope_parameters`'s high_freq_factor field must be greater than "
                        "low_freq_factor, got high_freq_factor={} and low_freq_factor={} (in "
                        "{})",
                        py_repr(high), py_repr(low), path));
      }
      // transformers requires a Python int: None or a JSON float (8192.0) warns.
      if (!lo_value.is_number_integer()) {
        in.warning(
            fmt::format("`rope_parameters`'s original_max_position_embeddings field must be "
                        "an integer, got {} (in {})",
                        py_repr(lo_value), path));
      }
      const std::int64_t lo = lo_integer();
      if (L > 0 && lo >= L) {
        in.warning(
            fmt::format("`rope_parameters`'s original_max_position_embeddings field must be "
                        "less than max_position_embeddings, got {} and "
                        "max_position_embeddings={} (in {})",
                        lo, L, path));
      }
      r.original_max_position_embeddings = lo;
      r.factor = in.number(*factor, key_name("factor"));
      break;
    }

    case rope_type::proportional: {
      // (A null partial_rotary_factor already failed above: the initializer computes with it.)
      if (!prf) {
        in.warning(fmt::format(
            "`rope_parameters`'s partial_rotary_factor is None. This will default to 1.0 in the "
            "computation, making this equivalent to the linear_scaling RoPE type. Provide a value "
            "in "
            "the range [0.0, 1.0) to make use of the proportional RoPE funcitonality. (in {})",
            path));
      }
      // `factor` is not among proportional's keys (it warned as unrecognized above) but
      // _compute_proportional_rope_parameters reads it: rope_parameters.get("factor", 1.0).
      if (factor != nullptr) r.factor = in.number(*factor, key_name("factor"));
      break;
    }
  }

  r.partial_rotary_factor = prf.value_or(1.0);
  // validate() names partial_rotary_factor or head_dim when they are out of range; the product is
  // only formed for values in range.
  if (r.head_dim >= 2 && r.head_dim <= detail::max_head_dim && r.partial_rotary_factor > 0.0 &&
      r.partial_rotary_factor <= 1.0) {
    r.rotary_dim = detail::expected_rotary_dim(r.head_dim, r.partial_rotary_factor, t);
  }
  if (selected) {
    try {
      validate(r);
    } catch (const error& e) {
      in.fail(e.what());
    }
  }
  return r;
}

}  // namespace

rope parse_config_file(const std::filesystem::path& file, const config_options& options,
                       const warning_sink& warn) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    throw error(fmt::format("{}: is a directory, expected a config.json file", file.string()));
  }
  // Bounded (size, and time for a pipe or a FIFO): a config.json is a few KiB; /dev/zero or a
  // FIFO nobody writes to is an error naming the file.
  return parse_config_text(io::read_file(file, max_config_bytes), file.string(), options, warn);
}

}  // namespace pev::spec

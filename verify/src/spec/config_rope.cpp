// The RoPE reader of config.json: one rope dict (or layer-type group) standardized, checked and
// read as transformers does (config_rope.h; docs/encodings.md §5, §7).

#include "config_rope.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "detail.h"
#include "mrope.h"

namespace pev::spec::config_detail {
namespace {

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
    case rope_type::ggml:
      break;  // not a transformers rope_type: parse_rope_type never returns it for a config
  }
  return {};
}

}  // namespace

// Reads one flat rope dict `d` (the whole dict, or one layer-type group when `nested`); validates
// the result when `selected`.
rope read_group(const context& ctx, const json& d, const std::string& path, bool nested,
                bool selected) {
  const reader& in = ctx.in;
  const std::string& at = ctx.at;
  const auto top = [&](std::string_view key) { return find(*ctx.cfg, key); };
  const auto attr_name = [&](std::string_view key) { return ctx.name(key); };
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
      const std::string name = v.get<std::string>();
      const bool phi = ctx.is(special::phi3) || ctx.is(special::phimoe);
      if (detail::is_mrope_type(name)) {
        // Qwen2-VL's legacy {"type": "mrope", "mrope_section": …}: transformers standardizes it
        // to "default"; the sections are read below (docs/encodings.md §4.6).
        r.type = rope_type::default_;
      } else if (phi && (name == "su" || name == "yarn")) {
        // Phi3Config / PhimoeConfig: "For backward compatibility if previous version used "su"
        // or "yarn"" → longrope. pev maps it before standardization, as v4's Phi3Config did, so
        // that Lo is moved into the dict like a longrope dict's.
        r.type = rope_type::longrope;
      } else {
        try {
          r.type = parse_rope_type(name, key_name(type_key));
        } catch (const error& e) {
          if (name == "su") {
            in.fail(fmt::format(
                "{} = 'su' is not a known rope_type: 'su' is Phi-3's legacy name for longrope, "
                "which transformers maps only in Phi3Config and PhimoeConfig (model_type phi3, "
                "phimoe); this config's model_type is {}. Write rope_type 'longrope'",
                key_name(type_key),
                ctx.model_type().empty() ? std::string("not given")
                                         : "'" + std::string(ctx.model_type()) + "'"));
          }
          in.fail(e.what());
        }
      }
    }
  }
  // MRoPE (Qwen2-VL and its successors): which position stream each pair takes.
  detail::read_mrope_keys(d, path, r);
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

  // rope_theta: the dict's, else the top-level attribute, else the family's own key or the
  // class's default_theta (10000 for a model_type pev does not know).
  if (const json* v = get("rope_theta")) {
    r.rope_theta = in.number(*v, key_name("rope_theta"));
  } else if (const json* v2 = top("rope_theta")) {
    r.rope_theta = in.number(*v2, attr_name("rope_theta"));
  } else {
    r.rope_theta = ctx.theta;
  }

  // partial_rotary_factor: a top-level value overwrites the dict's (standardize_rope_params assigns
  // it); a top-level null counts as absent.
  // Else the family's own key (GPT-NeoX's rotary_pct) or the class default (Phi: 0.5), which
  // convert_rope_params_to_dict sets into the dict.
  std::optional<double> prf;
  std::string prf_name;
  if (const json* v = top("partial_rotary_factor"); v != nullptr && !v->is_null()) {
    prf = in.number(*v, attr_name("partial_rotary_factor"));
    prf_name = attr_name("partial_rotary_factor");
    received.insert("partial_rotary_factor");
  } else if (const json* v2 = get("partial_rotary_factor")) {
    prf = in.number(*v2, key_name("partial_rotary_factor"));
    prf_name = key_name("partial_rotary_factor");
  } else if (ctx.prf) {
    prf = ctx.prf;
    prf_name = at + ctx.prf_name;
    received.insert("partial_rotary_factor");
  }

  // max_position_embeddings (L): a model attribute; null or absent is "not given" (0).
  if (const json* v = top("max_position_embeddings"); v != nullptr && !v->is_null()) {
    r.max_position_embeddings = in.integer(*v, attr_name("max_position_embeddings"));
    if (r.max_position_embeddings < 0) {
      in.fail(fmt::format("{} must be >= 0, got {}", attr_name("max_position_embeddings"),
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
      lo_name = attr_name("original_max_position_embeddings");
      received.insert("original_max_position_embeddings");
    } else if (const json* v = get("original_max_position_embeddings")) {
      lo_value = *v;
    } else if (L > 0) {
      lo_value = L;
      lo_name = attr_name("max_position_embeddings");
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
    // The VL models' configs validate without their MRoPE keys (ignore_keys).
    if (keys.required.count(k) == 0 && keys.optional.count(k) == 0 &&
        k != "partial_rotary_factor" && k != "mrope_section" && k != "mrope_interleaved" &&
        !(ctx.is(special::hunyuan) && k == "alpha") &&
        !(ctx.is(special::ministral3) && k == "llama_4_scaling_beta")) {
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
    r.head_dim = in.integer(*qk, attr_name("qk_rope_head_dim"));
  } else {
    const json* hd = top("head_dim");
    const bool attribute_lookup =
        t == rope_type::dynamic || t == rope_type::yarn || t == rope_type::longrope;
    if (hd != nullptr && attribute_lookup && hd->is_null()) {
      in.fail(
          fmt::format("{} is null: transformers' {} initializer reads "
                      "getattr(config, 'head_dim', hidden_size // num_attention_heads), gets None "
                      "and fails; give head_dim a value or remove it",
                      attr_name("head_dim"), type_name));
    }
    if (hd != nullptr && (attribute_lookup || truthy(*hd))) {
      r.head_dim = in.integer(*hd, attr_name("head_dim"));
    } else {
      const json* hidden = top("hidden_size");
      const json* heads = top("num_attention_heads");
      if (hidden == nullptr || heads == nullptr || hidden->is_null() || heads->is_null()) {
        in.fail(fmt::format(
            "cannot determine head_dim: {}head_dim is not given, nor are both {} and {}", at,
            attr_name("hidden_size"), attr_name("num_attention_heads")));
      }
      const std::int64_t h = in.integer(*hidden, attr_name("hidden_size"));
      const std::int64_t n = in.integer(*heads, attr_name("num_attention_heads"));
      if (n <= 0) {
        in.fail(fmt::format(
            "{} must be a positive integer (head_dim = hidden_size // num_attention_heads), got {}",
            attr_name("num_attention_heads"), n));
      }
      // Python floor division.
      r.head_dim = h / n - ((h % n != 0 && h < 0) ? 1 : 0);
    }
  }

  // GPT-J and CodeGen rotate the first `rotary_dim` dims (default 64): the factor is
  // rotary_dim/head_dim, nudged up to the smallest double whose int(head_dim·factor) gives
  // rotary_dim back, as a SPEC's rotary_dim is.
  if (ctx.is(special::gptj)) {
    std::int64_t rd = 64;
    if (const json* v = top("rotary_dim")) {
      if (v->is_null()) {
        in.fail(fmt::format(
            "{}rotary_dim is null: {} then builds its table over the whole embedding (n_embd), "
            "which fits a head only with one head; not modelled, give rotary_dim",
            at, ctx.fam->config_class));
      }
      rd = in.integer(*v, at + "rotary_dim");
    }
    if (rd < 2 || rd % 2 != 0 || rd > r.head_dim) {
      in.fail(fmt::format("{}rotary_dim must be even and in [2, head_dim = {}], got {}", at,
                          r.head_dim, rd));
    }
    double f = static_cast<double>(rd) / static_cast<double>(r.head_dim);
    while (detail::expected_rotary_dim(r.head_dim, f, t) < rd) f = std::nextafter(f, 2.0);
    prf = f;
    prf_name = at + "rotary_dim";
  }

  // --- Layout (docs/encodings.md §7.6): the family's (GPT-J, CodeGen, Cohere, GLM, Llama-4 and
  // DeepSeek-V2 rotate interleaved pairs; DeepSeek-V3 reads `rope_interleave`, default true in its
  // config class, applied by apply_rotary_pos_emb_interleave). For a model_type pev does not know:
  // `rope_interleave` when given, else NeoX.
  const json* ri = top("rope_interleave");
  if (ri != nullptr && !ri->is_null() && !ri->is_boolean()) {
    in.fail(fmt::format("{}rope_interleave must be true or false, got {}", at, json_text(*ri)));
  }
  const bool ri_given = ri != nullptr && ri->is_boolean();
  if (ctx.fam == nullptr || ctx.is(special::deepseek_v3)) {
    if (ri_given) {
      r.layout = ri->get<bool>() ? rope_layout::interleaved : rope_layout::neox;
    } else if (ctx.is(special::deepseek_v3)) {
      r.layout = rope_layout::interleaved;
    }
  } else {
    r.layout = ctx.fam->layout;
    if (ri_given && selected &&
        (ri->get<bool>() ? rope_layout::interleaved : rope_layout::neox) != r.layout) {
      in.warning(
          fmt::format("{}rope_interleave = {} is not read by transformers' {}, which "
                      "rotates {} pairs; pev follows transformers",
                      at, json_text(*ri), ctx.fam->config_class, to_string(r.layout)));
    }
  }

  // Phi3Config.validate_rope: only default and longrope (after the legacy names).
  if (ctx.is(special::phi3) && t != rope_type::default_ && t != rope_type::longrope) {
    in.fail(fmt::format(
        "{}: rope_type '{}' is refused by transformers' Phi3Config (`rope_parameters`'s type field "
        "must be one of ['longrope'])",
        path, type_name));
  }
  // PhiMoE's LongRoPE carries its own attention factors per list (short_mscale, long_mscale),
  // which pev's longrope does not model (docs/encodings.md §5.10).
  if (ctx.is(special::phimoe) && (get("short_mscale") || get("long_mscale"))) {
    in.fail(fmt::format(
        "{}: short_mscale / long_mscale (PhiMoE's attention factor per LongRoPE list) are not "
        "modelled by pev",
        path));
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
    case rope_type::ggml:  // never from a config (parse_rope_type refuses it)
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

  // HunYuan's dynamic NTK-alpha (HunYuanDenseV1RotaryEmbedding / HunYuanMoEV1RotaryEmbedding):
  // rope_type dynamic with a truthy `alpha` builds default RoPE frequencies over head_dim from the
  // base rope_theta·alpha^(head_dim/(head_dim−2)), attention scaling 1 — exactly default RoPE with
  // that base (docs/encodings.md §7.9).
  if (ctx.is(special::hunyuan) && t == rope_type::dynamic) {
    if (const json* a = get("alpha"); a != nullptr && truthy(*a)) {
      const double alpha = in.number(*a, key_name("alpha"));
      const auto d = static_cast<double>(r.head_dim);
      if (r.head_dim <= 2) {
        in.fail(fmt::format("{}: NTK-alpha needs head_dim > 2, got {}", path, r.head_dim));
      }
      r.rope_theta = r.rope_theta * std::pow(alpha, d / (d - 2.0));
      r.type = rope_type::default_;
      r.factor = 1.0;
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
      // Name the key the factor came from when the config wrote another (rotary_pct, …).
      const std::string what = e.what();
      const bool from_other =
          !prf_name.empty() && prf_name.find("partial_rotary_factor") == std::string::npos;
      if (from_other && what.find("partial_rotary_factor") != std::string::npos) {
        in.fail(fmt::format("{} (partial_rotary_factor from {})", what, prf_name));
      }
      in.fail(what);
    }
  }
  return r;
}

}  // namespace pev::spec::config_detail

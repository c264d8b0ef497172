#include "pev/spec/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "detail.h"
#include "mrope.h"
#include "pev/core/json_check.h"
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
namespace {

using json = nlohmann::json;

// ---- Python's JSON constants --------------------------------------------------------------------
// json.dump writes float('nan') as NaN and ±inf as Infinity / -Infinity, which JSON (and
// nlohmann's parser) does not know. Outside strings they are replaced by marker strings before
// parsing, and the markers by non-finite doubles afterwards.

constexpr std::string_view kNanMarker = "\\u0000pev:NaN";
constexpr std::string_view kInfMarker = "\\u0000pev:Infinity";
constexpr std::string_view kNegInfMarker = "\\u0000pev:-Infinity";

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '+' || c == '-';
}

// The text with NaN, Infinity and -Infinity outside strings replaced by marker strings; `any`
// tells whether one was found (the original text is parsed otherwise, so that syntax errors keep
// their columns).
std::string mark_python_constants(std::string_view text, bool& any) {
  std::string out;
  any = false;
  bool in_string = false;
  for (std::size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (in_string) {
      if (c == '\\' && k + 1 < text.size()) {
        if (any) out += text.substr(k, 2);
        ++k;
        continue;
      }
      if (c == '"') in_string = false;
      if (any) out += c;
      continue;
    }
    if (c == '"') {
      in_string = true;
      if (any) out += c;
      continue;
    }
    std::string_view marker;
    std::size_t length = 0;
    const std::string_view rest = text.substr(k);
    const bool starts_token = k == 0 || !is_word_char(text[k - 1]);
    if (starts_token) {
      if (rest.substr(0, 3) == "NaN") {
        marker = kNanMarker;
        length = 3;
      } else if (rest.substr(0, 8) == "Infinity") {
        marker = kInfMarker;
        length = 8;
      } else if (rest.substr(0, 9) == "-Infinity") {
        marker = kNegInfMarker;
        length = 9;
      }
    }
    if (length > 0 && (k + length == text.size() || !is_word_char(text[k + length]))) {
      if (!any) {
        any = true;
        out.assign(text.substr(0, k));
      }
      out += '"';
      out += marker;
      out += '"';
      k += length - 1;
      continue;
    }
    if (any) out += c;
  }
  return out;
}

// Replaces the marker strings of mark_python_constants by NaN and ±infinity (depth ≤ the checked
// nesting limit).
void restore_python_constants(json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() > 5 && s[0] == '\0' && s.compare(1, 4, "pev:") == 0) {
      const std::string_view name = std::string_view(s).substr(5);
      if (name == "NaN") v = std::numeric_limits<double>::quiet_NaN();
      if (name == "Infinity") v = std::numeric_limits<double>::infinity();
      if (name == "-Infinity") v = -std::numeric_limits<double>::infinity();
    }
  } else if (v.is_structured()) {
    for (auto& x : v) restore_python_constants(x);
  }
}

// A JSON value as text for messages: non-finite numbers as Python writes them.
std::string json_text(const json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  }
  return v.dump();
}

// How Python prints a value in transformers' f-string messages (None, True, 8.0, [1.0, 2.0]).
std::string py_repr(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return v.get<bool>() ? "True" : "False";
    case json::value_t::string:
      return v.get<std::string>();
    case json::value_t::number_float: {
      const double d = v.get<double>();
      if (std::isnan(d)) return "nan";
      if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
      return v.dump();
    }
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

// Python truthiness of a JSON value (None, False, 0, 0.0, "", [], {} are false; NaN is true).
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
    throw error(detail::clip_message(fmt::format("{}: {}", source_, message)));
  }
  void warning(std::string_view message) const { warn_(fmt::format("{}: {}", source_, message)); }

  // A number (JSON booleans are not numbers here), or an error naming `key`.
  double number(const json& v, std::string_view key) const {
    if (!v.is_number()) fail(fmt::format("{} must be a number, got {}", key, json_text(v)));
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(fmt::format("{} must be finite, got {}", key, json_text(v)));
    return d;
  }

  std::int64_t integer(const json& v, std::string_view key) const {
    const auto i = as_integer(v);
    if (!i) fail(fmt::format("{} must be an integer, got {}", key, json_text(v)));
    return *i;
  }

 private:
  std::string source_;
  const warning_sink& warn_;
};

json parse_json(const reader& in, std::string_view json_text_in) {
  bool python_constants = false;
  const std::string marked = mark_python_constants(json_text_in, python_constants);
  const std::string_view text = python_constants ? std::string_view(marked) : json_text_in;
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
  check_json(text, limits);
  json root;
  try {
    root = json::parse(text.begin(), text.end());
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
  if (python_constants) restore_python_constants(root);
  return root;
}

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

// ---- Model families (docs/encodings.md §7.8) ----------------------------------------------------

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

const std::vector<family>& families() {
  using fk = family_kind;
  using sp = special;
  constexpr auto inter = rope_layout::interleaved;
  static const std::vector<family> kFamilies = {
      // RoPE families with the generic rules and their class defaults.
      {.model_type = "llama", .config_class = "LlamaConfig"},
      {.model_type = "mistral", .config_class = "MistralConfig"},
      {.model_type = "mixtral", .config_class = "MixtralConfig", .default_theta = 1e6},
      {.model_type = "qwen2", .config_class = "Qwen2Config"},
      {.model_type = "qwen2_moe", .config_class = "Qwen2MoeConfig"},
      // The VL models' text configs (MRoPE sections in rope_scaling; docs/encodings.md §4.6).
      {.model_type = "qwen2_vl", .config_class = "Qwen2VLTextConfig", .default_theta = 1e6},
      {.model_type = "qwen2_5_vl", .config_class = "Qwen2_5_VLTextConfig", .default_theta = 1e6},
      {.model_type = "qwen3", .config_class = "Qwen3Config", .default_head_dim = 128},
      {.model_type = "qwen3_moe", .config_class = "Qwen3MoeConfig", .default_head_dim = 128},
      {.model_type = "gemma", .config_class = "GemmaConfig", .default_head_dim = 256},
      {.model_type = "gemma2", .config_class = "Gemma2Config", .default_head_dim = 256},
      {.model_type = "gemma3_text",
       .config_class = "Gemma3TextConfig",
       .sp = sp::gemma3,
       .default_theta = 1e6,
       .default_head_dim = 256,
       .default_max_position = 131072},
      {.model_type = "phi", .config_class = "PhiConfig", .default_prf = 0.5},
      {.model_type = "phi3",
       .config_class = "Phi3Config",
       .sp = sp::phi3,
       .default_max_position = 4096},
      {.model_type = "phimoe",
       .config_class = "PhimoeConfig",
       .sp = sp::phimoe,
       .default_theta = 1e6},
      {.model_type = "stablelm", .config_class = "StableLmConfig", .default_prf = 0.25},
      {.model_type = "persimmon",
       .config_class = "PersimmonConfig",
       .default_theta = 25000.0,
       .default_prf = 0.5},
      {.model_type = "nemotron", .config_class = "NemotronConfig", .default_prf = 0.5},
      {.model_type = "recurrent_gemma", .config_class = "RecurrentGemmaConfig", .default_prf = 0.5},
      {.model_type = "glm",
       .config_class = "GlmConfig",
       .default_prf = 0.5,
       .default_head_dim = 128,
       .layout = inter},
      {.model_type = "glm4",
       .config_class = "Glm4Config",
       .default_prf = 0.5,
       .default_head_dim = 128,
       .layout = inter},
      {.model_type = "cohere", .config_class = "CohereConfig", .layout = inter},
      {.model_type = "cohere2",
       .config_class = "Cohere2Config",
       .sp = sp::cohere2,
       .layout = inter},
      {.model_type = "deepseek_v2", .config_class = "DeepseekV2Config", .layout = inter},
      {.model_type = "deepseek_v3", .config_class = "DeepseekV3Config", .sp = sp::deepseek_v3},
      {.model_type = "olmo", .config_class = "OlmoConfig"},
      {.model_type = "olmo2", .config_class = "Olmo2Config"},
      {.model_type = "starcoder2", .config_class = "Starcoder2Config"},
      {.model_type = "granite", .config_class = "GraniteConfig"},
      {.model_type = "llama4_text",
       .config_class = "Llama4TextConfig",
       .default_theta = 500000.0,
       .layout = inter},
      {.model_type = "mllama_text_model",
       .config_class = "MllamaTextConfig",
       .default_theta = 500000.0},
      {.model_type = "gpt_oss",
       .config_class = "GptOssConfig",
       .default_theta = 150000.0,
       .default_head_dim = 64},
      {.model_type = "modernbert",
       .config_class = "ModernBertConfig",
       .sp = sp::modernbert,
       .default_theta = 160000.0},
      {.model_type = "gpt_neox",
       .config_class = "GPTNeoXConfig",
       .sp = sp::gpt_neox,
       .default_prf = 0.25,
       .default_max_position = 2048},
      {.model_type = "gpt_neox_japanese",
       .config_class = "GPTNeoXJapaneseConfig",
       .sp = sp::gpt_neox,
       .default_prf = 1.0,
       .default_max_position = 2048},
      {.model_type = "gptj",
       .config_class = "GPTJConfig",
       .sp = sp::gptj,
       .default_max_position = 2048,
       .layout = inter,
       .aliases = {{"hidden_size", "n_embd"},
                   {"num_attention_heads", "n_head"},
                   {"max_position_embeddings", "n_positions"}}},
      {.model_type = "codegen",
       .config_class = "CodeGenConfig",
       .sp = sp::gptj,
       .default_max_position = 2048,
       .layout = inter,
       .aliases = {{"hidden_size", "n_embd"},
                   {"num_attention_heads", "n_head"},
                   {"max_position_embeddings", "n_positions"}}},
      {.model_type = "falcon",
       .config_class = "FalconConfig",
       .sp = sp::falcon,
       .default_max_position = 2048,
       .aliases = {{"num_attention_heads", "n_head"}}},
      {.model_type = "dbrx",
       .config_class = "DbrxConfig",
       .sp = sp::dbrx,
       .aliases = {{"hidden_size", "d_model"},
                   {"num_attention_heads", "n_heads"},
                   {"max_position_embeddings", "max_seq_len"}}},
      // Multimodal wrappers: the language model's config is text_config.
      {.model_type = "gemma3",
       .config_class = "Gemma3Config",
       .kind = fk::container,
       .text_family = "gemma3_text"},
      {.model_type = "llama4",
       .config_class = "Llama4Config",
       .kind = fk::container,
       .text_family = "llama4_text"},
      {.model_type = "mllama",
       .config_class = "MllamaConfig",
       .kind = fk::container,
       .text_family = "mllama_text_model"},
      {.model_type = "llava",
       .config_class = "LlavaConfig",
       .kind = fk::container,
       .text_family = "llama"},
      {.model_type = "llava_next",
       .config_class = "LlavaNextConfig",
       .kind = fk::container,
       .text_family = "llama"},
      {.model_type = "paligemma",
       .config_class = "PaliGemmaConfig",
       .kind = fk::container,
       .text_family = "gemma"},
      // Families without RoPE.
      {.model_type = "bloom",
       .config_class = "BloomConfig",
       .kind = fk::alibi,
       .aliases = {{"num_attention_heads", "n_head"}}},
      {.model_type = "mpt",
       .config_class = "MptConfig",
       .kind = fk::alibi,
       .sp = sp::mpt,
       .aliases = {{"num_attention_heads", "n_heads"},
                   {"hidden_size", "d_model"},
                   {"max_position_embeddings", "max_seq_len"}}},
      {.model_type = "t5", .config_class = "T5Config", .kind = fk::t5},
      {.model_type = "mt5", .config_class = "MT5Config", .kind = fk::t5},
      {.model_type = "umt5", .config_class = "UMT5Config", .kind = fk::t5},
      {.model_type = "gpt2",
       .config_class = "GPT2Config",
       .kind = fk::learned,
       .aliases = {{"hidden_size", "n_embd"}, {"max_position_embeddings", "n_positions"}}},
      {.model_type = "gpt_bigcode",
       .config_class = "GPTBigCodeConfig",
       .kind = fk::learned,
       .aliases = {{"hidden_size", "n_embd"}, {"max_position_embeddings", "n_positions"}}},
      {.model_type = "gpt_neo", .config_class = "GPTNeoConfig", .kind = fk::learned},
      {.model_type = "opt", .config_class = "OPTConfig", .kind = fk::learned},
      {.model_type = "bert", .config_class = "BertConfig", .kind = fk::learned},
      {.model_type = "roberta", .config_class = "RobertaConfig", .kind = fk::learned},
      {.model_type = "xlm-roberta", .config_class = "XLMRobertaConfig", .kind = fk::learned},
      {.model_type = "distilbert",
       .config_class = "DistilBertConfig",
       .kind = fk::distilbert,
       .aliases = {{"hidden_size", "dim"}}},
      {.model_type = "mamba", .config_class = "MambaConfig", .kind = fk::none},
      {.model_type = "mamba2", .config_class = "Mamba2Config", .kind = fk::none},
      {.model_type = "falcon_mamba", .config_class = "FalconMambaConfig", .kind = fk::none},
      {.model_type = "rwkv", .config_class = "RwkvConfig", .kind = fk::none},
      {.model_type = "jamba", .config_class = "JambaConfig", .kind = fk::none},
  };
  return kFamilies;
}

const family* find_family(std::string_view model_type) {
  for (const family& f : families()) {
    if (f.model_type == model_type) return &f;
  }
  return nullptr;
}

// The value of a family attribute: the key transformers' attribute_map stores it under (n_embd,
// n_head, …), else the attribute's own name. `name` receives the key found.
const json* attribute(const json& cfg, const family* fam, std::string_view attr,
                      std::string* name = nullptr) {
  if (fam != nullptr) {
    for (const auto& [a, stored] : fam->aliases) {
      if (a == attr) {
        if (const json* v = find(cfg, stored)) {
          if (name) *name = std::string(stored);
          return v;
        }
      }
    }
  }
  if (name) *name = std::string(attr);
  return find(cfg, attr);
}

bool has_attention_keys(const json& object) {
  for (const char* k : {"head_dim", "hidden_size", "num_attention_heads", "qk_rope_head_dim",
                        "n_embd", "n_head", "d_model", "n_heads"}) {
    if (find(object, k)) return true;
  }
  return false;
}

// What every group's reader needs: the message helper, the config object holding the attention
// keys (the root or its text_config, with the family's attribute_map applied), the root, the key
// prefix for messages ("text_config."), the family (null: a model_type pev does not know, read
// with the generic rules), and the keys as the config.json wrote them (rotary_emb_base for
// rope_theta, …).
struct context {
  const reader& in;
  const json* cfg;
  const json* root;
  std::string at;
  const family* fam;
  std::map<std::string, std::string, std::less<>> names;
  // The family's fallbacks when neither the dict nor the attributes give a value: rope_theta and
  // partial_rotary_factor (from the class's own keys or defaults), with the key they came from.
  double theta = 10000.0;
  std::string theta_name = "default_theta";
  std::optional<double> prf = std::nullopt;
  std::string prf_name = {};

  /// A key of the attribute object as the config.json wrote it, with the text_config prefix.
  std::string name(std::string_view key) const {
    const auto it = names.find(key);
    return at + (it == names.end() ? std::string(key) : it->second);
  }
  std::string_view model_type() const { return fam ? fam->model_type : std::string_view(); }
  bool is(special s) const { return fam != nullptr && fam->sp == s; }
};

rope read_group(const context& ctx, const json& d, const std::string& path, bool nested,
                bool selected);

// The encoding of a family without RoPE, or an error naming what pev would need.
encoding non_rope(const reader& in, const json& cfg, const std::string& at, const family& fam,
                  const config_options& options) {
  const auto attr = [&](std::string_view a, std::string* name = nullptr) {
    return attribute(cfg, &fam, a, name);
  };
  const auto int_attr = [&](std::string_view a, std::int64_t fallback) {
    std::string name;
    const json* v = attr(a, &name);
    if (v == nullptr || v->is_null()) return fallback;
    return in.integer(*v, at + name);
  };
  const std::string who = fmt::format("model_type '{}' ({})", fam.model_type, fam.config_class);
  if (fam.kind != family_kind::t5 && !options.layer_type.empty()) {
    in.fail(fmt::format("layer_type '{}' given, but {} has no layer-type groups",
                        options.layer_type, who));
  }
  switch (fam.kind) {
    case family_kind::alibi: {
      // BLOOM and MPT build their biases with build_alibi_tensor / build_mpt_alibi_tensor: the
      // slopes of docs/encodings.md §3.1 with max_bias 8 (MptModel passes no alibi_bias_max).
      std::string name;
      const json* h = attr("num_attention_heads", &name);
      if (h == nullptr || h->is_null()) {
        in.fail(fmt::format("{} uses ALiBi: its head count {}{} is needed and not given", who, at,
                            name));
      }
      alibi a;
      a.num_heads = in.integer(*h, at + name);
      if (fam.sp == special::mpt) {
        if (const json* ac = find(cfg, "attn_config"); ac != nullptr && ac->is_object()) {
          if (const json* b = find(*ac, "alibi_bias_max");
              b != nullptr && b->is_number() && b->get<double>() != 8.0) {
            in.warning(fmt::format(
                "{}attn_config.alibi_bias_max = {} is not read by transformers' MptModel, which "
                "builds its ALiBi slopes with alibi_bias_max 8; pev follows transformers",
                at, json_text(*b)));
          }
          if (const json* al = find(*ac, "alibi");
              al != nullptr && al->is_boolean() && !al->get<bool>()) {
            in.warning(fmt::format(
                "{}attn_config.alibi is false, but transformers' MptModel always adds ALiBi "
                "biases (it has no learned position embeddings); pev follows transformers",
                at));
          }
        }
      }
      try {
        validate(a);
      } catch (const error& e) {
        in.fail(e.what());
      }
      return a;
    }
    case family_kind::t5: {
      // T5Attention._relative_position_bucket: bidirectional in the encoder, causal in the
      // decoder (bidirectional=not self.is_decoder).
      t5 t;
      t.num_buckets = int_attr("relative_attention_num_buckets", 32);
      t.max_distance = int_attr("relative_attention_max_distance", 128);
      if (options.layer_type.empty() || options.layer_type == "encoder") {
        t.bidirectional = true;
      } else if (options.layer_type == "decoder") {
        t.bidirectional = false;
      } else {
        in.fail(fmt::format(
            "layer_type '{}' is not a stack of {} (encoder: bidirectional buckets, decoder: "
            "causal buckets)",
            options.layer_type, who));
      }
      try {
        validate(t);
      } catch (const error& e) {
        in.fail(e.what());
      }
      return t;
    }
    case family_kind::distilbert: {
      // Embeddings: create_sinusoidal_embeddings(max_position_embeddings, dim) when
      // sinusoidal_pos_embds, else an nn.Embedding.
      if (const json* s = find(cfg, "sinusoidal_pos_embds"); s != nullptr && truthy(*s)) {
        sinusoidal p;
        p.d_model = int_attr("hidden_size", 768);
        try {
          validate(p);
        } catch (const error& e) {
          in.fail(e.what());
        }
        return p;
      }
      [[fallthrough]];
    }
    case family_kind::learned: {
      std::string pn, dn;
      const json* P = attr("max_position_embeddings", &pn);
      const json* D = attr("hidden_size", &dn);
      const std::string shape = P != nullptr && D != nullptr
                                    ? fmt::format(" ({}{} = {} positions × {}{} = {})", at, pn,
                                                  json_text(*P), at, dn, json_text(*D))
                                    : "";
      std::string offset;
      if (fam.model_type == "opt") {
        offset =
            "; OPT's table has 2 more rows (position p is row p + 2), an offset pev does not "
            "apply (docs/encodings.md §2.4)";
      } else if (fam.model_type == "roberta" || fam.model_type == "xlm-roberta") {
        offset =
            "; its position ids start at padding_idx + 1, an offset pev does not apply "
            "(docs/encodings.md §2.4)";
      }
      in.fail(fmt::format(
          "{} has no RoPE: it uses learned absolute position embeddings{}, whose values are in "
          "the model's weights, not in config.json; what is missing is the table itself: give it "
          "as --spec learned:num_positions=P,d_model=D,table=FILE.npy{}",
          who, shape, offset));
    }
    case family_kind::none:
      in.fail(fmt::format(
          "{} has no positional encoding pev could check: {}", who,
          fam.model_type == "jamba"
              ? "its attention layers use no position embeddings (the Mamba layers carry order)"
              : "a state-space / recurrent model orders tokens by its recurrence"));
    case family_kind::rope:
    case family_kind::container:
      break;
  }
  in.fail(fmt::format("{}: not a family without RoPE", who));
}

}  // namespace

encoding parse_config_encoding_text(std::string_view json_text_in, std::string_view source,
                                    const config_options& options, const warning_sink& warn) {
  const reader in(source, warn);
  const json root = parse_json(in, json_text_in);
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

  // --- The family: the model_type of the config read (text_config's own, else the wrapper's text
  // family), else the root's.
  const auto model_type_of = [](const json& o) -> std::string {
    const json* mt = find(o, "model_type");
    return mt != nullptr && mt->is_string() ? mt->get<std::string>() : std::string();
  };
  std::string mt = model_type_of(*cfg);
  const std::string root_mt = model_type_of(root);
  if (mt.empty()) mt = root_mt;
  const family* fam = mt.empty() ? nullptr : find_family(mt);
  if (fam != nullptr && fam->kind == family_kind::container) {
    // A wrapper read at its root (no text_config), or a text_config without a model_type.
    fam = find_family(cfg == &root ? mt : fam->text_family);
    if (fam != nullptr && fam->kind == family_kind::container) fam = find_family(fam->text_family);
  }
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
  if (!group.empty()) {
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
  if (ctx.is(special::cohere2) && group == "full_attention") cohere2_full();
  std::optional<rope> chosen;
  for (const auto& name : groups) {
    const json& d = dict[name];
    const std::string path = (synthesized ? at + "rope_parameters" : dict_path) + "." + name;
    if (!d.is_object()) in.fail(fmt::format("{} must be an object, got {}", path, json_text(d)));
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
        k != "partial_rotary_factor" && k != "mrope_section" && k != "mrope_interleaved") {
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

}  // namespace

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

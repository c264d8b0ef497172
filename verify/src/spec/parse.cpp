#include "pev/spec/parse.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "detail.h"
#include "pev/core/splitmix.h"
#include "pev/io/file.h"
#include "pev/io/npy.h"
#include "pev/io/safetensors.h"

namespace pev::spec {
namespace {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// One `key=value` item; `list` when the value was written in brackets (the brackets stripped).
struct item {
  std::string value;
  bool list = false;
};

// The items of one SPEC, read by key. Every accessor names the family and the key in its errors.
class items {
 public:
  items(std::string family, std::map<std::string, item, std::less<>> map)
      : family_(std::move(family)), map_(std::move(map)) {}

  [[noreturn]] void fail(std::string_view message) const {
    throw error(detail::clip_message(fmt::format("{}: {}", family_, message)));
  }

  bool has(std::string_view key) const { return map_.find(key) != map_.end(); }
  const std::map<std::string, item, std::less<>>& all() const { return map_; }

  /// Rejects keys not in `known` (a family's full key set).
  void check_known(std::initializer_list<std::string_view> known) const {
    for (const auto& [key, it] : map_) {
      bool found = false;
      for (std::string_view k : known) found = found || k == key;
      if (!found) {
        std::string list;
        for (std::string_view k : known) {
          if (!list.empty()) list += ", ";
          list += k;
        }
        fail(fmt::format("unknown key '{}' (keys: {})", key, list));
      }
    }
  }

  /// Names of the `required` keys that are missing, comma-separated; empty when none is.
  std::string missing(std::initializer_list<std::string_view> required) const {
    std::string out;
    for (std::string_view k : required) {
      if (!has(k)) {
        if (!out.empty()) out += ", ";
        out += k;
      }
    }
    return out;
  }

  std::optional<double> number(std::string_view key) const {
    const item* it = scalar(key);
    if (it == nullptr) return std::nullopt;
    return parse_number(key, it->value);
  }

  std::optional<std::int64_t> integer(std::string_view key) const {
    const item* it = scalar(key);
    if (it == nullptr) return std::nullopt;
    const std::string& s = it->value;
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && ptr == s.data() + s.size()) return v;
    if (ec == std::errc::result_out_of_range) {
      fail(fmt::format("{} is out of range, got '{}'", key, s));
    }
    // An integral decimal (8192.0, 1e5) is accepted for an integer key; 2^63 is the first double
    // outside int64.
    const double d = parse_number(key, s, "an integer");
    if (d != std::trunc(d) || std::fabs(d) >= 9223372036854775808.0) {
      fail(fmt::format("{} must be an integer, got '{}'", key, s));
    }
    return static_cast<std::int64_t>(d);
  }

  std::optional<std::uint64_t> unsigned_integer(std::string_view key) const {
    const item* it = scalar(key);
    if (it == nullptr) return std::nullopt;
    const std::string& s = it->value;
    std::uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) {
      fail(fmt::format("{} is out of range [0, 2^64), got '{}'", key, s));
    }
    if (ec != std::errc() || ptr != s.data() + s.size()) {
      fail(fmt::format("{} must be an unsigned integer, got '{}'", key, s));
    }
    return v;
  }

  std::optional<bool> boolean(std::string_view key) const {
    const item* it = scalar(key);
    if (it == nullptr) return std::nullopt;
    const std::string& s = it->value;
    if (s == "true" || s == "1") return true;
    if (s == "false" || s == "0") return false;
    fail(fmt::format("{} must be true, false, 1 or 0, got '{}'", key, s));
  }

  std::optional<std::string> text(std::string_view key) const {
    const item* it = scalar(key);
    if (it == nullptr) return std::nullopt;
    return it->value;
  }

  std::optional<std::vector<double>> list(std::string_view key) const {
    const auto found = map_.find(key);
    if (found == map_.end()) return std::nullopt;
    if (!found->second.list) {
      fail(fmt::format("{} must be a list in brackets such as [1.0,1.05], got '{}'", key,
                       found->second.value));
    }
    std::vector<double> out;
    std::string_view rest = found->second.value;
    if (trim(rest).empty()) return out;
    while (true) {
      const std::size_t comma = rest.find(',');
      const std::string_view entry = trim(rest.substr(0, comma));
      const std::string name = fmt::format("{}[{}]", key, out.size());
      if (entry.empty()) fail(fmt::format("{} is empty", name));
      out.push_back(parse_number(name, entry));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    return out;
  }

 private:
  const item* scalar(std::string_view key) const {
    const auto found = map_.find(key);
    if (found == map_.end()) return nullptr;
    if (found->second.list) {
      fail(fmt::format("{} takes a single value, got a list '[{}]'", key, found->second.value));
    }
    return &found->second;
  }

  double parse_number(std::string_view key, std::string_view s,
                      std::string_view what = "a number") const {
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) {
      fail(fmt::format("{} is out of the range of double, got '{}'", key, s));
    }
    if (ec != std::errc() || ptr != s.data() + s.size()) {
      fail(fmt::format("{} must be {}, got '{}'", key, what, s));
    }
    // from_chars reads "nan" and "inf"; no pev parameter can be either.
    if (!std::isfinite(v)) fail(fmt::format("{} must be finite, got '{}'", key, s));
    return v;
  }

  std::string family_;
  std::map<std::string, item, std::less<>> map_;
};

// Splits `family:k=v,k=[a,b],…` into the family and its items (commas inside brackets do not
// split).
std::pair<std::string, items> split(std::string_view text) {
  text = trim(text);
  const std::size_t colon = text.find(':');
  const std::string family(trim(text.substr(0, colon)));
  if (family.empty()) {
    throw error(detail::clip_message(fmt::format(
        "SPEC '{}': missing family (expected family[:key=value,...], family one of sinusoidal, "
        "learned, alibi, t5, shaw, rope, ggml)",
        text)));
  }
  std::map<std::string, item, std::less<>> map;
  const auto fail = [&](std::string_view message) {
    throw error(detail::clip_message(fmt::format("{}: {}", family, message)));
  };
  if (colon == std::string_view::npos) return {family, items(family, std::move(map))};
  std::string_view rest = text.substr(colon + 1);
  if (trim(rest).empty()) fail("expected key=value items after ':'");
  while (true) {
    // Find the end of this item: the first ',' outside brackets.
    std::size_t end = 0;
    int depth = 0;
    for (; end < rest.size(); ++end) {
      const char c = rest[end];
      if (c == '[') {
        if (++depth > 1) fail(fmt::format("nested '[' in '{}'", rest));
      } else if (c == ']') {
        if (--depth < 0) fail(fmt::format("unbalanced ']' in '{}'", rest));
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    if (depth != 0) fail(fmt::format("missing ']' in '{}'", rest));
    const std::string_view entry = trim(rest.substr(0, end));
    if (entry.empty()) fail("empty item (two commas in a row, or a trailing comma)");
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) fail(fmt::format("expected key=value, got '{}'", entry));
    const std::string key(trim(entry.substr(0, eq)));
    std::string_view value = trim(entry.substr(eq + 1));
    if (key.empty()) fail(fmt::format("missing key in '{}'", entry));
    if (value.empty()) fail(fmt::format("{}: empty value", key));
    item it;
    if (value.front() == '[') {
      if (value.back() != ']')
        fail(fmt::format("{}: trailing characters after ']' in '{}'", key, value));
      it.list = true;
      value = value.substr(1, value.size() - 2);
    } else if (value.find_first_of("[]") != std::string_view::npos) {
      fail(fmt::format("{}: a list must start with '[', got '{}'", key, value));
    }
    it.value = std::string(value);
    if (!map.emplace(key, std::move(it)).second) fail(fmt::format("duplicate key '{}'", key));
    if (end == rest.size()) break;
    rest.remove_prefix(end + 1);
  }
  return {family, items(family, std::move(map))};
}

void require(const items& in, std::string_view what, std::initializer_list<std::string_view> keys) {
  const std::string missing = in.missing(keys);
  if (!missing.empty()) in.fail(fmt::format("missing required key(s) {}: {}", what, missing));
}

sinusoidal parse_sinusoidal(const items& in) {
  in.check_known({"d_model", "base", "layout", "freq_shift"});
  require(in, "for sinusoidal", {"d_model"});
  sinusoidal s;
  s.d_model = *in.integer("d_model");
  s.base = in.number("base").value_or(s.base);
  if (auto layout = in.text("layout")) {
    const auto l = detail::sinusoidal_layout_names.find(*layout);
    if (!l) {
      in.fail(fmt::format("layout must be {}, got {}",
                          detail::sinusoidal_layout_names.list(", ", " or "),
                          quoted_text(*layout)));
    }
    s.layout = *l;
  }
  if (in.has("freq_shift") && s.layout != sinusoidal_layout::blocked) {
    in.fail("freq_shift applies to layout=blocked only");
  }
  s.freq_shift = in.number("freq_shift").value_or(s.freq_shift);
  return s;
}

learned parse_learned(const items& in) {
  in.check_known(
      {"num_positions", "d_model", "target_positions", "align_corners", "offset", "table", "seed"});
  require(in, "for learned", {"num_positions", "d_model"});
  learned s;
  s.num_positions = *in.integer("num_positions");
  s.d_model = *in.integer("d_model");
  s.target_positions = in.integer("target_positions").value_or(0);
  s.align_corners = in.boolean("align_corners").value_or(true);
  s.offset = in.integer("offset").value_or(0);
  if (in.has("table") && in.has("seed")) {
    in.fail("table and seed exclude each other (seed generates the table when no file is given)");
  }
  s.table_file = in.text("table").value_or("");
  s.seed = in.unsigned_integer("seed").value_or(0);
  // Validate the sizes before allocating the generated table.
  learned shape = s;
  shape.table_file = "(sizes only)";
  validate(shape);
  if (s.table_file.empty()) s.table = learned_table_from_seed(s.seed, s.num_positions, s.d_model);
  return s;
}

alibi parse_alibi(const items& in) {
  in.check_known({"num_heads", "max_bias"});
  require(in, "for alibi", {"num_heads"});
  alibi s;
  s.num_heads = *in.integer("num_heads");
  s.max_bias = in.number("max_bias").value_or(s.max_bias);
  return s;
}

t5 parse_t5(const items& in) {
  in.check_known({"num_buckets", "max_distance", "bidirectional"});
  t5 s;
  s.num_buckets = in.integer("num_buckets").value_or(s.num_buckets);
  s.max_distance = in.integer("max_distance").value_or(s.max_distance);
  s.bidirectional = in.boolean("bidirectional").value_or(s.bidirectional);
  return s;
}

shaw parse_shaw(const items& in) {
  in.check_known({"max_relative_position"});
  require(in, "for shaw", {"max_relative_position"});
  shaw s;
  s.max_relative_position = *in.integer("max_relative_position");
  return s;
}

rope parse_rope(const items& in, const warning_sink& warn) {
  in.check_known({"head_dim",
                  "partial_rotary_factor",
                  "rotary_dim",
                  "rope_theta",
                  "layout",
                  "rope_type",
                  "factor",
                  "freq_scale",
                  "max_position_embeddings",
                  "original_max_position_embeddings",
                  "beta_fast",
                  "beta_slow",
                  "truncate",
                  "mscale",
                  "mscale_all_dim",
                  "attention_factor",
                  "low_freq_factor",
                  "high_freq_factor",
                  "short_factor",
                  "long_factor",
                  "mrope_section",
                  "mrope_interleaved"});
  rope r;
  if (auto type = in.text("rope_type")) {
    try {
      r.type = parse_rope_type(*type);
    } catch (const error& e) {
      in.fail(e.what());
    }
  }
  const rope_type t = r.type;
  const std::string type_name = to_string(t);
  for (const auto& entry : in.all()) {
    const std::string& key = entry.first;
    if (!detail::rope_key_applies(key, t)) {
      in.fail(fmt::format("{} does not apply to rope_type={} (it applies to {})", key, type_name,
                          detail::rope_types_of_key(key)));
    }
  }
  const std::string for_type = fmt::format("for rope_type={}", type_name);
  require(in, "for rope", {"head_dim"});
  switch (t) {
    case rope_type::default_:
    case rope_type::proportional:
      break;
    case rope_type::linear:
    case rope_type::ntk:
      require(in, for_type, {"factor"});
      break;
    case rope_type::dynamic:
      require(in, for_type, {"factor", "max_position_embeddings"});
      break;
    case rope_type::yarn:
      require(in, for_type, {"factor", "original_max_position_embeddings"});
      break;
    case rope_type::llama3:
      require(
          in, for_type,
          {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
      break;
    case rope_type::longrope:
      require(in, for_type, {"short_factor", "long_factor", "original_max_position_embeddings"});
      break;
    case rope_type::ggml:
      break;  // parse_rope_type refuses it: the ggml form is its own family
  }

  r.head_dim = *in.integer("head_dim");
  if (r.head_dim < 2 || r.head_dim > detail::max_head_dim) {
    in.fail(fmt::format("head_dim must be an integer in [2, {}], got {}", detail::max_head_dim,
                        r.head_dim));
  }
  // rotary_dim is the SPEC's alternative to partial_rotary_factor. Given alone, the factor becomes
  // rotary_dim/head_dim, nudged up to the smallest double whose Python-style int(head_dim·factor)
  // gives rotary_dim back (the quotient can land one ulp low).
  const auto prf = in.number("partial_rotary_factor");
  const auto rotary_dim = in.integer("rotary_dim");
  if (prf) r.partial_rotary_factor = *prf;
  if (rotary_dim) {
    if (*rotary_dim < 2 || *rotary_dim > r.head_dim || *rotary_dim % 2 != 0) {
      in.fail(fmt::format("rotary_dim must be even and in [2, head_dim = {}], got {}", r.head_dim,
                          *rotary_dim));
    }
    if (prf) {
      if (*prf > 0.0 && *prf <= 1.0 &&
          detail::expected_rotary_dim(r.head_dim, *prf, t) != *rotary_dim) {
        in.fail(fmt::format("rotary_dim={} disagrees with int(head_dim·partial_rotary_factor) = {}",
                            *rotary_dim, detail::expected_rotary_dim(r.head_dim, *prf, t)));
      }
    } else {
      double f = static_cast<double>(*rotary_dim) / static_cast<double>(r.head_dim);
      while (detail::expected_rotary_dim(r.head_dim, f, t) < *rotary_dim) {
        f = std::nextafter(f, 2.0);
      }
      r.partial_rotary_factor = f;
    }
  }
  if (!(r.partial_rotary_factor > 0.0 && r.partial_rotary_factor <= 1.0)) {
    in.fail(fmt::format("partial_rotary_factor must be in (0, 1], got {}",
                        detail::format_number(r.partial_rotary_factor)));
  }
  r.rotary_dim = detail::expected_rotary_dim(r.head_dim, r.partial_rotary_factor, t);

  r.rope_theta = in.number("rope_theta").value_or(r.rope_theta);
  if (auto layout = in.text("layout")) {
    const auto l = detail::rope_layout_names.find(*layout);
    if (!l) {
      in.fail(fmt::format("layout must be {}, got {}", detail::rope_layout_names.list(", ", " or "),
                          quoted_text(*layout)));
    }
    r.layout = *l;
  }
  r.freq_scale = in.number("freq_scale").value_or(r.freq_scale);
  r.max_position_embeddings = in.integer("max_position_embeddings").value_or(0);
  r.original_max_position_embeddings = in.integer("original_max_position_embeddings").value_or(0);
  r.beta_fast = in.number("beta_fast").value_or(r.beta_fast);
  r.beta_slow = in.number("beta_slow").value_or(r.beta_slow);
  r.truncate = in.boolean("truncate").value_or(r.truncate);
  r.mscale = in.number("mscale");
  r.mscale_all_dim = in.number("mscale_all_dim");
  r.attention_factor = in.number("attention_factor");
  r.low_freq_factor = in.number("low_freq_factor").value_or(r.low_freq_factor);
  r.high_freq_factor = in.number("high_freq_factor").value_or(r.high_freq_factor);
  r.short_factor = in.list("short_factor").value_or(std::vector<double>{});
  r.long_factor = in.list("long_factor").value_or(std::vector<double>{});
  // MRoPE sections are pair counts (docs/encodings.md §4.6).
  for (const double v : in.list("mrope_section").value_or(std::vector<double>{})) {
    if (!(v >= 0 && v <= static_cast<double>(detail::max_head_dim)) || v != std::floor(v)) {
      in.fail(fmt::format("mrope_section entries must be integers in [0, {}], got {}",
                          detail::max_head_dim, detail::format_number(v)));
    }
    r.mrope_section.push_back(static_cast<std::int64_t>(v));
  }
  if (in.has("mrope_section") && r.mrope_section.empty()) in.fail("mrope_section is empty");
  r.mrope_interleaved = in.boolean("mrope_interleaved").value_or(false);

  const std::int64_t L = r.max_position_embeddings;
  const std::int64_t Lo = r.original_max_position_embeddings;
  if (in.has("factor")) {
    r.factor = *in.number("factor");
  } else if (t == rope_type::longrope) {
    // transformers: factor None → max_position_embeddings / original_max_position_embeddings.
    if (L <= 0 || Lo <= 0) {
      in.fail(
          "rope_type=longrope needs factor, or max_position_embeddings (factor is then "
          "max_position_embeddings/original_max_position_embeddings)");
    }
    r.factor = static_cast<double>(L) / static_cast<double>(Lo);
  }

  // What transformers only warns about in a config.json is an error in a SPEC.
  if (t != rope_type::default_ && !(r.factor >= 1.0)) {
    in.fail(fmt::format("factor must be >= 1 for rope_type={}, got {}", type_name,
                        detail::format_number(r.factor)));
  }
  if (r.attention_factor && *r.attention_factor < 0.0) {
    in.fail(fmt::format("attention_factor must be >= 0, got {}",
                        detail::format_number(*r.attention_factor)));
  }
  if (t == rope_type::yarn) {
    if (!(r.beta_fast > 0.0) || !(r.beta_slow > 0.0)) {
      in.fail(fmt::format("beta_fast and beta_slow must be > 0, got beta_fast={} and beta_slow={}",
                          detail::format_number(r.beta_fast), detail::format_number(r.beta_slow)));
    }
    if (r.beta_fast < r.beta_slow) {
      in.fail(fmt::format("beta_fast must be >= beta_slow, got beta_fast={} and beta_slow={}",
                          detail::format_number(r.beta_fast), detail::format_number(r.beta_slow)));
    }
    if (L > 0 && Lo > 0) {
      // transformers warns and keeps the explicit factor (PR #40320); so does pev, even here.
      const double implicit = static_cast<double>(L) / static_cast<double>(Lo);
      if (implicit != r.factor && implicit != 1.0) {
        warn(
            fmt::format("rope: factor={} differs from the implicit factor max_position_embeddings/"
                        "original_max_position_embeddings = {}/{} = {}; the explicit factor is "
                        "used (as transformers does)",
                        detail::format_number(r.factor), L, Lo, detail::format_number(implicit)));
      }
    }
  }
  if (t == rope_type::llama3) {
    if (!(r.high_freq_factor > r.low_freq_factor)) {
      in.fail(fmt::format(
          "high_freq_factor must be > low_freq_factor, got high_freq_factor={} and "
          "low_freq_factor={}",
          detail::format_number(r.high_freq_factor), detail::format_number(r.low_freq_factor)));
    }
    if (L > 0 && Lo >= L) {
      in.fail(
          fmt::format("original_max_position_embeddings must be < max_position_embeddings for "
                      "rope_type=llama3, got {} and {}",
                      Lo, L));
    }
  }
  if (t == rope_type::longrope) {
    for (const auto* key : {"short_factor", "long_factor"}) {
      const auto& list = std::string_view(key) == "short_factor" ? r.short_factor : r.long_factor;
      if (static_cast<std::int64_t>(list.size()) != r.pairs()) {
        in.fail(fmt::format("{} must have rotary_dim/2 = {} entries, got {}", key, r.pairs(),
                            list.size()));
      }
    }
  }
  return r;
}

// The ggml form (parse.h): ggml_rope_ext's parameters into a rope of rope_type ggml.
rope parse_ggml(const items& in) {
  in.check_known({"head_dim", "n_dims", "mode", "freq_base", "freq_scale", "ext_factor",
                  "attn_factor", "beta_fast", "beta_slow", "n_ctx_orig", "freq_factors"});
  require(in, "for ggml", {"head_dim", "mode"});
  rope r;
  r.type = rope_type::ggml;
  r.head_dim = *in.integer("head_dim");
  if (r.head_dim < 2 || r.head_dim > detail::max_head_dim) {
    in.fail(fmt::format("head_dim must be an integer in [2, {}], got {}", detail::max_head_dim,
                        r.head_dim));
  }
  const std::int64_t n_dims = in.integer("n_dims").value_or(r.head_dim);
  if (n_dims < 2 || n_dims > r.head_dim || n_dims % 2 != 0) {
    in.fail(
        fmt::format("n_dims must be even and in [2, head_dim = {}], got {}", r.head_dim, n_dims));
  }
  // n_dims as the factor that gives it back (the SPEC's rotary_dim rule).
  double f = static_cast<double>(n_dims) / static_cast<double>(r.head_dim);
  while (detail::expected_rotary_dim(r.head_dim, f, r.type) < n_dims) f = std::nextafter(f, 2.0);
  r.partial_rotary_factor = f;
  r.rotary_dim = n_dims;
  // ggml_rope_ext's mode: GGML_ROPE_TYPE_NORMAL (0) rotates adjacent pairs, NEOX (2) the halves.
  const std::string mode = *in.text("mode");
  if (mode == "normal" || mode == "0") {
    r.layout = rope_layout::interleaved;
  } else if (mode == "neox" || mode == "2") {
    r.layout = rope_layout::neox;
  } else if (mode == "8" || mode == "40" || mode == "24" || mode == "mrope" || mode == "imrope" ||
             mode == "vision") {
    in.fail(
        fmt::format("mode={}: ggml's multimodal modes (MROPE 8, IMROPE 40, VISION 24) are not "
                    "supported; modes: normal (0), neox (2)",
                    mode));
  } else {
    in.fail(fmt::format("mode must be normal (0) or neox (2), got '{}'", mode));
  }
  r.rope_theta = in.number("freq_base").value_or(r.rope_theta);
  r.freq_scale = in.number("freq_scale").value_or(r.freq_scale);
  r.ext_factor = in.number("ext_factor").value_or(r.ext_factor);
  r.attn_factor = in.number("attn_factor").value_or(r.attn_factor);
  r.beta_fast = in.number("beta_fast").value_or(r.beta_fast);
  r.beta_slow = in.number("beta_slow").value_or(r.beta_slow);
  r.original_max_position_embeddings = in.integer("n_ctx_orig").value_or(0);
  if (in.has("freq_factors")) {
    if (in.all().at("freq_factors").list) {
      r.freq_factors = *in.list("freq_factors");
    } else {
      // A file: the GGUF rope_freqs tensor exported as npy or safetensors.
      r.freq_factors_file = *in.text("freq_factors");
      const std::string bytes = io::read_file(r.freq_factors_file, max_freq_factors_bytes);
      try {
        r.freq_factors = freq_factors_from_bytes(bytes, r.freq_factors_file, r.pairs());
      } catch (const error& e) {
        in.fail(fmt::format("freq_factors={}: {}", r.freq_factors_file, e.what()));
      }
    }
  }
  try {
    validate(r);
  } catch (const error& e) {
    throw error(detail::clip_message(e.what()));
  }
  return r;
}

}  // namespace

std::vector<double> freq_factors_from_bytes(std::string_view bytes, std::string_view source,
                                            std::int64_t pairs) {
  io::array a;
  const bool npy = bytes.size() >= 6 && bytes.substr(0, 6) == "\x93NUMPY";
  if (npy) {
    a = io::parse_npy(bytes, source);
  } else {
    const io::tensor_file tf = io::parse_safetensors(bytes, source);
    std::string found;
    for (const char* name : {"rope_freqs.weight", "rope_freqs"}) {
      if (tf.tensors.count(name) != 0) {
        found = name;
        break;
      }
    }
    if (found.empty() && tf.names.size() == 1) found = tf.names.front();
    if (found.empty()) {
      std::string names;
      for (const auto& n : tf.names) names += (names.empty() ? "'" : ", '") + n + "'";
      throw error(
          fmt::format("expected a tensor named rope_freqs.weight or rope_freqs, or a "
                      "single tensor; found {}",
                      names.empty() ? std::string("no tensors") : names));
    }
    a = tf.tensors.at(found);
  }
  if (a.type != dtype::fp32 && a.type != dtype::fp64 && a.type != dtype::fp16 &&
      a.type != dtype::bf16) {
    throw error(fmt::format("the factors must be floating point, got {}", to_string(a.type)));
  }
  std::vector<std::int64_t> shape;
  for (std::int64_t d : a.shape) {
    if (d != 1 || !shape.empty()) shape.push_back(d);
  }
  if (shape.size() != 1 || shape[0] != pairs) {
    throw error(fmt::format("the factors have shape {}, expected [{}] (n_dims/2)",
                            io::shape_string(a.shape), pairs));
  }
  return a.to_doubles();
}

encoding parse_spec(std::string_view text) { return parse_spec(text, warn_to_stderr); }

encoding parse_spec(std::string_view text, const warning_sink& warn) {
  auto [family, in] = split(text);
  encoding e;
  if (family == "sinusoidal") {
    e = parse_sinusoidal(in);
  } else if (family == "learned") {
    e = parse_learned(in);
  } else if (family == "alibi") {
    e = parse_alibi(in);
  } else if (family == "t5") {
    e = parse_t5(in);
  } else if (family == "shaw") {
    e = parse_shaw(in);
  } else if (family == "rope") {
    e = parse_rope(in, warn);
  } else if (family == "ggml") {
    e = parse_ggml(in);
  } else {
    throw error(detail::clip_message(fmt::format(
        "unknown family '{}' (expected sinusoidal, learned, alibi, t5, shaw, rope or ggml)",
        family)));
  }
  validate(e);
  return e;
}

std::vector<double> learned_table_from_seed(std::uint64_t seed, std::int64_t num_positions,
                                            std::int64_t d_model) {
  if (num_positions < 0 || d_model < 0 ||
      (d_model > 0 && num_positions > detail::max_generated_learned_elements / d_model)) {
    throw error(
        fmt::format("learned: cannot generate a {}x{} table from a seed (at most 2^24 values; give "
                    "a larger table as a file with table=FILE)",
                    num_positions, d_model));
  }
  std::vector<double> table(static_cast<std::size_t>(num_positions * d_model));
  splitmix rng(seed);
  for (double& v : table) {
    const std::uint64_t z = rng.next();
    // Top 24 bits → an integer in [−2^23, 2^23), scaled by 2^−23: exact in float32.
    const auto k = static_cast<std::int64_t>(z >> 40) - (std::int64_t{1} << 23);
    v = std::ldexp(static_cast<double>(k), -23);
  }
  return table;
}

}  // namespace pev::spec

#include "pev/spec/spec.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include "detail.h"

namespace pev::spec {
namespace detail {
namespace {

// One row per rope key that does not apply to every rope_type, with the set of rope_types it
// applies to as a bit mask. Keys absent from this table (head_dim, partial_rotary_factor,
// rope_theta, layout, rope_type, max_position_embeddings) apply to all of them:
// max_position_embeddings is a property of the model (dynamic, yarn, llama3 and longrope read it;
// the others carry it along).
constexpr unsigned bit(rope_type t) { return 1u << static_cast<unsigned>(t); }

struct key_rule {
  std::string_view key;
  unsigned types;
};

using rt = rope_type;
constexpr key_rule kKeyRules[] = {
    {"factor", bit(rt::linear) | bit(rt::ntk) | bit(rt::dynamic) | bit(rt::yarn) | bit(rt::llama3) |
                   bit(rt::longrope) | bit(rt::proportional)},
    {"freq_scale", bit(rt::default_)},
    {"original_max_position_embeddings", bit(rt::yarn) | bit(rt::llama3) | bit(rt::longrope)},
    {"beta_fast", bit(rt::yarn)},
    {"beta_slow", bit(rt::yarn)},
    {"truncate", bit(rt::yarn)},
    {"mscale", bit(rt::yarn)},
    {"mscale_all_dim", bit(rt::yarn)},
    {"attention_factor", bit(rt::yarn) | bit(rt::longrope)},
    {"low_freq_factor", bit(rt::llama3)},
    {"high_freq_factor", bit(rt::llama3)},
    {"short_factor", bit(rt::longrope)},
    {"long_factor", bit(rt::longrope)},
    // rotary_dim is the SPEC's alternative to partial_rotary_factor. A proportional table always
    // spans head_dim (docs/encodings.md §5.11), so there it would only restate head_dim.
    {"rotary_dim", ~bit(rt::proportional)},
};

// transformers' rope_types (ggml is the ggml form's own, checked by check_ggml).
constexpr rope_type kAllTypes[] = {rt::default_, rt::linear, rt::ntk,      rt::dynamic,
                                   rt::yarn,     rt::llama3, rt::longrope, rt::proportional};

const key_rule* find_rule(std::string_view key) {
  for (const auto& rule : kKeyRules) {
    if (rule.key == key) return &rule;
  }
  return nullptr;
}

}  // namespace

bool rope_key_applies(std::string_view key, rope_type t) {
  const key_rule* rule = find_rule(key);
  return rule == nullptr || (rule->types & bit(t)) != 0;
}

std::string rope_types_of_key(std::string_view key) {
  const key_rule* rule = find_rule(key);
  if (rule == nullptr) return "every rope_type";
  std::string out;
  for (rope_type u : kAllTypes) {
    if ((rule->types & bit(u)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += to_string(u);
  }
  return out;
}

std::string format_number(double v) {
  // {fmt}'s default floating-point format is the shortest text that round-trips (Dragonbox), so
  // from_chars gives back the same double; integral values up to 1e16 print without an exponent.
  return fmt::format("{}", v);
}

std::int64_t expected_rotary_dim(std::int64_t head_dim, double partial_rotary_factor, rope_type t) {
  if (t == rope_type::proportional) return head_dim;
  // Python: int(head_dim * partial_rotary_factor), a double product truncated toward zero
  // (docs/encodings.md §4.3).
  return static_cast<std::int64_t>(static_cast<double>(head_dim) * partial_rotary_factor);
}

}  // namespace detail

std::int64_t learned_rows(const learned& s) {
  return s.target_positions > 0 ? s.target_positions : s.num_positions;
}

std::optional<std::int64_t> learned_index(const learned& s, std::int64_t p) {
  const std::int64_t rows = learned_rows(s);
  // p + offset without overflow: both checked against the rows first.
  if (p >= rows || p < -s.offset) return std::nullopt;
  const std::int64_t i = p + s.offset;
  if (i < 0 || i >= rows) return std::nullopt;
  return i;
}

const char* family_name(const encoding& e) {
  return std::visit(
      [](const auto& x) -> const char* {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, sinusoidal>) return "sinusoidal";
        if constexpr (std::is_same_v<T, learned>) return "learned";
        if constexpr (std::is_same_v<T, alibi>) return "alibi";
        if constexpr (std::is_same_v<T, t5>) return "t5";
        if constexpr (std::is_same_v<T, shaw>) return "shaw";
        if constexpr (std::is_same_v<T, rope>) return "rope";
      },
      e);
}

std::pair<std::int64_t, std::int64_t> pair_dims(const rope& s, std::int64_t i) {
  if (s.layout == rope_layout::neox) return {i, i + s.pairs()};
  return {2 * i, 2 * i + 1};
}

std::int64_t mrope_stream(const rope& s, std::int64_t i) {
  const auto& sec = s.mrope_section;
  if (sec.empty()) return 0;
  std::int64_t sum = 0;
  for (std::int64_t n : sec) sum += n;
  // ggml's sector: the map repeats with period sum(sections) (equal to pairs() for transformers'
  // three sections, so there the sector is the pair).
  const std::int64_t sector = sum > 0 ? i % sum : i;
  const bool ggml = sec.size() == 4;
  if (s.mrope_interleaved) {
    // Qwen3-VL apply_interleaved_mrope: h on sectors ≡ 1 (mod 3) below 3·section[1], w on ≡ 2 below
    // 3·section[2], t elsewhere; ggml IMROPE gives t only ≡ 0 below 3·section[0], e the rest.
    if (sector % 3 == 1 && sector < 3 * sec[1]) return 1;
    if (sector % 3 == 2 && sector < 3 * sec[2]) return 2;
    if (!ggml || (sector % 3 == 0 && sector < 3 * sec[0])) return 0;
    return 3;
  }
  // Consecutive groups: [0, s0) t, [s0, s0+s1) h, then w, then e.
  std::int64_t end = 0;
  for (std::size_t k = 0; k < sec.size(); ++k) {
    end += sec[k];
    if (sector < end) return static_cast<std::int64_t>(k);
  }
  return static_cast<std::int64_t>(sec.size()) - 1;
}

std::vector<std::int64_t> mrope_streams(const rope& s) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(s.pairs()));
  for (std::int64_t i = 0; i < s.pairs(); ++i) v[static_cast<std::size_t>(i)] = mrope_stream(s, i);
  return v;
}

std::vector<std::int64_t> dim_pairs(const rope& s) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(s.head_dim), -1);
  for (std::int64_t i = 0; i < s.pairs(); ++i) {
    const auto [a, b] = pair_dims(s, i);
    v[static_cast<std::size_t>(a)] = i;
    v[static_cast<std::size_t>(b)] = i;
  }
  return v;
}

const char* to_string(rope_type t) { return detail::rope_type_names.name(t); }

const char* to_string(rope_layout l) { return detail::rope_layout_names.name(l); }

const char* to_string(sinusoidal_layout l) { return detail::sinusoidal_layout_names.name(l); }

rope_type parse_rope_type(std::string_view name, std::string_view key) {
  if (name == "ggml") {
    throw error(fmt::format(
        "{} = 'ggml' is not a rope_type: ggml_rope_ext's own parameters are written as the ggml "
        "SPEC form, ggml:head_dim=…,mode=…,freq_base=…",
        key));
  }
  if (const auto t = detail::rope_type_names.find(name)) return *t;
  throw error(fmt::format("{} = {} is not a known rope_type (expected {})", key, quoted_text(name),
                          detail::rope_type_names.list_if(
                              [](rope_type t) { return t != rope_type::ggml; }, ", ", " or ")));
}

// ---------------------------------------------------------------------------------------------
// to_spec_string

namespace {

class spec_writer {
 public:
  explicit spec_writer(std::string_view family) : out_(family) {}
  void add(std::string_view key, std::string_view value) {
    out_ += first_ ? ':' : ',';
    first_ = false;
    out_ += key;
    out_ += '=';
    out_ += value;
  }
  void add(std::string_view key, double v) { add(key, detail::format_number(v)); }
  void add_int(std::string_view key, std::int64_t v) { add(key, std::to_string(v)); }
  void add_uint(std::string_view key, std::uint64_t v) { add(key, std::to_string(v)); }
  void add_bool(std::string_view key, bool v) { add(key, v ? "true" : "false"); }
  void add_list(std::string_view key, const std::vector<double>& v) {
    std::string text = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) text += ',';
      text += detail::format_number(v[i]);
    }
    text += ']';
    add(key, text);
  }
  std::string str() && { return std::move(out_); }

 private:
  std::string out_;
  bool first_ = true;
};

std::string spec_string(const sinusoidal& s) {
  spec_writer w("sinusoidal");
  w.add_int("d_model", s.d_model);
  if (s.base != 10000.0) w.add("base", s.base);
  if (s.layout != sinusoidal_layout::interleaved) w.add("layout", to_string(s.layout));
  if (s.layout == sinusoidal_layout::blocked && s.freq_shift != 1.0) {
    w.add("freq_shift", s.freq_shift);
  }
  return std::move(w).str();
}

std::string spec_string(const learned& s) {
  spec_writer w("learned");
  w.add_int("num_positions", s.num_positions);
  w.add_int("d_model", s.d_model);
  if (s.target_positions != 0) w.add_int("target_positions", s.target_positions);
  if (!s.align_corners) w.add_bool("align_corners", false);
  if (s.offset != 0) w.add_int("offset", s.offset);
  if (!s.table_file.empty()) {
    w.add("table", s.table_file);
  } else if (s.seed != 0) {
    w.add_uint("seed", s.seed);
  }
  return std::move(w).str();
}

std::string spec_string(const alibi& s) {
  spec_writer w("alibi");
  w.add_int("num_heads", s.num_heads);
  if (s.max_bias != 8.0) w.add("max_bias", s.max_bias);
  return std::move(w).str();
}

std::string spec_string(const t5& s) {
  spec_writer w("t5");
  if (s.num_buckets != 32) w.add_int("num_buckets", s.num_buckets);
  if (s.max_distance != 128) w.add_int("max_distance", s.max_distance);
  if (!s.bidirectional) w.add_bool("bidirectional", false);
  return std::move(w).str();
}

std::string spec_string(const shaw& s) {
  spec_writer w("shaw");
  w.add_int("max_relative_position", s.max_relative_position);
  return std::move(w).str();
}

// The ggml form: ggml_rope_ext's own parameter names (parse.h).
std::string ggml_spec_string(const rope& r) {
  spec_writer w("ggml");
  w.add_int("head_dim", r.head_dim);
  if (r.rotary_dim != r.head_dim) w.add_int("n_dims", r.rotary_dim);
  w.add("mode", r.layout == rope_layout::neox ? "neox" : "normal");
  if (r.rope_theta != 10000.0) w.add("freq_base", r.rope_theta);
  if (r.freq_scale != 1.0) w.add("freq_scale", r.freq_scale);
  if (r.ext_factor != 0.0) w.add("ext_factor", r.ext_factor);
  if (r.attn_factor != 1.0) w.add("attn_factor", r.attn_factor);
  if (r.beta_fast != 32.0) w.add("beta_fast", r.beta_fast);
  if (r.beta_slow != 1.0) w.add("beta_slow", r.beta_slow);
  if (r.original_max_position_embeddings != 0) {
    w.add_int("n_ctx_orig", r.original_max_position_embeddings);
  }
  if (!r.freq_factors_file.empty()) {
    w.add("freq_factors", r.freq_factors_file);
  } else if (!r.freq_factors.empty()) {
    w.add_list("freq_factors", r.freq_factors);
  }
  return std::move(w).str();
}

std::string spec_string(const rope& r) {
  // Keys a SPEC requires for the rope_type are always written (parse_spec would reject the string
  // otherwise, or derive a different factor for longrope); the others only when not at default.
  const rope_type t = r.type;
  if (t == rope_type::ggml) return ggml_spec_string(r);
  const bool scaled = t != rope_type::default_ && t != rope_type::proportional;
  const bool uses_lo = t == rope_type::yarn || t == rope_type::llama3 || t == rope_type::longrope;
  spec_writer w("rope");
  w.add_int("head_dim", r.head_dim);
  if (r.partial_rotary_factor != 1.0) w.add("partial_rotary_factor", r.partial_rotary_factor);
  if (r.rope_theta != 10000.0) w.add("rope_theta", r.rope_theta);
  if (t != rope_type::default_) w.add("rope_type", to_string(t));
  if (scaled || r.factor != 1.0) w.add("factor", r.factor);
  if (r.freq_scale != 1.0) w.add("freq_scale", r.freq_scale);
  if (r.max_position_embeddings != 0) {
    w.add_int("max_position_embeddings", r.max_position_embeddings);
  }
  if (uses_lo || r.original_max_position_embeddings != 0) {
    w.add_int("original_max_position_embeddings", r.original_max_position_embeddings);
  }
  if (r.beta_fast != 32.0) w.add("beta_fast", r.beta_fast);
  if (r.beta_slow != 1.0) w.add("beta_slow", r.beta_slow);
  if (!r.truncate) w.add_bool("truncate", false);
  if (r.mscale) w.add("mscale", *r.mscale);
  if (r.mscale_all_dim) w.add("mscale_all_dim", *r.mscale_all_dim);
  if (r.attention_factor) w.add("attention_factor", *r.attention_factor);
  if (t == rope_type::llama3 || r.low_freq_factor != 1.0) {
    w.add("low_freq_factor", r.low_freq_factor);
  }
  if (t == rope_type::llama3 || r.high_freq_factor != 4.0) {
    w.add("high_freq_factor", r.high_freq_factor);
  }
  if (t == rope_type::longrope || !r.short_factor.empty())
    w.add_list("short_factor", r.short_factor);
  if (t == rope_type::longrope || !r.long_factor.empty()) w.add_list("long_factor", r.long_factor);
  if (r.layout != rope_layout::neox) w.add("layout", to_string(r.layout));
  if (!r.mrope_section.empty()) {
    w.add_list("mrope_section",
               std::vector<double>(r.mrope_section.begin(), r.mrope_section.end()));
  }
  if (r.mrope_interleaved) w.add_bool("mrope_interleaved", true);
  return std::move(w).str();
}

}  // namespace

std::string to_spec_string(const encoding& e) {
  return std::visit([](const auto& x) { return spec_string(x); }, e);
}

// ---------------------------------------------------------------------------------------------
// validate

namespace {

[[noreturn]] void fail(std::string_view family, std::string_view message) {
  throw error(fmt::format("{}: {}", family, message));
}

bool in_range(std::int64_t v, std::int64_t lo, std::int64_t hi) { return v >= lo && v <= hi; }

void check_int(std::string_view family, std::string_view key, std::int64_t v, std::int64_t lo,
               std::int64_t hi) {
  if (!in_range(v, lo, hi)) {
    fail(family, fmt::format("{} must be an integer in [{}, {}], got {}", key, lo, hi, v));
  }
}

void check_positive_finite(std::string_view family, std::string_view key, double v) {
  if (!std::isfinite(v) || !(v > 0.0)) {
    fail(family, fmt::format("{} must be finite and > 0, got {}", key, detail::format_number(v)));
  }
}

void check_finite(std::string_view family, std::string_view key, double v) {
  if (!std::isfinite(v)) {
    fail(family, fmt::format("{} must be finite, got {}", key, detail::format_number(v)));
  }
}

void check(const sinusoidal& s) {
  constexpr std::string_view f = "sinusoidal";
  check_int(f, "d_model", s.d_model, 1, detail::max_sinusoidal_d_model);
  if (!std::isfinite(s.base) || !(s.base > 0.0) || s.base == 1.0) {
    fail(f,
         fmt::format("base must be finite, > 0 and != 1, got {}", detail::format_number(s.base)));
  }
  check_finite(f, "freq_shift", s.freq_shift);
  if (s.layout == sinusoidal_layout::blocked) {
    // ω_j = exp(−j·ln(base)/(h − freq_shift)) needs a positive denominator
    // (docs/encodings.md §2.2).
    const double h = static_cast<double>(s.d_model / 2);
    if (!(h - s.freq_shift > 0.0)) {
      fail(f, fmt::format("layout=blocked needs floor(d_model/2) - freq_shift > 0, got d_model {} "
                          "and freq_shift {}",
                          s.d_model, detail::format_number(s.freq_shift)));
    }
  } else if (s.freq_shift != 1.0) {
    fail(f, fmt::format("freq_shift applies to layout=blocked only, got freq_shift {} with "
                        "layout=interleaved",
                        detail::format_number(s.freq_shift)));
  }
}

void check(const learned& s) {
  constexpr std::string_view f = "learned";
  check_int(f, "num_positions", s.num_positions, 1, detail::max_learned_elements);
  check_int(f, "d_model", s.d_model, 1, detail::max_learned_elements);
  if (s.num_positions * s.d_model > detail::max_learned_elements) {
    fail(f, fmt::format("num_positions·d_model must be at most 2^28, got {}·{}", s.num_positions,
                        s.d_model));
  }
  if (s.target_positions != 0) {
    check_int(f, "target_positions", s.target_positions, 2, detail::max_context - 1);
  }
  if (!in_range(s.offset, 0, learned_rows(s) - 1)) {
    fail(f, fmt::format("offset must be an integer in [0, {}] (position p reads row p + offset of "
                        "the table's {} rows), got {}",
                        learned_rows(s) - 1, learned_rows(s), s.offset));
  }
  const auto size = static_cast<std::size_t>(s.num_positions * s.d_model);
  // A table read from a file is loaded by the caller after parsing; until then it may be empty.
  const bool may_be_empty = !s.table_file.empty();
  if (!(s.table.size() == size || (may_be_empty && s.table.empty()))) {
    fail(f, fmt::format("table must hold num_positions·d_model = {} values, got {}", size,
                        s.table.size()));
  }
  for (std::size_t i = 0; i < s.table.size(); ++i) {
    if (!std::isfinite(s.table[i])) {
      fail(f, fmt::format("table values must be finite, got {} at row {}, column {}",
                          detail::format_number(s.table[i]), i / s.d_model, i % s.d_model));
    }
  }
}

void check(const alibi& s) {
  constexpr std::string_view f = "alibi";
  check_int(f, "num_heads", s.num_heads, 1, detail::max_heads);
  check_positive_finite(f, "max_bias", s.max_bias);
}

void check(const t5& s) {
  constexpr std::string_view f = "t5";
  const std::int64_t min_buckets = s.bidirectional ? 4 : 2;
  if (!in_range(s.num_buckets, min_buckets, detail::max_t5_buckets)) {
    fail(f, fmt::format("num_buckets must be an integer in [{}, {}]{}, got {}", min_buckets,
                        detail::max_t5_buckets, s.bidirectional ? " when bidirectional" : "",
                        s.num_buckets));
  }
  // Exact buckets cover n < e, e = nb/2 (nb halved first when bidirectional); the log buckets
  // divide by ln(max_distance/e), which must be positive (docs/encodings.md §3.2).
  const std::int64_t exact = (s.bidirectional ? s.num_buckets / 2 : s.num_buckets) / 2;
  if (!(s.max_distance > exact && s.max_distance < detail::max_context)) {
    fail(f, fmt::format("max_distance must be greater than the exact-bucket limit {} (and below "
                        "2^40), got {}",
                        exact, s.max_distance));
  }
}

void check(const shaw& s) {
  check_int("shaw", "max_relative_position", s.max_relative_position, 0, detail::max_shaw - 1);
}

void check_not_set(const rope& r, std::string_view key, bool is_default) {
  if (!is_default && !detail::rope_key_applies(key, r.type)) {
    fail("rope", fmt::format("{} applies to rope_type {} only, but rope_type is {}", key,
                             detail::rope_types_of_key(key), to_string(r.type)));
  }
}

void check_context(std::string_view key, std::int64_t v) {
  if (!in_range(v, 0, detail::max_context - 1)) {
    fail("rope", fmt::format("{} must be an integer in [0, 2^40) (0: not given), got {}", key, v));
  }
}

void check_factor_list(const rope& r, std::string_view key, const std::vector<double>& list) {
  if (static_cast<std::int64_t>(list.size()) != r.pairs()) {
    fail("rope", fmt::format("{} must have rotary_dim/2 = {} entries, got {}", key, r.pairs(),
                             list.size()));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!std::isfinite(list[i]) || !(list[i] > 0.0)) {
      fail("rope", fmt::format("{}[{}] must be finite and > 0, got {}", key, i,
                               detail::format_number(list[i])));
    }
  }
}

void check_ggml(const rope& r);
// The MRoPE section plan (docs/encodings.md §4.6).
void check_mrope(const rope& r) {
  if (r.mrope_section.empty()) {
    if (r.mrope_interleaved) fail("rope", "mrope_interleaved needs mrope_section");
    return;
  }
  const std::size_t n = r.mrope_section.size();
  if (n != 3 && n != 4) {
    fail("rope", fmt::format("mrope_section must have 3 entries (transformers: t, h, w) or 4 "
                             "(ggml: t, h, w, e), got {}",
                             n));
  }
  std::int64_t sum = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::int64_t v = r.mrope_section[k];
    if (v < 0 || v > r.pairs()) {
      fail("rope", fmt::format("mrope_section[{}] must be in [0, rotary_dim/2 = {}], got {}", k,
                               r.pairs(), v));
    }
    sum += v;
  }
  // transformers splits the cos/sin table by mrope_section·2, which must cover head_dim exactly;
  // ggml asserts only that its sections fit and repeats them.
  if (n == 3 && sum != r.pairs()) {
    fail("rope", fmt::format("mrope_section must sum to rotary_dim/2 = {} pairs, got {} (sections "
                             "count pairs, not dims)",
                             r.pairs(), sum));
  }
  if (n == 4 && (sum < 1 || sum > r.pairs())) {
    fail("rope", fmt::format("ggml's 4 mrope sections must sum to 1 … rotary_dim/2 = {}, got {}",
                             r.pairs(), sum));
  }
}

void check(const rope& r) {
  constexpr std::string_view f = "rope";
  const rope_type t = r.type;
  check_mrope(r);
  if (t == rope_type::ggml) return check_ggml(r);
  check_int(f, "head_dim", r.head_dim, 2, detail::max_head_dim);
  if (!std::isfinite(r.partial_rotary_factor) || !(r.partial_rotary_factor > 0.0) ||
      r.partial_rotary_factor > 1.0) {
    fail(f, fmt::format("partial_rotary_factor must be in (0, 1], got {}",
                        detail::format_number(r.partial_rotary_factor)));
  }
  const std::int64_t expected = detail::expected_rotary_dim(r.head_dim, r.partial_rotary_factor, t);
  if (t != rope_type::proportional && (expected < 2 || expected % 2 != 0)) {
    // HF never checks evenness (an odd d gives ceil(d/2) frequencies); pev's pairs need it.
    fail(f,
         fmt::format("rotary_dim = int(head_dim·partial_rotary_factor) = int({}·{}) = {} must be "
                     "even and >= 2",
                     r.head_dim, detail::format_number(r.partial_rotary_factor), expected));
  }
  if (t == rope_type::proportional && r.head_dim % 2 != 0) {
    fail(f, fmt::format("head_dim must be even for rope_type proportional, got {}", r.head_dim));
  }
  if (r.rotary_dim != expected) {
    if (t == rope_type::proportional) {
      fail(f, fmt::format("rotary_dim must equal head_dim = {} for rope_type proportional, got {}",
                          r.head_dim, r.rotary_dim));
    }
    fail(f, fmt::format("rotary_dim must be int(head_dim·partial_rotary_factor) = {}, got {}",
                        expected, r.rotary_dim));
  }
  if (!std::isfinite(r.rope_theta) || !(r.rope_theta > 1.0)) {
    fail(f, fmt::format("rope_theta must be finite and > 1, got {}",
                        detail::format_number(r.rope_theta)));
  }
  check_positive_finite(f, "factor", r.factor);
  check_positive_finite(f, "freq_scale", r.freq_scale);
  check_context("max_position_embeddings", r.max_position_embeddings);
  check_context("original_max_position_embeddings", r.original_max_position_embeddings);

  // Fields of other rope_types must keep their defaults: the struct then says exactly what is
  // computed, and to_spec_string gives a SPEC that parses back to it.
  check_not_set(r, "factor", r.factor == 1.0);
  check_not_set(r, "freq_scale", r.freq_scale == 1.0);
  check_not_set(r, "original_max_position_embeddings", r.original_max_position_embeddings == 0);
  check_not_set(r, "beta_fast", r.beta_fast == 32.0);
  check_not_set(r, "beta_slow", r.beta_slow == 1.0);
  check_not_set(r, "truncate", r.truncate);
  check_not_set(r, "mscale", !r.mscale);
  check_not_set(r, "mscale_all_dim", !r.mscale_all_dim);
  check_not_set(r, "attention_factor", !r.attention_factor);
  check_not_set(r, "low_freq_factor", r.low_freq_factor == 1.0);
  check_not_set(r, "high_freq_factor", r.high_freq_factor == 4.0);
  check_not_set(r, "short_factor", r.short_factor.empty());
  check_not_set(r, "long_factor", r.long_factor.empty());
  if (r.ext_factor != 0.0 || r.attn_factor != 1.0 || !r.freq_factors.empty() ||
      !r.freq_factors_file.empty()) {
    fail(f,
         "ext_factor, attn_factor and freq_factors belong to the ggml form "
         "(ggml:head_dim=…,mode=…), not to a transformers rope_type");
  }

  const auto need_lo = [&] {
    if (r.original_max_position_embeddings < 1) {
      fail(f, fmt::format("rope_type {} needs original_max_position_embeddings >= 1, got {}",
                          to_string(t), r.original_max_position_embeddings));
    }
  };
  switch (t) {
    case rope_type::default_:
    case rope_type::linear:
    case rope_type::proportional:
      break;
    case rope_type::ntk:
    case rope_type::dynamic:
      // b' = b·(…)^(d/(d−2)): d = 2 divides by zero (Python raises ZeroDivisionError).
      if (r.rotary_dim < 4) {
        fail(f, fmt::format("rope_type {} needs rotary_dim >= 4 (exponent d/(d-2)), got {}",
                            to_string(t), r.rotary_dim));
      }
      if (t == rope_type::dynamic && r.max_position_embeddings < 1) {
        fail(f, "rope_type dynamic needs max_position_embeddings >= 1 (the length it scales from)");
      }
      break;
    case rope_type::yarn:
      need_lo();
      // find_correction_dim takes ln(Lo/(2π·β)): β must be positive (docs/encodings.md §5.6).
      check_positive_finite(f, "beta_fast", r.beta_fast);
      check_positive_finite(f, "beta_slow", r.beta_slow);
      if (r.mscale) check_finite(f, "mscale", *r.mscale);
      if (r.mscale_all_dim) check_finite(f, "mscale_all_dim", *r.mscale_all_dim);
      if (r.attention_factor) check_finite(f, "attention_factor", *r.attention_factor);
      break;
    case rope_type::llama3:
      need_lo();
      // low_wl = Lo/low_freq_factor: Python raises on a zero divisor.
      check_positive_finite(f, "low_freq_factor", r.low_freq_factor);
      check_positive_finite(f, "high_freq_factor", r.high_freq_factor);
      break;
    case rope_type::longrope:
      need_lo();
      check_factor_list(r, "short_factor", r.short_factor);
      check_factor_list(r, "long_factor", r.long_factor);
      if (r.attention_factor) {
        check_finite(f, "attention_factor", *r.attention_factor);
      } else if (r.factor > 1.0 && r.original_max_position_embeddings < 2) {
        // m = √(1 + ln f / ln Lo) divides by ln 1 = 0 (docs/encodings.md §5.10).
        fail(f,
             "rope_type longrope without attention_factor needs original_max_position_embeddings "
             ">= 2 (m = sqrt(1 + ln factor / ln original_max_position_embeddings))");
      }
      break;
    case rope_type::ggml:
      break;  // check_ggml
  }
}

// The ggml form, in ggml_rope_ext's names (docs/encodings.md §8.7).
void check_ggml(const rope& r) {
  constexpr std::string_view f = "ggml";
  check_int(f, "head_dim", r.head_dim, 2, detail::max_head_dim);
  // ggml_rope_impl: GGML_ASSERT(n_dims <= ne0) and (n_dims % 2 == 0).
  if (r.rotary_dim < 2 || r.rotary_dim > r.head_dim || r.rotary_dim % 2 != 0) {
    fail(f, fmt::format("n_dims must be even and in [2, head_dim = {}], got {}", r.head_dim,
                        r.rotary_dim));
  }
  if (detail::expected_rotary_dim(r.head_dim, r.partial_rotary_factor, r.type) != r.rotary_dim) {
    fail(f, fmt::format("n_dims = {} disagrees with int(head_dim·partial_rotary_factor) = {}",
                        r.rotary_dim,
                        detail::expected_rotary_dim(r.head_dim, r.partial_rotary_factor, r.type)));
  }
  if (!std::isfinite(r.rope_theta) || !(r.rope_theta > 1.0)) {
    fail(f, fmt::format("freq_base must be finite and > 1, got {}",
                        detail::format_number(r.rope_theta)));
  }
  check_positive_finite(f, "freq_scale", r.freq_scale);
  if (!std::isfinite(r.ext_factor) || r.ext_factor < 0.0 || r.ext_factor > 1.0) {
    fail(f, fmt::format("ext_factor must be in [0, 1] (the weight of YaRN's extrapolation "
                        "mix), got {}",
                        detail::format_number(r.ext_factor)));
  }
  check_positive_finite(f, "attn_factor", r.attn_factor);
  for (const auto& [key, v] : {std::pair{"beta_fast", r.beta_fast}, {"beta_slow", r.beta_slow}}) {
    // The correction dims take ln(n_ctx_orig/(2π·β)): a zero β gives ±∞ or NaN dims, which
    // matter only when ext_factor mixes them in.
    if (!std::isfinite(v) || v < 0.0 || (r.ext_factor != 0.0 && !(v > 0.0))) {
      fail(f, fmt::format(
                  "{} must be finite and {} 0{}, got {}", key, r.ext_factor != 0.0 ? ">" : ">=",
                  r.ext_factor != 0.0 ? " when ext_factor != 0" : "", detail::format_number(v)));
    }
  }
  if (!in_range(r.original_max_position_embeddings, 0, detail::max_context - 1)) {
    fail(f, fmt::format("n_ctx_orig must be an integer in [0, 2^40), got {}",
                        r.original_max_position_embeddings));
  }
  // A factors file is loaded by the parser (an empty list with a file: not loaded yet).
  if (!r.freq_factors.empty() && static_cast<std::int64_t>(r.freq_factors.size()) != r.pairs()) {
    fail(f, fmt::format("freq_factors must have n_dims/2 = {} entries, got {}", r.pairs(),
                        r.freq_factors.size()));
  }
  for (std::size_t i = 0; i < r.freq_factors.size(); ++i) {
    if (!std::isfinite(r.freq_factors[i]) || !(r.freq_factors[i] > 0.0)) {
      fail(f, fmt::format("freq_factors[{}] must be finite and > 0 (θ is divided by it), got {}", i,
                          detail::format_number(r.freq_factors[i])));
    }
  }
  // Keys of transformers' rope_types have no meaning here.
  const bool plain = r.factor == 1.0 && r.max_position_embeddings == 0 && r.truncate && !r.mscale &&
                     !r.mscale_all_dim && !r.attention_factor && r.low_freq_factor == 1.0 &&
                     r.high_freq_factor == 4.0 && r.short_factor.empty() && r.long_factor.empty();
  if (!plain) {
    fail(f,
         "fields of transformers' rope_types (factor, max_position_embeddings, truncate, "
         "mscale, attention_factor, llama3 and longrope keys) do not apply to the ggml form");
  }
}

}  // namespace

void validate(const encoding& e) {
  std::visit([](const auto& x) { check(x); }, e);
}

}  // namespace pev::spec

// JSON with Python's semantics for the config.json reader (config_json.h).

#include "config_json.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "pev/core/json_check.h"

namespace pev::spec::config_detail {
namespace {

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

}  // namespace

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

json parse_json(const reader& in, std::string_view json_text_in) {
  // transformers reads config.json as UTF-8 text and json.loads refuses a leading byte-order mark
  // ("Unexpected UTF-8 BOM"), which nlohmann's parser would skip: refused the same way.
  if (json_text_in.substr(0, 3) == "\xEF\xBB\xBF") {
    in.fail(
        "invalid JSON: the file starts with a UTF-8 byte-order mark (EF BB BF), which "
        "transformers' json.loads refuses (\"Unexpected UTF-8 BOM\"): save it without one");
  }
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

}  // namespace pev::spec::config_detail

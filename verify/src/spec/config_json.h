#pragma once
// Internal to the config.json reader (config.cpp): JSON with Python's semantics — the NaN and
// Infinity that json.dump writes, Python's truthiness and repr in messages — and the reader that
// names the file in its errors and warnings.

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/spec/spec.h"

namespace pev::spec::config_detail {

using json = nlohmann::json;

/// A JSON value as text for messages: non-finite numbers as Python writes them.
std::string json_text(const json& v);
/// How Python prints a value in transformers' f-string messages (None, True, 8.0, [1.0, 2.0]).
std::string py_repr(const json& v);
/// Python truthiness of a JSON value (None, False, 0, 0.0, "", [], {} are false; NaN is true).
bool truthy(const json& v);
/// The member `key` of an object, or null (also when `object` is not an object).
const json* find(const json& object, std::string_view key);
/// The keys, comma-separated, for messages.
std::string join(const std::set<std::string>& keys);
/// An integral JSON number as int64 (8192 or 8192.0); nothing otherwise.
std::optional<std::int64_t> as_integer(const json& v);

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

/// The config.json text parsed, with Python's NaN, Infinity and -Infinity (outside strings) read
/// as non-finite numbers; invalid JSON, or JSON nested too deep, fails through `in`.
json parse_json(const reader& in, std::string_view json_text_in);

}  // namespace pev::spec::config_detail

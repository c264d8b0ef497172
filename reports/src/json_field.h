#pragma once
// Reading a certificate's fields (json.cpp, docs/certify.md §7): a field absent or of the wrong
// type is named by its key, in pev's words, never the JSON library's bracketed ids.

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "pev/core/text.h"

namespace pev::report::detail {

/// A field of a certificate of the wrong type, named by its key (from_json says which file).
struct bad_field : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// j[key] as T: absent or of another type is bad_field naming the key, never the JSON library's
/// own text.
template <class T, class J>
T field(const J& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) {
    throw bad_field(fmt::format("field '{}' is missing", key));
  }
  const auto& v = j.at(key);
  try {
    return v.template get<T>();
  } catch (const nlohmann::json::exception& e) {
    std::string got = v.dump();
    if (got.size() > 40) got = got.substr(0, 40) + "…";
    throw bad_field(
        fmt::format("field '{}' is {}: {}", key, escaped(got), json_error_text(e.what())));
  }
}

}  // namespace pev::report::detail

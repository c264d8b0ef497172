#pragma once
// The names of pev's enums (docs/design.md §11.11): one table per enum, (value, name[, help]),
// from which its to_string, its parser and the list of accepted names in that parser's message
// are all read, so that a name added to the table is printed, parsed and offered at once. Text
// from the user is echoed in a parse error through quoted_text(): escaped and clipped like every
// other piece of external text (core/text.h).

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pev {

/// One row of an enum's table of names: the value, its name, and an optional explanation shown
/// after the name in the list of accepted names ("bhtd [B, H, T, D]").
template <class E>
struct enum_name {
  E value;
  const char* name;
  const char* help = nullptr;
};

/// Text from outside pev quoted for a message: 'text', every byte outside printable ASCII shown as
/// \xNN, cut after `max` characters ("..." appended).
std::string quoted_text(std::string_view text, std::size_t max = 80);

/// An enum's table of names (the rows in the order they are listed to the user).
template <class E, std::size_t N>
class name_table {
 public:
  constexpr explicit name_table(std::array<enum_name<E>, N> rows) : rows_(rows) {}

  /// The name of `v`; "?" for a value the table lacks (the tests walk every value).
  constexpr const char* name(E v) const {
    for (const auto& r : rows_) {
      if (r.value == v) return r.name;
    }
    return "?";
  }

  /// The value named `text` exactly, or nothing.
  constexpr std::optional<E> find(std::string_view text) const {
    for (const auto& r : rows_) {
      if (text == r.name) return r.value;
    }
    return std::nullopt;
  }

  /// The values in the table's order.
  constexpr std::array<E, N> values() const {
    std::array<E, N> v{};
    for (std::size_t i = 0; i < N; ++i) v[i] = rows_[i].value;
    return v;
  }

  /// The accepted names, each with its help when it has one, joined by `sep` and, before the last,
  /// by `last` ("a, b or c" with last = " or ").
  std::string list(std::string_view sep = ", ", std::string_view last = ", ") const {
    return list_if([](E) { return true; }, sep, last);
  }

  /// list() of the values for which `keep(value)` holds.
  template <class Keep>
  std::string list_if(Keep keep, std::string_view sep = ", ", std::string_view last = ", ") const {
    std::size_t n = 0, k = 0;
    for (const auto& r : rows_) n += keep(r.value) ? 1 : 0;
    std::string out;
    for (const auto& r : rows_) {
      if (!keep(r.value)) continue;
      if (k > 0) out += k + 1 == n ? last : sep;
      ++k;
      out += r.name;
      if (r.help) {
        out += ' ';
        out += r.help;
      }
    }
    return out;
  }

  constexpr const std::array<enum_name<E>, N>& rows() const { return rows_; }

 private:
  std::array<enum_name<E>, N> rows_;
};

}  // namespace pev

// Positions files (positions.h): text, .npy or .safetensors. Above the npy and safetensors
// readers, which read through file.cpp's byte sources.

#include "pev/io/positions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/io/file.h"
#include "pev/io/npy.h"
#include "pev/io/safetensors.h"

namespace pev::io {

namespace {

bool ends_with_ci(const std::string& s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(),
                    s.end() - static_cast<std::ptrdiff_t>(suffix.size()), [](char a, char b) {
                      return std::tolower(static_cast<unsigned char>(a)) ==
                             std::tolower(static_cast<unsigned char>(b));
                    });
}

std::vector<std::int64_t> positions_from_array(const array& a, const std::filesystem::path& file,
                                               std::string_view what) {
  if (a.type != dtype::int32 && a.type != dtype::int64) {
    throw pev::error(
        fmt::format("positions file '{}': {} has dtype {}, expected integers (int32 or int64)",
                    file.string(), what, safetensors_name(a.type)));
  }
  return a.to_int64();
}

// One line of a positions text file: a decimal int64, optionally signed.
std::int64_t parse_position(std::string_view token, const std::filesystem::path& file,
                            std::size_t line) {
  const auto where = [&] {
    return fmt::format("positions file '{}', line {}: '{}'", file.string(), line,
                       detail::printable(token, 40));
  };
  std::string_view digits = token;
  const bool negative = !digits.empty() && digits.front() == '-';
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.remove_prefix(1);
  const bool all_digits = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  if (!all_digits) {
    double d = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), d);
    if (ec != std::errc::invalid_argument && end == token.data() + token.size()) {
      detail::fail("{} is not an integer (positions are integers)", where());
    }
    detail::fail("{} is not an integer (expected one integer per line)", where());
  }
  // The magnitude as uint64 covers −2^63, which has no positive int64 counterpart.
  std::uint64_t magnitude = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  constexpr std::uint64_t limit = std::uint64_t{1} << 63;
  if (ec != std::errc() || end != digits.data() + digits.size() || magnitude > limit ||
      (!negative && magnitude == limit)) {
    detail::fail("{} is outside the int64 range", where());
  }
  return negative ? static_cast<std::int64_t>(std::uint64_t{0} - magnitude)
                  : static_cast<std::int64_t>(magnitude);
}

}  // namespace

std::vector<std::int64_t> read_positions_file(const std::filesystem::path& file) {
  return parse_positions(read_file(file, max_positions_file_bytes), file);
}

std::vector<std::int64_t> parse_positions(std::string_view bytes,
                                          const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  std::vector<std::int64_t> positions;
  if (ends_with_ci(name, ".npy")) {
    positions = positions_from_array(parse_npy(bytes, file.string()), file, "the array");
  } else if (ends_with_ci(name, ".safetensors")) {
    const tensor_file t = parse_safetensors(bytes, file.string());
    std::string chosen;
    if (t.tensors.count("positions")) {
      chosen = "positions";
    } else if (t.names.size() == 1) {
      chosen = t.names.front();
    } else {
      std::string names;
      for (const auto& n : t.names) {
        names += fmt::format("{}'{}'", names.empty() ? "" : ", ", detail::printable(n, 60));
      }
      throw pev::error(fmt::format(
          "positions file '{}': expected a tensor named 'positions' or a single tensor, found {}",
          file.string(), names.empty() ? std::string("no tensors") : names));
    }
    positions = positions_from_array(t.at(chosen), file, fmt::format("tensor '{}'", chosen));
  } else {
    const std::string_view text = bytes;
    std::size_t line = 0;
    std::size_t begin = 0;
    while (begin < text.size()) {
      std::size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      ++line;
      std::string_view s(text.data() + begin, end - begin);
      begin = end + 1;
      if (auto hash = s.find('#'); hash != std::string_view::npos) s = s.substr(0, hash);
      const auto is_space = [](char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
      };
      while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
      while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
      if (s.empty()) continue;
      positions.push_back(parse_position(s, file, line));
    }
  }
  if (positions.empty())
    throw pev::error(fmt::format("positions file '{}' holds no positions", file.string()));
  return positions;
}

}  // namespace pev::io

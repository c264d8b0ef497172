#include "pev/app/limits.h"

#include <fmt/format.h>

#include <climits>
#include <optional>
#include <stdexcept>
#include <string>

#include "pev/core/error.h"
#include "pev/report/shards.h"

namespace pev::app {

void require_range(const char* flag, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    throw error(fmt::format("{}: expected a value in [{}, {}], got {}", flag, lo, hi, v));
  }
}

void require_range(const char* flag, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  if (v < lo || v > hi) {
    throw error(fmt::format("{}: expected an integer in [{}, {}], got {}", flag, lo, hi, v));
  }
}

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  auto bad = [&]() -> std::pair<int, int> {
    throw error("--shard: expected I/N with integers 0 <= I < N, got '" + text + "'");
  };
  if (slash == std::string::npos) return bad();
  // An integer part, saturated beyond int64 (then beyond every limit too); nothing if not one.
  auto integer = [&](std::size_t from, std::size_t to) -> std::optional<long long> {
    const std::string part = text.substr(from, to - from);
    std::size_t used = 0;
    try {
      const long long v = std::stoll(part, &used);
      if (used != part.size()) return std::nullopt;
      return v;
    } catch (const std::invalid_argument&) {
      return std::nullopt;
    } catch (const std::out_of_range&) {
      return part.front() == '-' ? LLONG_MIN : LLONG_MAX;
    }
  };
  const auto i = integer(0, slash), n = integer(slash + 1, text.size());
  if (!i || !n) return bad();
  // At most kMaxShards (docs/cli.md §2.1): N = 2^40 read as int was 0 and merged as "1 of 0".
  if (*n > report::kMaxShards) {
    throw error(fmt::format("--shard: '{}' asks for more than 2^20 = {} shards, pev's limit", text,
                            report::kMaxShards));
  }
  if (*n < 1 || *i < 0 || *i >= *n) return bad();
  return {static_cast<int>(*i), static_cast<int>(*n)};
}

}  // namespace pev::app

#include "pev/app/positions.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "pev/core/error.h"

namespace pev::app {
namespace {

std::int64_t parse_int(std::string_view s, const std::string& whole, const std::string& flag) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec == std::errc::result_out_of_range) {
    throw error(flag + ": '" + std::string(s) + "' is outside the 64-bit integer range (in '" +
                whole + "')");
  }
  if (ec != std::errc() || ptr != end || s.empty()) {
    throw error(flag + ": expected A:B[:STEP] or N with integers, got '" + whole + "'");
  }
  return v;
}

}  // namespace

std::vector<std::int64_t> parse_position_range(const std::string& text, bool allow_negative,
                                               const std::string& flag) {
  std::vector<std::string_view> parts;
  std::string_view rest(text);
  for (;;) {
    const auto colon = rest.find(':');
    parts.push_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  if (parts.size() > 3) throw error(flag + ": expected A:B[:STEP], got '" + text + "'");
  std::vector<std::int64_t> out;
  if (parts.size() == 1) {
    out.push_back(parse_int(parts[0], text, flag));
  } else {
    const std::int64_t a = parse_int(parts[0], text, flag);
    const std::int64_t b = parse_int(parts[1], text, flag);
    const std::int64_t step = parts.size() == 3 ? parse_int(parts[2], text, flag) : 1;
    if (step <= 0) throw error(flag + ": STEP must be positive, got " + std::to_string(step));
    if (b <= a) {
      throw error(flag + ": the range " + text + " is empty (A:B is half-open, B must exceed A)");
    }
    // Count without overflow: (b − a) can exceed INT64_MAX when a < 0.
    const unsigned long long span =
        static_cast<unsigned long long>(b) - static_cast<unsigned long long>(a);
    const unsigned long long count = (span - 1) / static_cast<unsigned long long>(step) + 1;
    if (count > static_cast<unsigned long long>(kMaxPositions)) {
      throw error(flag + ": " + text + " has " + std::to_string(count) + " positions; at most " +
                  std::to_string(kMaxPositions) + " per request (use a STEP, or split the range)");
    }
    out.reserve(count);
    for (unsigned long long k = 0; k < count; ++k) {
      out.push_back(static_cast<std::int64_t>(static_cast<unsigned long long>(a) + k * step));
    }
  }
  if (!allow_negative) {
    for (auto p : out) {
      if (p < 0) {
        if (flag != "--positions") throw error(flag + ": negative value " + std::to_string(p));
        throw error("--positions: negative position " + std::to_string(p) +
                    " (positions are ≥ 0; only relative distances for --what buckets may be "
                    "negative)");
      }
    }
  }
  return out;
}

void check_positions(const std::vector<std::int64_t>& v, bool allow_negative,
                     const std::string& source) {
  if (v.empty()) throw error(source + ": no positions");
  if (static_cast<std::int64_t>(v.size()) > kMaxPositions) {
    throw error(source + ": more than " + std::to_string(kMaxPositions) + " positions");
  }
  if (!allow_negative) {
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (v[k] < 0) {
        throw error(source + ": negative position " + std::to_string(v[k]) + " at index " +
                    std::to_string(k));
      }
    }
  }
}

std::int64_t stateful_seq_len(const std::vector<std::int64_t>& pos,
                              std::optional<std::int64_t> seq_len) {
  if (seq_len) {
    if (*seq_len < 1) throw error("--seq-len must be at least 1, got " + std::to_string(*seq_len));
    return *seq_len;
  }
  const std::int64_t max_pos = pos.empty() ? 0 : *std::max_element(pos.begin(), pos.end());
  return max_pos == INT64_MAX ? max_pos : max_pos + 1;
}

std::vector<std::int64_t> stream_positions(const spec::encoding& e, std::vector<std::int64_t> v,
                                           bool from_range, const std::string& source) {
  const auto* r = std::get_if<spec::rope>(&e);
  const std::int64_t S = r ? r->streams() : 1;
  if (S == 1) return v;
  if (from_range) {
    if (static_cast<std::int64_t>(v.size()) > kMaxPositions / S) {
      throw error(source + ": more than " + std::to_string(kMaxPositions) +
                  " positions over the MRoPE streams");
    }
    std::vector<std::int64_t> all;
    all.reserve(v.size() * static_cast<std::size_t>(S));
    for (std::int64_t k = 0; k < S; ++k) all.insert(all.end(), v.begin(), v.end());
    return all;
  }
  if (static_cast<std::int64_t>(v.size()) % S != 0) {
    throw error(source + ": " + std::to_string(v.size()) + " positions do not form the spec's [" +
                std::to_string(S) +
                ", T] MRoPE position streams (one row per mrope_section entry)");
  }
  return v;
}

}  // namespace pev::app

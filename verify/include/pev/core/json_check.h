#pragma once
// Linear-time limits for pev's JSON readers (safetensors headers, config.json, the --exec
// protocol, report.json, output manifests). Header-only; include it only where nlohmann_json is
// linked.
//
// Why not nlohmann's parser callback: after every nested object or array it scans all the elements
// of the enclosing container for a discarded value, so a header of n tensors costs O(n²) (10^5
// tensors: minutes). Instead, check_json walks the text once with the SAX interface, building
// nothing, and enforces the limits (nesting depth, duplicate keys) before the caller parses it
// into a DOM with nlohmann::json (std::map objects; ordered_json's objects are vectors searched on
// every insertion, quadratic again). Both passes are linear (n log n in the keys of one object).

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pev {

struct json_limits {
  /// Deepest nesting allowed: the number of containers around a value (the root is at depth 0), as
  /// nlohmann's callback counts it.
  int max_depth = 64;
  /// A key given twice in one object is an error (JSON allows it; a reader would keep one of
  /// them silently).
  bool reject_duplicate_keys = false;
  /// Called (and expected to throw) when a limit is broken: `too_deep` with the depth reached,
  /// `duplicate_key` with the key.
  std::function<void(int depth)> too_deep;
  std::function<void(const std::string& key)> duplicate_key;
};

namespace detail {

class json_checker final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit json_checker(const json_limits& l) : limits_(l) {}

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    value();
    keys_.emplace_back();
    objects_.push_back(true);
    return true;
  }
  bool key(string_t& k) override {
    if (limits_.reject_duplicate_keys && !keys_.back().insert(k).second) {
      limits_.duplicate_key(k);
      return false;
    }
    if (objects_.size() == 1) top_keys_.push_back(k);
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    objects_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    objects_.push_back(false);
    return true;
  }
  bool end_array() override {
    objects_.pop_back();
    return true;
  }
  // A syntax error is left to the DOM parse that follows, which reports it with its position.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

  std::vector<std::string> take_top_keys() { return std::move(top_keys_); }

 private:
  bool value() {
    const int depth = static_cast<int>(objects_.size());
    if (depth > limits_.max_depth) limits_.too_deep(depth);
    return true;
  }

  const json_limits& limits_;
  std::vector<bool> objects_;  // the open containers: true for an object
  std::vector<std::set<std::string>> keys_;
  std::vector<std::string> top_keys_;
};

}  // namespace detail

/// Checks `text` against `limits` in one pass (calling limits.too_deep / duplicate_key, which
/// throw) and returns the keys of the root object in their order (empty when the root is not an
/// object). Syntax errors are not reported here: parse the text afterwards to get them.
inline std::vector<std::string> check_json(std::string_view text, const json_limits& limits) {
  detail::json_checker checker(limits);
  nlohmann::json::sax_parse(text.begin(), text.end(), &checker);
  return checker.take_top_keys();
}

}  // namespace pev

// differences (difference.h): two certificates compared field by field.

#include "pev/report/difference.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "pev/core/error.h"
#include "pev/core/text.h"

namespace pev::report {

namespace {

struct walker {
  const std::vector<std::string>& skip;
  std::size_t max;
  std::vector<std::string> out;

  bool full() const { return out.size() >= max; }

  void add(const std::string& path, const std::string& what) {
    if (!full()) out.push_back(path + ": " + what);
  }

  /// An element's name in its array: its "id" where it has one, else its index. `pointer` is
  /// the JSON pointer the skip list is matched against (indices, not ids).
  static std::string name_of(const nlohmann::json& e, std::size_t i) {
    if (e.is_object() && e.contains("id") && e.at("id").is_string()) {
      return "[" + e.at("id").get<std::string>() + "]";
    }
    return "/" + std::to_string(i);
  }

  void walk(const nlohmann::json& a, const nlohmann::json& b, const std::string& pointer,
            const std::string& path) {
    if (full() || std::find(skip.begin(), skip.end(), pointer) != skip.end()) return;
    if (a.type() != b.type()) {
      add(path, a.dump() + " recorded, " + b.dump() + " now");
      return;
    }
    if (a.is_object()) {
      for (const auto& [k, v] : a.items()) {
        if (std::find(skip.begin(), skip.end(), pointer + "/" + k) != skip.end()) continue;
        if (!b.contains(k)) {
          add(path + "/" + k, "recorded, missing now");
        } else {
          walk(v, b.at(k), pointer + "/" + k, path + "/" + k);
        }
      }
      for (const auto& [k, v] : b.items()) {
        if (std::find(skip.begin(), skip.end(), pointer + "/" + k) != skip.end()) continue;
        if (!a.contains(k)) add(path + "/" + k, "not recorded, present now");
      }
      return;
    }
    if (a.is_array()) {
      if (a.size() != b.size()) {
        add(path,
            std::to_string(a.size()) + " elements recorded, " + std::to_string(b.size()) + " now");
      }
      for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        walk(a[i], b[i], pointer + "/" + std::to_string(i), path + name_of(a[i], i));
      }
      return;
    }
    if (a != b) add(path, a.dump() + " recorded, " + b.dump() + " now");
  }
};

}  // namespace

std::vector<std::string> differences(std::string_view recorded, std::string_view now,
                                     const std::vector<std::string>& skip, std::size_t max,
                                     const std::string& source) {
  const auto parse = [&](std::string_view text, const char* which) {
    try {
      return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw error(source + " (" + which + "): not JSON: " + json_error_text(e.what()));
    }
  };
  walker w{skip, max, {}};
  w.walk(parse(recorded, "recorded"), parse(now, "re-run"), "", "");
  return std::move(w.out);
}

const std::vector<std::string>& run_specific_fields() {
  // The provenance describes the run (host, build, timestamp, the reference's evaluation counts,
  // which shards merged); `seconds` is wall time; merged_from, inputs_reverified and command are
  // the merge's and the invocation's; plots_skipped depends on the machine's gnuplot.
  static const std::vector<std::string> fields = {"/provenance",  "/seconds",
                                                  "/merged_from", "/inputs_reverified",
                                                  "/command",     "/plots_skipped"};
  return fields;
}

}  // namespace pev::report

// transformers' MRoPE keys of a rope dictionary (mrope.h; docs/encodings.md §4.6).

#include "mrope.h"

#include <fmt/format.h>

#include <cmath>

#include "pev/core/error.h"

namespace pev::spec::detail {

bool is_mrope_type(std::string_view name) { return name == "mrope"; }

void read_mrope_keys(const nlohmann::json& d, const std::string& path, rope& r) {
  if (!d.is_object()) return;
  if (const auto it = d.find("mrope_section"); it != d.end() && !it->is_null()) {
    const std::string key = path + ".mrope_section";
    if (!it->is_array() || it->empty()) {
      throw error(fmt::format("{} must be a list of pair counts such as [16, 24, 24], got {}", key,
                              it->dump()));
    }
    r.mrope_section.clear();
    for (const auto& v : *it) {
      // Integers (transformers indexes with them); 16.0 is accepted as 16.
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1e6) ||
          v.get<double>() != std::floor(v.get<double>())) {
        throw error(
            fmt::format("{} entries must be non-negative integers (pairs), got {}", key, v.dump()));
      }
      r.mrope_section.push_back(static_cast<std::int64_t>(v.get<double>()));
    }
  }
  if (const auto it = d.find("mrope_interleaved"); it != d.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      throw error(
          fmt::format("{}.mrope_interleaved must be true or false, got {}", path, it->dump()));
    }
    r.mrope_interleaved = it->get<bool>();
  }
}

}  // namespace pev::spec::detail

// Merging shards (merge.h).

#include "pev/report/merge.h"

#include <algorithm>
#include <set>
#include <string>

#include "pev/core/error.h"

namespace pev::report {

results merge(std::vector<results> shards) {
  if (shards.empty()) throw error("merge: no shards given");
  const provenance& first = shards.front().prov;
  std::set<int> seen;
  for (const results& s : shards) {
    const provenance& p = s.prov;
    if (!p.merged_shards.empty()) throw error("merge: a shard is itself a merged report");
    if (p.shard_count != first.shard_count || p.seed != first.seed || p.suite != first.suite ||
        p.max_position != first.max_position || p.exhaustive != first.exhaustive ||
        p.samples_per_octave != first.samples_per_octave || p.reference != first.reference ||
        p.search_radius != first.search_radius || p.git_revision != first.git_revision ||
        s.specs != shards.front().specs) {
      throw error(
          "merge: shards come from different sweeps (suite, specs, seed, max position, "
          "sampling, reference, shard count or git revision differ)");
    }
    if (!seen.insert(p.shard_index).second) {
      throw error("merge: shard " + std::to_string(p.shard_index) + " given twice");
    }
  }
  if (static_cast<int>(seen.size()) != first.shard_count) {
    throw error("merge: " + std::to_string(seen.size()) + " of " +
                std::to_string(first.shard_count) + " shards given");
  }
  results out;
  out.prov = first;
  out.specs = shards.front().specs;
  out.prov.shard_index = 0;
  out.prov.shard_count = 1;
  out.prov.reference_values = 0;
  out.prov.reference_fallbacks = 0;
  std::sort(shards.begin(), shards.end(), [](const results& a, const results& b) {
    return a.prov.shard_index < b.prov.shard_index;
  });
  for (results& s : shards) {
    for (auto& n : s.notes) {
      if (std::find(out.notes.begin(), out.notes.end(), n) == out.notes.end())
        out.notes.push_back(n);
    }
    out.prov.merged_shards.push_back(s.prov.shard_index);
    out.prov.reference_values += s.prov.reference_values;
    out.prov.reference_fallbacks += s.prov.reference_fallbacks;
    out.prov.generated_at = std::max(out.prov.generated_at, s.prov.generated_at);
    for (auto& c : s.checks) out.checks.push_back(std::move(c));
    for (auto& v : s.invariance) out.invariance.push_back(std::move(v));
    for (auto& w : s.wavelengths) out.wavelengths.push_back(std::move(w));
  }
  auto by_index = [](const auto& a, const auto& b) { return a.index < b.index; };
  std::stable_sort(out.checks.begin(), out.checks.end(), by_index);
  std::stable_sort(out.invariance.begin(), out.invariance.end(), by_index);
  std::stable_sort(out.wavelengths.begin(), out.wavelengths.end(), by_index);
  return out;
}

}  // namespace pev::report

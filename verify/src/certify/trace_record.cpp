// What a tracer recorded beside a trace's tensors (docs/certify.md §8.1): notes, and layers it
// found wrong whatever their data say (pev.torch: a rotation applied twice, one whose result the
// attention discarded), read from the dump's metadata and put on the certificate's rows — so that
// `pev certify` of a saved trace and pev.certify of the live one give the same verdict.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "pev/core/error.h"
#include "pev/core/text.h"
#include "trace_sites.h"

namespace pev::certify::detail {

namespace {

using json = nlohmann::json;

// The metadata key `key` as JSON of the shape `want` says, or nothing when absent.
std::optional<json> metadata_json(const dump& d, const char* key, const char* want) {
  const auto it = d.metadata.find(key);
  if (it == d.metadata.end()) return std::nullopt;
  try {
    return json::parse(it->second);
  } catch (const json::exception& e) {
    throw error(fmt::format("trace metadata '{}': not JSON ({}); expected {}", key,
                            json_error_text(e.what()), want));
  }
}

std::int64_t layer_key(const char* key, const std::string& k) {
  std::int64_t v = -1;
  const auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), v);
  if (ec != std::errc() || p != k.data() + k.size() || v < 0) {
    throw error(fmt::format("trace metadata '{}': key '{}' is not a layer index", key, escaped(k)));
  }
  return v;
}

void bad(const char* key, const char* want) {
  throw error(fmt::format("trace metadata '{}': expected {}", key, want));
}

}  // namespace

tracer_record read_tracer_record(const dump& d) {
  tracer_record r;
  constexpr const char* kNotes = "a list of strings";
  if (const auto j = metadata_json(d, "pev.notes", kNotes)) {
    if (!j->is_array()) bad("pev.notes", kNotes);
    for (const json& n : *j) {
      if (!n.is_string()) bad("pev.notes", kNotes);
      r.notes.push_back(n.get<std::string>());
    }
  }
  constexpr const char* kFindings = "{layer: [name, text]}";
  if (const auto j = metadata_json(d, "pev.findings", kFindings)) {
    if (!j->is_object()) bad("pev.findings", kFindings);
    for (const auto& [k, v] : j->items()) {
      if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_string()) {
        bad("pev.findings", kFindings);
      }
      r.findings[layer_key("pev.findings", k)] = {v[0].get<std::string>(), v[1].get<std::string>()};
    }
  }
  constexpr const char* kLayerNotes = "{layer: [text, …]}";
  if (const auto j = metadata_json(d, "pev.layer_notes", kLayerNotes)) {
    if (!j->is_object()) bad("pev.layer_notes", kLayerNotes);
    for (const auto& [k, v] : j->items()) {
      if (!v.is_array()) bad("pev.layer_notes", kLayerNotes);
      auto& notes = r.layer_notes[layer_key("pev.layer_notes", k)];
      for (const json& n : v) {
        if (!n.is_string()) bad("pev.layer_notes", kLayerNotes);
        notes.push_back(n.get<std::string>());
      }
    }
  }
  return r;
}

void apply_tracer_record(const tracer_record& r, const std::vector<trace_site>& sites,
                         std::vector<site_outcome>& out, std::vector<std::string>& notes) {
  notes.insert(notes.end(), r.notes.begin(), r.notes.end());
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const spec::layer_spec& l = sites[i].layer;
    if (l.index < 0 || !l.site.empty()) continue;
    report::layer_result& row = out[i].row;
    if (const auto it = r.layer_notes.find(l.index); it != r.layer_notes.end()) {
      row.findings.insert(row.findings.end(), it->second.begin(), it->second.end());
    }
    const auto f = r.findings.find(l.index);
    if (f == r.findings.end()) continue;
    // The tracer's finding names the layer; the data's own diagnosis, if another, follows it.
    if (row.named && *row.named != f->second.first) {
      row.findings.insert(row.findings.begin(), "the data alone: " + *row.named);
    }
    row.findings.insert(row.findings.begin(), f->second.second);
    row.named = f->second.first;
    row.result = grade::not_certified;
    out[i].claim_holds = false;
  }
  for (const auto& [index, f] : r.findings) {
    const bool held = std::any_of(sites.begin(), sites.end(), [&](const trace_site& s) {
      return s.layer.index == index && s.layer.site.empty();
    });
    if (!held) {
      notes.push_back(fmt::format("layer {}: {} ({}), but the certificate has no row for it", index,
                                  f.first, f.second));
    }
  }
}

}  // namespace pev::certify::detail

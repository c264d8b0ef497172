#pragma once
// Internals of certify_trace (trace.cpp, docs/certify.md §8): the sites of a trace and how one is
// certified.
// clang-format off
//   trace_sites.cpp   the trace's names (docs/certify.md §8.1): which site a tensor belongs to, each site's
//                     tensors as a sub-dump, the positions
//   trace_site.cpp    one site certified against its own encoding, and diagnosed (docs/certify.md §8.3)
// clang-format on

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/spec/model.h"

namespace pev::certify::detail {

/// Where a trace tensor belongs: layer `index` (−1 for a model-level site), its `site` ("" for the
/// layer's rotation), its `role` ("q_in", "cos", "none", "table", "buckets", …).
struct trace_name {
  std::int64_t index = -1;
  std::string site;
  std::string role;
};
/// The site of a tensor named as docs/certify.md §8.1 says, or nothing (position_ids, …).
std::optional<trace_name> trace_site_of(const std::string& name);
/// Whether `name` makes a dump a trace: a site's name, or one that tries to be (`Layers.0.q_in`,
/// `layers.01.q_in`: refused by name by trace_sites, never read as a one-dump tensor).
bool trace_like_name(const std::string& name);

/// A site's tensors, by role (shared views of the trace's), and its `none` marker.
struct site_data {
  std::map<std::string, io::array> tensors;
  bool none = false;
  const io::array* find(const std::string& role) const {
    const auto it = tensors.find(role);
    return it == tensors.end() ? nullptr : &it->second;
  }
};

/// A site of the model with what the trace holds for it.
struct trace_site {
  spec::layer_spec layer;
  site_data data;
};

/// The sites of `m` the trace holds, in the config's order. `layers` non-empty: the decoder
/// layers traced (others are left out). pev::error naming a decoder layer the trace lacks, a
/// tensor that belongs to no site of the config, or a trace that holds no site at all.
std::vector<trace_site> trace_sites(const spec::model_spec& m, const dump& d,
                                    const std::vector<std::int64_t>& layers);

/// A sub-dump of the trace: the site's tensors under their roles, the trace's position_ids
/// (replaced by `positions` when given, shaped as the trace's), its metadata.
dump site_dump(const site_data& s, const dump& trace,
               const std::vector<std::int64_t>* positions = nullptr);

/// The trace's position_ids, flattened in row order (the first stream's for MRoPE's [3, B, T]);
/// empty without them.
std::vector<std::int64_t> trace_positions(const dump& d);
/// The trace's position_ids as [B, T] (one stream), B = 0 when absent or multi-stream.
struct batch_positions {
  std::int64_t batch = 0, tokens = 0;
  std::vector<std::int64_t> ids;  // B·T, row-major
};
batch_positions trace_batch_positions(const dump& d);

/// The columns (token indices 0 … T − 1 of every batch row) a candidate of the integration
/// diagnosis is tried on first (docs/certify.md §8.3): those of the kSampleLargest largest
/// positions of the trace's `b` and of the candidate's `candidate` (B·T, as b.ids; null: the
/// trace's), and kSampleEven evenly spaced, in order. Empty where T is under twice their number
/// (the whole site is as cheap).
inline constexpr std::size_t kSampleLargest = 32, kSampleEven = 32;
std::vector<std::size_t> sample_columns(const batch_positions& b,
                                        const std::vector<std::int64_t>* candidate);
/// The sub-dump of `s`'s rotated q/k at `columns` (sample_columns) only: site_dump's tensors
/// (q/k and a `none` marker; positions `positions` as there) cut along the token axis of their
/// layout `qk_layout` (the reading the site's own certification made, forced in the metadata).
/// Nothing for a site holding anything else (a table) or tensors whose token axis does not have
/// the positions' length.
std::optional<dump> sample_dump(const site_data& s, const dump& trace,
                                const std::vector<std::int64_t>* positions,
                                const std::vector<std::size_t>& columns,
                                const std::string& qk_layout);

/// What certifying one site gives the model's certificate.
struct site_outcome {
  report::layer_result row;
  std::vector<check> checks;
  std::vector<report::mismatch> mismatches;
  bool claim_holds = true;
  std::string held_to;
  std::vector<report::layout_reading> layouts;
  std::uint64_t reference_values = 0, reference_fallbacks = 0;
};
/// Certifies one site against its encoding (the identity for none) and, when it fails and
/// `o.diagnose`, names the integration mistake that explains it (docs/certify.md §8.3).
site_outcome certify_site(const trace_site& s, const spec::model_spec& m, const dump& trace,
                          const options& o);

/// What a tracer recorded beside the tensors (trace_record.cpp, docs/certify.md §8.1): the dump's
/// metadata `pev.notes` (a JSON list of strings), `pev.findings` ({layer: [name, text]}: a layer
/// the tracer found wrong whatever its data say) and `pev.layer_notes` ({layer: [text, …]}).
struct tracer_record {
  std::vector<std::string> notes;
  std::map<std::int64_t, std::pair<std::string, std::string>> findings;
  std::map<std::int64_t, std::vector<std::string>> layer_notes;
};
/// The record of `d`'s metadata (empty without it); pev::error naming a malformed key.
tracer_record read_tracer_record(const dump& d);
/// Puts the record on the outcomes: each finding fails its layer's row, named (the data's own
/// name follows), layer notes join the row's findings, notes join `notes`.
void apply_tracer_record(const tracer_record& r, const std::vector<trace_site>& sites,
                         std::vector<site_outcome>& out, std::vector<std::string>& notes);

}  // namespace pev::certify::detail

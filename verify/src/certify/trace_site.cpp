// One site of a model trace certified against its own encoding, and diagnosed (docs/certify.md
// §8.3): the identity of a NoPE layer bit for bit; a rotation by certify_dump on the site's
// sub-dump; a site that fails tried against what integration mistakes would have made — another
// layer type's RoPE, another batch row's positions, positions that run on across packed
// sequences, each on a sample of the site's tokens first — before the one-dump diagnosis of its own
// encoding, which runs on what the site's certification compared: a site is compared once.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "detail.h"
#include "pev/core/error.h"
#include "trace_sites.h"

namespace pev::certify::detail {

namespace {

// Mistake names of the integration diagnosis (docs/certify.md §8.3).
constexpr const char* kRotatedNoPE = "rope-on-nope-layer";
constexpr const char* kNotRotated = "rope-layer-not-rotated";
constexpr const char* kOtherLayerType = "rope-of-other-layer-type";
constexpr const char* kBatchRow = "batch-row-positions";
constexpr const char* kPackedRunOn = "packed-positions-not-restarting";

std::string spec_of(const std::optional<spec::encoding>& e) {
  return e ? spec::to_spec_string(*e) : "none";
}

bool has_qk(const site_data& s) { return s.find("q_in") && s.find("q_out"); }

// Whether the site holds what only a rotation records: a table (cos/sin, a cache, freqs_cis,
// inv_freq), not q/k alone.
bool has_table(const site_data& s) {
  return std::any_of(s.tensors.begin(), s.tensors.end(), [](const auto& t) {
    return t.first != "q_in" && t.first != "q_out" && t.first != "k_in" && t.first != "k_out";
  });
}

// Whether the site applied no rotation: q/k outputs equal to their inputs bit for bit when the
// trace holds them — a `none` marker beside them is a claim the data must bear out, never a reason
// to skip them (docs/certify.md §8.1) — else a `none` marker alone. Fills the identity check; its
// largest difference only where `measure` (a NoPE site keeps the check; a RoPE site's rotated q/k
// are not converted to doubles for a check it drops).
bool identity(const site_data& s, check& c, bool measure) {
  c.id = "identity";
  c.spec = "none";
  c.family = "none";
  c.strategy = "identity";
  c.bound_name = "bit for bit";
  c.source = has_qk(s) ? "q_out = q_in, k_out = k_in" : "none";
  if (!has_qk(s)) {
    c.dtype = "-";
    c.pass = s.none && !has_table(s);
    c.best = c.pass ? grade::correctly_rounded : grade::not_certified;
    return c.pass;
  }
  bool same = true;
  for (const char* role : {"q", "k"}) {
    const io::array* in = s.find(std::string(role) + "_in");
    const io::array* out = s.find(std::string(role) + "_out");
    if (!in || !out) continue;
    c.dtype = to_string(out->type);
    c.values += out->elements();
    const bool equal = in->type == out->type && in->shape == out->shape &&
                       in->data.size() == out->data.size() &&
                       std::memcmp(in->data.data(), out->data.data(), in->data.size()) == 0;
    if (equal) continue;
    same = false;
    if (measure && in->type == out->type && in->shape == out->shape && is_float(in->type)) {
      const auto a = in->to_doubles(), b = out->to_doubles();
      for (std::size_t i = 0; i < a.size(); ++i)
        c.max_abs = std::max(c.max_abs, std::abs(a[i] - b[i]));
    }
  }
  c.pass = same;
  c.best = same ? grade::correctly_rounded : grade::not_certified;
  return same;
}

// What a site read, for its row.
std::string identity_read(const site_data& s) {
  std::string r = has_qk(s) ? "q_in, q_out (compared bit for bit)" : "none (not rotated)";
  if (s.none && has_qk(s)) r += " beside a none marker";
  if (has_table(s)) r += has_qk(s) ? "; a table recorded" : "; a table recorded for it";
  return r;
}

options quiet(const options& o) {
  options q = o;
  q.diagnose = false;
  return q;
}

bool certified(const certificate& c) { return c.certification->result != grade::not_certified; }

// The outcome of a site from the certificate of its sub-dump.
void take(site_outcome& s, certificate c) {
  const report::certification& z = *c.certification;
  s.row.result = z.result;
  s.row.read = z.what;
  s.row.max_rho = max_rho_without(c);
  s.claim_holds = z.claim_holds;
  s.held_to = z.held_to;
  s.layouts = z.layouts;
  s.reference_values = c.prov.reference_values;
  s.reference_fallbacks = c.prov.reference_fallbacks;
  if (z.why) {
    const report::diagnosis& w = *z.why;
    s.mismatches = w.first;
    s.row.named = w.named;
    // What the named mistake is, what the data implies, and what it cannot be told from.
    if (w.named && !w.explanations.empty()) s.row.findings.push_back(w.explanations[0].description);
    s.row.findings.insert(s.row.findings.end(), w.findings.begin(), w.findings.end());
    if (!w.indistinguishable.empty()) {
      std::string t;
      for (const auto& x : w.indistinguishable) t += (t.empty() ? "" : ", ") + x;
      s.row.findings.push_back("indistinguishable on this data: " + t);
    }
    // Other mistakes within the threshold too (not the same values, but as close): the data
    // name the named one first and do not rule these out.
    std::string also;
    for (std::size_t j = 1; w.named && j < w.explanations.size(); ++j) {
      const report::explanation& x = w.explanations[j];
      const bool tied = std::find(w.indistinguishable.begin(), w.indistinguishable.end(),
                                  x.mutant) != w.indistinguishable.end();
      if (x.explains && !tied) also += (also.empty() ? "" : ", ") + x.mutant;
    }
    if (!also.empty()) s.row.findings.push_back("also within the threshold: " + also);
  }
  s.checks = std::move(c.checks);
}

// The distinct RoPE encodings of the model other than `e`, with the first site that has each.
std::vector<const spec::layer_spec*> other_ropes(const spec::model_spec& m,
                                                 const std::optional<spec::encoding>& e) {
  std::vector<const spec::layer_spec*> out;
  for (const spec::layer_spec& l : m.layers) {
    if (!l.encoding || !std::holds_alternative<spec::rope>(*l.encoding)) continue;
    if (e && *l.encoding == *e) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const spec::layer_spec* x) {
      return *x->encoding == *l.encoding;
    });
    if (!seen) out.push_back(&l);
  }
  return out;
}

// The q/k layout a site's own certification read (layout.h), empty without one.
std::string qk_layout_read(const certificate& c) {
  for (const report::layout_reading& r : c.certification->layouts) {
    if (r.role == "q/k") return r.layout;
  }
  return {};
}

// Whether a candidate of the integration diagnosis — encoding `e` at `positions` (null: the
// trace's) — certifies the site (docs/certify.md §8.3): first on a sample of its tokens
// (sample_dump, in the layout `qk_layout` its own certification read), where it fails without a
// whole certification — a value beyond every bound on the sample is beyond it on the whole; then,
// where it holds there or no sample is cut, on the whole site. An error of the sample's reading
// leaves the answer to the whole site's.
bool candidate_certifies(const spec::encoding& e, const site_data& s, const dump& trace,
                         const std::vector<std::int64_t>* positions, const std::string& qk_layout,
                         const options& o) {
  if (!qk_layout.empty()) {
    const std::vector<std::size_t> columns =
        sample_columns(trace_batch_positions(trace), positions);
    if (const auto sample = sample_dump(s, trace, positions, columns, qk_layout)) {
      try {
        if (!certified(certify_dump(e, *sample, quiet(o)))) return false;
      } catch (const error&) {
        // The sample's reading is not the site's: the whole site decides.
      }
    }
  }
  return certified(certify_dump(e, site_dump(s, trace, positions), quiet(o)));
}

// The first other RoPE of the model that certifies the site (candidate_certifies).
const spec::layer_spec* other_rope_fits(const spec::model_spec& m, const trace_site& ts,
                                        const dump& trace, const std::string& qk_layout,
                                        const options& o) {
  for (const spec::layer_spec* x : other_ropes(m, ts.layer.encoding)) {
    try {
      if (candidate_certifies(*x->encoding, ts.data, trace, nullptr, qk_layout, o)) return x;
    } catch (const error&) {
      // A shape this RoPE cannot read (another rotary_dim): not this one.
    }
  }
  return nullptr;
}

// Positions an integration mistake would have used instead of the trace's: every row at row 0's
// positions (batched decode with row 0's offset), or 0 … T − 1 in every row (packed sequences
// whose positions do not restart). Nothing where they equal the trace's.
std::optional<std::vector<std::int64_t>> row0_positions(const batch_positions& b) {
  if (b.batch < 2) return std::nullopt;
  std::vector<std::int64_t> v(b.ids.size());
  for (std::int64_t r = 0; r < b.batch; ++r) {
    std::copy_n(b.ids.begin(), b.tokens, v.begin() + r * b.tokens);
  }
  if (v == b.ids) return std::nullopt;
  return v;
}
std::optional<std::vector<std::int64_t>> run_on_positions(const batch_positions& b) {
  if (b.batch < 1) return std::nullopt;
  std::vector<std::int64_t> v(b.ids.size());
  bool restarts = false;
  for (std::int64_t r = 0; r < b.batch; ++r) {
    for (std::int64_t t = 0; t < b.tokens; ++t) {
      const auto k = static_cast<std::size_t>(r * b.tokens + t);
      v[k] = t;
      // A restart: a position that does not follow the one before it and is not padding's.
      if (t > 0 && b.ids[k] < b.ids[k - 1] && b.ids[k] == 0) restarts = true;
    }
  }
  if (!restarts) return std::nullopt;
  return v;
}

// T5: the buckets [Q, K] of queries 0 … Q − 1 and keys 0 … K − 1, with their distances.
dump t5_dump(const site_data& s, const std::string& prefix) {
  const io::array* b = s.find("buckets");
  if (!b || b->shape.size() != 2) {
    throw error(fmt::format("site {}: expected a tensor '{}.buckets' [Q, K] (docs/certify.md §8.1)",
                            prefix, prefix));
  }
  dump sub;
  sub.tensors.emplace("buckets", *b);
  const std::int64_t Q = b->shape[0], K = b->shape[1];
  std::vector<std::int64_t> r(static_cast<std::size_t>(Q * K));
  for (std::int64_t q = 0; q < Q; ++q) {
    for (std::int64_t k = 0; k < K; ++k) r[static_cast<std::size_t>(q * K + k)] = k - q;
  }
  sub.tensors.emplace("distances", io::array::from_int64({Q, K}, r));
  return sub;
}

// A learned table added at the input (docs/certify.md §8.1): embed.positions, the rows the model
// added token by token, against the checkpoint's table embed.table read at each token's
// position_ids (plus the config's offset). A table of another size than the config's is a finding
// (a truncated table), not bad input.
void learned_site(spec::learned want, const site_data& s, const std::string& prefix,
                  const std::string& rule, const dump& trace, const options& o, site_outcome& out) {
  const io::array* table = s.find("table");
  const io::array* rows = s.find("positions");
  // Without embed.table, the spec's own table (`learned:table=FILE`, or its seed).
  io::array own;
  if (!table && rows && !want.table.empty()) {
    own = io::array::from_doubles({want.num_positions, want.d_model}, want.table);
    table = &own;
  }
  if (!table || !rows) {
    throw error(fmt::format(
        "site {}: expected '{}.table' (the checkpoint's table [N, d]) and '{}.positions' (the "
        "embedding added at the input, [B, T, d] or [T, d]); it holds {}",
        prefix, prefix, prefix, tensor_list(site_dump(s, trace))));
  }
  if (table->shape.size() != 2 || !is_float(table->type)) {
    throw error(fmt::format("site {}: '{}.table' must be a float [N, d] tensor, got {} {}", prefix,
                            prefix, io::safetensors_name(table->type),
                            io::shape_string(table->shape)));
  }
  const std::int64_t N = table->shape[0], d = table->shape[1];
  if (d != want.d_model) {
    throw error(fmt::format("site {}: '{}.table' has {} columns; the config's width is {} ({})",
                            prefix, prefix, d, want.d_model, rule));
  }
  const std::vector<std::int64_t> pos = trace_positions(trace);
  if (rows->shape.empty() || rows->shape.back() != d ||
      static_cast<std::int64_t>(rows->elements()) != static_cast<std::int64_t>(pos.size()) * d) {
    throw error(fmt::format(
        "site {}: '{}.positions' has shape {}: expected one row of {} per token of position_ids "
        "({} tokens)",
        prefix, prefix, io::shape_string(rows->shape), d, pos.size()));
  }
  io::array flat = *rows;
  flat.shape = {static_cast<std::int64_t>(pos.size()), d};
  // Padding tokens (attention_mask 0) are left out: their position ids are a convention (OPT's
  // −1 reads row offset − 1), not a position of the sequence.
  std::vector<std::int64_t> kept = pos;
  if (const io::array* mask = trace.find("attention_mask");
      mask && mask->elements() == pos.size() && !is_float(mask->type)) {
    const std::vector<std::int64_t> m = mask->to_int64();
    const std::size_t row_bytes = static_cast<std::size_t>(d) * size_of(flat.type);
    std::vector<std::byte> bytes;
    kept.clear();
    for (std::size_t t = 0; t < pos.size(); ++t) {
      if (m[t] == 0) continue;
      kept.push_back(pos[t]);
      const std::byte* from = rows->data.data() + t * row_bytes;
      bytes.insert(bytes.end(), from, from + row_bytes);
    }
    flat.data = io::byte_buffer(std::move(bytes));
    flat.shape = {static_cast<std::int64_t>(kept.size()), d};
  }
  spec::learned l = want;
  l.num_positions = N;
  l.table = table->to_doubles();
  certificate c = learned_check(spec::encoding{l}, flat, kept, o);
  take(out, std::move(c));
  out.row.read = fmt::format("{}.positions {} against {}.table [{}, {}]", prefix,
                             io::shape_string(rows->shape), prefix, N, d);
  if (N != want.num_positions) {
    // The checkpoint's table is not the config's: the engine truncated (or padded) it.
    out.row.result = grade::not_certified;
    out.claim_holds = false;
    if (!out.row.named) out.row.named = "learned-truncated-table";
    out.row.findings.insert(out.row.findings.begin(),
                            fmt::format("{}.table has {} rows; the config gives {} ({})", prefix, N,
                                        want.num_positions, rule));
    out.row.max_rho = INFINITY;
  }
}

// A NoPE site (docs/certify.md §8.3): the identity expected — q/k compared bit for bit, a `none`
// marker where the trace holds nothing else; q/k that differ, or a table recorded for the layer
// (its rotary function ran), are rope-on-nope-layer, with the model's RoPE that certifies them.
void nope_site(const trace_site& ts, const spec::model_spec& m, const dump& trace, const options& o,
               site_outcome& out) {
  const spec::layer_spec& l = ts.layer;
  const site_data& s = ts.data;
  const std::string prefix = l.prefix();
  if (!s.none && !has_qk(s) && !has_table(s)) {
    throw error(fmt::format("site {} (NoPE by {}): expected {}.none or q_in and q_out; it holds {}",
                            prefix, l.rule, prefix, tensor_list(site_dump(s, trace))));
  }
  check id;
  const bool unrotated = identity(s, id, /*measure=*/true);
  out.row.read = identity_read(s);
  out.row.result = unrotated ? grade::correctly_rounded : grade::not_certified;
  out.claim_holds = unrotated;
  out.checks.push_back(id);
  if (unrotated) return;
  out.row.named = kRotatedNoPE;
  std::string f =
      has_qk(s) ? fmt::format(
                      "rotated, where the config says NoPE ({}){}", l.rule,
                      s.none ? fmt::format(" (beside {}.none, which says it was not)", prefix) : "")
                : fmt::format(
                      "a table was recorded for the layer (its rotary function ran), where "
                      "the config says NoPE ({})",
                      l.rule);
  if (o.diagnose) {
    if (const auto* x = other_rope_fits(m, ts, trace, {}, o)) {
      f += fmt::format(": with the RoPE of the {} layers ({})", x->type,
                       spec::to_spec_string(*x->encoding));
    }
  }
  out.row.findings.push_back(f);
  out.row.max_rho = INFINITY;
}

// A RoPE site whose outputs equal its inputs, or that holds only a `none` marker:
// rope-layer-not-rotated (docs/certify.md §8.3).
void not_rotated_site(const trace_site& ts, check id, site_outcome& out) {
  out.row.read = has_qk(ts.data) ? "q_in, q_out (equal bit for bit)" : "none (not rotated)";
  out.row.result = grade::not_certified;
  out.claim_holds = false;
  id.pass = false;
  id.best = grade::not_certified;
  id.note = "the config gives this layer RoPE";
  out.checks.push_back(std::move(id));
  out.row.named = kNotRotated;
  out.row.findings.push_back(
      fmt::format("not rotated, where the config says {} ({})", out.row.spec, ts.layer.rule));
  out.row.max_rho = INFINITY;
}

// The site's own certification (docs/certify.md §8.3): a RoPE site's diagnosis, with
// o.diagnose, kept in `later` (context::later) to run on what was compared where no integration
// mistake names the site; another family's made in place.
certificate certify_own(const spec::encoding& e, const dump& sub, const options& o,
                        std::function<void(context&)>& later) {
  const auto* r = std::get_if<spec::rope>(&e);
  if (!r || !o.diagnose) return certify_dump(e, sub, o);
  return certify_frame(e, sub, o, [&](context& k) {
    k.later = &later;
    certify_rope(*r, k);
  });
}

// The integration mistake that certifies a failing RoPE site, and what it shows.
struct named_mistake {
  const char* name;
  std::string finding;
};

// The integration mistakes of docs/certify.md §8.3 tried on a failing site, in order: another
// layer type's RoPE, row 0's positions in every batch row, positions running on across packed
// sequences (candidate_certifies, each sampled first in the layout `qk_layout`); the first that
// certifies the site.
std::optional<named_mistake> integration_mistake(const trace_site& ts, const spec::model_spec& m,
                                                 const dump& trace, const std::string& qk_layout,
                                                 const options& o) {
  const spec::layer_spec& l = ts.layer;
  if (const auto* x = other_rope_fits(m, ts, trace, qk_layout, o)) {
    return named_mistake{
        kOtherLayerType,
        fmt::format("rotated with the RoPE of the {} layers ({}: {}), where the config gives this "
                    "{} layer {} ({})",
                    x->type, x->rule, spec::to_spec_string(*x->encoding), l.type,
                    spec_of(l.encoding), l.rule)};
  }
  const batch_positions b = trace_batch_positions(trace);
  const auto* r = std::get_if<spec::rope>(&*l.encoding);
  if (b.batch == 0 || (r && r->streams() != 1)) return std::nullopt;
  if (const auto p = row0_positions(b);
      p && candidate_certifies(*l.encoding, ts.data, trace, &*p, qk_layout, o)) {
    return named_mistake{
        kBatchRow,
        fmt::format(
            "rows 1…{} of the batch rotated at row 0's positions, not their own position_ids",
            b.batch - 1)};
  }
  if (const auto p = run_on_positions(b);
      p && candidate_certifies(*l.encoding, ts.data, trace, &*p, qk_layout, o)) {
    return named_mistake{
        kPackedRunOn,
        fmt::format("positions run on across the packed sequences (0…{} in each row) instead of "
                    "restarting where position_ids does",
                    b.tokens - 1)};
  }
  return std::nullopt;
}

}  // namespace

site_outcome certify_site(const trace_site& ts, const spec::model_spec& m, const dump& trace,
                          const options& o) {
  const spec::layer_spec& l = ts.layer;
  const site_data& s = ts.data;
  site_outcome out;
  out.row.index = l.index;
  out.row.site = l.site;
  out.row.type = l.type;
  out.row.spec = spec_of(l.encoding);
  out.row.rule = l.rule;
  const std::string prefix = l.prefix();

  if (l.encoding && std::holds_alternative<spec::t5>(*l.encoding)) {
    take(out, certify_dump(*l.encoding, t5_dump(s, prefix), o));
    out.row.read = prefix + ".buckets";
    return out;
  }
  if (l.encoding && std::holds_alternative<spec::learned>(*l.encoding)) {
    learned_site(std::get<spec::learned>(*l.encoding), s, prefix, l.rule, trace, o, out);
    return out;
  }

  if (!l.encoding) {
    nope_site(ts, m, trace, o, out);
    return out;
  }
  check id;
  if (identity(s, id, /*measure=*/false)) {
    not_rotated_site(ts, std::move(id), out);
    return out;
  }
  if (s.none) {
    // The data are compared whatever the marker says; the contradiction is stated on the row.
    out.row.findings.push_back(fmt::format(
        "{}.none says the layer was not rotated, but the trace holds its rotation ({}): the data "
        "were certified, the marker is wrong",
        prefix, has_qk(s) ? "q_out differs from q_in" : "a table"));
  }
  // The site's own certification, compared once: its diagnosis kept for later (RoPE) or made in
  // place (docs/certify.md §8.3).
  const dump sub = site_dump(s, trace);
  std::function<void(context&)> later;
  certificate c = certify_own(*l.encoding, sub, o, later);
  if (certified(c) || !o.diagnose) {
    take(out, std::move(c));
    return out;
  }
  // Integration mistakes first: the data's certificate, named by the first that certifies them.
  if (const auto x = integration_mistake(ts, m, trace, qk_layout_read(c), o)) {
    take(out, std::move(c));
    out.row.named = x->name;
    out.row.findings = {x->finding};
    return out;
  }
  // The one-dump diagnosis of the site's own encoding (the mutant catalogue, recovered
  // parameters), on what its certification compared.
  if (later) diagnose_later(later, *l.encoding, sub, o, c);
  take(out, std::move(c));
  if (!out.row.named && out.row.findings.empty()) {
    out.row.findings.push_back("no known mistake explains the data");
  }
  return out;
}

}  // namespace pev::certify::detail

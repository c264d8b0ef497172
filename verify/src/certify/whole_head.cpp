// A partial-rotary config given a table of the whole head's width (docs/certify.md §3): not bad
// input but a finding. The table is certified as the whole head's rotation (rotary_dim =
// head_dim), and the certificate of the config's spec says what the data are: not certified, a
// check of the rotary width that fails, and the mistake partial-rotary-full explaining the data
// when they are that rotation.

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "detail.h"
#include "layout.h"
#include "pev/core/error.h"
#include "pev/impl/mutants.h"

namespace pev::certify::detail {

namespace {

/// The spec rotating the whole head: `s` with rotary_dim = head_dim.
spec::rope whole_head_of(const spec::rope& s) {
  spec::rope w = s;
  w.rotary_dim = s.head_dim;
  w.partial_rotary_factor = 1.0;
  return w;
}

/// The table find_rope_table reads of `d` under `s`, if any.
std::shared_ptr<const table_source> read_table(const dump& d, const spec::rope& s,
                                               std::optional<table_layout> layout) {
  try {
    return std::make_shared<const table_source>(find_rope_table(d, s, layout));
  } catch (const error&) {
    return nullptr;
  }
}

}  // namespace

head_tables read_head_tables(const dump& d, const spec::rope& s, const options& o) {
  head_tables h;
  // Proportional RoPE keeps every pair (its tail at frequency 0); the ggml form has no head.
  if (s.rotary_dim >= s.head_dim || s.type == spec::rope_type::proportional ||
      s.type == spec::rope_type::ggml) {
    return h;
  }
  const spec::rope w = whole_head_of(s);
  if (!table_present(d, w, o)) return h;
  h.whole = read_table(d, w, o.layout);
  if (!h.whole) return h;
  h.own = read_table(d, s, o.layout);
  // cos and sin [P, rotary_dim] are also the whole head's separate [P, head_dim/2] (head_dim =
  // 2·rotary_dim): the whole head's when the data show no duplicate pattern.
  h.whole_head = !h.own || (!h.own->duplicates_shown && h.whole->layout == table_layout::separate);
  return h;
}

void certify_whole_head(const spec::rope& s, context& k, const table_source& whole_table) {
  const spec::rope w = whole_head_of(s);
  const spec::encoding we = w;
  // The whole head's certification, in a certificate of the same frame.
  certificate whole;
  whole.certification.emplace(*k.cert.certification);
  context kw{we, k.d, k.o, whole, {}};
  certify_rope(w, kw, &whole_table);
  k.cert.prov.reference_values += whole.prov.reference_values;
  k.cert.prov.reference_fallbacks += whole.prov.reference_fallbacks;
  report::certification& z = k.c();
  const report::certification& zw = *whole.certification;
  z.what =
      fmt::format("{}, read as the whole head's rotation (rotary_dim {})", zw.what, w.rotary_dim);
  z.layouts = zw.layouts;
  z.library = zw.library;
  z.positions = zw.positions;
  z.min_position = zw.min_position;
  z.max_position = zw.max_position;
  z.exhaustive = zw.exhaustive;
  const std::string against =
      fmt::format("against the whole head's rotation (rotary_dim {})", w.rotary_dim);
  const std::string source = z.layouts.empty() ? std::string() : z.layouts.front().tensors;
  for (check c : whole.checks) {
    c.note = c.note.empty() ? against : c.note + "; " + against;
    k.cert.checks.push_back(std::move(c));
  }
  // The check the data fails: the config rotates rotary_dim dims, the table covers the head.
  check width;
  width.id = "rotary_dim";
  width.spec_name = "certify";
  width.strategy = k.o.recipe ? "claims " + *k.o.recipe : "dump";
  width.source = source;
  width.dtype = whole.checks.empty() ? std::string() : whole.checks.front().dtype;
  width.bound_name =
      fmt::format("the config's rotary width: {} dims ({} pairs)", s.rotary_dim, s.pairs());
  width.note =
      fmt::format("the table covers {} dims ({} pairs): the whole head", w.rotary_dim, w.pairs());
  width.best = grade::not_certified;
  width.pass = false;
  k.cert.checks.push_back(std::move(width));
  k.mismatches = std::move(kw.mismatches);
  grade_and_claim(k.cert);
  if (!k.o.diagnose) return;
  // Is the table the whole head's rotation? Its grade under the bound the data is held to.
  grade_and_claim(whole);
  const bool hf = s.type != spec::rope_type::ggml;
  whole.certification->held_to = held_bound(k.o, true, hf);
  const double rho = max_rho_without(whole);
  const bool is_rotation = whole.exit_code() == 0;
  const impl::mutant_info& info = impl::find_mutant("partial-rotary-full");
  evidence_map ev;
  evidence& x = ev[info.id];
  x.description = std::string(info.description) + " (the table read as the whole head's rotation)";
  x.add(is_rotation ? rho : std::max(rho, 2 * kExplainRho));
  add_explanations(ev, k.cert);
  std::vector<std::string>& found = z.why->findings;
  found.push_back(fmt::format("rotated over the whole head (rotary_dim {}; the config says {})",
                              w.rotary_dim, s.rotary_dim));
  if (!is_rotation && zw.why) {
    // Not the whole head's rotation either: what its own diagnosis says of the data.
    finish(whole);
    const auto& ww = whole.certification->why;
    if (ww && ww->named) {
      found.push_back(fmt::format("as the whole head's rotation, explained by {}", *ww->named));
    }
    if (ww) {
      for (const std::string& f : ww->findings) {
        found.push_back("as the whole head's rotation: " + f);
      }
    }
  }
}

}  // namespace pev::certify::detail

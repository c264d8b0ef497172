// merge_shards (certify.h): the certificates of `pev certify --shard I/N` combined into the
// certificate of the unsharded run (docs/design.md §9.3).

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "detail.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "replay.h"

namespace pev::certify {

namespace {

/// What two shards of one run agree on; empty when they do, else what differs.
std::string differs(const certificate& a, const certificate& b) {
  const report::certification& x = *a.certification;
  const report::certification& y = *b.certification;
  auto hashes = [](const report::certification& c) {
    std::vector<std::string> v;
    for (const auto& f : c.inputs) v.push_back(f.format + ":" + f.sha256);
    return v;
  };
  if (x.spec != y.spec) return "the spec";
  if (hashes(x) != hashes(y)) return "the inputs' SHA-256";
  if (x.shard->options != y.shard->options) {
    return fmt::format("the options ({} against {})", y.shard->options, x.shard->options);
  }
  if (a.prov.seed != b.prov.seed) return "the seed";
  if (x.shard->count != y.shard->count) return "the shard count";
  if (a.prov.git_revision != b.prov.git_revision || a.prov.pev_version != b.prov.pev_version) {
    return "the pev version";
  }
  if (a.prov.reference != b.prov.reference) return "the reference path";
  if (x.what != y.what || x.positions != y.positions || x.min_position != y.min_position ||
      x.max_position != y.max_position || x.exhaustive != y.exhaustive || x.live != y.live ||
      x.claimed_recipe != y.claimed_recipe || x.held_to != y.held_to ||
      x.library.assumed != y.library.assumed || x.library.max_trig_ulp != y.library.max_trig_ulp) {
    return "what was certified (the data read, its positions or the claim)";
  }
  return "";
}

/// A figures' state read from a file is checked against the data it came with before figures are
/// allocated by its layout: every octave holds one ρ per index, as the first shard's.
void fits_layout(const report::figure_state& t, const report::figure_state& first,
                 const std::string& id) {
  const bool fits = !t.octaves.empty() && t.max_position == first.max_position &&
                    t.indices == first.indices &&
                    std::all_of(t.octaves.begin(), t.octaves.end(), [&](const auto& o) {
                      return o.rho_by_index.size() == static_cast<std::size_t>(first.indices);
                    });
  if (!fits) {
    throw error(fmt::format("merge: the figures' state of check '{}' does not fit its layout", id));
  }
}

/// The group a mismatch was compared in: cos and sin of a table are compared row by row
/// together, every other check on its own.
std::string group_of(const std::string& check) { return check == "sin" ? "cos" : check; }

}  // namespace

certificate merge_shards(std::vector<certificate> shards) {
  if (shards.empty()) throw error("merge: no certificates given");
  for (const certificate& s : shards) {
    if (!s.certification || !s.certification->shard) {
      throw error(
          "merge: a certificate is not a shard's (pev certify --shard I/N writes shards; a "
          "merged or unsharded certificate is complete)");
    }
  }
  // In shard order (sorted by key: sorting the certificates themselves needs their moves).
  std::vector<std::pair<int, std::size_t>> order;
  for (std::size_t k = 0; k < shards.size(); ++k) {
    order.emplace_back(shards[k].certification->shard->index, k);
  }
  std::sort(order.begin(), order.end());
  std::vector<certificate> sorted;
  for (const auto& [i, k] : order) sorted.push_back(std::move(shards[k]));
  shards = std::move(sorted);
  const int count = shards.front().certification->shard->count;
  std::set<int> seen;
  for (const certificate& s : shards) {
    const int i = s.certification->shard->index;
    if (const std::string d = differs(shards.front(), s); !d.empty()) {
      throw error(fmt::format("merge: shard {} and shard {} come from different runs: {} differ",
                              shards.front().certification->shard->index, i, d));
    }
    if (!seen.insert(i).second) throw error(fmt::format("merge: shard {} given twice", i));
  }
  if (static_cast<int>(seen.size()) != count) {
    std::vector<int> missing;
    for (int i = 0; i < count; ++i) {
      if (!seen.count(i)) missing.push_back(i);
    }
    throw error(fmt::format("merge: {} of {} shards given (missing: {})", seen.size(), count,
                            fmt::join(missing, ", ")));
  }

  const certificate& first = shards.front();
  certificate out;
  out.prov = first.prov;
  out.prov.shard_index = 0;
  out.prov.shard_count = 1;
  out.prov.reference_values = 0;
  out.prov.reference_fallbacks = 0;
  out.certification = first.certification;
  report::certification& z = *out.certification;
  z.shard.reset();
  z.seconds = 0;
  z.why.reset();
  z.explain_threshold = kExplainRho;
  for (const certificate& s : shards) {
    out.prov.merged_shards.push_back(s.certification->shard->index);
    out.prov.reference_values += s.prov.reference_values;
    out.prov.reference_fallbacks += s.prov.reference_fallbacks;
    z.seconds += s.certification->seconds;  // the shards' wall times, added
    for (const std::string& n : s.notes) {
      if (std::find(out.notes.begin(), out.notes.end(), n) == out.notes.end()) {
        out.notes.push_back(n);
      }
    }
  }

  // Every check of shard 0 (which runs every check, its row-wise ones on its rows), merged in
  // shard order; a check without figures' state (T5's) is shard 0's alone.
  options o;
  o.recipe = z.claimed_recipe;
  std::set<std::string> ids;
  for (const check& c0 : first.checks) {
    if (!ids.insert(c0.id).second) throw error("merge: shard 0 has two checks '" + c0.id + "'");
    if (!c0.state) {
      out.checks.push_back(c0);
      continue;
    }
    const report::figure_state& st = *c0.state;
    const bool ggml = std::find(st.bounds.begin(), st.bounds.end(), "ggml") != st.bounds.end();
    const bool hf = std::find(st.bounds.begin(), st.bounds.end(), "hf") != st.bounds.end();
    const compare::figures::options fo =
        detail::figure_options(o, st.max_position, st.indices, ggml, nullptr, hf);
    fits_layout(st, st, c0.id);
    compare::figures f(fo, st);
    for (std::size_t k = 1; k < shards.size(); ++k) {
      const auto& cs = shards[k].checks;
      const auto it =
          std::find_if(cs.begin(), cs.end(), [&](const check& c) { return c.id == c0.id; });
      if (it == cs.end()) continue;  // a check of shard 0 only (no rows)
      if (!it->state) {
        throw error(fmt::format("merge: check '{}' of shard {} has no figures' state", c0.id, k));
      }
      fits_layout(*it->state, st, c0.id);
      f.merge(compare::figures(fo, *it->state));
    }
    // The worst value's exact value as its shard reported it (recomputed in MPFR for tables).
    std::optional<double> exact;
    if (f.values() > 0) exact = f.worst().exact;
    check c = detail::make_check(c0.id, c0.source, parse_float_dtype(c0.dtype, true), f, o, exact);
    c.index = c0.index;
    c.spec = c0.spec;
    c.family = c0.family;
    c.note = c0.note;
    c.worst.intermediates = c0.worst.intermediates;
    // The table's replayed rungs (docs/numerics.md §13.7): maxima over the shards' rows, a rung
    // some shard's values cannot follow left out.
    if (c0.replayed) {
      check::recipe_replay r = *c0.replayed;
      for (std::size_t k = 1; k < shards.size(); ++k) {
        const auto& cs = shards[k].checks;
        const auto it =
            std::find_if(cs.begin(), cs.end(), [&](const check& x) { return x.id == c0.id; });
        if (it == cs.end() || !it->replayed) continue;
        detail::merge_replay(r, *it->replayed);
      }
      c.replayed = r;
      detail::settle(c, o);
    }
    out.checks.push_back(std::move(c));
  }
  // A check only a later shard has (a live implementation that failed there): its own.
  for (std::size_t k = 1; k < shards.size(); ++k) {
    for (const check& c : shards[k].checks) {
      if (ids.count(c.id)) continue;
      if (c.state) {
        throw error(fmt::format("merge: shard {} has a check '{}' that shard 0 lacks", k, c.id));
      }
      out.checks.push_back(c);
    }
  }

  detail::library_from_replay(z.library, out.checks);
  detail::grade_and_claim(out);
  if (out.exit_code() == 0) return out;
  // Not certified: the diagnosis of the first failing shard (each failing shard diagnoses the
  // whole dump), the first mismatches in the unsharded run's order — check after check (cos and
  // sin together), each in row order, so shard after shard — and max ρ over the merged checks.
  report::diagnosis& why = z.why.emplace();
  for (const certificate& s : shards) {
    if (s.exit_code() == 1 && s.certification->why) {
      why = *s.certification->why;
      break;
    }
  }
  why.first.clear();
  std::vector<std::string> groups;
  for (const check& c : out.checks) {
    const std::string g = group_of(c.id);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  for (const certificate& s : shards) {  // any other check's, after them (none expected)
    if (!s.certification->why) continue;
    for (const mismatch& m : s.certification->why->first) {
      const std::string g = group_of(m.check);
      if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    }
  }
  for (const std::string& g : groups) {
    for (const certificate& s : shards) {
      if (!s.certification->why) continue;
      for (const mismatch& m : s.certification->why->first) {
        if (group_of(m.check) == g && why.first.size() < detail::kFirstMismatches) {
          why.first.push_back(m);
        }
      }
    }
  }
  why.max_rho_without = detail::max_rho_without(out);
  return out;
}

}  // namespace pev::certify

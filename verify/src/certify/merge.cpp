// merge_shards (certify.h): the certificates of `pev certify --shard I/N` combined into the
// certificate of the unsharded run (docs/design.md §9.3).

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
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

/// A digest as record_rows writes it (16 hex digits), read back.
std::uint64_t digest_value(const std::string& hex, const std::string& what) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
  if (hex.size() != 16 || ec != std::errc() || end != hex.data() + hex.size()) {
    throw error(fmt::format("merge: {}: the digest '{}' is not 16 hex digits", what, hex));
  }
  return v;
}

/// A shard's figures of one check, verified against themselves and the rows the shard says it
/// compared (docs/certify.md §6): the counts add up, the worst value lies in the data's range.
void consistent(const report::figure_state& st, const report::certification& z, int shard,
                const std::string& id) {
  const auto fail = [&](const std::string& what) {
    throw error(fmt::format("merge: shard {}'s figures of check '{}' are inconsistent: {}", shard,
                            id, what));
  };
  if (st.faithful > st.values || st.correctly_rounded > st.faithful) {
    fail(fmt::format("{} correctly rounded, {} faithful of {} values", st.correctly_rounded,
                     st.faithful, st.values));
  }
  if (st.non_finite > st.values)
    fail(fmt::format("{} non-finite of {} values", st.non_finite, st.values));
  std::uint64_t in_octaves = 0;
  for (const auto& o : st.octaves) {
    if (o.hist.count != o.values) {
      fail(fmt::format("an octave holds {} values, its histogram {}", o.values, o.hist.count));
    }
    in_octaves += o.values;
  }
  if (in_octaves != st.values) {
    fail(fmt::format("its octaves hold {} values, its total is {}", in_octaves, st.values));
  }
  std::uint64_t in_ulps = 0;
  for (std::uint64_t n : st.ulp_histogram) in_ulps += n;
  if (in_ulps != st.values) {
    fail(fmt::format("its ulp histogram holds {} values, its total is {}", in_ulps, st.values));
  }
  if (st.values > 0 && (st.worst.position < z.min_position || st.worst.position > z.max_position ||
                        st.max_pos > z.max_position)) {
    fail(fmt::format("its worst value is at position {}, outside the data's positions {} … {}",
                     st.worst.position, z.min_position, z.max_position));
  }
  for (std::uint64_t n : st.vacuous) {
    if (n > st.values) fail(fmt::format("{} vacuous of {} values", n, st.values));
  }
  if (!st.rows) return;
  const auto& r = *st.rows;
  if (r.width < 0 || r.first < 0 || r.end < r.first || r.total < r.end) {
    fail(fmt::format("rows [{}, {}) of {}, {} values each", r.first, r.end, r.total, r.width));
  }
  const auto rows = static_cast<std::uint64_t>(r.end - r.first);
  if (st.values != rows * static_cast<std::uint64_t>(r.width)) {
    fail(fmt::format("{} values from {} rows of {} values", st.values, rows, r.width));
  }
}

/// The group a mismatch was compared in: cos and sin of a table are compared row by row
/// together, every other check on its own.
std::string group_of(const std::string& check) { return check == "sin" ? "cos" : check; }

/// The shards' row-wise checks (docs/certify.md §6): every shard has each of them, its rows are
/// its index's range of the same rows and width, its figures are consistent with them, and the
/// digests of its rows add up, over the shards, to the digest of the dump every shard read. A
/// check without rows is shard 0's alone.
void verify_rows(const std::vector<certificate>& shards) {
  const certificate& first = shards.front();
  const int count = first.certification->shard->count;
  for (const certificate& s : shards) {
    const int i = s.certification->shard->index;
    for (const check& c : s.checks) {
      if (c.state) consistent(*c.state, *s.certification, i, c.id);
    }
  }
  for (const check& c0 : first.checks) {
    if (!c0.state) continue;
    const auto& r0 = c0.state->rows;
    std::uint64_t sum = 0;
    for (const certificate& s : shards) {
      const int i = s.certification->shard->index;
      const auto it = std::find_if(s.checks.begin(), s.checks.end(),
                                   [&](const check& c) { return c.id == c0.id; });
      if (!r0) {
        if (i != 0 && it != s.checks.end() && it->state) {
          throw error(fmt::format(
              "merge: shard {} has check '{}', which only shard 0 runs (it has no rows)", i,
              c0.id));
        }
        continue;
      }
      if (it == s.checks.end() || !it->state || !it->state->rows) {
        throw error(fmt::format(
            "merge: shard {} lacks the rows of check '{}' (every shard compares its own rows of "
            "it): a check left out of a shard certificate",
            i, c0.id));
      }
      const auto& r = *it->state->rows;
      if (r.total != r0->total || r.width != r0->width || r.dump_digest != r0->dump_digest) {
        throw error(fmt::format(
            "merge: shards {} and {} did not read the same data for check '{}' ({} rows of {} "
            "values, digest {}, against {} rows of {}, digest {})",
            first.certification->shard->index, i, c0.id, r0->total, r0->width, r0->dump_digest,
            r.total, r.width, r.dump_digest));
      }
      options o;
      o.shard_index = i;
      o.shard_count = count;
      const auto [b, e] = detail::shard_rows(static_cast<std::size_t>(r.total), o);
      if (r.first != static_cast<std::int64_t>(b) || r.end != static_cast<std::int64_t>(e)) {
        throw error(fmt::format(
            "merge: shard {} of {} compares rows [{}, {}) of {} for check '{}', but says it "
            "compared rows [{}, {}): its index, count or rows were edited",
            i, count, b, e, r.total, c0.id, r.first, r.end));
      }
      sum += digest_value(r.digest, fmt::format("shard {}, check '{}'", i, c0.id));
    }
    if (r0 && sum != digest_value(r0->dump_digest, "check '" + c0.id + "'")) {
      throw error(fmt::format(
          "merge: the rows the shards say they compared for check '{}' are not the dump's rows "
          "(the digests of the shards' rows add up to {:016x}, the dump's is {}): a shard's "
          "figures come from other data",
          c0.id, sum, r0->dump_digest));
    }
  }
}

/// Re-hashes the inputs the shards name (docs/certify.md §6): `given` (merge --impl) must be
/// the dump's files, and every input found (given, or at its recorded path) must have its
/// recorded SHA-256 (pev::error naming it otherwise). True when every input was re-hashed.
bool rehash_inputs(const std::vector<input_file>& inputs,
                   const std::vector<std::filesystem::path>& given) {
  const auto is_dump = [](const input_file& f) {
    return f.format == "npy" || f.format == "npz" || f.format == "safetensors";
  };
  std::multiset<std::string> dump_hashes;
  for (const input_file& f : inputs) {
    if (is_dump(f)) dump_hashes.insert(f.sha256);
  }
  for (const auto& g : given) {
    const std::string h = sha256_file(g);
    const auto it = dump_hashes.find(h);
    if (it == dump_hashes.end()) {
      throw error(fmt::format(
          "merge: --impl {}: its SHA-256 {} is not that of a file the shards read: not the "
          "certified dump",
          g.string(), h));
    }
    dump_hashes.erase(it);
  }
  if (!given.empty() && !dump_hashes.empty()) {
    throw error(fmt::format("merge: --impl gives {} file(s); the shards read {} more (SHA-256 {})",
                            given.size(), dump_hashes.size(), *dump_hashes.begin()));
  }
  bool all = true;
  for (const input_file& f : inputs) {
    if (!given.empty() && is_dump(f)) continue;  // matched above
    const std::optional<std::string> h = sha256_now(f);
    if (!h) {
      all = false;
    } else if (*h != f.sha256) {
      throw error(fmt::format(
          "merge: input {} ({}) has SHA-256 {} now; the shards recorded {}: the file changed "
          "since, or the shards were edited",
          f.path, f.format, *h, f.sha256));
    }
  }
  return all;
}

}  // namespace

certificate merge_shards(std::vector<certificate> shards, const merge_options& mo) {
  if (shards.empty()) throw error("merge: no certificates given");
  if (!mo.sha256.empty() && mo.sha256.size() != shards.size()) {
    throw error("merge: one SHA-256 per shard certificate expected");
  }
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
  std::vector<std::string> sha256;
  for (const auto& [i, k] : order) {
    sorted.push_back(std::move(shards[k]));
    sha256.push_back(mo.sha256.empty() ? std::string() : mo.sha256[k]);
  }
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
  verify_rows(shards);

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
  for (std::size_t k = 0; k < shards.size(); ++k) {
    z.merged_from.push_back({shards[k].certification->shard->index, sha256[k]});
  }
  z.inputs_reverified = mo.rehash && rehash_inputs(z.inputs, mo.inputs);
  // The command `pev verify` re-runs: the unsharded run's (shard 0's without --shard).
  z.command.clear();
  const auto& cmd = first.certification->command;
  for (std::size_t k = 0; k < cmd.size(); ++k) {
    if (cmd[k] == "--shard" && k + 1 < cmd.size()) {
      ++k;
    } else if (cmd[k].rfind("--shard=", 0) != 0) {
      z.command.push_back(cmd[k]);
    }
  }
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
      if (it == cs.end()) continue;  // a check of shard 0 only (no rows: verify_rows)
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

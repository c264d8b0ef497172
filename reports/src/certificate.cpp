// A certificate's own pages (write.h, docs/design.md §6.9): the summary `pev certify` prints,
// summary.md, index.html and the error-against-position plots of the certified data. They show
// what was checked (spec, inputs and their hashes, the layout read, the positions covered), every
// recipe's ρ per check, the grade and the claim, the library measured, the diagnosis, the
// properties with their counterexamples, and the provenance.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/core/hex.h"
#include "pev/report/write.h"

namespace pev::report {

using namespace detail;  // NOLINT(google-build-using-namespace): the shared helpers

namespace {

/// The rungs of the grade ladder, tightest first (docs/design.md §6.5): the order of every recipe
/// table.
constexpr const char* kRecipes[] = {"exact", "drift-free", "hf", "ggml", "vllm-fp16", "vllm-bf16"};

std::string figure(double v) { return std::isfinite(v) ? fmt::format("{:.3g}", v) : "inf"; }

const certification& cert_of(const results& r, const char* who) {
  if (!r.certification) throw error(std::string(who) + ": the results are not a certificate");
  return *r.certification;
}

bool is_property(const check& k) { return !k.property.empty(); }

/// The positions a certificate covers, as a range: "131072 positions, every position 0 … 131071
/// (exhaustive)".
std::string positions_text(const certification& c) {
  if (c.positions == 0) return "no positions";
  const std::string n = fmt::format("{} position{}", c.positions, c.positions == 1 ? "" : "s");
  if (c.exhaustive) {
    return fmt::format("{}, every position 0 … {} (exhaustive)", n, c.max_position);
  }
  if (c.max_position >= c.min_position &&
      c.positions == static_cast<std::uint64_t>(c.max_position - c.min_position) + 1) {
    return fmt::format("{}, every position {} … {}", n, c.min_position, c.max_position);
  }
  return fmt::format("{} from {} to {} (not every position in between)", n, c.min_position,
                     c.max_position);
}

std::string verdict(const certification& c) {
  if (c.shard && c.exit_code() == kExitPartial) {
    return fmt::format("PARTIAL: shard {} of {} holds on its rows (pev merge the {} shards)",
                       c.shard->index, c.shard->count, c.shard->count);
  }
  if (c.shard) {
    return fmt::format("NOT CERTIFIED (shard {} of {} fails on its rows)", c.shard->index,
                       c.shard->count);
  }
  return c.exit_code() == 0 ? "CERTIFIED" : "NOT CERTIFIED";
}

/// A merged certificate's shards and whether merge re-hashed the inputs (docs/certify.md §6).
std::string merged_text(const certification& c) {
  return fmt::format(
      "from {} shard certificates (their SHA-256 in certificate.json); inputs {}",
      c.merged_from.size(),
      c.inputs_reverified.value_or(false)
          ? "re-hashed by the merge: they match"
          : "not found by the merge, so not re-hashed (`pev verify` re-hashes and re-runs)");
}

std::string claim_text(const certification& c) {
  std::string s = !c.claimed_recipe ? "no claim (--recipe): the grade is reported"
                  : c.claim_unchecked.empty()
                      ? fmt::format("recipe {}: {}", *c.claimed_recipe,
                                    c.claim_holds ? "holds" : "does NOT hold")
                      : fmt::format("recipe {}", *c.claimed_recipe);
  if (!c.claim_unchecked.empty()) {
    s += "; a claim NOT CHECKED, so it does not hold: " + c.claim_unchecked;
  }
  return s;
}

std::string held_text(const certification& c) {
  return fmt::format("the {} recipe's bound ({})", c.held_to,
                     c.claimed_recipe ? "the claimed recipe" : "hf: no recipe claimed");
}

/// ρ of the bound a check is held to: the certificate's, else hf (a check without the claimed
/// recipe's pipeline, e.g. inv_freq under a ggml claim), else ggml (the ggml form), marked so.
std::string held_rho(const certification& c, const check& k) {
  if (const auto it = k.ladder_rho.find(c.held_to); it != k.ladder_rho.end()) {
    return figure(it->second);
  }
  for (const char* b : {"hf", "ggml"}) {
    if (const auto it = k.ladder_rho.find(b); it != k.ladder_rho.end()) {
      return figure(it->second) + " (" + b + ")";
    }
  }
  return "-";
}

/// One recipe cell: the ρ that decides the rung (its ladder ρ: against B_k, or the replay's), and
/// whether the check holds on that rung (report::rungs_holding); empty when the check has no such
/// bound.
struct rung_cell {
  bool present = false;
  std::string rho;
  bool holds = false;
  bool vacuous = false;
};
std::vector<rung_cell> rung_cells(const check& k) {
  std::vector<rung_cell> v;
  const std::vector<std::string> names(std::begin(kRecipes), std::end(kRecipes));
  const std::vector<bool> holds = rungs_holding(k, names);
  bool vacuous = false;
  for (std::size_t j = 0; j < names.size(); ++j) {
    rung_cell cell;
    const auto lad = k.ladder_rho.find(names[j]);
    vacuous = vacuous || k.vacuous.count(names[j]) > 0;
    if (k.recipe_rho.count(names[j]) > 0 && lad != k.ladder_rho.end()) {
      cell = {true, figure(lad->second), holds[j], vacuous && !holds[j] && lad->second <= 1};
    }
    v.push_back(cell);
  }
  return v;
}

struct property_counts {
  std::size_t passed = 0, failed = 0, not_applicable = 0;
  std::size_t total() const { return passed + failed + not_applicable; }
};
property_counts count_properties(const results& r) {
  property_counts n;
  for (const check& k : r.checks) {
    if (k.property == "passed") ++n.passed;
    if (k.property == "failed") ++n.failed;
    if (k.property == "not applicable") ++n.not_applicable;
  }
  return n;
}

std::string seed_text(const results& r) {
  if (r.certification->live) {
    return fmt::format("{} (--seed: the sampled positions, the q inputs and the property suites)",
                       r.prov.seed);
  }
  return "none (certifying a dump draws nothing at random)";
}

std::string library_text(const library_figures& lib) {
  if (lib.trig_ulp) {
    return fmt::format(
        "measured trig {:.3g} ulp ({:.3g} absolute; {}) against the {} recipe's angles{}{}; "
        "bounds assume {}",
        *lib.trig_ulp, lib.trig_abs.value_or(0), lib.trig_class, lib.angles,
        lib.pow_ulp ? fmt::format(", pow {:.3g} ulp", *lib.pow_ulp) : "",
        lib.measured_on.empty() ? "" : " on " + lib.measured_on, lib.assumed);
  }
  if (lib.trig_ulp_at_least) {
    return fmt::format(
        "trig at least {:.3g} ulp ({:.3g} absolute) around the hf recipe's replayed angles: {}; "
        "bounds assume {}",
        *lib.trig_ulp_at_least, lib.trig_abs_at_least.value_or(0), lib.trig_class, lib.assumed);
  }
  return fmt::format("bounds assume {}{}", lib.assumed,
                     lib.note.empty() ? "" : "; not measured: " + lib.note);
}

std::string plot_name(const check& k) { return "error_" + slug(k.id) + ".svg"; }

/// The value checks whose figures have a point a log axis can show.
bool plotted(const check& k) {
  return !is_property(k) && any_positive(k.octaves, [](const octave& o) { return o.max_abs; });
}

}  // namespace

// ---- The summary `pev certify` prints ----------------------------------------------------------

std::string certificate_text(const results& r, std::size_t detailed) {
  const certification& c = cert_of(r, "certificate_text");
  const site_selection sel = select_sites(r, detailed);
  std::string s;
  s += fmt::format("spec      {}\n", c.spec);
  for (const auto& f : c.inputs) s += fmt::format("input     {} (sha256 {})\n", f.path, f.sha256);
  if (c.inputs_reverified) s += fmt::format("merged    {}\n", merged_text(c));
  s += fmt::format("data      {}; {}\n", c.what, positions_text(c));
  s += layers_text(c, sel);
  s += fmt::format("{:<18} {:<5} {:>10} {:>9} {:>9} {:>10} {:>8} {:>9}  {}\n", "check", "dtype",
                   "values", "CR %", "faith %", "max abs", "max ulp", "rho " + c.held_to, "grade");
  for (const check& k : r.checks) {
    if (is_property(k) || !sel.shows(k)) continue;
    const std::string grade = k.best ? to_string(*k.best) : "-";
    const double n = k.values ? static_cast<double>(k.values) : 1;
    s += fmt::format("{:<18} {:<5} {:>10} {:>9.5f} {:>9.5f} {:>10} {:>8} {:>9}  {}\n", k.id,
                     k.dtype, k.values, 100.0 * double(k.correctly_rounded) / n,
                     100.0 * double(k.faithful) / n, figure(k.max_abs), figure(k.max_ulp_error),
                     held_rho(c, k), grade);
  }
  if (!sel.all) {
    s += fmt::format("checks    those of the {} sites shown; the other {} in certificate.json\n",
                     sel.count, sel.hidden.size());
  }
  for (const check& k : r.checks) {
    if (!sel.shows(k)) continue;
    if (!k.note.empty() && !is_property(k)) s += fmt::format("note      {}: {}\n", k.id, k.note);
    if (k.non_finite > 0) {
      s += fmt::format(
          "note      {}: {} non-finite value(s) (NaN or Inf) where the exact value "
          "is finite\n",
          k.id, k.non_finite);
    }
  }
  // Every recipe on the ladder, per value check: its own max ρ, and whether the check holds on
  // that rung.
  for (const check& k : r.checks) {
    if (is_property(k) || k.ladder_rho.empty() || !sel.shows(k)) continue;
    std::string line;
    const auto cells = rung_cells(k);
    for (std::size_t j = 0; j < cells.size(); ++j) {
      if (!cells[j].present) continue;
      line += fmt::format(" {} {}{}", kRecipes[j], cells[j].rho,
                          cells[j].vacuous ? " (vacuous)"
                          : cells[j].holds ? " ✓"
                                           : "");
    }
    s += fmt::format("recipes   {}:{}\n", k.id, line);
    for (const auto& [name, v] : k.vacuous) {
      s += fmt::format(
          "note      {}: the {} bound is vacuous (at least the output's range) at {} value(s), "
          "from position {}: nothing is certified there\n",
          k.id, name, v.values, v.first_position);
    }
  }
  // Properties: one line when all is well; each failure with its counterexample and replay.
  if (const property_counts n = count_properties(r); n.total() > 0) {
    std::vector<std::string> na;
    for (const check& k : r.checks) {
      if (k.property == "not applicable") na.push_back(k.id.substr(k.id.find(' ') + 1));
    }
    s += fmt::format("properties {} passed, {} failed, {} not applicable{}{}\n", n.passed, n.failed,
                     n.not_applicable, na.empty() ? "" : ": ", fmt::join(na, ", "));
    for (const check& k : r.checks) {
      if (k.property != "failed") continue;
      std::string note = k.note;
      for (std::size_t at = note.find('\n'); at != std::string::npos;
           at = note.find('\n', at + 1)) {
        note.replace(at, 1, "\n          ");  // the description's lines, indented
      }
      s += fmt::format("property  {} FAILED (after {} passing case(s)): {}\n",
                       k.id.substr(k.id.find(' ') + 1), k.values, note);
      std::istringstream ce(k.counterexample);
      for (std::string line; std::getline(ce, line);) {
        s += fmt::format("          counterexample: {}\n", line);
      }
      if (!k.replay.empty()) s += fmt::format("          replay: {}\n", k.replay);
    }
  }
  const library_figures& lib = c.library;
  s += fmt::format("library   {}\n", library_text(lib));
  if (!lib.outside_class.empty()) {
    s += fmt::format("claim     does NOT hold: {}\n", lib.outside_class);
  }
  if (lib.max_trig_ulp && lib.trig_ulp && *lib.trig_ulp > *lib.max_trig_ulp) {
    s += fmt::format("claim     measured trig {:.3g} ulp > --max-trig-ulp {:.3g}: does NOT hold\n",
                     *lib.trig_ulp, *lib.max_trig_ulp);
  }
  s += fmt::format("grade     {}\n", to_string(c.result));
  if (c.claimed_recipe || !c.claim_unchecked.empty()) {
    s += fmt::format("claim     {}\n", claim_text(c));
  }
  if (c.why) {
    s += fmt::format("diagnosis max rho against the exact value ({} bounds): {}\n", c.held_to,
                     figure(c.why->max_rho_without));
    for (std::size_t k = 0; k < c.why->first.size() && k < 3; ++k) {
      const mismatch& m = c.why->first[k];
      s += fmt::format(
          "          first mismatch: {} at position {}, index {}: got {} ({}), want "
          "{} ({}), bound {:.3g}\n",
          m.check, m.position, m.index, m.got, hex(m.got), m.want, hex(m.want), m.bound);
    }
    if (!c.why->vacuous.empty()) {
      s += fmt::format("          {}\n", c.why->vacuous);
    } else if (c.why->named) {
      const auto& x = c.why->explanations.front();
      s += fmt::format("          explained by: {} — {} (max rho {} against it, {} without)\n",
                       x.mutant, x.description, figure(x.max_rho), figure(c.why->max_rho_without));
      if (!c.why->indistinguishable.empty()) {
        s += fmt::format("          indistinguishable on this data (the same values): {}\n",
                         fmt::join(c.why->indistinguishable, ", "));
      }
    } else if (!c.why->explanations.empty()) {
      const auto& x = c.why->explanations.front();
      s += fmt::format("          no known mistake explains the data (closest: {}, max rho {})\n",
                       x.mutant, figure(x.max_rho));
    }
    for (const auto& f : c.why->findings) s += fmt::format("          the data implies: {}\n", f);
    if (!c.why->replayed_on.empty()) {
      s += fmt::format("          mistakes replayed on {}\n", c.why->replayed_on);
    }
  }
  if (c.live) s += fmt::format("seed      {}\n", r.prov.seed);
  s += fmt::format(
      "result    {} ({:.2f} s, {} reference values from the {} reference, {} MPFR "
      "fallbacks)\n",
      verdict(c), c.seconds, r.prov.reference_values, r.prov.reference, r.prov.reference_fallbacks);
  return s;
}

// ---- summary.md ------------------------------------------------------------------------------

std::string detail::certificate_markdown(const results& r, const site_selection& sel) {
  const certification& c = cert_of(r, "certificate_markdown");
  std::ostringstream os;
  os << "## pev certificate: "
     << (c.exit_code() == 0              ? "✅ "
         : c.exit_code() == kExitPartial ? "⏳ "
                                         : "❌ ")
     << verdict(c) << " — grade " << to_string(c.result) << "\n\n";
  os << "- spec: `" << md_escape(c.spec) << "`\n- data: " << md_escape(c.what)
     << "\n- positions: " << positions_text(c) << "\n- held to: " << held_text(c)
     << "\n- claim: " << md_escape(claim_text(c))
     << "\n- library: " << md_escape(library_text(c.library)) << "\n";
  if (c.inputs_reverified) os << "- merged: " << md_escape(merged_text(c)) << "\n";
  os << "\n";
  os << "| input | format | SHA-256 |\n|---|---|---|\n";
  for (const auto& f : c.inputs) {
    os << "| " << md_escape(f.path) << " | " << md_escape(f.format) << " | `" << f.sha256
       << "` |\n";
  }
  os << "\nρ = |data − exact| / B per recipe bound B; ✓: the check holds on that rung of the "
        "grade ladder (each rung implies the ones after it).\n\n";
  if (!sel.all) {
    os << "The checks of the " << sel.count << " sites shown below (Layers); the other "
       << sel.hidden.size() << " are in certificate.json.\n\n";
  }
  os << "| check | dtype | values | % CR | % faithful | max abs | max ulp |";
  for (const char* name : kRecipes) os << " ρ " << name << " |";
  os << " grade |\n|---|---|---|---|---|---|---|";
  for (std::size_t j = 0; j < std::size(kRecipes); ++j) os << "---|";
  os << "---|\n";
  for (const check& k : r.checks) {
    if (is_property(k) || !sel.shows(k)) continue;
    const double n = k.values ? static_cast<double>(k.values) : 1;
    os << "| " << md_escape(k.id) << " | " << k.dtype << " | " << k.values << " | "
       << fmt::format("{:.4f}", 100.0 * double(k.correctly_rounded) / n) << " | "
       << fmt::format("{:.4f}", 100.0 * double(k.faithful) / n) << " | " << figure(k.max_abs)
       << " | " << figure(k.max_ulp_error) << " |";
    for (const rung_cell& cell : rung_cells(k)) {
      os << " "
         << (!cell.present  ? "-"
             : cell.vacuous ? cell.rho + " (vacuous)"
             : cell.holds   ? cell.rho + " ✓"
                            : cell.rho)
         << " |";
    }
    os << " " << (k.best ? to_string(*k.best) : "-") << " |\n";
  }
  for (const check& k : r.checks) {
    if (!k.note.empty() && !is_property(k) && sel.shows(k)) {
      os << "\n- " << md_escape(k.id + ": " + k.note);
    }
  }
  os << "\n\n**Grade: " << to_string(c.result) << "**";
  if (c.claimed_recipe) os << "; claim " << md_escape(claim_text(c));
  os << ".\n";
  os << layers_markdown(c, sel);
  if (c.why) {
    os << "\n### Diagnosis\n\nmax ρ against the exact value (" << c.held_to
       << " bounds): " << figure(c.why->max_rho_without) << "\n\n";
    if (!c.why->vacuous.empty()) {
      os << md_escape(c.why->vacuous) << ".\n";
    } else if (c.why->named) {
      const auto& x = c.why->explanations.front();
      os << "Explained by **" << md_escape(x.mutant) << "** — " << md_escape(x.description)
         << " (max ρ " << figure(x.max_rho) << " against it).\n";
      if (!c.why->indistinguishable.empty()) {
        os << "Indistinguishable on this data (the same values): "
           << md_escape(fmt::format("{}", fmt::join(c.why->indistinguishable, ", "))) << ".\n";
      }
    } else if (!c.why->explanations.empty()) {
      os << "No known mistake explains the data (closest: "
         << md_escape(c.why->explanations.front().mutant) << ", max ρ "
         << figure(c.why->explanations.front().max_rho) << ").\n";
    }
    for (const auto& f : c.why->findings) os << "- the data implies: " << md_escape(f) << "\n";
    if (!c.why->replayed_on.empty()) {
      os << "\nMistakes replayed on " << md_escape(c.why->replayed_on) << ".\n";
    }
    if (!c.why->first.empty()) {
      os << "\n| first mismatches: check | position | index | got | want | bound |\n"
            "|---|---|---|---|---|---|\n";
      for (const mismatch& m : c.why->first) {
        os << "| " << md_escape(m.check) << " | " << m.position << " | " << m.index << " | `"
           << hex(m.got) << "` | `" << hex(m.want) << "` | " << figure(m.bound) << " |\n";
      }
    }
  }
  if (const property_counts n = count_properties(r); n.total() > 0) {
    os << "\n### Properties: " << n.passed << " passed, " << n.failed << " failed, "
       << n.not_applicable << " not applicable\n\n| property | result | cases | detail |\n"
       << "|---|---|---|---|\n";
    for (const check& k : r.checks) {
      if (!is_property(k)) continue;
      os << "| " << md_escape(k.id) << " | " << k.property << " | " << k.values << " | "
         << md_escape(k.property == "failed" ? k.note + "; counterexample: " + k.counterexample +
                                                   "; replay: " + k.replay
                      : k.property == "not applicable" ? k.note
                                                       : k.source)
         << " |\n";
    }
  }
  const provenance& p = r.prov;
  os << "\npev " << p.pev_version << " (git " << p.git_revision << "), " << p.compiler << ", "
     << p.fp_flags << "; " << reference_text(p) << "; seed " << seed_text(r) << "; "
     << fmt::format("{:.2f}", c.seconds) << " s.\n";
  return os.str();
}

// ---- Plots: error against position, and ρ per pair and octave ---------------------------------

std::map<std::string, std::string> detail::certificate_plot_scripts(const results& r,
                                                                    const std::string& data_dir,
                                                                    const site_selection& sel) {
  const certification& c = cert_of(r, "certificate_plot_scripts");
  std::map<std::string, std::string> out;
  const std::string dd = data_dir.empty() ? "" : data_dir + "/";
  for (const check& k : r.checks) {
    if (!plotted(k) || !sel.shows(k)) continue;
    const std::string f = "'" + dd + drift_csv_name(k) + "'";
    const std::string col = dtype_colour(k.dtype);
    std::ostringstream series;
    series << f << " skip 1 using 1:($2>0?$2:1/0) with linespoints lw 2 pt 7 ps 0.6 lc rgb '" << col
           << "' title 'max |error|'";
    if (any_positive(k.octaves, [](const octave& o) { return o.p99_abs; })) {
      series << ", \\\n     " << f << " skip 1 using 1:($3>0?$3:1/0) with lines lw 1 dt 3 lc rgb '"
             << col << "' title 'p99 |error|'";
    }
    if (any_positive(k.octaves, [](const octave& o) { return o.max_bound; })) {
      const std::string held = k.recipe_rho.count(c.held_to) ? c.held_to : "hf";
      series << ", \\\n     " << f
             << " skip 1 using 1:($4>0?$4:1/0) with lines lw 1.5 dt 2 lc rgb '#000000' title '"
             << held << " bound'";
    }
    if (k.family == "rope" || k.family == "sinusoidal") {
      // docs/numerics.md §15.4: the fp32 angle floor p·2^−24 of values of magnitude ≤ 1.
      series << ", \\\n     x*2**-24 with lines lw 1 dt 4 lc rgb '#7f7f7f' title 'p·2^{-24}'";
    }
    std::ostringstream os;
    os << kTerminal << "set logscale x 2\nset format x '2^{%L}'\nset logscale y 10\n"
       << "set format y '10^{%L}'\n"
       << "set title '" << k.id << " (" << k.dtype
       << "): absolute error vs exact, per position octave'\n"
       << "set xlabel 'position p (tokens; last position of each octave)'\n"
       << "set ylabel 'absolute error |data − exact| (value units)'\n"
       << "plot " << series.str() << "\n";
    out[plot_name(k)] = os.str();
    if (!k.octaves.front().rho_by_index.empty()) {
      out["heatmap_" + slug(k.id) + ".svg"] = heatmap_script(k, dd);
    }
  }
  return out;
}

// ---- index.html --------------------------------------------------------------------------------

namespace {

// A row of a two-column table: a heading and its (already escaped) value.
void html_row(std::ostream& os, const std::string& k, const std::string& v) {
  os << "<tr><th>" << xml_escape(k) << "</th><td>" << v << "</td></tr>\n";
}

// The page's head and style, the verdict box and the contents line.
void html_top(std::ostream& os, const certification& c) {
  const bool ok = c.exit_code() == 0;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>pev "
        "certificate: "
     << verdict(c) << " " << xml_escape(c.spec) << "</title>\n<style>\n"
     << "body{font-family:Helvetica,Arial,sans-serif;margin:2em;max-width:1200px;color:#222}\n"
     << "table{border-collapse:collapse;font-size:13px;margin:0.5em 0}td,th{border:1px solid "
        "#ccc;padding:2px 6px;text-align:left;vertical-align:top}\n"
     << ".verdict{padding:0.8em 1.2em;color:#fff;border-radius:6px}\n"
     << ".verdict p{margin:0.2em 0}.verdict .big{font-size:26px;font-weight:bold}\n"
     << ".certified{background:#1a7f37}.not-certified{background:#cf222e}\n"
     << ".holds{color:#1a7f37;font-weight:bold}.fails{color:#cf222e;font-weight:bold}"
        ".na{color:#6e7781}\n"
     << "figure{display:inline-block;margin:0.5em}code,pre{font-size:12px}"
        "pre{background:#f6f8fa;padding:0.5em;margin:0.2em 0}\n</style>\n</head>\n<body>\n"
     << "<h1>pev certificate</h1>\n";
  os << "<div id=\"verdict\" class=\"verdict " << (ok ? "certified" : "not-certified")
     << "\">\n<p class=\"big\">" << verdict(c) << " — grade " << to_string(c.result) << "</p>\n<p>"
     << xml_escape(claim_text(c)) << "; exit code " << c.exit_code() << "</p>\n</div>\n";
  os << "<p>Contents: <a href=\"#checked\">what was checked</a> · <a href=\"#recipes\">recipes "
        "and grade</a> · <a href=\"#library\">library</a> · <a href=\"#diagnosis\">diagnosis</a> "
        "· <a href=\"#properties\">properties</a> · <a href=\"#plots\">error against position</a>"
        " · <a href=\"#provenance\">provenance</a></p>\n";
}

// What was checked: spec, data, positions, bound, claim, and every input with its SHA-256.
void html_checked(std::ostream& os, const certification& c) {
  os << "<h2 id=\"checked\">What was checked</h2>\n<table>\n";
  html_row(os, "spec", "<code>" + xml_escape(c.spec) + "</code>");
  html_row(os, "data read", xml_escape(c.what));
  html_row(os, "positions", xml_escape(positions_text(c)));
  html_row(os, "held to", xml_escape(held_text(c)));
  html_row(os, "claim", xml_escape(claim_text(c)));
  os << "</table>\n<table>\n<tr><th>input</th><th>format</th><th>SHA-256</th></tr>\n";
  for (const auto& f : c.inputs) {
    os << "<tr><td>" << xml_escape(f.path) << "</td><td>" << xml_escape(f.format)
       << "</td><td><code>" << xml_escape(f.sha256) << "</code></td></tr>\n";
  }
  os << "</table>\n";
}

// A value check's row of the recipes table: its figures, ρ per rung, grade and worst value.
void html_recipe_row(std::ostream& os, const check& k) {
  const double n = k.values ? static_cast<double>(k.values) : 1;
  os << "<tr><td>" << xml_escape(k.id) << "</td><td>" << xml_escape(k.source) << "</td><td>"
     << xml_escape(k.dtype) << "</td><td>" << k.values << "</td><td>"
     << fmt::format("{:.4f}", 100.0 * double(k.correctly_rounded) / n) << "</td><td>"
     << fmt::format("{:.4f}", 100.0 * double(k.faithful) / n) << "</td><td>" << figure(k.max_abs)
     << "</td><td>" << figure(k.max_ulp_error) << "</td>";
  for (const rung_cell& cell : rung_cells(k)) {
    if (!cell.present) {
      os << "<td class=\"na\">-</td>";
    } else if (cell.vacuous) {
      os << "<td class=\"fails\">" << cell.rho << " (vacuous)</td>";
    } else {
      os << "<td" << (cell.holds ? " class=\"holds\"" : "") << ">" << cell.rho
         << (cell.holds ? " ✓" : "") << "</td>";
    }
  }
  const bool good = k.best && *k.best != grade::not_certified;
  os << "<td class=\"" << (good ? "holds" : "fails") << "\">" << (k.best ? to_string(*k.best) : "-")
     << "</td><td><code>p=" << k.worst.position << " " << xml_escape(k.worst.component) << "["
     << k.worst.index << "] " << xml_escape(k.worst.got_hex) << " vs "
     << xml_escape(k.worst.exact_hex) << "</code></td></tr>\n";
}

// The checks' notes, non-finite values and vacuous bounds, then the certificate's notes.
void html_check_notes(std::ostream& os, const results& r, const site_selection& sel) {
  for (const check& k : r.checks) {
    if (!sel.shows(k)) continue;
    if (!k.note.empty() && !is_property(k)) {
      os << "<p>Note, " << xml_escape(k.id) << ": " << xml_escape(k.note) << "</p>\n";
    }
    if (k.non_finite > 0) {
      os << "<p class=\"fails\">" << xml_escape(k.id) << ": " << k.non_finite
         << " non-finite value(s) where the exact value is finite.</p>\n";
    }
    for (const auto& [name, v] : k.vacuous) {
      os << "<p class=\"fails\">" << xml_escape(k.id) << ": the " << xml_escape(name)
         << " bound is vacuous at " << v.values << " value(s) from position " << v.first_position
         << ": nothing is certified there.</p>\n";
    }
  }
  for (const auto& n : r.notes) os << "<p>Note: " << xml_escape(n) << "</p>\n";
}

// Recipes and grade: the ladder's table of the value checks shown, their notes, the grade.
void html_recipes(std::ostream& os, const results& r, const certification& c,
                  const site_selection& sel) {
  os << "<h2 id=\"recipes\">Recipes and grade</h2>\n<p>ρ = |data − exact| / B, B each recipe's "
        "error bound for every value (docs/numerics.md §13.1). ✓: the check holds on that rung of "
        "the ladder (every value within the largest bound of that rung and the tighter ones, none "
        "of them vacuous); a check's grade is the first rung that holds, the certificate's the "
        "worst over its checks. Grades, best first: correctly-rounded, faithful, drift-free, "
        "recipe:hf, recipe:ggml, recipe:vllm, not certified.</p>\n<table>\n<tr><th>check</th>"
        "<th>tensors</th><th>dtype</th><th>values</th><th>% CR</th><th>% faithful</th><th>max "
        "abs</th><th>max ulp</th>";
  for (const char* name : kRecipes) os << "<th>ρ " << name << "</th>";
  os << "<th>grade</th><th>worst value</th></tr>\n";
  for (const check& k : r.checks) {
    if (!is_property(k) && sel.shows(k)) html_recipe_row(os, k);
  }
  os << "</table>\n";
  if (!sel.all) {
    os << "<p>The checks of the " << sel.count << " sites shown in Layers; the other "
       << sel.hidden.size() << " are in certificate.json and data/checks.csv.</p>\n";
  }
  html_check_notes(os, r, sel);
  os << "<p class=\"" << (c.exit_code() == 0 ? "holds" : "fails")
     << "\">Grade: " << to_string(c.result) << "; claim: " << xml_escape(claim_text(c))
     << ".</p>\n";
}

// The library measured: the class the bounds assume, the trig and pow errors, the angles.
void html_library(std::ostream& os, const library_figures& lib) {
  os << "<h2 id=\"library\">Library measured</h2>\n<table>\n";
  html_row(os, "bounds assume", xml_escape(lib.assumed));
  html_row(os, "trig error measured",
           lib.trig_ulp ? fmt::format("{:.3g} ulp ({:.3g} absolute): {}", *lib.trig_ulp,
                                      lib.trig_abs.value_or(0), xml_escape(lib.trig_class))
                        : "not measured" + (lib.note.empty() ? "" : ": " + xml_escape(lib.note)));
  if (lib.pow_ulp) html_row(os, "pow error measured", fmt::format("{:.3g} ulp", *lib.pow_ulp));
  if (!lib.angles.empty()) html_row(os, "angles the data follows", xml_escape(lib.angles));
  if (!lib.measured_on.empty()) html_row(os, "measured on", xml_escape(lib.measured_on));
  if (lib.max_trig_ulp) {
    html_row(os, "--max-trig-ulp",
             fmt::format("{:.3g} ulp{}", *lib.max_trig_ulp,
                         lib.trig_ulp && *lib.trig_ulp > *lib.max_trig_ulp
                             ? ": exceeded, the claim does NOT hold"
                             : ""));
  }
  os << "</table>\n";
}

// The diagnosis' verdict: the mistake named (and those indistinguishable), or the closest.
void html_named(std::ostream& os, const certification& c, const diagnosis& d) {
  os << "<p>max ρ against the exact value (" << xml_escape(c.held_to)
     << " bounds): " << figure(d.max_rho_without) << "</p>\n";
  if (!d.vacuous.empty()) {
    os << "<p class=\"fails\">" << xml_escape(d.vacuous) << ".</p>\n";
  } else if (d.named) {
    const auto& x = d.explanations.front();
    os << "<p class=\"fails\">Explained by <b>" << xml_escape(x.mutant) << "</b> — "
       << xml_escape(x.description) << " (max ρ " << figure(x.max_rho) << " against it, at most "
       << figure(c.explain_threshold) << " to explain).</p>\n";
    if (!d.indistinguishable.empty()) {
      os << "<p>Indistinguishable on this data (they make the same values): "
         << xml_escape(fmt::format("{}", fmt::join(d.indistinguishable, ", "))) << "</p>\n";
    }
  } else if (!d.explanations.empty()) {
    os << "<p>No known mistake explains the data (closest: "
       << xml_escape(d.explanations.front().mutant) << ", max ρ "
       << figure(d.explanations.front().max_rho) << ").</p>\n";
  }
  if (!d.findings.empty()) {
    os << "<ul>\n";
    for (const auto& f : d.findings) os << "<li>the data implies: " << xml_escape(f) << "</li>\n";
    os << "</ul>\n";
  }
  if (!d.replayed_on.empty()) {
    os << "<p>Mistakes replayed on " << xml_escape(d.replayed_on) << ".</p>\n";
  }
}

// The diagnosis' tables: the first mismatches, and the known mistakes tried (the best 12).
void html_tried(std::ostream& os, const certification& c, const diagnosis& d) {
  if (!d.first.empty()) {
    os << "<h3>First mismatches (beyond the " << xml_escape(c.held_to)
       << " bound)</h3>\n<table>\n<tr><th>check</th><th>position</th><th>index</th><th>got"
          "</th><th>want</th><th>bound</th></tr>\n";
    for (const mismatch& m : d.first) {
      os << "<tr><td>" << xml_escape(m.check) << "</td><td>" << m.position << "</td><td>" << m.index
         << "</td><td><code>" << hex(m.got) << "</code> (" << g(m.got) << ")</td><td><code>"
         << hex(m.want) << "</code> (" << g(m.want) << ")</td><td>" << figure(m.bound)
         << "</td></tr>\n";
    }
    os << "</table>\n";
  }
  if (d.explanations.empty()) return;
  os << "<h3>Known mistakes tried (best first)</h3>\n<table>\n<tr><th>mistake</th><th>what"
        "</th><th>max ρ</th><th>RMS ρ</th><th>explains</th></tr>\n";
  for (std::size_t k = 0; k < d.explanations.size() && k < 12; ++k) {
    const explanation& x = d.explanations[k];
    os << "<tr><td>" << xml_escape(x.mutant) << "</td><td>" << xml_escape(x.description)
       << "</td><td>" << figure(x.max_rho) << "</td><td>" << figure(x.rms_rho) << "</td><td>"
       << (x.explains ? "yes" : "no") << "</td></tr>\n";
  }
  os << "</table>\n";
  if (d.explanations.size() > 12) {
    os << "<p>… and " << d.explanations.size() - 12 << " more in certificate.json.</p>\n";
  }
}

void html_diagnosis(std::ostream& os, const certification& c) {
  os << "<h2 id=\"diagnosis\">Diagnosis</h2>\n";
  if (!c.why) {
    os << "<p>"
       << (c.exit_code() == 0 ? "Certified: nothing to diagnose."
                              : "Not searched (--no-diagnosis).")
       << "</p>\n";
    return;
  }
  html_named(os, c, *c.why);
  html_tried(os, c, *c.why);
}

// The property suites: counts, then each property with its counterexample and replay.
void html_properties(std::ostream& os, const results& r) {
  os << "<h2 id=\"properties\">Properties</h2>\n";
  const property_counts n = count_properties(r);
  if (n.total() == 0) {
    os << "<p>None run (a dump, or --no-properties).</p>\n";
    return;
  }
  os << "<p class=\"" << (n.failed ? "fails" : "holds") << "\">" << n.passed << " passed, "
     << n.failed << " failed, " << n.not_applicable
     << " not applicable (not counted as passes).</p>\n<table>\n<tr><th>property</th><th>"
        "result</th><th>cases</th><th>what it checks</th><th>counterexample, replay or "
        "reason</th></tr>\n";
  for (const check& k : r.checks) {
    if (!is_property(k)) continue;
    const char* cls = k.property == "passed" ? "holds" : k.property == "failed" ? "fails" : "na";
    os << "<tr><td>" << xml_escape(k.id) << "</td><td class=\"" << cls << "\">"
       << xml_escape(k.property) << "</td><td>" << k.values << "</td><td>" << xml_escape(k.source)
       << "</td><td>";
    if (k.property == "failed") {
      os << xml_escape(k.note) << "<pre>" << xml_escape(k.counterexample) << "</pre>replay: <code>"
         << xml_escape(k.replay) << "</code>";
    } else if (k.property == "not applicable") {
      os << xml_escape(k.note);
    }
    os << "</td></tr>\n";
  }
  os << "</table>\n";
}

// Error against position: the plots drawn (inline SVG) and those skipped.
void html_plots(std::ostream& os, const results& r, const std::map<std::string, std::string>& svgs,
                const site_selection& sel) {
  os << "<h2 id=\"plots\">Error against position</h2>\n<p>Per check: max and p99 absolute error "
        "per position octave with the bound the data is held to (dashed), and max ρ per pair "
        "and octave"
     << (sel.all ? std::string()
                 : fmt::format(", for the checks of the {} sites shown in Layers", sel.count))
     << ".</p>\n";
  bool any = false;
  for (const auto& [name, svg] : svgs) {
    any = true;
    const auto start = svg.find("<svg");
    os << "<figure id=\"" << xml_escape(name) << "\">\n"
       << (start == std::string::npos ? std::string() : svg.substr(start)) << "\n<figcaption>"
       << xml_escape(name) << "</figcaption></figure>\n";
  }
  for (const auto& sp : r.plots_skipped) {
    any = true;
    os << "<p class=\"fail\">" << xml_escape(skipped_note(sp)) << "</p>\n";
  }
  if (!any) os << "<p>No plots: no value with an error a log axis can show.</p>\n";
}

// Provenance: pev's build, the host, the reference, the seed, the wall time; the page's end.
void html_provenance(std::ostream& os, const results& r, const certification& c) {
  const provenance& p = r.prov;
  os << "<h2 id=\"provenance\">Provenance</h2>\n<table>\n";
  html_row(os, "pev", xml_escape(p.pev_version + " (git " + p.git_revision + ")"));
  html_row(os, "compiler", xml_escape(p.compiler));
  html_row(os, "floating-point flags", xml_escape(p.fp_flags));
  html_row(os, "build flags", xml_escape(p.build_flags));
  html_row(os, "libc", xml_escape(p.libc));
  html_row(os, "host", xml_escape(p.host));
  html_row(os, "cpu", xml_escape(p.cpu));
  html_row(os, "reference", xml_escape(reference_text(p)));
  html_row(os, "seed", xml_escape(seed_text(r)));
  html_row(os, "wall time", fmt::format("{:.2f} s", c.seconds));
  os << "</table>\n</body>\n</html>\n";
}

}  // namespace

std::string detail::certificate_html(const results& r,
                                     const std::map<std::string, std::string>& svgs,
                                     const site_selection& sel) {
  const certification& c = cert_of(r, "certificate_html");
  std::ostringstream os;
  html_top(os, c);
  os << layers_html(c, sel);
  html_checked(os, c);
  html_recipes(os, r, c, sel);
  html_library(os, c.library);
  html_diagnosis(os, c);
  html_properties(os, r);
  html_plots(os, r, svgs, sel);
  html_provenance(os, r, c);
  return os.str();
}

}  // namespace pev::report

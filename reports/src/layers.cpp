// A model trace's sites in a certificate's summaries (docs/certify.md §8.2): one line per site in
// the text, a table in summary.md, and on the page a strip of the layers coloured by grade above
// the table. A trace of many sites shows its worst in detail (select_sites), the rest counted.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
#include <string_view>

#include "detail.h"
#include "pev/report/write.h"

namespace pev::report::detail {

namespace {

// "3", "3.indexer", "embed".
std::string site_label(const layer_result& l) {
  if (l.index < 0) return l.site;
  return l.site.empty() ? std::to_string(l.index) : fmt::format("{}.{}", l.index, l.site);
}

// A NoPE site that holds: its grade is the identity's.
bool identity(const layer_result& l) {
  return l.spec == "none" && l.result != grade::not_certified;
}

std::string grade_label(const layer_result& l) {
  return identity(l) ? "identity (NoPE)" : to_string(l.result);
}

std::string named_text(const layer_result& l) {
  if (!l.named && l.findings.empty()) return "";
  std::string s = l.named.value_or("");
  for (const auto& f : l.findings) s += (s.empty() ? "" : " — ") + f;
  return s;
}

// The strip's colour of a grade: green for the tight grades, lighter for the recipes, grey for
// the identity, red for not certified.
const char* colour(const layer_result& l) {
  if (identity(l)) return "#8c959f";
  switch (l.result) {
    case grade::correctly_rounded:
    case grade::faithful:
      return "#1a7f37";
    case grade::drift_free:
      return "#2da44e";
    case grade::recipe_hf:
    case grade::recipe_ggml:
    case grade::recipe_vllm:
      return "#7bc96f";
    case grade::not_certified:
      return "#cf222e";
  }
  return "#cf222e";
}

// How bad a site is, for the order of select_sites: its grade (worst last in the enum), then its
// max ρ (NaN as the worst).
bool worse(const layer_result& a, const layer_result& b) {
  if (a.result != b.result) return static_cast<int>(a.result) > static_cast<int>(b.result);
  const double x = std::isnan(a.max_rho) ? INFINITY : a.max_rho;
  const double y = std::isnan(b.max_rho) ? INFINITY : b.max_rho;
  return x > y;
}

// A strip box: one site (linked to its row when shown) or a run of sites left out.
void strip_box(std::ostringstream& os, const std::string& label, const std::string& title,
               const char* background, const std::string& link, std::size_t width) {
  os << (link.empty() ? "<span" : "<a href=\"#" + xml_escape(link) + "\"") << " title=\""
     << xml_escape(title) << "\" style=\"display:block;min-width:" << width
     << "px;height:28px;background:" << background
     << ";color:#fff;font-size:9px;text-align:center;text-decoration:none;line-height:28px\">"
     << xml_escape(label) << (link.empty() ? "</span>\n" : "</a>\n");
}

}  // namespace

site_selection select_sites(const results& r, std::size_t detailed) {
  site_selection sel;
  if (!r.certification) return sel;
  const std::vector<layer_result>& ls = r.certification->layers;
  sel.shown.assign(ls.size(), true);
  sel.count = ls.size();
  if (ls.size() <= detailed) return sel;
  // The worst first (the config's order among equals): every failing site comes before any that
  // holds.
  std::vector<std::size_t> order(ls.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return worse(ls[a], ls[b]); });
  const auto failing =
      static_cast<std::size_t>(std::count_if(ls.begin(), ls.end(), [](const layer_result& l) {
        return l.result == grade::not_certified;
      }));
  sel.count = std::max(detailed, std::min(failing, kMaxDetailedSites));
  sel.all = false;
  sel.shown.assign(ls.size(), false);
  for (std::size_t k = 0; k < sel.count; ++k) sel.shown[order[k]] = true;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    if (!sel.shown[i]) sel.hidden.insert(ls[i].checks.begin(), ls[i].checks.end());
  }
  return sel;
}

std::string site_selection::left_out(const certification& c) const {
  if (all) return "";
  std::map<std::string, std::size_t> by;  // grade label → sites left out
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    if (!shown[i]) ++by[grade_label(c.layers[i])];
  }
  std::string grades;
  for (const auto& [label, n] : by)
    grades += fmt::format("{}{} {}", grades.empty() ? "" : ", ", n, label);
  return fmt::format(
      "{} of {} sites shown (the worst, every failing one up to {}); the other {} ({}) and their "
      "{} checks are in certificate.json (model.layers, checks), data/checks.csv and junit.xml",
      count, c.layers.size(), kMaxDetailedSites, hidden_sites(), grades, hidden.size());
}

std::string layers_text(const certification& c, const site_selection& sel) {
  if (c.layers.empty()) return "";
  std::string s = fmt::format("{:<9} {:<6} {:<20} {:<16} {}\n", "layer", "site", "type", "grade",
                              "expected (config)");
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    if (!sel.shown[i]) continue;
    const layer_result& l = c.layers[i];
    s += fmt::format("{:<9} {:<6} {:<20} {:<16} {}\n", site_label(l), l.index < 0 ? "" : l.site,
                     l.type, grade_label(l), l.spec);
    if (const std::string n = named_text(l); !n.empty()) s += fmt::format("{:<9} ↳ {}\n", "", n);
  }
  if (!sel.all) s += fmt::format("{:<9} {}\n", "layers", sel.left_out(c));
  return s;
}

std::string layers_markdown(const certification& c, const site_selection& sel) {
  if (c.layers.empty()) return "";
  std::ostringstream os;
  os << "\n### Layers\n\n";
  if (!sel.all) os << md_escape(sel.left_out(c)) << ".\n\n";
  os << "| layer | type | grade | expected (config) | rule | diagnosis |\n"
        "|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    if (!sel.shown[i]) continue;
    const layer_result& l = c.layers[i];
    os << "| " << md_escape(site_label(l)) << " | " << md_escape(l.type) << " | "
       << md_escape(grade_label(l)) << " | `" << md_escape(l.spec) << "` | " << md_escape(l.rule)
       << " | " << md_escape(named_text(l)) << " |\n";
  }
  return os.str();
}

std::string layers_html(const certification& c, const site_selection& sel) {
  if (c.layers.empty()) return "";
  std::ostringstream os;
  os << "<h2 id=\"layers\">Layers</h2>\n<p>" << xml_escape(c.model.empty() ? "model" : c.model)
     << ": " << c.layers.size()
     << " sites, each held to the encoding its config gives it; the model's grade is the worst "
        "site's.";
  if (!sel.all) {
    os << " " << xml_escape(sel.left_out(c))
       << "; in the strip, a run of sites left out is one box.";
  }
  os << "</p>\n<div class=\"strip\" style=\"display:flex;gap:2px;margin:0.5em 0\">\n";
  for (std::size_t i = 0; i < c.layers.size();) {
    const layer_result& l = c.layers[i];
    if (sel.shown[i]) {
      strip_box(os, site_label(l), fmt::format("{} {}: {}", site_label(l), l.type, grade_label(l)),
                colour(l), "layer-" + site_label(l), 14);
      ++i;
      continue;
    }
    // A run of sites left out with the same colour.
    std::size_t j = i + 1;
    while (j < c.layers.size() && !sel.shown[j] &&
           std::string_view(colour(c.layers[j])) == colour(l)) {
      ++j;
    }
    const std::string label =
        j - i == 1 ? site_label(l) : site_label(l) + "…" + site_label(c.layers[j - 1]);
    strip_box(os, j - i == 1 ? label : "",
              fmt::format("{}: {} ({} sites)", label, grade_label(l), j - i), colour(l), "",
              std::min<std::size_t>(14 + (j - i) / 16, 200));
    i = j;
  }
  os << "</div>\n<table>\n<tr><th>layer</th><th>type</th><th>grade</th><th>max ρ</th><th>expected "
        "(config)</th><th>rule</th><th>read</th><th>diagnosis</th></tr>\n";
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    if (!sel.shown[i]) continue;
    const layer_result& l = c.layers[i];
    os << "<tr id=\"layer-" << xml_escape(site_label(l)) << "\"><td>" << xml_escape(site_label(l))
       << "</td><td>" << xml_escape(l.type) << "</td><td style=\"color:" << colour(l) << "\">"
       << xml_escape(grade_label(l)) << "</td><td>" << g(l.max_rho) << "</td><td><code>"
       << xml_escape(l.spec) << "</code></td><td>" << xml_escape(l.rule) << "</td><td>"
       << xml_escape(l.read) << "</td><td>" << xml_escape(named_text(l)) << "</td></tr>\n";
  }
  os << "</table>\n";
  return os.str();
}

}  // namespace pev::report::detail

// A model trace's sites in a certificate's summaries (docs/certify.md §8.2): one line per site in
// the text, a table in summary.md, and on the page a strip of the layers coloured by grade above
// the table.

#include <fmt/format.h>

#include <sstream>

#include "detail.h"

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

}  // namespace

std::string layers_text(const certification& c) {
  if (c.layers.empty()) return "";
  std::string s = fmt::format("{:<9} {:<6} {:<20} {:<16} {}\n", "layer", "site", "type", "grade",
                              "expected (config)");
  for (const layer_result& l : c.layers) {
    s += fmt::format("{:<9} {:<6} {:<20} {:<16} {}\n", site_label(l), l.index < 0 ? "" : l.site,
                     l.type, grade_label(l), l.spec);
    if (const std::string n = named_text(l); !n.empty()) s += fmt::format("{:<9} ↳ {}\n", "", n);
  }
  return s;
}

std::string layers_markdown(const certification& c) {
  if (c.layers.empty()) return "";
  std::ostringstream os;
  os << "\n### Layers\n\n| layer | type | grade | expected (config) | rule | diagnosis |\n"
        "|---|---|---|---|---|---|\n";
  for (const layer_result& l : c.layers) {
    os << "| " << md_escape(site_label(l)) << " | " << md_escape(l.type) << " | "
       << md_escape(grade_label(l)) << " | `" << md_escape(l.spec) << "` | " << md_escape(l.rule)
       << " | " << md_escape(named_text(l)) << " |\n";
  }
  return os.str();
}

std::string layers_html(const certification& c) {
  if (c.layers.empty()) return "";
  std::ostringstream os;
  os << "<h2 id=\"layers\">Layers</h2>\n<p>" << xml_escape(c.model.empty() ? "model" : c.model)
     << ": " << c.layers.size()
     << " sites, each held to the encoding its config gives it; the model's grade is the worst "
        "site's.</p>\n<div class=\"strip\" style=\"display:flex;gap:2px;margin:0.5em 0\">\n";
  for (const layer_result& l : c.layers) {
    os << "<a href=\"#layer-" << xml_escape(site_label(l)) << "\" title=\""
       << xml_escape(fmt::format("{} {}: {}", site_label(l), l.type, grade_label(l)))
       << "\" style=\"display:block;min-width:14px;height:28px;background:" << colour(l)
       << ";color:#fff;font-size:9px;text-align:center;text-decoration:none;line-height:28px\">"
       << xml_escape(site_label(l)) << "</a>\n";
  }
  os << "</div>\n<table>\n<tr><th>layer</th><th>type</th><th>grade</th><th>max ρ</th><th>expected "
        "(config)</th><th>rule</th><th>read</th><th>diagnosis</th></tr>\n";
  for (const layer_result& l : c.layers) {
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

// The report's page, index.html (write.h): in the order a user asks — the answer (answer.cpp: the
// error up to each context length, and the overview plot), the headline, the plots by spec, the
// checks grouped per spec with their worst cases folded, and last the provenance and the specs,
// long SPECs folded. Nothing is wider than the window: long tokens wrap, plots scale down.

#include <fmt/format.h>

#include <array>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "detail.h"
#include "pev/report/write.h"

namespace pev::report {

using namespace detail;  // NOLINT(google-build-using-namespace): the shared helpers

namespace {

constexpr const char* kCss =
    "body{font-family:Helvetica,Arial,sans-serif;margin:1em 2em;max-width:1200px;color:#222;"
    "overflow-wrap:break-word}.wrap{overflow-wrap:anywhere}\n"
    "h1{font-size:1.6em;margin:0.2em 0}h2{margin:1em 0 0.4em}p{margin:0.4em 0}\n"
    "table{border-collapse:collapse;font-size:13px;max-width:100%}td,th{border:1px solid #ccc;"
    "padding:2px 6px;text-align:left;vertical-align:top}\n"
    ".pass{color:#1a7f37}.fail{color:#cf222e;font-weight:bold}\n"
    "code{font-size:12px;overflow-wrap:anywhere;word-break:break-all}pre{white-space:pre-wrap}\n"
    "svg{max-width:100%;height:auto}.plots{display:flex;flex-wrap:wrap}figure{margin:0.5em;"
    "width:calc(50% - 1em)}figure svg{width:100%}figcaption{font-size:12px;color:#555}\n"
    "figure.overview{display:block;width:auto;max-width:860px;margin:0.5em 0}\n"
    ".lead{font-size:13px;color:#444}.tabs{font-size:13px}\n"
    ".tabs input{position:absolute;opacity:0}.tabs label{display:inline-block;padding:1px 8px;"
    "margin:0 2px 4px 0;border:1px solid #1f77b4;border-radius:3px;cursor:pointer}\n"
    ".answer tbody tr{display:none}.answer td{text-align:right;white-space:nowrap;"
    "font-variant-numeric:tabular-nums}.answer td.other{text-align:left;white-space:normal}\n"
    ".answer td.na{color:#999;text-align:center}.answer th{font-weight:normal}"
    ".answer thead th{text-align:center;font-weight:bold}\n"
    "details summary{cursor:pointer}\n";

/// A SPEC longer than this shows its start, the whole one folded under it (LongRoPE's factors).
constexpr std::size_t kFoldSpec = 200;

/// Whether `name` is one of `spec`'s plots (slug `k`): (a) drift_<k>--<strategy>, (b)
/// heatmap_<k>--<strategy>--<dtype>, (d) invariance_<k>, (e) wavelength_<k>; its link label.
std::string plot_label(const std::string& name, const std::string& k) {
  for (const auto& [prefix, tag] :
       {std::pair<std::string, const char*>{"drift_", "(a) "}, {"heatmap_", "(b) "}}) {
    const std::string head = prefix + k + "--";
    if (name.rfind(head, 0) == 0)
      return tag + name.substr(head.size(), name.size() - head.size() - 4);
  }
  if (name == "invariance_" + k + ".svg") return "(d) invariance";
  if (name == "wavelength_" + k + ".svg") return "(e) wavelengths";
  return "";
}

void figure(std::ostringstream& os, const std::string& name, const std::string& svg) {
  // Inline: the SVG element without its XML prolog and doctype.
  const auto start = svg.find("<svg");
  os << "<figure id=\"" << xml_escape(name) << "\">\n"
     << (start == std::string::npos ? std::string() : svg.substr(start)) << "\n<figcaption>"
     << xml_escape(name) << "</figcaption></figure>\n";
}

void checks_table(std::ostringstream& os, const std::vector<const check*>& checks) {
  os << "<table>\n<tr><th>check</th><th>result</th><th>bound</th><th>max ρ</th><th>max abs "
        "error</th><th>max ulp err</th><th>% CR</th><th>% faithful</th><th>worst case</th></tr>\n";
  for (const check* c : checks) {
    os << "<tr><td class=\"wrap\">" << xml_escape(c->id) << "</td><td class=\""
       << (c->pass ? "pass" : "fail") << "\">" << (c->pass ? "pass" : "FAIL") << "</td><td>"
       << xml_escape(c->bound_name) << "</td><td>" << g(c->max_rho) << "</td><td>" << g(c->max_abs)
       << "</td><td>" << g(c->max_ulp_error) << "</td><td>"
       << fmt::format("{:.2f}", c->pct_correctly_rounded) << "</td><td>"
       << fmt::format("{:.2f}", c->pct_faithful)
       << "</td><td><details><summary>p=" << c->worst.position << " "
       << xml_escape(c->worst.component) << "[" << c->worst.index << "]</summary><code>"
       << xml_escape(c->worst.got_hex) << " vs " << xml_escape(c->worst.exact_hex);
    for (const auto& st : c->worst.intermediates) {
      os << "<br>" << xml_escape(st.name) << ": " << xml_escape(st.got_hex) << " vs "
         << xml_escape(st.exact_hex);
    }
    os << "</code></details></td></tr>\n";
  }
  os << "</table>\n";
}

}  // namespace

std::string index_html(const results& r, const std::map<std::string, std::string>& svgs,
                       std::size_t detailed) {
  if (r.certification) return certificate_html(r, svgs, select_sites(r, detailed));
  std::ostringstream os;
  const provenance& p = r.prov;
  const std::size_t fail = failures(r);
  std::vector<std::string> specs;
  for (const suite_spec& s : r.specs) specs.push_back(s.name);
  for (const check& c : r.checks) specs.push_back(c.spec_name);
  specs = unique_in_order(specs);
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
     << "<meta name=\"viewport\" content=\"width=device-width\">\n"
     << "<title>pev report</title>\n<style>\n"
     << kCss << answer_css(r) << "</style>\n</head>\n<body>\n<h1>pev precision-drift report</h1>\n";
  os << "<p><span class=\"" << (fail ? "fail" : "pass") << "\">" << r.checks.size() << " checks, "
     << fail << " failed.</span> Positions 0 … " << p.max_position << ", seed " << p.seed
     << ". Contents: <a href=\"#answer\">answer</a> · <a href=\"#headline\">headline"
     << "</a> · <a href=\"#plots\">plots by spec</a> · <a href=\"#checks\">checks</a> · "
     << "<a href=\"#provenance\">provenance</a> · <a href=\"#specs\">specs</a></p>\n";
  os << answer_html(r, svgs);
  for (const auto& n : r.notes) os << "<p>Note: " << xml_escape(n) << "</p>\n";
  os << "<h2 id=\"headline\">Headline: drift against the analytic model</h2>\n<ul>\n";
  for (const auto& h : headline(r)) os << "<li>" << xml_escape(h) << "</li>\n";
  os << "</ul>\n";

  // The plots by spec: (a) per strategy, (b) per heatmap, (d), (e) for RoPE; then the ulp
  // histograms (c), one per strategy over every spec, and any plot no spec claims.
  os << "<h2 id=\"plots\">Plots by spec</h2>\n<p class=\"lead\">(a) absolute error against "
        "position, the analytic bound dashed; (b) error/bound heatmaps; (c) ulp histograms; (d) "
        "relative-position invariance drift; (e) effective wavelengths of scaled RoPE.</p>\n";
  std::set<std::string> shown = {"overview.svg"};
  for (const auto& spec : specs) {
    const std::string k = slug(spec);
    std::ostringstream figs;
    for (const auto& [name, svg] : svgs) {
      if (shown.count(name) || plot_label(name, k).empty()) continue;
      shown.insert(name);
      figure(figs, name, svg);
    }
    if (figs.str().empty()) continue;
    os << "<h3 id=\"plots-" << xml_escape(k) << "\">" << xml_escape(spec)
       << "</h3>\n<div class=\"plots\">\n"
       << figs.str() << "</div>\n";
  }
  std::ostringstream rest;
  for (const auto& [name, svg] : svgs) {
    if (!shown.count(name)) figure(rest, name, svg);
  }
  if (!rest.str().empty()) {
    os << "<h3 id=\"plots-all\">Every spec: (c) ulp histograms per strategy</h3>\n<div "
          "class=\"plots\">\n"
       << rest.str() << "</div>\n";
  }
  for (const auto& sp : r.plots_skipped) {
    os << "<p class=\"fail\">" << xml_escape(skipped_note(sp)) << "</p>\n";
  }
  if (svgs.empty() && r.plots_skipped.empty()) os << "<p>No plots in this report.</p>\n";

  os << "<h2 id=\"checks\">Checks</h2>\n<p class=\"lead\">Pass: max ρ ≤ 1, ρ = |computed − exact| "
        "/ B, B the strategy's analytic bound (accurate: 1 ulp of the output type). Abs errors in "
        "the value's units; ulps of the output dtype. The worst case (the value with the largest "
        "ρ) unfolds to its hex values.</p>\n";
  for (const auto& spec : specs) {
    std::vector<const check*> of;
    for (const check& c : r.checks) {
      if (c.spec_name == spec) of.push_back(&c);
    }
    if (of.empty()) continue;
    const auto failed =
        std::count_if(of.begin(), of.end(), [](const check* c) { return !c->pass; });
    os << "<h3 id=\"checks-" << xml_escape(slug(spec)) << "\">" << xml_escape(spec) << ": "
       << of.size() << " checks, <span class=\"" << (failed ? "fail" : "pass") << "\">" << failed
       << " failed</span></h3>\n";
    checks_table(os, of);
  }

  os << "<h2 id=\"provenance\">Provenance</h2>\n<table>\n";
  auto row = [&](const std::string& k, const std::string& v) {
    os << "<tr><th>" << xml_escape(k) << "</th><td>" << xml_escape(v) << "</td></tr>\n";
  };
  row("pev", p.pev_version + " (git " + p.git_revision + ")");
  row("compiler", p.compiler);
  row("floating-point flags", p.fp_flags);
  row("build flags", p.build_flags);
  row("libc", p.libc);
  row("host", p.host);
  row("cpu", p.cpu);
  row("reference", reference_text(p));
  row("positions", sampling_text(p));
  row("seed", std::to_string(p.seed));
  row("suite", p.suite);
  row("shard", std::to_string(p.shard_index) + "/" + std::to_string(p.shard_count));
  row("generated at", p.generated_at);
  os << "</table>\n";

  // The specs checked, each with links to its plots.
  os << "<h2 id=\"specs\">Specs</h2>\n<table>\n<tr><th>name</th><th>family</th><th>SPEC "
        "(canonical)</th><th>from</th><th>plots</th></tr>\n";
  for (const suite_spec& sp : r.specs) {
    os << "<tr><td>" << xml_escape(sp.name) << "</td><td>" << xml_escape(sp.family) << "</td><td>";
    if (sp.spec.size() > kFoldSpec) {
      os << "<details><summary><code>" << xml_escape(sp.spec.substr(0, kFoldSpec / 2))
         << "…</code> (" << sp.spec.size() << " characters)</summary><code>" << xml_escape(sp.spec)
         << "</code></details>";
    } else {
      os << "<code>" << xml_escape(sp.spec) << "</code>";
    }
    os << "</td><td class=\"wrap\">" << xml_escape(sp.source) << "</td><td>";
    const std::string k = slug(sp.name);
    bool any = false;
    for (const auto& [name, svg] : svgs) {
      const std::string label = plot_label(name, k);
      if (label.empty()) continue;
      os << (any ? " · " : "") << "<a href=\"#" << xml_escape(name) << "\">" << xml_escape(label)
         << "</a>";
      any = true;
    }
    if (!any) os << "none";
    os << "</td></tr>\n";
  }
  os << "</table>\n</body>\n</html>\n";
  return os.str();
}

}  // namespace pev::report

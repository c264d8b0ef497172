// Report writers on synthetic results, checked with per-line rules (not byte goldens).

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pev/core/error.h"
#include "pev/io/file.h"
#include "pev/report/json.h"
#include "pev/report/merge.h"
#include "pev/report/write.h"
#include "synthetic.h"

namespace pev {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) v.push_back(line);
  return v;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

/// Unescaped '|' separators of a Markdown table row.
std::size_t cells(const std::string& row) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '|' && (i == 0 || row[i - 1] != '\\')) ++n;
  }
  return n;
}

TEST(ReportMarkdown, OneTableRowPerCheckWithVerdictAndHeadline) {
  const auto r = test::synthetic_results();
  const std::string md = report::summary_markdown(r);
  const auto L = lines_of(md);
  ASSERT_FALSE(L.empty());
  EXPECT_EQ(L[0].rfind("## pev report: 3 checks, 1 failed", 0), 0u) << L[0];
  const auto header =
      std::find_if(L.begin(), L.end(), [](const auto& l) { return l.rfind("| check |", 0) == 0; });
  ASSERT_NE(header, L.end());
  const std::size_t columns = cells(*header);
  EXPECT_EQ(header[1].rfind("|---", 0), 0u);
  std::size_t rows = 0, fails = 0;
  for (auto it = header + 2; it != L.end() && !it->empty(); ++it) {
    EXPECT_EQ(cells(*it), columns) << *it;  // the note's '|' and the spec's are escaped
    EXPECT_TRUE(it->find("✅ pass") != std::string::npos || it->find("❌ FAIL") != std::string::npos);
    fails += it->find("❌ FAIL") != std::string::npos ? 1 : 0;
    ++rows;
  }
  EXPECT_EQ(rows, r.checks.size());
  EXPECT_EQ(fails, 1u);
  EXPECT_NE(md.find("| spec<a>/hf/bf16 | ❌ FAIL | 1.5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("`0x1p-1` vs `0x1p-2`"), std::string::npos);
  EXPECT_NE(md.find("seed 42"), std::string::npos);
  EXPECT_NE(md.find("a note \\| with a pipe"), std::string::npos);
  // Headline: the synthetic hf fp32 error is exactly 2^-24 times the octave's end, i.e. ≈ 1·p·2^-24
  // and ×2 per octave.
  EXPECT_NE(md.find("- spec<a>: hf fp32 max error"), std::string::npos) << md;
  EXPECT_NE(md.find("×2.00 per octave"), std::string::npos) << md;
  EXPECT_LT(md.size(), std::size_t{1} << 20);  // GitHub's job-summary limit
}

TEST(ReportJunit, OneTestCasePerCheckFailuresMarked) {
  const auto r = test::synthetic_results();
  const std::string x = report::junit_xml(r);
  EXPECT_EQ(x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>", 0), 0u);
  EXPECT_EQ(count(x, "<testcase "), r.checks.size());
  EXPECT_EQ(count(x, "<failure "), 1u);
  EXPECT_NE(x.find("tests=\"3\" failures=\"1\""), std::string::npos);
  EXPECT_NE(x.find("classname=\"pev.spec&lt;a&gt;\""), std::string::npos);
  EXPECT_EQ(x.find("spec<a>"), std::string::npos);  // escaped everywhere
  EXPECT_EQ(count(x, "<testsuite "), count(x, "</testsuite>"));
  EXPECT_EQ(count(x, "<testcase "), count(x, "</testcase>"));
}

TEST(ReportJson, RoundTripsIncludingNonFiniteValues) {
  const auto r = test::synthetic_results();
  const std::string j = report::to_json(r);
  EXPECT_NE(j.find("\"schema_version\": 1"), std::string::npos);
  EXPECT_NE(j.find("\"max_rho\": \"inf\""), std::string::npos);
  const auto back = report::from_json(j, "x.json");
  EXPECT_EQ(report::to_json(back), j);
  EXPECT_TRUE(std::isinf(back.checks[2].max_rho));
  EXPECT_TRUE(std::isnan(back.checks[2].worst.got));
  EXPECT_THROW(report::from_json("{", "bad.json"), error);
  EXPECT_THROW(report::from_json("{\"schema_version\": 99}", "v99.json"), error);
  EXPECT_THROW(report::from_json("{\"schema_version\": 1}", "partial.json"), error);
}

TEST(ReportCsv, RectangularFilesForEveryPlot) {
  const auto r = test::synthetic_results();
  const auto files = report::csv_files(r);
  for (const char* name : {"checks.csv", "octaves.csv", "invariance.csv", "ulp_histogram.csv"}) {
    ASSERT_TRUE(files.count(name)) << name;
  }
  for (const auto& [name, text] : files) {
    const auto L = lines_of(text);
    ASSERT_GE(L.size(), 2u) << name;
    std::size_t commas = std::count(L[0].begin(), L[0].end(), ',');
    for (const auto& l : L) {
      if (l.empty()) continue;  // gnuplot block separators (heatmaps)
      EXPECT_EQ(std::size_t(std::count(l.begin(), l.end(), ',')), commas) << name << ": " << l;
    }
  }
  EXPECT_EQ(lines_of(files.at("checks.csv")).size(), 1 + r.checks.size());
  EXPECT_EQ(lines_of(files.at("octaves.csv")).size(), 1 + 3 * 6u);
}

TEST(ReportMerge, OrdersByIndexAndRefusesForeignShards) {
  auto r = test::synthetic_results();
  report::results a = r, b = r;
  a.prov.shard_count = b.prov.shard_count = 2;
  a.prov.shard_index = 0;
  b.prov.shard_index = 1;
  a.checks = {r.checks[0], r.checks[2]};
  b.checks = {r.checks[1]};
  a.invariance.clear();
  b.wavelengths.clear();
  const auto m = report::merge({b, a});
  ASSERT_EQ(m.checks.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(m.checks[k].id, r.checks[k].id);
  EXPECT_EQ(m.notes, r.notes);  // not repeated
  EXPECT_EQ(m.prov.shard_count, 1);
  b.prov.seed = 43;
  EXPECT_THROW(report::merge({a, b}), error);
  EXPECT_THROW(report::merge({}), error);
}

TEST(ReportWrite, AnswerIsTheLargestErrorBelowEachContextLength) {
  // spec<a>/hf/fp32 swept to 32767: octave [lo, hi) has max abs 2^-24·hi, and the last one breaks
  // its bound. Its row: 2^-12 below 4K, 2^-9 below 32K (red: ρ 1.5), not swept to 128K or 1M.
  auto r = test::synthetic_results();
  r.prov.max_position = 32767;  // the columns: 4K and 32K
  auto& c = r.checks[0];
  while (c.octaves.back().hi < 32768) {
    report::octave o = c.octaves.back();
    o.lo = o.hi;
    o.hi *= 2;
    o.max_abs = 0x1p-24 * static_cast<double>(o.hi);
    o.max_rho = o.hi == 32768 ? 1.5 : 0.5;
    c.octaves.push_back(o);
  }
  const std::string html = report::index_html(r, {});
  EXPECT_NE(html.find("<tr class=\"st-hf\"><th class=\"wrap\">spec&lt;a&gt;</th><td title=\""
                      "spec&lt;a&gt;/hf/fp32 over positions below 4096: max ρ 0.5\">0.000244</td>"
                      "<td class=\"fail\" title=\"spec&lt;a&gt;/hf/fp32 over positions below "
                      "32768: max ρ 1.5\">0.00195</td><td class=\"na\""),
            std::string::npos)
      << html;
  // The overview plots it against context length, the worst RoPE spec per strategy × dtype.
  const std::string gp = report::plot_scripts(r, "data").at("overview.svg");
  EXPECT_NE(gp.find("4096,0.000244140625\n"), std::string::npos) << gp;
  EXPECT_NE(gp.find("title 'hf fp32'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("the worst of 1 RoPE spec'"), std::string::npos) << gp;
}

TEST(ReportWrite, EveryFileWrittenAndPlotsRendered) {
  const auto r = test::synthetic_results();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("pev_test_report_write_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  report::write_report(r, dir, {PEV_GNUPLOT});
  for (const char* f :
       {"report.json", "summary.md", "junit.xml", "index.html", "data/checks.csv"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(dir / f)) << f;
  }
  std::size_t svgs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "plots")) {
    if (e.path().extension() != ".svg") continue;
    ++svgs;
    const std::string svg = io::read_file(e.path());
    EXPECT_NE(svg.find("<svg"), std::string::npos) << e.path();
    EXPECT_NE(svg.find("<path"), std::string::npos) << e.path();  // drawn data
  }
  // a: one per spec × strategy except t5; b: heatmap of the fp32 hf check; c: per strategy;
  // d, e: one each; the overview.
  EXPECT_EQ(svgs, 1u + 1u + 2u + 1u + 1u + 1u);
  // One gnuplot renders them all (plots/render.gp); each SVG is what its own script gives alone.
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "plots" / "render.gp"));
  for (const auto& e : std::filesystem::directory_iterator(dir / "plots")) {
    if (e.path().extension() != ".svg") continue;
    const std::string gp = "plots/" + e.path().stem().string() + ".gp";
    FILE* f =
        popen(("cd '" + dir.string() + "' && " PEV_GNUPLOT " " + gp + " 2>/dev/null").c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::string alone;
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) alone.append(buf, n);
    EXPECT_EQ(pclose(f), 0) << gp;
    EXPECT_TRUE(alone == io::read_file(e.path())) << gp;
  }
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  const std::string html = io::read_file(dir / "index.html");
  EXPECT_EQ(count(html, "<svg"), svgs);  // inline
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_NE(html.find("angle: 0x1p+0 vs 0x1.8p+0"), std::string::npos);  // worst-case steps
  // The specs, escaped, each with links to its plots (t5 has none).
  EXPECT_NE(html.find("<td>spec&lt;a&gt;</td><td>rope</td><td><code>rope:head_dim=8</code></td>"
                      "<td class=\"wrap\">--config a&lt;b&gt;/config.json</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<a href=\"#drift_spec_a_--hf.svg\">(a) hf</a>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"#invariance_spec_a_.svg\">(d) invariance</a>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"wrap\">built-in suite</td><td>none</td>"), std::string::npos);
  // The answer first: per spec and strategy, the error up to each context length (the synthetic
  // sweep ends at 63: not swept to 4K), then the overview plot; the checks after it.
  EXPECT_NE(html.find("<table id=\"answer-table\""), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"st-hf\"><th class=\"wrap\">spec&lt;a&gt;</th><td class=\"na\""),
            std::string::npos);
  // Its sweep ends at 64, short of 4K: one column, "≤ 64", whose octaves end at 64 (not swept).
  EXPECT_NE(html.find("<td class=\"other\" colspan=\"2\">int64: ≤ 64 —</td>"), std::string::npos);
  EXPECT_LT(html.find("id=\"answer-table\""), html.find("id=\"overview\""));
  EXPECT_LT(html.find("id=\"overview\""), html.find("id=\"checks\""));
  EXPECT_LT(html.find("id=\"checks\""), html.find("id=\"provenance\""));
  EXPECT_NE(io::read_file(dir / "summary.md").find("| spec<a> | rope | `rope:head_dim=8` |"),
            std::string::npos);
  EXPECT_EQ(report::from_json(io::read_file(dir / "report.json"), "report.json").checks.size(),
            r.checks.size());
  std::filesystem::remove_all(dir);
}

// A certificate's own pages (not the report's template): what was checked, positions as a range,
// every recipe's ρ, the grade and claim, the diagnosis, properties with counterexamples (not
// applicable ones not counted as passes), plots of the data, the real seed.
TEST(ReportCertificate, PagesOfItsOwn) {
  const auto r = test::synthetic_certificate();
  const auto dir = std::filesystem::temp_directory_path() / "pev_test_certificate_write";
  std::filesystem::remove_all(dir);
  report::write_report(r, dir, {PEV_GNUPLOT});
  for (const char* f : {"certificate.json", "summary.md", "junit.xml", "index.html",
                        "plots/error_cos.svg", "plots/heatmap_cos.svg"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(dir / f)) << f;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "report.json"));
  const std::string md = io::read_file(dir / "summary.md");
  const std::string html = io::read_file(dir / "index.html");
  const std::string text = report::certificate_text(r);
  for (const std::string* page : {&md, &html, &text}) {
    EXPECT_NE(page->find("every position 0 … 131071 (exhaustive)"), std::string::npos) << *page;
    EXPECT_EQ(page->find("< 131071"), std::string::npos) << *page;
    EXPECT_EQ(page->find("precision-drift report"), std::string::npos) << *page;
    EXPECT_NE(page->find("20261122"), std::string::npos) << *page;  // the real seed
    EXPECT_NE(page->find("NOT CERTIFIED"), std::string::npos) << *page;
    EXPECT_NE(page->find("theta-wrong"), std::string::npos) << *page;
    EXPECT_NE(page->find("theta-other"), std::string::npos) << *page;  // indistinguishable
    EXPECT_NE(page->find("the frequencies imply 10000"), std::string::npos) << *page;
    EXPECT_NE(page->find("1 passed, 1 failed, 1 not applicable"), std::string::npos) << *page;
    EXPECT_NE(page->find("rope:head_dim=2,rope_theta=100"), std::string::npos) << *page;
    EXPECT_NE(page->find("--seed 20261122 --property-cases 100"), std::string::npos) << *page;
  }
  // The inputs with their hashes; the recipe table: a column per recipe, a row per value check,
  // ✓ on the rungs that hold (vllm's two), none on hf's.
  EXPECT_NE(md.find("| dump/table.npy | npy | `" + std::string(64, 'a') + "` |"), std::string::npos)
      << md;
  const auto md_lines = lines_of(md);
  const auto row = std::find_if(md_lines.begin(), md_lines.end(),
                                [](const std::string& l) { return l.starts_with("| cos |"); });
  ASSERT_NE(row, md_lines.end()) << md;
  EXPECT_EQ(cells(*row), 15u) << *row;
  EXPECT_EQ(count(*row, "✓"), 2u) << *row;
  EXPECT_NE(row->find("| 3.5 |"), std::string::npos) << *row;  // ρ hf, not holding
  EXPECT_NE(html.find("<title>pev certificate: NOT CERTIFIED"), std::string::npos);
  EXPECT_NE(html.find(std::string(64, 'a')), std::string::npos);
  EXPECT_NE(html.find("not applicable (not counted as passes)"), std::string::npos);
  EXPECT_NE(html.find("recipe:vllm"), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), 2u);  // the plots inline
  // stdout: ρ of the bound the data is held to, and the diagnosis says which.
  EXPECT_NE(text.find(" rho hf "), std::string::npos) << text;
  EXPECT_NE(text.find("(hf bounds)"), std::string::npos) << text;
  auto ggml = r;
  ggml.certification->claimed_recipe = "ggml";
  ggml.certification->held_to = "ggml";
  const std::string gtext = report::certificate_text(ggml);
  EXPECT_NE(gtext.find("rho ggml"), std::string::npos) << gtext;
  EXPECT_NE(gtext.find("(ggml bounds)"), std::string::npos) << gtext;
  EXPECT_EQ(gtext.find("hf bounds"), std::string::npos) << gtext;
  // JUnit: a property that does not apply is skipped, a failed one carries its replay.
  const std::string junit = io::read_file(dir / "junit.xml");
  EXPECT_NE(junit.find("skipped=\"1\""), std::string::npos) << junit;
  EXPECT_EQ(count(junit, "<skipped "), 1u) << junit;
  EXPECT_EQ(count(junit, "<failure "), 1u) << junit;
  EXPECT_NE(junit.find("replay: pev certify"), std::string::npos) << junit;
  // certificate.json: the bound held to, live, the failed property's counterexample and replay.
  const auto j = nlohmann::json::parse(io::read_file(dir / "certificate.json"));
  EXPECT_EQ(j["held_to"], "hf");
  EXPECT_EQ(j["live"], true);
  EXPECT_EQ(j["checks"][2]["replay"], r.checks[2].replay);
  EXPECT_EQ(j["checks"][2]["counterexample"], r.checks[2].counterexample);
  EXPECT_FALSE(j["checks"][1].contains("replay"));
  std::filesystem::remove_all(dir);
}

TEST(ReportWrite, APlotGnuplotCannotDrawIsSkippedWithANote) {
  // A missing gnuplot: every plot skipped, named with the reason in report.json and on the page;
  // the report itself written whole.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("pev_test_report_nognuplot_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const auto skipped =
      report::write_report(test::synthetic_results(), dir, {"/nonexistent/gnuplot"});
  ASSERT_FALSE(skipped.empty());
  EXPECT_EQ(skipped.front().file.rfind("plots/", 0), 0u);
  EXPECT_NE(skipped.front().reason.find("gnuplot failed on plots/"), std::string::npos);
  EXPECT_NE(skipped.front().reason.find("exit status 127"), std::string::npos);
  const auto back = report::from_json(io::read_file(dir / "report.json"), "report.json");
  EXPECT_EQ(back.plots_skipped, skipped);
  const std::string html = io::read_file(dir / "index.html");
  EXPECT_NE(html.find("plot " + skipped.front().file + " not drawn: gnuplot failed"),
            std::string::npos);
  EXPECT_EQ(html.find("No plots in this report"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / skipped.front().file));
  std::filesystem::remove_all(dir);
}

// A model trace's certificate (docs/certify.md §8.2): a row per site in the text and summary.md,
// on the page a strip of the layers coloured by grade (the identity grey, not certified red) with
// a link to each row; the rows survive certificate.json.
TEST(ReportCertificate, ModelLayersAtAGlance) {
  auto r = test::synthetic_certificate();
  auto& z = *r.certification;
  z.model = "gemma3_text";
  const auto site = [](std::int64_t i, const char* type, const char* spec, report::grade g) {
    report::layer_result l;
    l.index = i;
    l.type = type;
    l.spec = spec;
    l.rule = "layer_types[" + std::to_string(i) + "]";
    l.result = g;
    return l;
  };
  z.layers = {site(0, "sliding_attention", "rope:head_dim=128", report::grade::recipe_hf),
              site(1, "full_attention", "none", report::grade::correctly_rounded),
              site(2, "sliding_attention", "rope:head_dim=128", report::grade::not_certified)};
  z.layers[2].named = "rope-of-other-layer-type";
  z.layers[2].findings = {"rotated with the RoPE of the full_attention layers"};
  const std::string html = report::index_html(r, {});
  EXPECT_NE(html.find("<h2 id=\"layers\">"), std::string::npos);
  EXPECT_NE(html.find("href=\"#layer-2\""), std::string::npos);
  EXPECT_NE(html.find("<tr id=\"layer-2\">"), std::string::npos);
  EXPECT_NE(html.find("background:#cf222e"), std::string::npos);  // layer 2, not certified
  EXPECT_NE(html.find("background:#8c959f"), std::string::npos);  // layer 1, the identity
  const std::string text = report::certificate_text(r);
  EXPECT_NE(text.find("identity (NoPE)"), std::string::npos) << text;
  EXPECT_NE(text.find("↳ rope-of-other-layer-type — rotated with"), std::string::npos) << text;
  const std::string md = report::summary_markdown(r);
  EXPECT_NE(md.find("### Layers"), std::string::npos) << md;
  const auto back = report::from_json(report::to_json(r), "test");
  EXPECT_EQ(back.certification->layers, z.layers);
  EXPECT_EQ(back.certification->model, "gemma3_text");
  // One dump: no layers section.
  EXPECT_EQ(report::index_html(test::synthetic_certificate(), {}).find("id=\"layers\""),
            std::string::npos);
}

}  // namespace
}  // namespace pev

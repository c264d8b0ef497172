// Report writers on synthetic results, checked with per-line rules (not byte goldens).

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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
  // d, e: one each.
  EXPECT_EQ(svgs, 1u + 1u + 2u + 1u + 1u);
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
  EXPECT_EQ(report::from_json(io::read_file(dir / "report.json"), "report.json").checks.size(),
            r.checks.size());
  std::filesystem::remove_all(dir);
}

TEST(ReportWrite, GnuplotFailureIsAnError) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("pev_test_report_nognuplot_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  EXPECT_THROW(report::write_report(test::synthetic_results(), dir, {"/nonexistent/gnuplot"}),
               error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pev

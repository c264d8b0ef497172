// A model trace's certificate of many sites (docs/certify.md §8.2): the pages, plots and plot
// CSVs show the worst sites in detail — the count asked for, every failing site beyond it up to
// report::kMaxDetailedSites — and say how many they leave out; certificate.json keeps every site's
// row and check.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "pev/io/file.h"
#include "pev/report/json.h"
#include "pev/report/write.h"
#include "synthetic.h"

namespace pev {
namespace {

// A certificate of `sites` one-check layers; the layers in `failing` not certified, the others
// correctly rounded with max ρ rising with the index (the last the worst of them).
report::results many_sites(int sites, const std::set<int>& failing) {
  report::results r = test::synthetic_certificate();
  r.checks.clear();
  report::certification& z = *r.certification;
  z.why.reset();
  z.model = "llama";
  z.layers.clear();
  for (int i = 0; i < sites; ++i) {
    const bool fails = failing.count(i) > 0;
    report::check k = test::synthetic_check(i, "certify", "data", "fp32", 0x1p-24, !fails);
    k.id = "layers." + std::to_string(i) + "/q_out";
    k.best = fails ? report::grade::not_certified : report::grade::correctly_rounded;
    r.checks.push_back(k);
    report::layer_result l;
    l.index = i;
    l.type = "full_attention";
    l.spec = "rope:head_dim=8";
    l.rule = "rope_theta";
    l.checks = {k.id};
    l.result = k.best.value();
    l.max_rho = fails ? 1e3 + i : 1e-3 * (i + 1);
    z.layers.push_back(l);
  }
  z.result = failing.empty() ? report::grade::correctly_rounded : report::grade::not_certified;
  return r;
}

std::size_t count_with_prefix(const std::map<std::string, std::string>& files,
                              const std::string& prefix) {
  std::size_t n = 0;
  for (const auto& [name, text] : files) {
    (void)text;
    n += name.rfind(prefix, 0) == 0 ? 1 : 0;
  }
  return n;
}

std::size_t occurrences(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportManySites, WorstSitesInDetailEveryRowInTheJson) {
  const report::results r = many_sites(200, {17, 100, 150});
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("pev_test_many_sites_" + std::to_string(getpid())))
          .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  report::write_options o;
  o.gnuplot = "";  // no plots drawn; their scripts are counted below
  o.detailed = 8;
  report::write_report_files(r, dir, o);

  // The plot CSVs and scripts of 8 sites: the 3 failing ones and the 5 worst of the others.
  std::size_t drift = 0;
  std::set<std::string> plotted;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/data")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("drift_", 0) == 0) {
      ++drift;
      plotted.insert(name);
    }
  }
  EXPECT_EQ(drift, 8u);
  for (const char* s : {"17", "100", "150", "199", "198", "197", "196", "195"}) {
    EXPECT_TRUE(plotted.count(std::string("drift_layers_") + s + "--q_out.csv")) << s;
  }
  const auto scripts = report::plot_scripts(r, "data", 8);
  EXPECT_EQ(count_with_prefix(scripts, "error_"), 8u);
  // The default count (32) and every site of a smaller trace.
  EXPECT_EQ(count_with_prefix(report::plot_scripts(r, "data"), "error_"), report::kDetailedSites);
  EXPECT_EQ(count_with_prefix(report::plot_scripts(many_sites(20, {}), "data"), "error_"), 20u);

  // Every site's row and check in the JSON and checks.csv.
  const report::results back =
      report::from_json(io::read_file(dir + "/certificate.json"), "certificate.json");
  ASSERT_TRUE(back.certification);
  EXPECT_EQ(back.certification->layers.size(), 200u);
  EXPECT_EQ(back.checks.size(), 200u);
  EXPECT_EQ(occurrences(io::read_file(dir + "/data/checks.csv"), "/q_out,"), 200u);

  // The pages: 8 rows and checks, and what they leave out.
  const std::string html = io::read_file(dir + "/index.html");
  EXPECT_EQ(occurrences(html, "<tr id=\"layer-"), 8u);
  EXPECT_NE(html.find("<tr id=\"layer-17\">"), std::string::npos);
  EXPECT_NE(html.find("8 of 200 sites shown"), std::string::npos);
  EXPECT_NE(html.find("the other 192 (192 correctly-rounded)"), std::string::npos);
  const std::string md = io::read_file(dir + "/summary.md");
  EXPECT_EQ(occurrences(md, "/q_out | fp32"), 8u);
  EXPECT_NE(md.find("8 of 200 sites shown"), std::string::npos);
  const std::string text = report::certificate_text(r, 8);
  EXPECT_EQ(occurrences(text, "\nlayers."), 8u);  // the check rows
  EXPECT_NE(text.find("the other 192"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ReportManySites, EveryFailingSiteUpToTheCap) {
  std::set<int> failing;
  for (int i = 0; i < 40; ++i) failing.insert(3 * i);
  const report::results r = many_sites(200, failing);
  EXPECT_EQ(count_with_prefix(report::plot_scripts(r, "data", 8), "error_"), 40u);
  EXPECT_EQ(occurrences(report::index_html(r, {}, 8), "<tr id=\"layer-"), 40u);

  std::set<int> all;
  for (int i = 0; i < 300; ++i) all.insert(i);
  const report::results worse = many_sites(300, all);
  EXPECT_EQ(count_with_prefix(report::csv_files(worse, 8), "drift_"), report::kMaxDetailedSites);
  EXPECT_NE(report::summary_markdown(worse, 8).find("256 of 300 sites shown"), std::string::npos);
}

TEST(ReportManySites, ATraceWithinTheCountShowsEverySite) {
  const report::results r = many_sites(8, {3});
  EXPECT_EQ(occurrences(report::index_html(r, {}, 8), "<tr id=\"layer-"), 8u);
  EXPECT_EQ(report::index_html(r, {}, 8).find("sites shown"), std::string::npos);
  EXPECT_EQ(report::certificate_text(r, 8).find("sites shown"), std::string::npos);
}

}  // namespace
}  // namespace pev

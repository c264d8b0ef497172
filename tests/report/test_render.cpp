// index.html rendered by headless Chromium: no console errors, and every plot is in the DOM with
// drawn data. Skipped (with a message) when no chromium binary is installed; scripts/
// install-deps.sh installs it.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "pev/io/file.h"
#include "pev/report/write.h"
#include "synthetic.h"

namespace pev {
namespace {

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

struct captured {
  int status = -1;
  std::string out;
};

captured run_shell(const std::string& cmd) {
  captured c;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return c;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) c.out.append(buf, n);
  c.status = pclose(f);
  return c;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(ReportRender, HeadlessChromiumShowsEveryPlotWithoutConsoleErrors) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh adds it)";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("pev_test_report_render_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  report::write_report(test::synthetic_results(), dir, {PEV_GNUPLOT});
  std::size_t svgs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "plots")) {
    svgs += e.path().extension() == ".svg" ? 1 : 0;
  }
  ASSERT_GT(svgs, 0u);
  const auto profile = dir / "profile";
  const auto log = dir / "chromium.log";
  const std::string cmd =
      "timeout 120 " + chromium +
      " --headless --no-sandbox --disable-gpu --disable-background-networking"
      " --disable-component-update --disable-sync --no-first-run --enable-logging=stderr --v=0"
      " --user-data-dir='" +
      profile.string() + "' --dump-dom 'file://" + (dir / "index.html").string() + "' 2>'" +
      log.string() + "'";
  const captured dom = run_shell(cmd);
  const std::string err = io::read_file(log);
  ASSERT_EQ(dom.status, 0) << err;
  // Chromium reports page console messages as "CONSOLE(line)" log lines.
  EXPECT_EQ(err.find("CONSOLE"), std::string::npos) << err;
  EXPECT_EQ(err.find("Uncaught"), std::string::npos) << err;
  // Every plot is in the rendered DOM, each with drawn paths holding points.
  EXPECT_EQ(count(dom.out, "<svg"), svgs) << dom.out.substr(0, 2000);
  std::size_t from = 0;
  for (std::size_t k = 0; k < svgs; ++k) {
    const auto start = dom.out.find("<svg", from);
    const auto end = dom.out.find("</svg>", start);
    ASSERT_NE(end, std::string::npos);
    const std::string svg = dom.out.substr(start, end - start);
    EXPECT_NE(svg.find("<path"), std::string::npos) << "plot " << k;
    EXPECT_NE(svg.find(" d=\"M"), std::string::npos) << "plot " << k;
    EXPECT_NE(svg.find("width=\""), std::string::npos) << "plot " << k;
    from = end;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pev

// The invalid-input corpus: tests/spec/invalid_specs.tsv, one case per line,
//   KIND<TAB>INPUT<TAB>EXPECTED_SUBSTRING
// KIND `spec`: INPUT is a SPEC string; KIND `config`: INPUT is a file under
// tests/spec/invalid_configs/. Each input must throw pev::error whose message contains
// EXPECTED_SUBSTRING (which names the key). The CLI end-to-end tests read the same file (exit code
// 2, message on stderr).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "pev/spec/config.h"
#include "pev/spec/parse.h"

namespace {

const std::filesystem::path kDir = std::filesystem::path(PEV_SOURCE_DIR) / "tests/spec";

struct invalid_case {
  std::string kind, input, expected;
  int line = 0;
};

std::vector<invalid_case> read_corpus() {
  std::ifstream in(kDir / "invalid_specs.tsv");
  EXPECT_TRUE(in) << "cannot open invalid_specs.tsv";
  std::vector<invalid_case> cases;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto tab1 = line.find('\t');
    const auto tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string::npos || line.find('\t', tab2 + 1) != std::string::npos) {
      ADD_FAILURE() << "invalid_specs.tsv:" << number << ": expected three tab-separated fields";
      continue;
    }
    cases.push_back({line.substr(0, tab1), line.substr(tab1 + 1, tab2 - tab1 - 1),
                     line.substr(tab2 + 1), number});
  }
  return cases;
}

TEST(SpecInvalidCorpus, EveryCaseThrowsNamingTheKey) {
  const auto cases = read_corpus();
  int specs = 0, configs = 0;
  for (const auto& c : cases) {
    const std::string where = "invalid_specs.tsv:" + std::to_string(c.line) + ": " + c.input;
    std::vector<std::string> warnings;
    const pev::warning_sink sink = [&](std::string_view m) { warnings.emplace_back(m); };
    try {
      if (c.kind == "spec") {
        ++specs;
        pev::spec::parse_spec(c.input, sink);
      } else if (c.kind == "config") {
        ++configs;
        pev::spec::parse_config_file(kDir / "invalid_configs" / c.input, {}, sink);
      } else {
        ADD_FAILURE() << where << ": unknown KIND '" << c.kind << "'";
        continue;
      }
      ADD_FAILURE() << where << ": no error";
    } catch (const pev::error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos)
          << where << "\n  message:  " << e.what() << "\n  expected: " << c.expected;
    }
  }
  EXPECT_GE(specs + configs, 30);
  EXPECT_GE(configs, 10);
}

TEST(SpecInvalidCorpus, EveryInvalidConfigFileIsACase) {
  std::set<std::string> listed;
  for (const auto& c : read_corpus()) {
    if (c.kind == "config") listed.insert(c.input);
  }
  for (const auto& entry : std::filesystem::directory_iterator(kDir / "invalid_configs")) {
    EXPECT_EQ(listed.count(entry.path().filename().string()), 1u) << entry.path();
  }
}

}  // namespace

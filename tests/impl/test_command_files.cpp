// impl::command_files: the files an --exec command names (hashed in certificates, refused inside
// --out), found by splitting the command as a shell would, without running or expanding anything.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pev/impl/live.h"

namespace pev::impl {
namespace {

namespace fs = std::filesystem;

fs::path scratch() {
  const fs::path d =
      fs::path(testing::TempDir()) / ("pev_command_files_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "with space");
  for (const char* f : {"run.py", "model.bin", "with space/x.sh"}) std::ofstream(d / f) << "x";
  return d;
}

TEST(CommandFiles, WordsThatNameRegularFiles) {
  const fs::path d = scratch();
  const std::string run = (d / "run.py").string(), model = (d / "model.bin").string();
  EXPECT_EQ(command_files("python3 " + run + " --weights=" + model + " --n 3"),
            (std::vector<fs::path>{run, model}));
  // Quotes group and are removed; a backslash escapes a blank.
  const std::string spaced = (d / "with space/x.sh").string();
  EXPECT_EQ(command_files("sh '" + spaced + "'"), std::vector<fs::path>{spaced});
  EXPECT_EQ(command_files("sh \"" + spaced + "\""), std::vector<fs::path>{spaced});
  std::string escaped_blank = spaced;
  escaped_blank.replace(escaped_blank.find(' '), 1, "\\ ");
  EXPECT_EQ(command_files("sh " + escaped_blank), std::vector<fs::path>{spaced});
  // Operators separate words; each file once; directories and missing paths are not files.
  EXPECT_EQ(command_files("cat <" + run + ";sh " + run + "|wc " + d.string() + " /nonexistent"),
            std::vector<fs::path>{run});
  EXPECT_TRUE(command_files("").empty());
  EXPECT_TRUE(command_files("sleep 30").empty());
}

}  // namespace
}  // namespace pev::impl

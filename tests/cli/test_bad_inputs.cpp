// The CLI's bad-input corpus (tests/cli/bad_inputs.tsv): malformed files (the fuzzers' seed files),
// absurd values, missing files and unwritable outputs. Every line must give its exit code and
// message, never a crash (a signal shows as exit 128 + N) and never a message longer than 2000
// characters (errors quote user input, clipped).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "run.h"

namespace pev {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> f;
  std::size_t start = 0;
  while (true) {
    const std::size_t t = line.find('\t', start);
    f.push_back(line.substr(start, t - start));
    if (t == std::string::npos) break;
    start = t + 1;
  }
  return f;
}

// Expands the placeholders of one argument (see the header of bad_inputs.tsv).
std::string expand(std::string a, const std::string& tmp) {
  const std::string src = PEV_SOURCE_DIR;
  const std::string corpus = src + "/tests/fuzz/corpus";
  for (std::size_t open; (open = a.find('{')) != std::string::npos;) {
    const std::size_t close = a.find('}', open);
    if (close == std::string::npos) break;
    const std::string key = a.substr(open + 1, close - open - 1);
    std::string value;
    if (key == "corpus") {
      value = corpus;
    } else if (key == "src") {
      value = src;
    } else if (key == "tmp") {
      value = tmp;
    } else if (key.rfind("npy:", 0) == 0 || key.rfind("st:", 0) == 0) {
      const bool npy = key[0] == 'n';
      const std::string name = key.substr(npy ? 4 : 3);
      const fs::path from = fs::path(corpus) / (npy ? "npy" : "safetensors") / name;
      value = tmp + "/" + name + (npy ? ".npy" : ".safetensors");
      fs::copy_file(from, value, fs::copy_options::overwrite_existing);
    } else if (key.rfind("dir:", 0) == 0) {
      // dir:NAME:F1,F2 → a directory NAME holding the files F1, F2 (relative paths; content "x"),
      // as a user's directory that pev must not replace.
      const std::size_t colon = key.find(':', 4);
      const std::string name = key.substr(4, colon - 4);
      value = tmp + "/" + name;
      fs::create_directories(value);
      std::string files = colon == std::string::npos ? "" : key.substr(colon + 1);
      for (std::size_t start = 0; start < files.size();) {
        const std::size_t comma = std::min(files.find(',', start), files.size());
        const fs::path f = fs::path(value) / files.substr(start, comma - start);
        fs::create_directories(f.parent_path());
        std::ofstream(f) << "x";
        start = comma + 1;
      }
    } else if (key.rfind("fifo:", 0) == 0) {
      // fifo:NAME → a FIFO nobody writes to.
      value = tmp + "/" + key.substr(5);
      fs::remove(value);
      EXPECT_EQ(::mkfifo(value.c_str(), 0600), 0) << value;
    } else if (key.rfind("chardev:", 0) == 0) {
      // chardev:NAME → a character device (a private /dev/null, 1:3) when allowed (root);
      // /dev/null itself otherwise, which an unprivileged run could not replace anyway.
      value = tmp + "/" + key.substr(8);
      fs::remove(value);
      if (::mknod(value.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) value = "/dev/null";
    } else if (key.rfind("link:", 0) == 0) {
      // link:NAME:TARGET → a symbolic link NAME to TARGET.
      const std::size_t colon = key.find(':', 5);
      value = tmp + "/" + key.substr(5, colon - 5);
      fs::remove(value);
      fs::create_symlink(key.substr(colon + 1), value);
    } else if (key.rfind("long:", 0) == 0) {
      // long:PREFIX:C:N → PREFIX followed by N copies of C.
      const std::size_t c2 = key.rfind(':');
      const std::size_t c1 = key.rfind(':', c2 - 1);
      value = key.substr(5, c1 - 5) + std::string(std::stoul(key.substr(c2 + 1)), key.at(c1 + 1));
    } else {
      ADD_FAILURE() << "unknown placeholder {" << key << "}";
    }
    a = a.substr(0, open) + value + a.substr(close + 1);
    if (key.rfind("long:", 0) == 0) break;  // the generated text may hold braces of its own
  }
  return a;
}

TEST(CliBadInputs, Corpus) {
  const std::string file = std::string(PEV_SOURCE_DIR) + "/tests/cli/bad_inputs.tsv";
  std::ifstream in(file);
  ASSERT_TRUE(in) << "missing " << file;
  const std::string tmp = test::temp_dir("bad_inputs");
  // A FIFO nobody writes to is refused after this long (not 60 s).
  ::setenv("PEV_INPUT_TIMEOUT", "1", 1);
  std::string line;
  int cases = 0, line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const auto f = split_tabs(line);
    ASSERT_GE(f.size(), 3u) << file << ":" << line_no;
    const int want_exit = std::stoi(f[0]);
    std::string want = f[1];
    for (std::size_t p; (p = want.find("\\n")) != std::string::npos;) want.replace(p, 2, "\n");
    std::vector<std::string> args;
    for (std::size_t k = 2; k < f.size(); ++k) args.push_back(expand(f[k], tmp));
    const auto r = test::run_pev(args);
    const bool on_stdout = want_exit != 2;  // a result (0, 1) is reported on stdout
    const std::string& text = on_stdout ? r.out : r.err;
    const std::string where = file + ":" + std::to_string(line_no);
    EXPECT_EQ(r.exit_code, want_exit) << where << "\nstderr: " << r.err.substr(0, 2000);
    EXPECT_NE(text.find(want), std::string::npos)
        << where << "\nexpected '" << want << "' in " << (on_stdout ? "stdout" : "stderr") << ": "
        << text.substr(0, 2000);
    EXPECT_LE(r.err.size(), 2000u) << where << ": message not clipped";
    ++cases;
  }
  ::unsetenv("PEV_INPUT_TIMEOUT");
  EXPECT_GE(cases, 110);
  std::cout << cases << " bad inputs checked (" << file << ")\n";
}

}  // namespace
}  // namespace pev

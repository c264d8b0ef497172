// write_file_atomic, read_file and read_positions_file: atomic replacement without leftovers,
// failures naming the file and the reason, and positions from text (line numbers in every error),
// npy and safetensors.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "io_test_util.h"
#include "pev/io/file.h"
#include "pev/io/npy.h"
#include "pev/io/positions.h"
#include "pev/io/safetensors.h"

namespace pev::io {
namespace {

using test::read_bytes;
using test::scratch_dir;
using test::write_bytes;

std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FileAtomic, CreatesAndReplaces) {
  const auto dir = scratch_dir();
  const auto file = dir / "out.txt";
  write_file_atomic(file, "first");
  EXPECT_EQ(read_bytes(file), "first");
  write_file_atomic(file, std::string("sec\0ond", 7));
  EXPECT_EQ(read_bytes(file), std::string("sec\0ond", 7));
  write_file_atomic(file, "");
  EXPECT_EQ(read_bytes(file), "");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"out.txt"});  // no temporaries left
}

TEST(FileAtomic, WorksWithARelativePathInTheCurrentDirectory) {
  const auto dir = scratch_dir();
  struct restore_cwd {
    std::filesystem::path previous = std::filesystem::current_path();
    ~restore_cwd() { std::filesystem::current_path(previous); }
  } restore;
  std::filesystem::current_path(dir);
  write_file_atomic("rel.txt", "x");
  EXPECT_EQ(read_bytes(dir / "rel.txt"), "x");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"rel.txt"});
}

TEST(FileAtomic, MissingDirectoryNamesTheFileAndTheReason) {
  const auto file = scratch_dir() / "no" / "such" / "dir.txt";
  EXPECT_PEV_ERROR(write_file_atomic(file, "x"),
                   test::cat({"cannot write '", file.string(), "': No such file or directory"}));
}

TEST(FileAtomic, ADirectoryIsRefusedAndNothingIsLeft) {
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir / "target" / "occupied");
  EXPECT_PEV_ERROR(write_file_atomic(dir / "target", "x"),
                   test::cat({"cannot write '", (dir / "target").string(), "': Is a directory"}));
  EXPECT_EQ(entries(dir), std::vector<std::string>{"target"});
  EXPECT_EQ(entries(dir / "target"), std::vector<std::string>{"occupied"});
}

// Only regular files are replaced: a device or a FIFO is written to, a symbolic link followed.
TEST(FileAtomic, ACharacterDeviceIsWrittenNotReplaced) {
  const auto dir = scratch_dir();
  const auto dev = dir / "null";
  // A private copy of /dev/null (1, 3) when allowed (root); /dev/null itself otherwise, which an
  // unprivileged process could not replace anyway.
  const bool own = ::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
  const std::filesystem::path target = own ? dev : std::filesystem::path("/dev/null");
  write_file_atomic(target, "discarded");
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << target << " was replaced by a file";
  EXPECT_EQ(entries(dir), own ? std::vector<std::string>{"null"} : std::vector<std::string>{});
}

TEST(FileAtomic, AFifoIsWrittenNotReplaced) {
  const auto dir = scratch_dir();
  const auto fifo = dir / "out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = read_bytes(fifo); });
  write_file_atomic(fifo, "through the pipe");
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_EQ(entries(dir), std::vector<std::string>{"out.fifo"});
}

TEST(FileAtomic, ASymlinkIsFollowedAndKept) {
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir / "real");
  write_bytes(dir / "real" / "file.txt", "old");
  std::filesystem::create_symlink(dir / "real" / "file.txt", dir / "link.txt");
  write_file_atomic(dir / "link.txt", "new");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.txt"));
  EXPECT_EQ(read_bytes(dir / "real" / "file.txt"), "new");
  // A dangling link: the file it names is created, the link kept.
  std::filesystem::create_symlink(dir / "real" / "created.txt", dir / "dangling.txt");
  write_file_atomic(dir / "dangling.txt", "made");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "dangling.txt"));
  EXPECT_EQ(read_bytes(dir / "real" / "created.txt"), "made");
  EXPECT_EQ(entries(dir / "real"), (std::vector<std::string>{"created.txt", "file.txt"}));
}

TEST(FileAtomic, UnwritableDirectoryIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  const auto dir = scratch_dir() / "ro";
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(
      dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  EXPECT_PEV_ERROR(write_file_atomic(dir / "x.txt", "x"), "Permission denied");
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
}

// ---- write_directory_atomic ----

void write_set(const std::filesystem::path& d, const std::vector<std::string>& names,
               const std::string& content) {
  for (const auto& n : names) write_file_atomic(d / n, content);
}

TEST(DirectoryAtomic, CreatesThenReplacesAPreviousOutputAsAWhole) {
  const auto base = scratch_dir() / "dir_atomic";
  std::filesystem::remove_all(base);
  const auto out = base / "out";
  write_directory_atomic(out, [](const auto& d) { write_set(d, {"report.json", "old.csv"}, "1"); });
  EXPECT_EQ(entries(out), (std::vector<std::string>{".pev-manifest", "old.csv", "report.json"}));
  // The new output replaces the old one entirely: old.csv, which it does not have, is gone.
  write_directory_atomic(out, [](const auto& d) { write_set(d, {"report.json", "new.csv"}, "2"); });
  EXPECT_EQ(entries(out), (std::vector<std::string>{".pev-manifest", "new.csv", "report.json"}));
  EXPECT_EQ(read_bytes(out / "report.json"), "2");
  // Nothing else left beside it (no staging directory, no aside copy).
  EXPECT_EQ(entries(base), std::vector<std::string>{"out"});
  // A trailing slash names the same directory.
  write_directory_atomic(out.string() + "/",
                         [](const auto& d) { write_set(d, {"report.json"}, "3"); });
  EXPECT_EQ(read_bytes(out / "report.json"), "3");
  EXPECT_EQ(entries(base), std::vector<std::string>{"out"});
}

TEST(DirectoryAtomic, AFailedWriteLeavesThePreviousOutput) {
  const auto base = scratch_dir() / "dir_atomic_fail";
  std::filesystem::remove_all(base);
  const auto out = base / "out";
  write_directory_atomic(out, [](const auto& d) { write_set(d, {"report.json"}, "previous"); });
  EXPECT_PEV_ERROR(write_directory_atomic(out,
                                          [](const auto& d) {
                                            write_set(d, {"report.json"}, "half");
                                            throw pev::error("gnuplot failed");
                                          }),
                   "gnuplot failed");
  EXPECT_EQ(read_bytes(out / "report.json"), "previous");
  EXPECT_EQ(entries(base), std::vector<std::string>{"out"});
}

TEST(DirectoryAtomic, RefusesWhatItDidNotWrite) {
  const auto base = scratch_dir() / "dir_atomic_refuse";
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base / "mine");
  write_bytes(base / "mine" / "thesis.tex", "keep me");
  EXPECT_PEV_ERROR(write_directory_atomic(base / "mine", [](const auto&) {}),
                   "is a non-empty directory that pev did not write (it has no .pev-manifest)");
  EXPECT_PEV_ERROR(check_output_directory(base / "mine"), "pev did not write");
  EXPECT_EQ(read_bytes(base / "mine" / "thesis.tex"), "keep me");
  write_bytes(base / "file", "x");
  EXPECT_PEV_ERROR(write_directory_atomic(base / "file", [](const auto&) {}), "not a directory");
  EXPECT_PEV_ERROR(check_output_directory(base / "file" / "sub"), "cannot create the directory");
  EXPECT_PEV_ERROR(check_output_directory("."), "named directory");
  // An empty directory is fine.
  std::filesystem::create_directories(base / "empty");
  write_directory_atomic(base / "empty", [](const auto& d) { write_set(d, {"x.json"}, "1"); });
  EXPECT_EQ(entries(base / "empty"), (std::vector<std::string>{".pev-manifest", "x.json"}));
}

// What an older pev, or a user, left: a directory that merely holds a file named like pev's
// outputs is not pev's (a git checkout with a report.json; a thesis beside a certificate.json).
TEST(DirectoryAtomic, ADirectoryWithAReportJsonButNoManifestIsRefused) {
  const auto base = scratch_dir() / "dir_atomic_marker";
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base / "repo" / ".git");
  write_bytes(base / "repo" / "report.json", "{}");
  write_bytes(base / "repo" / ".git" / "HEAD", "ref: refs/heads/main\n");
  EXPECT_PEV_ERROR(check_output_directory(base / "repo"), "pev did not write");
  EXPECT_PEV_ERROR(write_directory_atomic(
                       base / "repo", [](const auto& d) { write_set(d, {"report.json"}, "x"); }),
                   "pev did not write");
  EXPECT_EQ(read_bytes(base / "repo" / ".git" / "HEAD"), "ref: refs/heads/main\n");
  EXPECT_EQ(entries(base), std::vector<std::string>{"repo"});  // no staging left behind
}

TEST(DirectoryAtomic, AFileAddedToAPreviousOutputIsNeverDeleted) {
  const auto base = scratch_dir() / "dir_atomic_added";
  std::filesystem::remove_all(base);
  const auto out = base / "out";
  write_directory_atomic(out, [](const auto& d) {
    std::filesystem::create_directories(d / "data");
    write_set(d, {"report.json", "data/a.csv"}, "1");
  });
  // A user's file beside pev's, at the top and inside a subdirectory pev wrote.
  write_bytes(out / "notes.txt", "mine");
  EXPECT_PEV_ERROR(
      check_output_directory(out),
      "holds 'notes.txt', which pev did not write (its .pev-manifest does not list it)");
  std::filesystem::remove(out / "notes.txt");
  write_bytes(out / "data" / "mine.csv", "mine");
  EXPECT_PEV_ERROR(write_directory_atomic(out, [](const auto& d) { write_set(d, {"r"}, "2"); }),
                   "holds 'data/mine.csv'");
  EXPECT_EQ(read_bytes(out / "data" / "mine.csv"), "mine");
  EXPECT_EQ(read_bytes(out / "report.json"), "1");
  // A symbolic link inside is not pev's either (pev writes none).
  std::filesystem::remove(out / "data" / "mine.csv");
  std::filesystem::create_symlink("/", out / "root");
  EXPECT_PEV_ERROR(check_output_directory(out), "holds 'root'");
  std::filesystem::remove(out / "root");
  // Once the foreign entries are gone, the output is pev's again.
  write_directory_atomic(out, [](const auto& d) { write_set(d, {"report.json"}, "3"); });
  EXPECT_EQ(entries(out), (std::vector<std::string>{".pev-manifest", "report.json"}));
}

TEST(DirectoryAtomic, AForgedOrMalformedManifestDoesNotMakeADirectoryPevs) {
  const auto base = scratch_dir() / "dir_atomic_forged";
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base / "out");
  write_bytes(base / "out" / "keep.txt", "mine");
  // Each refused naming what is wrong with the manifest (issue 28: it said "it has no
  // .pev-manifest").
  for (const auto& [manifest, why] : std::vector<std::pair<std::string, std::string>>{
           {"not json", "(it is not JSON)"},
           {"{\"pev_output_manifest\": 2, \"directories\": [], \"files\": [\"keep.txt\"]}",
            "(it lacks \"pev_output_manifest\": 1)"},
           {"{\"pev_output_manifest\": 1, \"directories\": [], \"files\": [\"../keep.txt\"]}",
            "(its \"files\" lists \"../keep.txt\", not a path inside the directory)"},
           {"{\"pev_output_manifest\": 1, \"files\": [\"keep.txt\"]}",
            "(its \"directories\" is not a list)"},
           {std::string(100000, '[') + std::string(100000, ']'), "(nested too deeply)"}}) {
    write_bytes(base / "out" / ".pev-manifest", manifest);
    SCOPED_TRACE(manifest.substr(0, 80));
    EXPECT_PEV_ERROR(check_output_directory(base / "out"),
                     "out' is a non-empty directory whose .pev-manifest is not a valid pev "
                     "manifest " +
                         why);
  }
  std::filesystem::remove(base / "out" / ".pev-manifest");
  std::filesystem::create_directory(base / "out" / ".pev-manifest");
  EXPECT_PEV_ERROR(check_output_directory(base / "out"), "(it is not a regular file)");
  std::filesystem::remove(base / "out" / ".pev-manifest");
  EXPECT_EQ(read_bytes(base / "out" / "keep.txt"), "mine");
}

TEST(DirectoryAtomic, KilledRunsLeftoversAreRemovedAndSymlinksKept) {
  const auto base = scratch_dir() / "dir_atomic_stale";
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  // A staging directory of a process that no longer exists (a pid beyond pid_max), and one of a
  // live process (this one's parent), which must be left alone.
  const auto dead = base / ".out.pev-staging-2147483600";
  const auto live = base / (".out.pev-staging-" + std::to_string(::getppid()));
  std::filesystem::create_directories(dead);
  std::filesystem::create_directories(live);
  write_directory_atomic(base / "out", [](const auto& d) { write_set(d, {"report.json"}, "1"); });
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
  // A symbolic link to the output: the directory it names is replaced, the link stays.
  std::filesystem::create_directory_symlink(base / "out", base / "link");
  write_directory_atomic(base / "link", [](const auto& d) { write_set(d, {"report.json"}, "2"); });
  EXPECT_TRUE(std::filesystem::is_symlink(base / "link"));
  EXPECT_EQ(read_bytes(base / "out" / "report.json"), "2");
}

TEST(FileRead, ReadsWholeFiles) {
  const auto file = scratch_dir() / "bytes.bin";
  std::string bytes;
  for (int i = 0; i < 200000; ++i) bytes += static_cast<char>(i * 7);
  write_bytes(file, bytes);
  EXPECT_EQ(read_file(file), bytes);
}

TEST(FileRead, MissingFileAndDirectoryNameTheReason) {
  const auto dir = scratch_dir();
  EXPECT_PEV_ERROR(read_file(dir / "absent"),
                   test::cat({"cannot read '", (dir / "absent").string(), "': No such file"}));
  EXPECT_PEV_ERROR(read_file(dir), "Is a directory");
}

TEST(FileRead, ReadsFromAPipe) {
  const auto fifo = scratch_dir() / "fifo.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string bytes = npy_bytes(array::from_int32({3}, {4, 5, 6}));
  std::thread writer([&] {
    std::ofstream out(fifo, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
  const std::vector<std::int64_t> p = read_positions_file(fifo);
  writer.join();
  EXPECT_EQ(p, (std::vector<std::int64_t>{4, 5, 6}));
}

TEST(FileRead, ARegularFileLargerThanTheLimitIsRefused) {
  const auto file = scratch_dir() / "big.txt";
  write_bytes(file, std::string(100, 'x'));
  EXPECT_EQ(read_file(file, 100).size(), 100u);
  EXPECT_PEV_ERROR(read_file(file, 99),
                   test::cat({"cannot read '", file.string(), "': larger than 99 bytes"}));
}

TEST(FileRead, ADeviceThatNeverEndsIsCappedAndNamed) {
  EXPECT_PEV_ERROR(
      read_file("/dev/zero", 1 << 20),
      "cannot read '/dev/zero': a character device delivering more than 1048576 bytes");
}

// Sets PEV_INPUT_TIMEOUT for one test.
struct input_timeout_env {
  explicit input_timeout_env(const char* seconds) { ::setenv("PEV_INPUT_TIMEOUT", seconds, 1); }
  ~input_timeout_env() { ::unsetenv("PEV_INPUT_TIMEOUT"); }
};

TEST(FileRead, AFifoNobodyWritesToTimesOut) {
  const auto fifo = scratch_dir() / "silent.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const input_timeout_env env("0.2");
  EXPECT_PEV_ERROR(read_file(fifo),
                   test::cat({"cannot read '", fifo.string(),
                              "': a pipe that did not reach its end within 0.2 s"}));
  EXPECT_PEV_ERROR(read_positions_file(fifo), "did not reach its end within 0.2 s");
}

TEST(FileRead, AMalformedInputTimeoutIsAnError) {
  const input_timeout_env env("forever");
  EXPECT_PEV_ERROR(input_timeout(),
                   "PEV_INPUT_TIMEOUT: expected seconds in (0, 86400], got 'forever'");
}

// ---- positions ----

TEST(PositionsText, SkipsBlankLinesAndComments) {
  const auto file = scratch_dir() / "positions.txt";
  write_bytes(file,
              "# positions to check\n"
              "0\n"
              "  1  \n"
              "\n"
              "\t-5\t\n"
              "+7   # after a comment marker\r\n"
              "   # indented comment\n"
              "9223372036854775807\n"
              "-9223372036854775808\n"
              "65504");  // no final newline
  EXPECT_EQ(read_positions_file(file),
            (std::vector<std::int64_t>{0, 1, -5, 7, std::numeric_limits<std::int64_t>::max(),
                                       std::numeric_limits<std::int64_t>::min(), 65504}));
}

struct bad_text {
  const char* name;
  const char* text;
  const char* message;
};

void PrintTo(const bad_text& c, std::ostream* os) { *os << c.name; }

class PositionsTextMalformed : public testing::TestWithParam<bad_text> {};

TEST_P(PositionsTextMalformed, NamesTheFileAndLine) {
  const auto file = scratch_dir() / "p.txt";
  write_bytes(file, GetParam().text);
  EXPECT_PEV_ERROR(read_positions_file(file), test::cat({"positions file '", file.string(), "'"}));
  EXPECT_PEV_ERROR(read_positions_file(file), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PositionsTextMalformed,
    testing::Values(
        bad_text{"Garbage", "0\n1\nabc\n", "line 3: 'abc' is not an integer"},
        bad_text{"Float", "# x\n\n1.5\n",
                 "line 3: '1.5' is not an integer (positions are integers)"},
        bad_text{"Exponent", "1e3\n", "line 1: '1e3' is not an integer"},
        bad_text{"TrailingGarbage", "1\n2\n3\n12abc\n", "line 4: '12abc' is not an integer"},
        bad_text{"TwoPerLine", "1 2\n",
                 "line 1: '1 2' is not an integer (expected one integer per line)"},
        bad_text{"Hex", "0x10\n", "line 1: '0x10' is not an integer"},
        bad_text{"Overflow", "1\n9223372036854775808\n",
                 "line 2: '9223372036854775808' is outside the int64 range"},
        bad_text{"Underflow", "-9223372036854775809\n",
                 "line 1: '-9223372036854775809' is outside the int64 range"},
        bad_text{"HugeNumber", "123456789012345678901234567890\n", "outside the int64 range"},
        bad_text{"LoneSign", "-\n", "line 1: '-' is not an integer"},
        bad_text{"DoubleSign", "--3\n", "line 1: '--3' is not an integer"},
        bad_text{"CrlfLineNumbers", "1\r\n2\r\nx\r\n", "line 3: 'x'"},
        bad_text{"Binary", "\x93NUMPY\x01", "line 1: '\\x93NUMPY\\x01' is not an integer"},
        bad_text{"Empty", "", "holds no positions"},
        bad_text{"OnlyComments", "# nothing\n\n  \n", "holds no positions"}),
    [](const testing::TestParamInfo<bad_text>& info) { return info.param.name; });

TEST(PositionsArray, NpyOfInt32AndInt64AnyShape) {
  const auto dir = scratch_dir();
  write_npy(dir / "a.npy", array::from_int32({2, 2}, {0, 1, -2, 3}));
  EXPECT_EQ(read_positions_file(dir / "a.npy"), (std::vector<std::int64_t>{0, 1, -2, 3}));
  write_npy(dir / "b.NPY", array::from_int64({}, {1}));
  EXPECT_EQ(read_positions_file(dir / "b.NPY"), std::vector<std::int64_t>{1});
  write_npy(dir / "c.npy", array::from_floats({1}, {1.0f}));
  EXPECT_PEV_ERROR(read_positions_file(dir / "c.npy"),
                   "has dtype F32, expected integers (int32 or int64)");
  write_npy(dir / "d.npy", array::from_int64({0}, {}));
  EXPECT_PEV_ERROR(read_positions_file(dir / "d.npy"), "holds no positions");
  write_bytes(dir / "e.npy", "0\n1\n");
  EXPECT_PEV_ERROR(read_positions_file(dir / "e.npy"), "not an npy file");
}

TEST(PositionsArray, SafetensorsPositionsOrTheOnlyTensor) {
  const auto dir = scratch_dir();
  tensor_file named;
  named.add("cos", array::from_floats({1}, {1.0f}));
  named.add("positions", array::from_int64({3}, {5, 6, 7}));
  write_safetensors(dir / "a.safetensors", named);
  EXPECT_EQ(read_positions_file(dir / "a.safetensors"), (std::vector<std::int64_t>{5, 6, 7}));

  tensor_file only;
  only.add("pos", array::from_int32({2}, {9, 8}));
  write_safetensors(dir / "b.safetensors", only);
  EXPECT_EQ(read_positions_file(dir / "b.safetensors"), (std::vector<std::int64_t>{9, 8}));

  tensor_file ambiguous;
  ambiguous.add("q", array::from_int32({1}, {1}));
  ambiguous.add("k", array::from_int32({1}, {2}));
  write_safetensors(dir / "c.safetensors", ambiguous);
  EXPECT_PEV_ERROR(read_positions_file(dir / "c.safetensors"),
                   "expected a tensor named 'positions' or a single tensor, found 'q', 'k'");

  tensor_file floats;
  floats.add("positions", array::from_doubles({1}, {1.0}));
  write_safetensors(dir / "d.safetensors", floats);
  EXPECT_PEV_ERROR(read_positions_file(dir / "d.safetensors"),
                   "tensor 'positions' has dtype F64, expected integers");

  write_safetensors(dir / "e.safetensors", tensor_file{});
  EXPECT_PEV_ERROR(read_positions_file(dir / "e.safetensors"), "found no tensors");
}

TEST(PositionsArray, MissingFileNamesIt) {
  const auto file = scratch_dir() / "absent.txt";
  EXPECT_PEV_ERROR(read_positions_file(file), test::cat({"cannot read '", file.string(), "'"}));
}

}  // namespace
}  // namespace pev::io

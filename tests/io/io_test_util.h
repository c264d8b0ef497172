#pragma once
// Helpers for the io tests: a fresh scratch directory per test, raw file I/O, little-endian byte
// strings, hand-built npy/safetensors files, a check that a statement throws pev::error with a
// given substring, and a watch on the largest single allocation (the binary replaces operator new).

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "pev/core/error.h"

namespace pev::io::test {

/// An empty directory under testing::TempDir() unique to the running test.
std::filesystem::path scratch_dir();
/// Writes `bytes` to `file` (plain, not atomic).
void write_bytes(const std::filesystem::path& file, std::string_view bytes);
/// The whole content of `file`.
std::string read_bytes(const std::filesystem::path& file);

/// The concatenation of `parts`. The tests build bytes with this rather than chains of
/// std::string operator+, on which GCC 12 at -O2 reports false -Wrestrict errors (GCC bug 105329).
std::string cat(std::initializer_list<std::string_view> parts);

/// Little-endian encodings.
std::string le16(std::uint16_t v);
std::string le32(std::uint32_t v);
std::string le64(std::uint64_t v);

/// An npy file: magic, version `major`.0, the header `dict` padded to 64 bytes and '\n', then
/// `data`.
std::string npy_file(std::string_view dict, std::string_view data, int major = 1);
/// A safetensors file: the 8-byte length of `header`, `header`, then `data`.
std::string safetensors_file(std::string_view header, std::string_view data);

/// Records the largest single operator-new request while alive.
class allocation_watch {
 public:
  allocation_watch();
  ~allocation_watch();
  allocation_watch(const allocation_watch&) = delete;
  allocation_watch& operator=(const allocation_watch&) = delete;
  /// Largest request seen so far, in bytes.
  std::size_t largest() const;
};

/// A python3 interpreter that can import numpy, or empty.
std::string python_with_numpy();
/// Runs `script` with `python` in `dir`; returns its exit status, its output appended to `output`.
int run_python(const std::string& python, const std::filesystem::path& dir,
               const std::string& script, std::string& output);

}  // namespace pev::io::test

/// Expects `statement` to throw pev::error whose message contains `substring`.
#define EXPECT_PEV_ERROR(statement, substring)                                      \
  do {                                                                              \
    try {                                                                           \
      statement;                                                                    \
      ADD_FAILURE() << "expected pev::error containing \"" << (substring) << "\"";  \
    } catch (const ::pev::error& e_) {                                              \
      EXPECT_NE(std::string(e_.what()).find(substring), std::string::npos)          \
          << "message: " << e_.what() << "\nexpected to contain: " << (substring);  \
    } catch (const std::exception& e_) {                                            \
      ADD_FAILURE() << "expected pev::error, got another exception: " << e_.what(); \
    }                                                                               \
  } while (false)

namespace pev::io::test {

/// `count` deterministic mutations of `bytes` (byte flips, truncations, insertions, deletions),
/// biased towards the first `hot` bytes where the headers live.
std::vector<std::string> mutations(const std::string& bytes, std::size_t hot, int count,
                                   unsigned seed);

}  // namespace pev::io::test

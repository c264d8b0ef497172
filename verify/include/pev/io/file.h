#pragma once
// File helpers shared by every writer and reader.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace pev::io {

/// Writes `bytes` to `file` atomically: a temporary file in the same directory, flushed, then
/// renamed over `file`. Throws pev::error naming the file on failure (the temporary is removed).
void write_file_atomic(const std::filesystem::path& file, std::string_view bytes);

/// Writes a directory of outputs (a report, a certificate) as one unit. `write` fills a fresh
/// staging directory beside `dir` (`.NAME.pev-staging-PID`); it then takes `dir`'s place in one
/// rename — an existing previous output is exchanged with it atomically (renameat2
/// RENAME_EXCHANGE) and then removed. A run killed at any moment therefore leaves `dir` either as
/// it was (the previous output, or none) or complete, never a mix; the staging directories of
/// killed runs are removed by the next run. Throws pev::error (and leaves `dir` as it was) when
/// `write` throws, and when `dir` is a file, or a non-empty directory holding none of `markers`
/// (not a previous output: pev will not replace a directory it did not write).
void write_directory_atomic(const std::filesystem::path& dir,
                            const std::function<void(const std::filesystem::path&)>& write,
                            std::initializer_list<std::string_view> markers = {"report.json",
                                                                               "certificate.json"});

/// The checks write_directory_atomic makes before it writes (run them before long work, so that a
/// bad --out is reported at once): `dir`'s parent can be created and written; `dir` is absent, an
/// empty directory, or a previous output. Throws pev::error saying what is wrong.
void check_output_directory(const std::filesystem::path& dir,
                            std::initializer_list<std::string_view> markers = {"report.json",
                                                                               "certificate.json"});

/// Reads a whole file; throws pev::error naming the file when it cannot be read.
std::string read_file(const std::filesystem::path& file);

/// Integer positions from a file: text (one integer per line; blank lines and '#' comments
/// skipped), .npy (int32/int64, any shape, flattened) or .safetensors (tensor "positions", or the
/// only tensor; I32/I64). Throws pev::error naming the file and line or field.
std::vector<std::int64_t> read_positions_file(const std::filesystem::path& file);

}  // namespace pev::io

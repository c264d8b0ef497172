#pragma once
// File helpers shared by every writer and reader.

#include <chrono>
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

/// Inputs are bounded: a file read whole holds at most a limit of bytes (the caller's, by default
/// max_stream_bytes), and one that is not a regular file (a pipe, a FIFO, a character device such
/// as /dev/zero, a terminal) must reach its end within input_timeout() of being opened. A FIFO
/// that nobody writes to, or a device that never ends, is an error naming the file, not a hang or
/// an allocation until memory runs out.
inline constexpr std::uint64_t max_stream_bytes = std::uint64_t{1} << 30;

/// The time limit for reading a non-regular input: PEV_INPUT_TIMEOUT seconds (in (0, 86400]),
/// 60 s by default. Throws pev::error for a malformed PEV_INPUT_TIMEOUT.
std::chrono::milliseconds input_timeout();

/// Reads a whole file, at most `max_bytes`; throws pev::error naming the file when it cannot be
/// read, is larger, or (not a regular file) does not end within input_timeout().
std::string read_file(const std::filesystem::path& file,
                      std::uint64_t max_bytes = max_stream_bytes);

/// The largest positions file read: 2^24 positions (the most a request takes) of up to 20
/// characters and a newline, with room for comments.
inline constexpr std::uint64_t max_positions_file_bytes = std::uint64_t{512} << 20;

/// Integer positions from a file: text (one integer per line; blank lines and '#' comments
/// skipped), .npy (int32/int64, any shape, flattened) or .safetensors (tensor "positions", or the
/// only tensor; I32/I64). Throws pev::error naming the file and line or field.
std::vector<std::int64_t> read_positions_file(const std::filesystem::path& file);

}  // namespace pev::io

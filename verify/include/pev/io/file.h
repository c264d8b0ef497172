#pragma once
// File helpers shared by every writer and reader: bounded reading (file.cpp), atomic files
// (atomic.cpp) and output directories (directory.cpp). Positions files: positions.h.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pev/io/byte_buffer.h"

namespace pev::io {

/// Writes `bytes` to `file` atomically: a temporary file in the same directory, flushed, then
/// renamed over `file`. Throws pev::error naming the file on failure (the temporary is removed).
void write_file_atomic(const std::filesystem::path& file, std::string_view bytes);

/// Writes a directory of outputs (a report, a certificate) as one unit. `write` fills a fresh
/// staging directory beside `dir` (`.NAME.pev-staging-PID`), which then gets a manifest
/// (`.pev-manifest`: the directories and files written) and takes `dir`'s place in one rename; a
/// previous output is exchanged with it atomically (renameat2 RENAME_EXCHANGE) and then removed
/// entry by entry from its own manifest. A run killed at any moment therefore leaves `dir` either
/// as it was (the previous output, or none) or complete, never a mix; the staging directories of
/// killed runs are removed by the next run. Two runs writing the same new `dir` at once both
/// succeed (the last one's output stays).
///
/// pev replaces only what pev wrote: `dir` must be absent, empty, or a previous output holding
/// nothing its manifest does not list (checked before `write` and again just before the exchange).
/// Throws pev::error (and leaves `dir` as it was) otherwise, when `dir` is a file, and when `write`
/// throws.
void write_directory_atomic(const std::filesystem::path& dir,
                            const std::function<void(const std::filesystem::path&)>& write);

/// The checks write_directory_atomic makes before it writes (run them before long work, so that a
/// bad --out is reported at once): `dir`'s parent can be created and written; `dir` is absent, an
/// empty directory, or a previous output of pev's. Throws pev::error saying what is wrong.
void check_output_directory(const std::filesystem::path& dir);

/// Inputs are bounded: a file read whole holds at most a limit of bytes (the caller's, by default
/// max_stream_bytes), and one that is not a regular file (a pipe, a FIFO, a character device such
/// as /dev/zero, a terminal) must reach its end within input_timeout() of being opened. A FIFO
/// that nobody writes to, or a device that never ends, is an error naming the file, not a hang or
/// an allocation until memory runs out.
inline constexpr std::uint64_t max_stream_bytes = std::uint64_t{1} << 30;

/// Tensors (npy arrays, safetensors tensors, stored npz members) of at least this many bytes in a
/// regular file are read by mapping the file: the array's data is a read-only view of the page
/// cache (io::byte_buffer), not a copy; smaller ones are copied, for which a mapping costs more
/// (docs/performance.md §4). A mapped file that shrinks while pev reads it ends pev with exit
/// status 2 and a message naming it (docs/design.md §6.1).
inline constexpr std::size_t map_min_bytes = std::size_t{1} << 20;

/// Hands the pages of `bytes` back to the page cache when it is a view of a file mapping of a
/// reader (map_min_bytes): the process's resident memory drops by them, and the bytes stay readable
/// (a later read maps them again from the file). Nothing for other buffers. For a caller done
/// with a large tensor that other views still share (docs/performance.md §4, a model trace's
/// sites).
void release_pages(const byte_buffer& bytes);

/// The time limit for reading a non-regular input: PEV_INPUT_TIMEOUT seconds (in (0, 86400]),
/// 60 s by default. Throws pev::error for a malformed PEV_INPUT_TIMEOUT.
std::chrono::milliseconds input_timeout();

/// Reads a whole file, at most `max_bytes`; throws pev::error naming the file when it cannot be
/// read, is larger, or (not a regular file) does not end within input_timeout().
std::string read_file(const std::filesystem::path& file,
                      std::uint64_t max_bytes = max_stream_bytes);

}  // namespace pev::io

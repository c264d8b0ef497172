#pragma once
// File helpers shared by every writer and reader.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace pev::io {

/// Writes `bytes` to `file` atomically: a temporary file in the same directory, flushed, then
/// renamed over `file`. Throws pev::error naming the file on failure (the temporary is removed).
void write_file_atomic(const std::filesystem::path& file, std::string_view bytes);

/// Reads a whole file; throws pev::error naming the file when it cannot be read.
std::string read_file(const std::filesystem::path& file);

/// Integer positions from a file: text (one integer per line; blank lines and '#' comments
/// skipped), .npy (int32/int64, any shape, flattened) or .safetensors (tensor "positions", or the
/// only tensor; I32/I64). Throws pev::error naming the file and line or field.
std::vector<std::int64_t> read_positions_file(const std::filesystem::path& file);

}  // namespace pev::io

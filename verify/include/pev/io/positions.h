#pragma once
// Positions files (`--positions-file`): integer positions as text, .npy or .safetensors, read
// within file.h's bounds.

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace pev::io {

/// The largest positions file read: 2^24 positions (the most a request takes) of up to 20
/// characters and a newline, with room for comments.
inline constexpr std::uint64_t max_positions_file_bytes = std::uint64_t{512} << 20;

/// Integer positions from a file (at most max_positions_file_bytes): text (one integer per line;
/// blank lines and '#' comments skipped), .npy (int32/int64, any shape, flattened) or .safetensors
/// (tensor "positions", or the only tensor; I32/I64). Throws pev::error naming the file and line or
/// field.
std::vector<std::int64_t> read_positions_file(const std::filesystem::path& file);

/// The positions of a positions file already read (`bytes`; `file` names it and, by its
/// extension, its format), as read_positions_file: for a caller that also hashes the bytes.
std::vector<std::int64_t> parse_positions(std::string_view bytes,
                                          const std::filesystem::path& file);

}  // namespace pev::io

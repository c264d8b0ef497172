#pragma once
// NumPy .npz archives (numpy.savez, numpy.savez_compressed): a zip file whose members are .npy
// files, one per array, named by the array's key ("cos.npy" holds "cos"). Members are stored or
// deflated (zlib); zip64 sizes and offsets are read. Reading is strict and bounded: every member
// must be an .npy file (read by the npy reader, with its rules), the central directory must agree
// with each member's local header, sizes and CRC-32 are checked, and every declared size is
// checked before anything is allocated (a stored member against the archive, what deflated
// members inflate to against max_stream_bytes). Encrypted members, split
// archives and other compression methods are refused, naming the member.

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pev/io/array.h"
#include "pev/io/npy.h"

namespace pev::io {

/// One array of an archive: its key (the member's name without ".npy") and its contents.
struct npz_member {
  std::string name;
  array a;
};

/// Reads every member of an .npz archive, in central-directory order; throws pev::error naming the
/// file (and the member) for anything malformed, a member that is not an .npy file, or a key given
/// twice.
std::vector<npz_member> read_npz(const std::filesystem::path& file, const npy_options& o = {});
/// Parses an archive held in memory, as read_npz does; `source` names it in messages.
std::vector<npz_member> parse_npz(std::string_view bytes, std::string_view source,
                                  const npy_options& o = {});

/// The bytes of an archive holding `members` as numpy.savez writes it (each array as NAME.npy,
/// stored), or as numpy.savez_compressed does (deflated) with `compress`.
std::string npz_bytes(const std::vector<npz_member>& members, bool compress = false);
/// Writes npz_bytes(members, compress) to `file` atomically.
void write_npz(const std::filesystem::path& file, const std::vector<npz_member>& members,
               bool compress = false);

}  // namespace pev::io

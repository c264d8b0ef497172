#pragma once
// NumPy .npy files (format versions 1.0–3.0), little-endian, C order. bfloat16 has no npy dtype: it
// is written as '<u2' holding the bf16 encodings (view it with ml_dtypes.bfloat16) and read back
// only when the caller asks for bf16. Reading is strict: anything else (big-endian, Fortran order,
// object or structured dtypes, a header or shape inconsistent with the file size) throws pev::error
// naming the file and the field.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "pev/io/array.h"

namespace pev::io {

/// How a reader interprets the dtypes that have no pev::dtype of their own.
struct npy_options {
  /// '<u2' holds bfloat16 encodings (what write_npy writes for bf16); otherwise refused.
  bool u2_is_bf16 = false;
  /// '<c8' (complex64) and '<c16' (complex128) are read as '<f4' / '<f8' with a last axis of 2
  /// holding (real, imag) (array::complex set); otherwise refused.
  bool complex_as_pairs = false;
  /// A large array (map_min_bytes) whose data are not aligned for its dtype in the file (numpy's
  /// stored npz members) is a view of the mapped file all the same, for a reader that decodes
  /// elements from bytes at any alignment (certify's: docs/performance.md §4); otherwise it is
  /// copied into memory of its own.
  bool unaligned_views = false;
};

/// Writes `a` as `numpy.save` would (format 1.0, or 2.0 when the header needs it), atomically.
void write_npy(const std::filesystem::path& file, const array& a);
/// Reads an npy file of dtype '<f8', '<f4', '<f2', '<i4' or '<i8'; '<u2' and complex dtypes are
/// refused (see npy_options).
array read_npy(const std::filesystem::path& file);
/// As above; with `u2_is_bf16` a '<u2' file is read as bf16 encodings (what write_npy writes for
/// bf16).
array read_npy(const std::filesystem::path& file, bool u2_is_bf16);
/// As above, with every interpretation of npy_options.
array read_npy(const std::filesystem::path& file, const npy_options& o);

/// The header write_npy writes for an array of this dtype and shape (its data follows it): for a
/// writer that streams the data (io/stream.h).
std::string npy_header_bytes(dtype type, const std::vector<std::int64_t>& shape);
/// The bytes write_npy writes for `a`.
std::string npy_bytes(const array& a);
/// Parses npy bytes held in memory, as read_npy does; `source` names them in messages.
array parse_npy(std::string_view bytes, std::string_view source, bool u2_is_bf16 = false);
/// As above, with every interpretation of npy_options.
array parse_npy(std::string_view bytes, std::string_view source, const npy_options& o);
/// The npy descr of `t`: "<f8", "<f4", "<f2", "<u2" (bf16), "<i4", "<i8".
std::string_view npy_descr(dtype t);

}  // namespace pev::io

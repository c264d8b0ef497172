#pragma once
// safetensors files: an 8-byte little-endian header length N, N bytes of UTF-8 JSON mapping tensor
// names to {dtype, shape, data_offsets} (plus an optional "__metadata__" string→string map), then
// the raw little-endian row-major data. Reading is strict about every header field
// (docs/design.md §6.1): offsets in range, contiguous and non-overlapping, sizes equal to
// shape × dtype, header within the file.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pev/io/array.h"

namespace pev::io {

struct tensor_file {
  std::vector<std::string> names;  // in file order
  std::map<std::string, array> tensors;
  std::map<std::string, std::string> metadata;

  /// Adds a tensor (names stay in insertion order). Throws pev::error for a name already present
  /// or the reserved name "__metadata__".
  void add(const std::string& name, array a);
  /// The tensor called `name`; throws pev::error naming the file's tensors otherwise.
  const array& at(const std::string& name) const;
};

/// How a reader interprets the dtypes that have no pev::dtype of their own.
struct safetensors_options {
  /// C64 (complex64: two F32, real then imaginary part) is read as F32 with a last axis of 2
  /// holding (real, imag) (array::complex set); otherwise refused.
  bool complex_as_pairs = false;
};

/// Writes `t` atomically: tensors in `names` order with contiguous data, the header padded with
/// spaces to a multiple of 8 bytes, "__metadata__" (first) when `t.metadata` is not empty.
void write_safetensors(const std::filesystem::path& file, const tensor_file& t);
/// Reads a safetensors file of dtypes F64, F32, F16, BF16, I32, I64; `names` come in data order.
tensor_file read_safetensors(const std::filesystem::path& file);
/// As above, with the interpretations of safetensors_options.
tensor_file read_safetensors(const std::filesystem::path& file, const safetensors_options& o);

/// The bytes write_safetensors writes for `t`.
std::string safetensors_bytes(const tensor_file& t);
/// Parses safetensors bytes held in memory, as read_safetensors does; `source` names them in
/// messages.
tensor_file parse_safetensors(std::string_view bytes, std::string_view source);
/// As above, with the interpretations of safetensors_options.
tensor_file parse_safetensors(std::string_view bytes, std::string_view source,
                              const safetensors_options& o);

/// A tensor's place in a file written piece by piece: its name, dtype and shape.
struct tensor_layout {
  std::string name;
  dtype type;
  std::vector<std::int64_t> shape;
  /// Bytes of its data.
  std::uint64_t bytes() const;
};
/// The header write_safetensors writes for tensors of these layouts in this order (their data
/// follows it, contiguous, in the same order): for a writer that streams the data (io/stream.h).
std::string safetensors_header(const std::vector<tensor_layout>& tensors,
                               const std::map<std::string, std::string>& metadata);

/// Largest header read_safetensors accepts, in bytes (the limit of the reference implementation).
inline constexpr std::uint64_t max_safetensors_header = 100'000'000;

}  // namespace pev::io

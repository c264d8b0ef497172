#pragma once
// pev::io::array — a typed, shaped, row-major block of little-endian bytes: what npy and
// safetensors files hold and what `pev reference` writes. Conversions to double/int64 are exact for
// every dtype.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "pev/io/byte_buffer.h"
#include "pev/scalar/dtype.h"
#include "pev/scalar/traits.h"

namespace pev::io {

/// Element types are pev::dtype (pev/scalar/dtype.h: names, sizes, visit_float).
using pev::dtype;
/// safetensors name: "F64", "F32", "F16", "BF16", "I32", "I64".
std::string_view safetensors_name(dtype t);
/// Parses a safetensors dtype name; throws pev::error for anything else.
dtype parse_safetensors_dtype(std::string_view name);

struct array {
  dtype type = dtype::fp64;
  std::vector<std::int64_t> shape;
  /// Little-endian, row-major, size = elements()·size_of(type). A reader's large tensor is a
  /// read-only view of the mapped file (byte_buffer); writing through mutable_data() copies it.
  byte_buffer data;
  /// Read from a complex dtype (safetensors C64, npy '<c8'/'<c16', when the reader is asked to):
  /// the last axis, of size 2, holds (real, imag) — what torch.view_as_real gives.
  bool complex = false;

  /// Product of the shape (1 for a scalar).
  std::size_t elements() const;
  /// Every element as double (exact for every dtype; int64 beyond 2^53 rounds).
  std::vector<double> to_doubles() const;
  /// Every element as int64; throws pev::error for float dtypes.
  std::vector<std::int64_t> to_int64() const;

  /// Every element's 16-bit encoding; throws pev::error unless the dtype is f16 or bf16.
  std::vector<std::uint16_t> to_bits16() const;
  /// Throws pev::error unless the shape is non-negative and `data` holds exactly
  /// elements()·size_of(type) bytes; `what` prefixes the message (e.g. the file being written).
  void check(std::string_view what) const;

  // Factories: a row-major array of the given shape. Each throws pev::error when the number of
  // values differs from the product of the shape or a dimension is negative.

  /// f64 array holding `v`.
  static array from_doubles(std::vector<std::int64_t> shape, const std::vector<double>& v);
  /// f32 array holding `v`.
  static array from_floats(std::vector<std::int64_t> shape, const std::vector<float>& v);
  /// f16 or bf16 array (`t`) holding the encodings `bits`.
  static array from_bits16(dtype t, std::vector<std::int64_t> shape,
                           const std::vector<std::uint16_t>& bits);
  /// F64, F32, F16 or BF16 array holding `v` (T double, float, half or bfloat16; 16-bit types as
  /// encodings).
  template <class T>
  static array from_values(std::vector<std::int64_t> shape, const std::vector<T>& v) {
    if constexpr (std::is_same_v<T, double>) {
      return from_doubles(std::move(shape), v);
    } else if constexpr (std::is_same_v<T, float>) {
      return from_floats(std::move(shape), v);
    } else {
      std::vector<std::uint16_t> bits;
      bits.reserve(v.size());
      for (const T& x : v) bits.push_back(scalar_traits<T>::to_bits(x));
      return from_bits16(std::is_same_v<T, half> ? dtype::fp16 : dtype::bf16, std::move(shape),
                         bits);
    }
  }
  /// i64 array holding `v`.
  static array from_int64(std::vector<std::int64_t> shape, const std::vector<std::int64_t>& v);
  /// i32 array holding `v`.
  static array from_int32(std::vector<std::int64_t> shape, const std::vector<std::int32_t>& v);
};

/// Exact value of the IEEE binary16 encoding `bits` (subnormals, infinities and NaN payloads kept).
float half_bits_to_float(std::uint16_t bits);
/// Exact value of the bfloat16 encoding `bits`.
float bfloat16_bits_to_float(std::uint16_t bits);
/// "[2, 3]" — a shape for messages.
std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace pev::io

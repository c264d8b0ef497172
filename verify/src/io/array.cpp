#include "pev/io/array.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <limits>
#include <string>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/core/names.h"

namespace pev::io {

namespace detail {

std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<std::uint64_t> checked_product(const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) {
    auto next = checked_mul(n, static_cast<std::uint64_t>(d));
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

}  // namespace detail

namespace {

[[noreturn]] void fail(const std::string& message) { throw pev::error(message); }

// The shape's element count, checked: dimensions non-negative, product within 64 bits.
std::uint64_t checked_elements(const std::vector<std::int64_t>& shape, std::string_view what) {
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      fail(fmt::format("{}: shape {} has a negative dimension {} at index {}", what,
                       shape_string(shape), shape[i], i));
    }
  }
  auto n = detail::checked_product(shape);
  if (!n) fail(fmt::format("{}: the product of shape {} overflows", what, shape_string(shape)));
  return *n;
}

array make(dtype t, std::vector<std::int64_t> shape, std::size_t count, std::string_view what) {
  const std::uint64_t n = checked_elements(shape, what);
  if (n != count) {
    fail(fmt::format("{}: shape {} holds {} elements but {} values were given", what,
                     shape_string(shape), n, count));
  }
  array a;
  a.type = t;
  a.shape = std::move(shape);
  a.data.resize(count * size_of(t));
  return a;
}

}  // namespace

namespace {

// safetensors' names of the dtypes pev reads (docs/design.md §11.11).
constexpr name_table<dtype, 6> kSafetensorsNames({{{dtype::fp64, "F64"},
                                                   {dtype::fp32, "F32"},
                                                   {dtype::fp16, "F16"},
                                                   {dtype::bf16, "BF16"},
                                                   {dtype::int32, "I32"},
                                                   {dtype::int64, "I64"}}});

}  // namespace

std::string_view safetensors_name(dtype t) { return kSafetensorsNames.name(t); }

dtype parse_safetensors_dtype(std::string_view name) {
  if (const auto t = kSafetensorsNames.find(name)) return *t;
  fail(fmt::format("dtype {} is not supported (supported: {})", quoted_text(name),
                   kSafetensorsNames.list()));
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

float half_bits_to_float(std::uint16_t bits) {
  // binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits. Every value is a float: normal
  // numbers rebias the exponent (127 − 15 = 112), subnormals m·2^−24 are normalized, Inf/NaN keep
  // their fraction bits (so NaN payloads survive).
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  std::uint32_t fraction = bits & 0x3FFu;
  std::uint32_t out = 0;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (fraction << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (fraction << 13);
  } else if (fraction == 0) {
    out = sign;
  } else {
    // m·2^−24 with 1 ≤ m < 2^10: shift the leading one up to bit 10, i.e. 2^(−14 − shift)·1.f.
    std::uint32_t shift = 0;
    while ((fraction & 0x400u) == 0) {
      fraction <<= 1;
      ++shift;
    }
    out = sign | ((127 - 14 - shift) << 23) | ((fraction & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(out);
}

float bfloat16_bits_to_float(std::uint16_t bits) {
  // bfloat16 is the top half of a float.
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::size_t array::elements() const {
  const std::uint64_t n = checked_elements(shape, "array");
  if (n > std::numeric_limits<std::size_t>::max())
    fail(fmt::format("array: shape {} is too large", shape_string(shape)));
  return static_cast<std::size_t>(n);
}

void array::check(std::string_view what) const {
  const std::uint64_t n = checked_elements(shape, what);
  const auto bytes = detail::checked_mul(n, size_of(type));
  if (!bytes || *bytes != data.size()) {
    fail(fmt::format("{}: array of shape {} and dtype {} needs {} bytes but holds {}", what,
                     shape_string(shape), safetensors_name(type),
                     bytes ? std::to_string(*bytes) : std::string("more than 2^64"), data.size()));
  }
}

std::vector<double> array::to_doubles() const {
  check("array");
  const std::size_t n = data.size() / size_of(type);
  const std::byte* p = data.data();
  std::vector<double> out(n);
  switch (type) {
    case dtype::fp64:
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = std::bit_cast<double>(detail::load_le<std::uint64_t>(p + 8 * i));
      }
      break;
    case dtype::fp32:
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = std::bit_cast<float>(detail::load_le<std::uint32_t>(p + 4 * i));
      }
      break;
    case dtype::fp16:
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = half_bits_to_float(detail::load_le<std::uint16_t>(p + 2 * i));
      }
      break;
    case dtype::bf16:
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = bfloat16_bits_to_float(detail::load_le<std::uint16_t>(p + 2 * i));
      }
      break;
    case dtype::int32:
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = static_cast<std::int32_t>(detail::load_le<std::uint32_t>(p + 4 * i));
      }
      break;
    case dtype::int64:
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = static_cast<double>(
            static_cast<std::int64_t>(detail::load_le<std::uint64_t>(p + 8 * i)));
      }
      break;
  }
  return out;
}

std::vector<std::int64_t> array::to_int64() const {
  if (type != dtype::int32 && type != dtype::int64) {
    fail(fmt::format(
        "array of dtype {} holds floating-point values, expected an integer array (I32 or I64)",
        safetensors_name(type)));
  }
  check("array");
  const std::size_t n = data.size() / size_of(type);
  std::vector<std::int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = type == dtype::int32
                 ? static_cast<std::int32_t>(detail::load_le<std::uint32_t>(data.data() + 4 * i))
                 : static_cast<std::int64_t>(detail::load_le<std::uint64_t>(data.data() + 8 * i));
  }
  return out;
}

std::vector<std::uint16_t> array::to_bits16() const {
  if (type != dtype::fp16 && type != dtype::bf16) {
    fail(fmt::format("array of dtype {} has no 16-bit encodings, expected F16 or BF16",
                     safetensors_name(type)));
  }
  check("array");
  std::vector<std::uint16_t> out(data.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = detail::load_le<std::uint16_t>(data.data() + 2 * i);
  return out;
}

array array::from_doubles(std::vector<std::int64_t> shape, const std::vector<double>& v) {
  array a = make(dtype::fp64, std::move(shape), v.size(), "array::from_doubles");
  std::byte* p = a.data.mutable_data();
  for (std::size_t i = 0; i < v.size(); ++i) {
    detail::store_le(p + 8 * i, std::bit_cast<std::uint64_t>(v[i]));
  }
  return a;
}

array array::from_floats(std::vector<std::int64_t> shape, const std::vector<float>& v) {
  array a = make(dtype::fp32, std::move(shape), v.size(), "array::from_floats");
  std::byte* p = a.data.mutable_data();
  for (std::size_t i = 0; i < v.size(); ++i) {
    detail::store_le(p + 4 * i, std::bit_cast<std::uint32_t>(v[i]));
  }
  return a;
}

array array::from_bits16(dtype t, std::vector<std::int64_t> shape,
                         const std::vector<std::uint16_t>& bits) {
  if (t != dtype::fp16 && t != dtype::bf16) {
    fail(fmt::format("array::from_bits16: dtype {} is not a 16-bit float, expected F16 or BF16",
                     safetensors_name(t)));
  }
  array a = make(t, std::move(shape), bits.size(), "array::from_bits16");
  std::byte* p = a.data.mutable_data();
  for (std::size_t i = 0; i < bits.size(); ++i) detail::store_le(p + 2 * i, bits[i]);
  return a;
}

array array::from_int64(std::vector<std::int64_t> shape, const std::vector<std::int64_t>& v) {
  array a = make(dtype::int64, std::move(shape), v.size(), "array::from_int64");
  std::byte* p = a.data.mutable_data();
  for (std::size_t i = 0; i < v.size(); ++i) {
    detail::store_le(p + 8 * i, static_cast<std::uint64_t>(v[i]));
  }
  return a;
}

array array::from_int32(std::vector<std::int64_t> shape, const std::vector<std::int32_t>& v) {
  array a = make(dtype::int32, std::move(shape), v.size(), "array::from_int32");
  std::byte* p = a.data.mutable_data();
  for (std::size_t i = 0; i < v.size(); ++i) {
    detail::store_le(p + 4 * i, static_cast<std::uint32_t>(v[i]));
  }
  return a;
}

}  // namespace pev::io

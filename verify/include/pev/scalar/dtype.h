#pragma once
// pev::dtype — the one name of an element type, as a value: what a dump holds, what `--dtype`
// asks for, what the exec protocol and the plugin ABI exchange, what a check is measured in. The
// C++ type behind a float dtype is reached with visit_float (never a hand-written switch), and
// its properties (precision, exponent range) come from pev::scalar_traits, so that the value and
// the type cannot disagree.
//
// Text names: "fp64", "fp32", "fp16", "bf16" for floats and "int32", "int64" for integers (the
// names of `--dtype`, the exec protocol and reports); safetensors' "F64" … "I64" are io's
// (pev/io/array.h).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "pev/scalar/traits.h"

namespace pev {

enum class dtype { fp64, fp32, fp16, bf16, int32, int64 };

/// "fp64", "fp32", "fp16", "bf16", "int32", "int64".
const char* to_string(dtype t);
/// The inverse of to_string for the float dtypes ("fp64" only when `allow_fp64`); throws
/// pev::error naming `s` and the accepted names otherwise.
dtype parse_float_dtype(std::string_view s, bool allow_fp64 = false);
/// Bytes per element.
std::size_t size_of(dtype t);
/// fp64, fp32, fp16 or bf16.
constexpr bool is_float(dtype t) { return t != dtype::int32 && t != dtype::int64; }

/// The dtype of a C++ element type (double, float, half, bfloat16, int32_t, int64_t).
template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, double>) {
    return dtype::fp64;
  } else if constexpr (std::is_same_v<T, float>) {
    return dtype::fp32;
  } else if constexpr (std::is_same_v<T, half>) {
    return dtype::fp16;
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return dtype::bf16;
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return dtype::int32;
  } else {
    static_assert(std::is_same_v<T, std::int64_t>, "not an element type of pev");
    return dtype::int64;
  }
}

/// Calls f(std::type_identity<T>{}) with the C++ type of a float dtype and returns its result;
/// throws pev::error for an integer dtype (`what` names the tensor or option in the message).
template <class F>
decltype(auto) visit_float(dtype t, F&& f, std::string_view what = "value");

/// visit_float restricted to the output dtypes of implementations and kernels (fp32, fp16, bf16):
/// pev::error for fp64 and integers.
template <class F>
decltype(auto) visit_output_float(dtype t, F&& f, std::string_view what = "value");

/// A binary floating-point format as error analysis needs it: precision p (with the implicit
/// bit) and the minimum normal exponent (IEEE emin).
struct format {
  int p;
  int emin;
  bool operator==(const format&) const = default;
};
template <class T>
constexpr format format_of() {
  return {scalar_traits<T>::precision, scalar_traits<T>::min_normal_exponent};
}
/// The format of a float dtype (pev::error for integers).
format format_of(dtype t);

namespace detail {
[[noreturn]] void not_a_float(dtype t, std::string_view what);
[[noreturn]] void not_an_output_float(dtype t, std::string_view what);
}  // namespace detail

template <class F>
decltype(auto) visit_float(dtype t, F&& f, std::string_view what) {
  switch (t) {
    case dtype::fp64:
      return f(std::type_identity<double>{});
    case dtype::fp32:
      return f(std::type_identity<float>{});
    case dtype::fp16:
      return f(std::type_identity<half>{});
    case dtype::bf16:
      return f(std::type_identity<bfloat16>{});
    case dtype::int32:
    case dtype::int64:
      break;
  }
  detail::not_a_float(t, what);
}

template <class F>
decltype(auto) visit_output_float(dtype t, F&& f, std::string_view what) {
  switch (t) {
    case dtype::fp32:
      return f(std::type_identity<float>{});
    case dtype::fp16:
      return f(std::type_identity<half>{});
    case dtype::bf16:
      return f(std::type_identity<bfloat16>{});
    default:
      break;
  }
  detail::not_an_output_float(t, what);
}

}  // namespace pev

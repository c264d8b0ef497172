#include "pev/scalar/dtype.h"

#include <string>

#include "pev/core/error.h"

namespace pev {

const char* to_string(dtype t) {
  switch (t) {
    case dtype::fp64:
      return "fp64";
    case dtype::fp32:
      return "fp32";
    case dtype::fp16:
      return "fp16";
    case dtype::bf16:
      return "bf16";
    case dtype::int32:
      return "int32";
    case dtype::int64:
      return "int64";
  }
  return "?";
}

dtype parse_float_dtype(std::string_view s, bool allow_fp64) {
  for (dtype t : {dtype::fp64, dtype::fp32, dtype::fp16, dtype::bf16}) {
    if (t == dtype::fp64 && !allow_fp64) continue;
    if (s == to_string(t)) return t;
  }
  constexpr std::size_t n = 40;  // the name is user input: quoted, clipped
  throw error("unknown dtype '" + std::string(s.substr(0, n)) + (s.size() > n ? "…" : "") +
              (allow_fp64 ? "' (fp64, fp32, fp16 or bf16)" : "' (fp32, fp16 or bf16)"));
}

std::size_t size_of(dtype t) {
  switch (t) {
    case dtype::fp64:
    case dtype::int64:
      return 8;
    case dtype::fp32:
    case dtype::int32:
      return 4;
    case dtype::fp16:
    case dtype::bf16:
      return 2;
  }
  return 0;
}

format format_of(dtype t) {
  return visit_float(t, [](auto tag) { return format_of<typename decltype(tag)::type>(); });
}

namespace detail {
void not_a_float(dtype t, std::string_view what) {
  throw error(std::string(what) + " has dtype " + to_string(t) +
              ", expected a float dtype (fp64, fp32, fp16 or bf16)");
}
void not_an_output_float(dtype t, std::string_view what) {
  throw error(std::string(what) + " has dtype " + to_string(t) + ", expected fp32, fp16 or bf16");
}
}  // namespace detail

}  // namespace pev

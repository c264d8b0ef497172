#include "pev/scalar/dtype.h"

#include <string>

#include "pev/core/error.h"
#include "pev/core/names.h"

namespace pev {

namespace {

// The names of dtype (docs/design.md §11.11); the float dtypes first, as parse_float_dtype lists
// them.
constexpr name_table<dtype, 6> kNames({{{dtype::fp64, "fp64"},
                                        {dtype::fp32, "fp32"},
                                        {dtype::fp16, "fp16"},
                                        {dtype::bf16, "bf16"},
                                        {dtype::int32, "int32"},
                                        {dtype::int64, "int64"}}});
constexpr name_table<dtype, 4> kFloatNames(
    {{{dtype::fp64, "fp64"}, {dtype::fp32, "fp32"}, {dtype::fp16, "fp16"}, {dtype::bf16, "bf16"}}});
constexpr name_table<dtype, 3> kNarrowNames(
    {{{dtype::fp32, "fp32"}, {dtype::fp16, "fp16"}, {dtype::bf16, "bf16"}}});

}  // namespace

const char* to_string(dtype t) { return kNames.name(t); }

dtype parse_float_dtype(std::string_view s, bool allow_fp64) {
  const auto t = allow_fp64 ? kFloatNames.find(s) : kNarrowNames.find(s);
  if (t) return *t;
  constexpr std::size_t n = 40;  // the name is user input: quoted, clipped
  throw error("unknown dtype " + quoted_text(s, n) + " (" +
              (allow_fp64 ? kFloatNames.list(", ", " or ") : kNarrowNames.list(", ", " or ")) +
              ")");
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

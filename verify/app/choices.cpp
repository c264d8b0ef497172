#include "pev/app/choices.h"

#include <fmt/format.h>

#include "pev/core/error.h"
#include "pev/core/names.h"

namespace pev::app {
namespace {

enum class reference_kind { fast, mpfr };
constexpr name_table<reference_kind, 2> kReferences({{{reference_kind::fast, "fast"},
                                                      {reference_kind::mpfr, "mpfr"}}});

constexpr name_table<const metric::libm*, 5> kLibms({{{&metric::kAnyConforming, "any"},
                                                      {&metric::kOneUlp, "one-ulp"},
                                                      {&metric::kGlibc, "glibc"},
                                                      {&metric::kCorrectlyRounded, "cr"},
                                                      {&metric::kFastMath, "fast-math"}}});

}  // namespace

bool parse_mpfr_reference(std::string_view name) {
  if (const auto r = kReferences.find(name)) return *r == reference_kind::mpfr;
  throw error(fmt::format("--reference: expected {}, got {}", kReferences.list(", ", " or "),
                          quoted_text(name)));
}

const metric::libm& parse_libm(std::string_view name) {
  if (const auto l = kLibms.find(name)) return **l;
  throw error(
      fmt::format("--libm: expected {}, got {}", kLibms.list(", ", " or "), quoted_text(name)));
}

}  // namespace pev::app

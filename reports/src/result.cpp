#include "pev/report/result.h"

#include <cmath>

#include "pev/core/names.h"
#include "pev/core/real.h"
#include "pev/core/version.h"

namespace pev::report {

namespace {

// The names of grade (docs/design.md §11.11), best first.
constexpr name_table<grade, 7> kGrades({{{grade::correctly_rounded, "correctly-rounded"},
                                         {grade::faithful, "faithful"},
                                         {grade::drift_free, "drift-free"},
                                         {grade::recipe_hf, "recipe:hf"},
                                         {grade::recipe_ggml, "recipe:ggml"},
                                         {grade::recipe_vllm, "recipe:vllm"},
                                         {grade::not_certified, "not certified"}}});

}  // namespace

const char* to_string(grade g) { return kGrades.name(g); }

std::optional<grade> parse_grade(std::string_view name) { return kGrades.find(name); }

std::vector<bool> rungs_holding(const check& c, const std::vector<std::string>& rungs) {
  std::vector<bool> holds;
  bool vacuous = false;
  for (const std::string& name : rungs) {
    vacuous = vacuous || c.vacuous.count(name) > 0;
    const auto it = c.ladder_rho.find(name);
    const bool in_bound = it != c.ladder_rho.end() && it->second <= 1.0;
    holds.push_back(in_bound && (c.replayed.has_value() || !vacuous));
  }
  return holds;
}

provenance this_build() {
  provenance p;
  p.pev_version = version();
  p.git_revision = git_revision();
  p.compiler = compiler();
  p.fp_flags = fp_flags();
  p.build_flags = build_flags();
  p.libc = libc_version();
  p.host = host_name();
  p.cpu = cpu_model();
  p.mpfr_precision_bits = precision_bits();
  return p;
}

int certification::exit_code() const {
  if (result == grade::not_certified || !claim_holds) return 1;
  return shard && shard->count > 1 ? kExitPartial : 0;
}

int results::exit_code() const {
  if (certification) return certification->exit_code();
  return all_pass() ? 0 : 1;
}

int ulp_bucket(double u) {
  if (!(u <= 8.0)) return 6;  // > 8, NaN, +Inf
  if (u == 0) return 0;
  if (u <= 0.5) return 1;
  if (u <= 1) return 2;
  if (u <= 2) return 3;
  if (u <= 4) return 4;
  return 5;
}

}  // namespace pev::report

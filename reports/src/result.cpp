#include "pev/report/result.h"

#include <cmath>

#include "pev/core/real.h"
#include "pev/core/version.h"

namespace pev::report {

const char* to_string(grade g) {
  switch (g) {
    case grade::correctly_rounded:
      return "correctly-rounded";
    case grade::faithful:
      return "faithful";
    case grade::drift_free:
      return "drift-free";
    case grade::recipe_hf:
      return "recipe:hf";
    case grade::recipe_vllm:
      return "recipe:vllm";
    case grade::recipe_ggml:
      return "recipe:ggml";
    case grade::not_certified:
      return "not certified";
  }
  return "?";
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

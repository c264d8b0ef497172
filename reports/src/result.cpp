#include "pev/report/result.h"

#include <cmath>

namespace pev::report {

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

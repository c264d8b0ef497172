#include "pev/core/hex.h"

#include <cstdio>

namespace pev {

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

std::string dec_hex(double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.17g (%a)", v, v);
  return buf;
}

}  // namespace pev

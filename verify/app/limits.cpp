#include "pev/app/limits.h"

#include <fmt/format.h>

#include "pev/core/error.h"

namespace pev::app {

void require_range(const char* flag, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    throw error(fmt::format("{}: expected a value in [{}, {}], got {}", flag, lo, hi, v));
  }
}

void require_range(const char* flag, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  if (v < lo || v > hi) {
    throw error(fmt::format("{}: expected an integer in [{}, {}], got {}", flag, lo, hi, v));
  }
}

}  // namespace pev::app

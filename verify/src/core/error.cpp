#include "pev/core/error.h"

#include <cstdio>

namespace pev {

void warn_to_stderr(std::string_view message) {
  std::fprintf(stderr, "pev: warning: %.*s\n", static_cast<int>(message.size()), message.data());
}

}  // namespace pev

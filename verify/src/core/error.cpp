#include "pev/core/error.h"

#include <cstdio>

#include "pev/core/text.h"

namespace pev {

void warn_to_stderr(std::string_view message) {
  // Warnings quote config keys and values: shown escaped.
  const std::string text = escaped(message);
  std::fprintf(stderr, "pev: warning: %s\n", text.c_str());
}

}  // namespace pev

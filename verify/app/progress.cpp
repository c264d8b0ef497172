#include "pev/app/progress.h"

#include <unistd.h>

#include <cstdio>

#include "pev/core/interrupt.h"

namespace pev::app {

progress::progress(std::size_t total, const char* label)
    : total_(total), label_(label), on_(total >= 2000 && isatty(STDERR_FILENO)) {}

void progress::step(std::size_t done) {
  interruption_point();  // an embedder's Ctrl-C (pev/core/interrupt.h)
  if (on_ && (done % 256 == 0 || done == total_)) {
    std::fprintf(stderr, "\rpev: %s %zu/%zu", label_, done, total_);
    if (done == total_) std::fputc('\n', stderr);
  }
}

}  // namespace pev::app

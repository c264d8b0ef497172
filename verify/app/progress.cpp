#include "pev/app/progress.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "pev/core/interrupt.h"

namespace pev::app {

bool redraw_gate::due(clock::time_point now, bool last) {
  if (last ? !drawn_ : now - last_ < kRedrawPeriod) return false;
  last_ = now;
  drawn_ = true;
  return true;
}

progress::progress(std::size_t total, const char* label)
    : total_(total), label_(label), on_(total >= 2000 && isatty(STDERR_FILENO)) {}

void progress::step(std::size_t done) {
  interruption_point();  // an embedder's Ctrl-C (pev/core/interrupt.h)
  if (!on_ || !gate_.due(redraw_gate::clock::now(), done == total_)) return;
  std::fprintf(stderr, "\rpev: %s %zu/%zu", label_, done, total_);
  if (done == total_) std::fputc('\n', stderr);
}

certify_progress_fn certify_progress(const char* command) {
  if (!isatty(STDERR_FILENO)) return nullptr;
  // One line per kind of row, each with its own gate (a new kind starts a new line).
  struct line {
    std::string what;
    redraw_gate gate;
  };
  auto current = std::make_shared<line>();
  return [command, current](std::string_view what, std::size_t done, std::size_t total) {
    if (current->what != what) *current = line{std::string(what), redraw_gate()};
    if (!current->gate.due(redraw_gate::clock::now(), done == total)) return;
    std::fprintf(stderr, "\rpev: %s: %.*s %zu/%zu", command, static_cast<int>(what.size()),
                 what.data(), done, total);
    if (done == total) std::fputc('\n', stderr);
  };
}

}  // namespace pev::app

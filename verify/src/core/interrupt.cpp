#include "pev/core/interrupt.h"

#include <atomic>

namespace pev {
namespace {

std::atomic<interrupt_check> installed{nullptr};

}  // namespace

void set_interrupt_check(interrupt_check check) { installed.store(check); }

void interruption_point() {
  const interrupt_check check = installed.load(std::memory_order_relaxed);
  if (check && check()) throw interrupted{};
}

}  // namespace pev

#pragma once
// No exit 0 without a verdict. Code that pev runs in its own process (an in-process plugin) can
// call exit() — in a constructor, in any call — and would end pev with the plugin's status, 0
// included, before any certificate is written: a CI gate on the exit code would pass. While an
// exit_guard is armed, such an exit() runs `on_exit` instead (which writes a certificate saying so)
// and ends the process with exit code 1 (not certified). _exit() and crashes bypass every handler:
// only a child process (--plugin's default isolation) turns those into verdicts.

#include <functional>

namespace pev::cli {

class exit_guard {
 public:
  /// Arms the guard: an exit() before disarm() calls `on_exit(status)`, then _exit(1).
  explicit exit_guard(std::function<void(int status)> on_exit);
  /// Disarms it.
  ~exit_guard();
  exit_guard(const exit_guard&) = delete;
  exit_guard& operator=(const exit_guard&) = delete;

  /// Disarms it (pev is about to exit with its own verdict).
  void disarm();
};

}  // namespace pev::cli

#include "exit_guard.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <utility>

namespace pev::cli {

namespace {

std::function<void(int)>* armed = nullptr;

// glibc's on_exit passes the status to exit(); atexit does not.
void guard(int status, void*) {
  std::function<void(int)>* f = armed;
  if (f == nullptr) return;
  armed = nullptr;
  std::fprintf(stderr,
               "pev: error: the process was ended by exit(%d) before pev reached a verdict\n",
               status);
  try {
    (*f)(status);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pev: error: while recording it: %s\n", e.what());
  } catch (...) {
  }
  std::fflush(nullptr);
  ::_exit(1);
}

}  // namespace

exit_guard::exit_guard(std::function<void(int status)> on_exit) {
  // Registered at every arming, so that it runs before the exit handlers of libraries first used
  // since (handlers run last registered, first run); an unarmed handler does nothing.
  ::on_exit(guard, nullptr);
  armed = new std::function<void(int)>(std::move(on_exit));
}

exit_guard::~exit_guard() { disarm(); }

void exit_guard::disarm() {
  delete armed;
  armed = nullptr;
}

}  // namespace pev::cli

#pragma once
// The time limit of a Python callable's calls (pev.certify's timeout=, docs/python.md §4.3): a
// thread that, when a call runs past the limit, raises an exception asynchronously in the calling
// thread (PyThreadState_SetAsyncExc), which Python delivers at the callable's next bytecode — a
// pure-Python loop stops; a C call that never returns to the interpreter cannot be stopped. It
// raises again every second while the call goes on (a callable that swallowed the first). Whether
// the limit passed is the watchdog's to say (disarm()), not the exception's: a callable that caught
// it and returned still timed out.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common.h"

namespace pev::python {

class call_watchdog {
 public:
  /// A watchdog of `seconds` per call raising `type` (a BaseException subclass) in the caller.
  call_watchdog(double seconds, py::handle type);
  /// Stops its thread (the GIL is released while it ends).
  ~call_watchdog();
  call_watchdog(const call_watchdog&) = delete;
  call_watchdog& operator=(const call_watchdog&) = delete;

  /// A call starts on this thread. GIL held.
  void arm();
  /// The call is over. GIL held. True when it ran past the limit; an exception raised but not yet
  /// delivered is withdrawn, so nothing reaches code after the call.
  bool disarm();
  double seconds() const { return seconds_; }

 private:
  using clock = std::chrono::steady_clock;
  void run();

  double seconds_;
  PyObject* type_;  // borrowed: a module attribute, alive as long as the module
  std::mutex m_;
  std::condition_variable cv_;
  bool quit_ = false, armed_ = false, fired_ = false;
  bool idle_ = false;       // the thread waits for a call, not for a deadline
  std::uint64_t call_ = 0;  // counts the calls: a late firing never reaches the next one
  unsigned long thread_ = 0;
  clock::time_point deadline_;
  std::thread t_;
};

}  // namespace pev::python

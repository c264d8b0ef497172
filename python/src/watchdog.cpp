#include "watchdog.h"

#include <pthread.h>

#include <csignal>

namespace pev::python {

namespace {

constexpr std::chrono::seconds kAgain{1};  // raised again while the call goes on

}  // namespace

call_watchdog::call_watchdog(double seconds, py::handle type)
    : seconds_(seconds), type_(type.ptr()) {
  // The thread blocks every signal (it inherits the mask it is created with): a Ctrl-C is then
  // delivered to a thread that Python handles it in, never to this one (docs/python.md §4.3).
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  try {
    t_ = std::thread([this] { run(); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

call_watchdog::~call_watchdog() {
  {
    std::lock_guard<std::mutex> l(m_);
    quit_ = true;
  }
  cv_.notify_all();
  // The thread may be waiting for the GIL to raise (it finds the call over and returns).
  if (PyGILState_Check()) {
    py::gil_scoped_release nogil;
    t_.join();
  } else {
    t_.join();
  }
}

void call_watchdog::arm() {
  bool wake = false;
  {
    std::lock_guard<std::mutex> l(m_);
    ++call_;
    armed_ = true;
    fired_ = false;
    thread_ = PyThread_get_thread_ident();
    deadline_ = clock::now() + std::chrono::duration_cast<clock::duration>(
                                   std::chrono::duration<double>(seconds_));
    wake = idle_;
  }
  // Only an idle thread is woken: one waiting for an earlier deadline (every deadline is later
  // than the ones before) wakes by itself and waits again. Calls that return at once (a callable
  // asked for specs it does not take) then cost no thread switch.
  if (wake) cv_.notify_all();
}

bool call_watchdog::disarm() {
  // Lock order: the GIL, then m_ (as run() takes them).
  std::lock_guard<std::mutex> l(m_);
  armed_ = false;
  const bool fired = fired_;
  fired_ = false;
  if (fired) PyThreadState_SetAsyncExc(thread_, nullptr);
  return fired;
}

void call_watchdog::run() {
  std::unique_lock<std::mutex> l(m_);
  while (!quit_) {
    if (!armed_) {
      idle_ = true;
      cv_.wait(l);
      idle_ = false;
      continue;
    }
    if (clock::now() < deadline_) {
      cv_.wait_until(l, deadline_);
      continue;
    }
    const std::uint64_t call = call_;
    l.unlock();
    {
      // Taken while the callable runs Python code (the interpreter hands the GIL over every few
      // milliseconds); never while it is in a C call that holds it.
      py::gil_scoped_acquire gil;
      std::lock_guard<std::mutex> l2(m_);
      if (armed_ && call_ == call && !quit_) {
        PyThreadState_SetAsyncExc(thread_, type_);
        fired_ = true;
        deadline_ = clock::now() + kAgain;
      }
    }
    l.lock();
  }
}

}  // namespace pev::python

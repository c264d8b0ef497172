#pragma once
// Progress of a long request on stderr (docs/design.md §5.7), shared by `pev reference`, `pev
// compute`, `pev certify` and pev's Python module: only when stderr is a terminal (never in files,
// pipes or a test's captured output), redrawn at most every kRedrawPeriod.

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace pev::app {

/// The least time between two redraws of a progress line: a few a second, whatever the rate of
/// steps (`pev reference` of 2^19 rows redrew 2048 times, every 256 rows).
inline constexpr std::chrono::milliseconds kRedrawPeriod{250};

/// When a progress line is redrawn: the first time kRedrawPeriod after the start, then at most
/// every kRedrawPeriod, and at the last step when it was drawn before (a request that finishes
/// within kRedrawPeriod draws nothing).
class redraw_gate {
 public:
  using clock = std::chrono::steady_clock;
  explicit redraw_gate(clock::time_point start = clock::now()) : last_(start) {}
  /// Whether to redraw at `now`; `last`: the last step.
  bool due(clock::time_point now, bool last);

 private:
  clock::time_point last_;
  bool drawn_ = false;
};

/// Progress on stderr when it is a terminal (docs/design.md §5.7), for requests that take more than
/// a moment.
class progress {
 public:
  progress(std::size_t total, const char* label);
  /// Also an interruption point (pev/core/interrupt.h).
  void step(std::size_t done);

 private:
  std::size_t total_;
  const char* label_;
  bool on_;
  redraw_gate gate_;
};

/// certify::options::progress: rows compared of the total ("pev: certify: table rows 1024/4096"),
/// each kind of row on its own line.
using certify_progress_fn =
    std::function<void(std::string_view what, std::size_t done, std::size_t total)>;
/// The progress of `command` on stderr when it is a terminal (docs/certify.md §9.1); none
/// otherwise.
certify_progress_fn certify_progress(const char* command);

}  // namespace pev::app

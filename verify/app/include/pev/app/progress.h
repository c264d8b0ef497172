#pragma once
// Progress of a long request on stderr (docs/design.md §5.7), shared by `pev reference`, `pev
// compute` and pev's Python module.

#include <cstddef>

namespace pev::app {

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
};

}  // namespace pev::app

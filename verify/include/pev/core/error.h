#pragma once
// pev::error and the warning sink. Bad input and bad configuration throw pev::error; the CLI turns
// it into exit code 2 with its message (docs/design.md §11.5). Warnings (what transformers only
// warns about) go to a sink so that library users decide where they land; the CLI prints them on
// stderr.

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pev {

/// Bad input, bad configuration or an I/O failure. The message names the file, key or flag and the
/// rule.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Receives one warning message (without a trailing newline).
using warning_sink = std::function<void(std::string_view)>;

/// Prints "pev: warning: MESSAGE" on stderr.
void warn_to_stderr(std::string_view message);

}  // namespace pev

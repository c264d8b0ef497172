#pragma once
// Runs the `pev` binary built by this tree and captures its exit code, stdout and stderr.

#include <string>
#include <vector>

namespace pev::test {

struct run_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs PEV_BINARY with `args` (no shell: arguments are passed as they are).
run_result run_pev(const std::vector<std::string>& args);

/// Runs PEV_BINARY with `args` and its stdout opened on `out` (e.g. /dev/full); `out` is not read
/// back (run_result::out stays empty).
run_result run_pev_with_stdout(const std::vector<std::string>& args, const std::string& out);

/// Starts PEV_BINARY with `args` in the background, its output discarded; returns its pid (for
/// tests that kill it).
int spawn_pev(const std::vector<std::string>& args);

/// A fresh directory under the test temp dir.
std::string temp_dir(const std::string& name);

}  // namespace pev::test

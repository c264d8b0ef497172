// The `pev` tool: positional-encoding verifier (docs/design.md §5).
// Exit codes (docs/design.md §5.6): 0 verified, 1 checks failed, 2 bad usage or bad input (message
// on stderr names the file, field or flag).

#include <mpfr.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/version.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "commands.h"
#include "pev/core/error.h"
#include "pev/core/real.h"
#include "pev/core/text.h"
#include "pev/core/version.h"

namespace {

std::string version_text() {
  return std::string("pev ") + pev::version() + " (git " + pev::git_revision() + ")\n" +
         "  reference: Boost.Multiprecision " + std::to_string(BOOST_VERSION / 100000) + "." +
         std::to_string(BOOST_VERSION / 100 % 1000) + " on MPFR " + mpfr_get_version() + ", " +
         std::to_string(pev::default_precision_bits()) + " bits by default\n" +
         "  compiler: " + pev::compiler() + "\n  flags: " + pev::fp_flags() +
         "\n  libc: " + pev::libc_version();
}

// What pev wrote to standard output reached it, or exit 2 (docs/cli.md §2.1): a full disk or
// a closed pipe behind `>` must not pass for success. Both std::cout and C's stdout are flushed and
// checked, whatever the command and format wrote through.
int finish_stdout(int code) {
  errno = 0;
  std::cout.flush();  // through stdout's buffer (synced with stdio): the reason is in errno
  const bool c_failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  const int err = errno;
  if (c_failed || !std::cout) {
    std::fprintf(stderr, "pev: error: cannot write to standard output%s%s\n", err != 0 ? ": " : "",
                 err != 0 ? std::strerror(err) : "");
    return 2;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "pev — positional-encoding verifier: checks implementations of transformer positional "
      "encodings (sinusoidal, learned, ALiBi, T5, RoPE and its scalings) against an "
      "arbitrary-precision reference.\nExit codes: 0 ok, 1 checks failed, 2 bad usage or input.",
      "pev"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  app.fallthrough(false);
  std::vector<pev::cli::command> commands;
  commands.push_back(pev::cli::add_list(app));
  commands.push_back(pev::cli::add_reference(app));
  commands.push_back(pev::cli::add_compute(app));
  commands.push_back(pev::cli::add_certify(app));
  commands.push_back(pev::cli::add_serve(app));
  commands.push_back(pev::cli::add_report(app));
  commands.push_back(pev::cli::add_merge(app));
  commands.push_back(pev::cli::add_verify(app));
  pev::cli::invocation().assign(argv + std::min(argc, 1), argv + argc);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // --help and --version print here too
    return finish_stdout(code == 0 ? 0 : 2);
  }
  try {
    for (const auto& c : commands) {
      if (c.app->parsed()) return finish_stdout(c.run());
    }
    return 2;
  } catch (const pev::error& e) {
    // Messages quote names and text from inputs and child processes: escaped, never raw.
    std::fprintf(stderr, "pev: error: %s\n", pev::escaped(e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "pev: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pev: error: %s\n", pev::escaped(e.what()).c_str());
    return 2;
  }
}

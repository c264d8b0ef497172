#pragma once
// Build provenance compiled into the library: version, git revision, compiler and the flags that
// change floating-point results (docs/numerics.md §6.5).

#include <string>

namespace pev {

/// "0.1.0"
const char* version();
/// Short git revision of the source tree at configure time, or "unknown".
const char* git_revision();
/// Compiler name and version, e.g. "GCC 12.2.0".
std::string compiler();
/// Floating-point relevant flags: FP contraction, -march, FTZ/DAZ state of the calling thread.
std::string fp_flags();
/// glibc version of the running process.
std::string libc_version();
/// Build type and compiler flags of the library, e.g. "Release: -O3 -DNDEBUG".
std::string build_flags();
/// The host's name, or "unknown".
std::string host_name();
/// The CPU model (Linux /proc/cpuinfo), or "unknown".
std::string cpu_model();

}  // namespace pev

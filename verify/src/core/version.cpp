#include "pev/core/version.h"

#include <gnu/libc-version.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <fstream>
#include <string>

#include "pev/build_info.h"
#include "pev/git_revision.h"

namespace pev {

const char* version() { return PEV_VERSION_STRING; }
const char* git_revision() { return PEV_GIT_REVISION; }

std::string compiler() {
#if defined(__clang__)
  return "Clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown";
#endif
}

std::string fp_flags() {
  std::string flags = "build=" PEV_BUILD_TYPE " cxxflags=[" PEV_CXX_FLAGS "] -ffp-contract=off";
#if defined(__FMA__)
  flags += " fma=available";
#else
  flags += " fma=unavailable";
#endif
#if defined(__FAST_MATH__)
  flags += " fast-math=on";
#endif
  const unsigned csr = _mm_getcsr();
  flags += (csr & 0x8000) ? " ftz=on" : " ftz=off";
  flags += (csr & 0x0040) ? " daz=on" : " daz=off";
  return flags;
}

std::string libc_version() { return std::string("glibc ") + gnu_get_libc_version(); }

std::string build_flags() { return std::string(PEV_BUILD_TYPE) + ": " + PEV_CXX_FLAGS; }

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "unknown";
}

}  // namespace pev

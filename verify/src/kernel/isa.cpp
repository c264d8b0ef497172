// The kernels' instruction-set choice (isa.h): CPU detection, the PEV_KERNEL_ISA override and the
// tests' forcing hook.

#include "isa.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "pev/core/error.h"

#if PEV_KERNEL_X86
#include <cpuid.h>
#endif

namespace pev::kernel::detail {
namespace {

// -1: not forced; otherwise the forced isa's value.
std::atomic<int> forced{-1};

}  // namespace

isa detected_isa() {
#if PEV_KERNEL_X86
  static const isa best = [] {
    // __builtin_cpu_supports checks that the OS saves the AVX state; F16C is read from CPUID
    // (leaf 1, ECX) because not every compiler's builtin knows its name.
    __builtin_cpu_init();
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    return __builtin_cpu_supports("avx2") && f16c ? isa::avx2 : isa::baseline;
  }();
  return best;
#else
  return isa::baseline;
#endif
}

// PEV_KERNEL_ISA=baseline (or PEV_APPLY_ISA=baseline, its first name) selects the baseline code on
// any CPU (to compare the paths; the results are the same bits). Anything else, or unset, selects
// the best supported one.
isa default_isa() {
  static const isa chosen = [] {
    for (const char* name : {"PEV_KERNEL_ISA", "PEV_APPLY_ISA"}) {
      const char* env = std::getenv(name);
      if (env != nullptr && std::string_view(env) == "baseline") return isa::baseline;
    }
    return detected_isa();
  }();
  return chosen;
}

isa active_isa() {
  const int f = forced.load(std::memory_order_relaxed);
  return f < 0 ? default_isa() : static_cast<isa>(f);
}

void force_isa(std::optional<isa> i) {
  if (i && *i == isa::avx2 && detected_isa() != isa::avx2) {
    throw error("kernel: this CPU lacks AVX2 and F16C");
  }
  forced.store(i ? static_cast<int>(*i) : -1, std::memory_order_relaxed);
}

}  // namespace pev::kernel::detail

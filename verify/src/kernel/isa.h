#pragma once
// Internal: the instruction sets the kernels' hot loops are compiled for and the one run-time
// choice among them (isa.cpp). Every path gives the same bits: the wider ones run the same
// operations on more lanes (docs/design.md §3.6).

#include <optional>

#if defined(__x86_64__) && defined(__GNUC__)
#define PEV_KERNEL_X86 1
#else
#define PEV_KERNEL_X86 0
#endif

namespace pev::kernel::detail {

/// Instruction sets the drivers are compiled for. avx2 means AVX2 and F16C (x86-64-v3 without
/// relying on FMA: the kernels' arithmetic is written without contractions).
enum class isa { baseline, avx2 };

/// The best isa this CPU supports.
isa detected_isa();
/// The isa calls use: forced, else baseline when the environment has PEV_KERNEL_ISA=baseline (or
/// its older name PEV_APPLY_ISA=baseline), else detected_isa().
isa active_isa();
/// Forces an isa (tests run every path); nullopt restores the default. An isa the CPU lacks throws
/// pev::error.
void force_isa(std::optional<isa> i);

}  // namespace pev::kernel::detail

#pragma once
// PEV_VECTOR_LOOPS marks a function whose loops the compiler vectorises: GCC builds it for AVX-512
// (x86-64-v4), for AVX2 and for the baseline, and picks one at load time (target_clones). The
// loops use no FP contraction (pev's flags), so every version computes the same values
// (docs/performance.md §4).

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PEV_VECTOR_LOOPS __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define PEV_VECTOR_LOOPS
#endif

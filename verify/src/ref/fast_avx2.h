#pragma once
// The double stage on vectors (x86-64 with AVX2 and FMA): a table row's pairs four at a time
// (fast_avx2.cpp). PEV_FAST_SIMD is 1 where it is compiled.

#include <cstddef>
#include <cstdint>

#include "fast_scalar.h"
#include "fast_tables.h"
#include "pev/ref/fast.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define PEV_FAST_SIMD 1
#define PEV_FAST_AVX2_TARGET __attribute__((target("avx2,fma")))
#else
#define PEV_FAST_SIMD 0
#endif

namespace pev::ref::fast_detail {

/// Whether the CPU runs the vector rows (AVX2 and FMA).
bool cpu_has_avx2();

#if PEV_FAST_SIMD
/// The regular frequencies' constants in the layout of the vector double stage.
vector_freqs make_vector_freqs(const std::vector<frequency>& freq);

/// The double stage of a row at position x (one exact double, p ≠ 0), pairs 0 … n − 1: the
/// decided values into s_out and c_out (and, with V, the evaluated ones into s_val and c_val);
/// redo[i] = 1 for each pair left to the scalar code (its outputs are then unspecified). Returns
/// the number of pairs decided.
template <class T, bool V>
PEV_FAST_AVX2_TARGET std::size_t double_stage_row(const constants& K, const vector_freqs& F,
                                                  double x, double xabs, const scale& sc, T* s_out,
                                                  T* c_out, double* s_val, double* c_val,
                                                  std::uint8_t* redo);
#endif

}  // namespace pev::ref::fast_detail

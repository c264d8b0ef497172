#pragma once
// Sinusoidal and learned absolute-encoding kernels (float, half, bfloat16 outputs).
//
// clang-format off
// Contracts (tests/kernel accuracy-contract table; docs/numerics.md §10.1–§10.3):
//   sinusoidal hf        interleaved: the DistilBERT float64 pipeline cast once (≤ ½ ulp of the
//                        output + the angle's θ·(ln(b)·x + 3)·2^−53 and one ulp of double, i.e.
//                        ≤ θ·6.2·2^−52 at b = 10^4); blocked: fairseq fp32 (exp-based
//                        frequencies, ≈ θ·(8 + 1)·u).
//   sinusoidal table-*   the hf values rounded to the 16-bit storage type.
//   sinusoidal accurate  ≤ 1 ulp for every position < 2^53, correctly rounded except ~2^−26 per
//                        value.
//   learned hf           PyTorch linear interpolation in fp32 (≤ 3 roundings of the table's
//                        magnitude, plus the fp32 source index); lookups are exact.
//   learned accurate     the exact interpolation rounded once (correctly rounded).
// `ggml` has no absolute-encoding pipeline: pev::error.
// clang-format on
//
// Precise forms (the bounds tests/kernel/test_contracts.cpp enforces, per column and position):
//   interleaved hf: the angle p/b^x̂ carries the float64 exponent's rounding amplified by ln b and
//     the pow and division roundings, θ·(ln(b)·x + 3)·2^−53 (≤ θ·6.2·2^−52 at b = 10^4), plus one
//     ulp of double for np.sin/np.cos, then ½ ulp of the output.
//   learned hf: besides the three roundings of the interpolation, the fp32 source index
//     fl(scale·t) is off by up to ~t·2^−23, which moves the value by that much times the local
//     slope |row[i+1] − row[i]|: at 2048 target rows of a [−1, 1) table this term dominates.
//   The table strategies round the hf value to their storage type, then convert to the output.

#include <cstdint>
#include <span>

#include "pev/kernel/strategy.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"

namespace pev::kernel {

/// PE rows for each position: out is [positions.size(), d_model] in the spec's layout.
template <class T>
void sinusoidal_table(const spec::sinusoidal& s, strategy st,
                      std::span<const std::int64_t> positions, std::span<T> out);

/// Learned-table rows (lookup or interpolation to target_positions): out is [positions.size(),
/// d_model]. Throws pev::error for a position outside the table.
template <class T>
void learned_table(const spec::learned& s, strategy st, std::span<const std::int64_t> positions,
                   std::span<T> out);

extern template void sinusoidal_table<float>(const spec::sinusoidal&, strategy,
                                             std::span<const std::int64_t>, std::span<float>);
extern template void sinusoidal_table<half>(const spec::sinusoidal&, strategy,
                                            std::span<const std::int64_t>, std::span<half>);
extern template void sinusoidal_table<bfloat16>(const spec::sinusoidal&, strategy,
                                                std::span<const std::int64_t>, std::span<bfloat16>);
extern template void learned_table<float>(const spec::learned&, strategy,
                                          std::span<const std::int64_t>, std::span<float>);
extern template void learned_table<half>(const spec::learned&, strategy,
                                         std::span<const std::int64_t>, std::span<half>);
extern template void learned_table<bfloat16>(const spec::learned&, strategy,
                                             std::span<const std::int64_t>, std::span<bfloat16>);

}  // namespace pev::kernel

#pragma once
// The per-value inputs of a row comparison (figures::add_rows, rope_bounds::table_rows) from an
// implementation's values and the reference's, in loops the compiler vectorises.

#include <cstddef>
#include <cstdint>
#include <span>

#include "pev/scalar/dtype.h"

namespace pev::compare {

/// One row of n values of type T: the implementation's got[j] (n encodings of T in memory order,
/// at any alignment — e.g. a row of a mapped dump), the reference's RN_T rn[e_j] and exact double
/// exact[e_j], with e_j = offset + column[j] (column empty: offset + j). Writes got as doubles,
/// the exact values, their magnitudes, and metric::ulp_distance(got[j], rn[e_j]).
template <class T>
void row_inputs(const std::byte* got, std::size_t n, const T* rn, const double* exact,
                std::span<const std::int64_t> column, std::size_t offset, double* got_d,
                double* exact_d, double* abs_d, std::uint64_t* dist);

extern template void row_inputs<float>(const std::byte*, std::size_t, const float*, const double*,
                                       std::span<const std::int64_t>, std::size_t, double*, double*,
                                       double*, std::uint64_t*);
extern template void row_inputs<double>(const std::byte*, std::size_t, const double*, const double*,
                                        std::span<const std::int64_t>, std::size_t, double*,
                                        double*, double*, std::uint64_t*);
extern template void row_inputs<half>(const std::byte*, std::size_t, const half*, const double*,
                                      std::span<const std::int64_t>, std::size_t, double*, double*,
                                      double*, std::uint64_t*);
extern template void row_inputs<bfloat16>(const std::byte*, std::size_t, const bfloat16*,
                                          const double*, std::span<const std::int64_t>, std::size_t,
                                          double*, double*, double*, std::uint64_t*);

}  // namespace pev::compare

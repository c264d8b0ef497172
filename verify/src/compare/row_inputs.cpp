#include "pev/compare/row_inputs.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "pev/core/simd.h"
#include "pev/scalar/traits.h"

namespace pev::compare {

namespace {

/// metric::ulp_distance(a, b) without branches (the same value: ordinals from sign and
/// magnitude, their distance modulo 2^64, 0 for two NaNs and UINT64_MAX for one).
template <class T>
[[gnu::always_inline]] inline std::uint64_t distance(T a, T b) {
  using tr = scalar_traits<T>;
  constexpr auto sign = static_cast<std::uint64_t>(tr::sign_mask);
  constexpr auto inf = static_cast<std::uint64_t>(tr::infinity_bits);
  constexpr unsigned top = sizeof(typename tr::bits_type) * 8 - 1;
  const auto x = static_cast<std::uint64_t>(tr::to_bits(a));
  const auto y = static_cast<std::uint64_t>(tr::to_bits(b));
  const std::uint64_t mx = x & ~sign, my = y & ~sign;
  const std::uint64_t sx = -(x >> top), sy = -(y >> top);        // all ones when negative
  const std::uint64_t ox = (mx ^ sx) - sx, oy = (my ^ sy) - sy;  // two's complement ordinals
  const std::uint64_t ge =
      -static_cast<std::uint64_t>(static_cast<std::int64_t>(ox) >= static_cast<std::int64_t>(oy));
  const std::uint64_t d = ((ox - oy) & ge) | ((oy - ox) & ~ge);
  const std::uint64_t nx = -static_cast<std::uint64_t>(mx > inf);
  const std::uint64_t ny = -static_cast<std::uint64_t>(my > inf);
  const std::uint64_t one_nan = nx ^ ny, no_nan = ~(nx | ny);
  return (d & no_nan) | (std::numeric_limits<std::uint64_t>::max() & one_nan);
}

template <class T>
[[gnu::always_inline]] inline void inputs(const std::byte* __restrict got, const T* __restrict rn,
                                          const double* __restrict exact,
                                          const std::int64_t* __restrict column, std::size_t n,
                                          std::size_t offset, double* __restrict got_d,
                                          double* __restrict exact_d, double* __restrict abs_d,
                                          std::uint64_t* __restrict dist) {
  // got's encodings are loaded with memcpy (any alignment; an unaligned vector load).
  const auto load = [got](std::size_t j) {
    T g;
    std::memcpy(&g, got + j * sizeof(T), sizeof(T));
    return g;
  };
  if (column == nullptr) {
    for (std::size_t j = 0; j < n; ++j) {
      const T g = load(j);
      got_d[j] = scalar_traits<T>::to_double(g);
      exact_d[j] = exact[offset + j];
      abs_d[j] = std::fabs(exact[offset + j]);
      dist[j] = distance(g, rn[offset + j]);
    }
  } else {
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t e = offset + static_cast<std::size_t>(column[j]);
      const T g = load(j);
      got_d[j] = scalar_traits<T>::to_double(g);
      exact_d[j] = exact[e];
      abs_d[j] = std::fabs(exact[e]);
      dist[j] = distance(g, rn[e]);
    }
  }
}

#define PEV_ROW_INPUTS(T, NAME)                                                                    \
  PEV_VECTOR_LOOPS void NAME(const std::byte* got, const T* rn, const double* exact,               \
                             const std::int64_t* column, std::size_t n, std::size_t offset,        \
                             double* got_d, double* exact_d, double* abs_d, std::uint64_t* dist) { \
    inputs<T>(got, rn, exact, column, n, offset, got_d, exact_d, abs_d, dist);                     \
  }
PEV_ROW_INPUTS(float, inputs_f32)
PEV_ROW_INPUTS(double, inputs_f64)
PEV_ROW_INPUTS(half, inputs_f16)
PEV_ROW_INPUTS(bfloat16, inputs_bf16)
#undef PEV_ROW_INPUTS

}  // namespace

template <class T>
void row_inputs(const std::byte* got, std::size_t n, const T* rn, const double* exact,
                std::span<const std::int64_t> column, std::size_t offset, double* got_d,
                double* exact_d, double* abs_d, std::uint64_t* dist) {
  const std::int64_t* col = column.empty() ? nullptr : column.data();
  if constexpr (std::is_same_v<T, float>) {
    inputs_f32(got, rn, exact, col, n, offset, got_d, exact_d, abs_d, dist);
  } else if constexpr (std::is_same_v<T, double>) {
    inputs_f64(got, rn, exact, col, n, offset, got_d, exact_d, abs_d, dist);
  } else if constexpr (std::is_same_v<T, half>) {
    inputs_f16(got, rn, exact, col, n, offset, got_d, exact_d, abs_d, dist);
  } else {
    inputs_bf16(got, rn, exact, col, n, offset, got_d, exact_d, abs_d, dist);
  }
}

template void row_inputs<float>(const std::byte*, std::size_t, const float*, const double*,
                                std::span<const std::int64_t>, std::size_t, double*, double*,
                                double*, std::uint64_t*);
template void row_inputs<double>(const std::byte*, std::size_t, const double*, const double*,
                                 std::span<const std::int64_t>, std::size_t, double*, double*,
                                 double*, std::uint64_t*);
template void row_inputs<half>(const std::byte*, std::size_t, const half*, const double*,
                               std::span<const std::int64_t>, std::size_t, double*, double*,
                               double*, std::uint64_t*);
template void row_inputs<bfloat16>(const std::byte*, std::size_t, const bfloat16*, const double*,
                                   std::span<const std::int64_t>, std::size_t, double*, double*,
                                   double*, std::uint64_t*);

}  // namespace pev::compare

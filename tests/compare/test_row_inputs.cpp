// compare::row_inputs (the vectorised per-value inputs of a row comparison) against the scalar
// definitions: metric::ulp_distance, the conversion to double and the magnitudes, for every
// compared type, on random encodings and the special ones (±0, subnormals, ±Inf, NaNs of both
// signs), with columns in order and permuted.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "pev/compare/row_inputs.h"
#include "pev/metric/ulp.h"
#include "pev/scalar/traits.h"

namespace pev {
namespace {

template <class T>
void check_type(std::mt19937_64& rng) {
  using tr = scalar_traits<T>;
  using bits = typename tr::bits_type;
  const std::vector<bits> special = {0,
                                     tr::sign_mask,
                                     1,
                                     static_cast<bits>(tr::sign_mask | 1),
                                     tr::infinity_bits,
                                     static_cast<bits>(tr::sign_mask | tr::infinity_bits),
                                     static_cast<bits>(tr::infinity_bits | 1),
                                     static_cast<bits>(tr::sign_mask | tr::infinity_bits | 1),
                                     static_cast<bits>(tr::infinity_bits - 1),
                                     static_cast<bits>(tr::sign_mask | (tr::infinity_bits - 1))};
  auto draw = [&] {
    return rng() % 4 == 0 ? special[rng() % special.size()] : static_cast<bits>(rng());
  };
  const std::size_t n = 257, P = 300;
  for (int round = 0; round < 200; ++round) {
    std::vector<T> got(n), rn(P + n);
    std::vector<double> exact(P + n);
    std::vector<std::int64_t> column(n);
    for (std::size_t j = 0; j < n; ++j) {
      got[j] = tr::from_bits(draw());
      column[j] = static_cast<std::int64_t>(rng() % P);
    }
    for (std::size_t e = 0; e < rn.size(); ++e) {
      rn[e] = tr::from_bits(draw());
      exact[e] = std::ldexp(static_cast<double>(rng() % 1000) - 500, -static_cast<int>(rng() % 60));
    }
    const bool permuted = round % 2 == 1;
    const std::size_t offset = rng() % (P - n / 2);
    std::vector<double> g(n), x(n), a(n);
    std::vector<std::uint64_t> d(n);
    // got's encodings at an odd address (row_inputs reads any alignment).
    std::vector<std::byte> bytes(n * sizeof(T) + 1);
    std::memcpy(bytes.data() + 1, got.data(), n * sizeof(T));
    compare::row_inputs<T>(
        bytes.data() + 1, n, rn.data(), exact.data(),
        permuted ? std::span<const std::int64_t>(column) : std::span<const std::int64_t>(), offset,
        g.data(), x.data(), a.data(), d.data());
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t e = offset + (permuted ? static_cast<std::size_t>(column[j]) : j);
      ASSERT_EQ(d[j], metric::ulp_distance(got[j], rn[e]))
          << tr::name << " " << tr::to_bits(got[j]) << " " << tr::to_bits(rn[e]);
      const double want = tr::to_double(got[j]);
      ASSERT_TRUE(std::isnan(want) ? std::isnan(g[j]) : g[j] == want);
      ASSERT_EQ(x[j], exact[e]);
      ASSERT_EQ(a[j], std::fabs(exact[e]));
    }
  }
}

TEST(RowInputs, EqualTheScalarDefinitions) {
  const unsigned seed = 20261124;
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  check_type<float>(rng);
  check_type<double>(rng);
  check_type<half>(rng);
  check_type<bfloat16>(rng);
}

}  // namespace
}  // namespace pev

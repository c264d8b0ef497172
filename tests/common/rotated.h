#pragma once
// A dump of rotated q for the certify tests: seeded standard-normal inputs [T, H, D] (D the
// implementation's head_dim) rotated by an implementation at positions first … first + T − 1, as
// tensors q_in, q_out and positions.

#include <cstdint>
#include <optional>
#include <random>
#include <variant>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/impl/implementation.h"

namespace pev::test {

inline certify::dump rotated_q(const impl::implementation& im, std::int64_t first, std::int64_t T,
                               std::int64_t H, std::uint64_t seed) {
  const std::int64_t D = std::get<spec::rope>(im.claimed_spec()).head_dim;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) pos[static_cast<std::size_t>(t)] = first + t;
  std::vector<float> in(static_cast<std::size_t>(T * H * D)), out(in.size());
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : in) v = normal(rng);
  im.rope_rotate(pos, std::nullopt, kernel::heads_view<const float>{in, T, H, D},
                 kernel::heads_view<float>{out, T, H, D});
  certify::dump d;
  d.tensors.emplace("q_in", io::array::from_values<float>({T, H, D}, in));
  d.tensors.emplace("q_out", io::array::from_values<float>({T, H, D}, out));
  d.tensors.emplace("positions", io::array::from_int64({T}, pos));
  return d;
}

}  // namespace pev::test

#include "turns.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace pev::kernel::detail {

turn turn_of_angle(const real& radians) {
  // 192 fraction bits plus margin: the quotient by 2π and the floor are the only roundings, both
  // far below 2^−192.
  const precision_scope work(std::max(precision_bits(), 256u) + 64u);
  real x = radians / (2 * pi());
  x -= floor(x);  // [0, 1)
  // Six 32-bit chunks, each exact in a double.
  std::array<std::uint64_t, 6> chunk{};
  const real two32(4294967296.0);
  for (auto& c : chunk) {
    x *= two32;  // exact
    const real whole = floor(x);
    c = static_cast<std::uint64_t>(whole.convert_to<double>());
    x -= whole;  // exact
  }
  turn t;
  t.hi = (chunk[0] << 32) | chunk[1];
  t.mid = (chunk[2] << 32) | chunk[3];
  t.lo = (chunk[4] << 32) | chunk[5];
  // Round to nearest on the remainder (ties cannot occur for the irrational θ/2π of real
  // frequencies; a rational one is exact long before 2^−192); wrap 1 − 2^−193… to 0 mod 1.
  if (x >= real(0.5)) {
    if (++t.lo == 0 && ++t.mid == 0) ++t.hi;
  }
  return t;
}

void turn_set::push_back(const turn& t) {
  const std::size_t n = turns_.size();
  turns_.push_back(t);
  const std::uint64_t words[3] = {t.hi, t.mid, t.lo};
  const std::size_t padded = (n + 1 + 7) / 8 * 8;
  for (int j = 0; j < 6; ++j) {
    auto& v = limbs_[static_cast<std::size_t>(j)];
    v.resize(padded, 0);
    const std::uint64_t w = words[j / 2];
    v[n] = j % 2 == 0 ? w >> 32 : w & 0xffffffffu;
  }
}

}  // namespace pev::kernel::detail

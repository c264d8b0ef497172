// pev's RapidCheck generators: coverage of the edge buckets and specials they promise, validity of
// the generated specs, and the decimal + hex display of values.

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pev/prop/gen.h"
#include "pev/scalar/traits.h"

namespace pev {
namespace {

template <class T>
std::vector<T> sample(const rc::Gen<T>& g, int n, std::uint64_t seed = 1) {
  rc::Random r(seed);
  std::vector<T> v;
  for (int i = 0; i < n; ++i) v.push_back(g(r.split(), prop::kNominalSize).value());
  return v;
}

TEST(Generators, PositionsCoverTheEdgeBuckets) {
  const auto ps = sample(prop::position(), 4000);
  std::set<std::int64_t> seen(ps.begin(), ps.end());
  for (std::int64_t e : {0, 1, 255, 256, 257, 2047, 2048, 2049, 65504, 65505, 1 << 24}) {
    EXPECT_TRUE(seen.count(e)) << "edge position " << e << " never generated";
  }
  std::set<std::string> buckets;
  for (std::int64_t p : ps) {
    ASSERT_GE(p, 0);
    ASSERT_LE(p, std::int64_t{1} << 31);
    buckets.insert(prop::position_bucket(p));
  }
  EXPECT_EQ(buckets.size(), 6u);
  EXPECT_TRUE(seen.count(std::int64_t{1} << 31)) << "2^31 never generated";
}

template <class T>
void specials_covered() {
  const auto v = sample(prop::bit_pattern<T>(), 4000);
  bool nan = false, inf = false, sub = false, negzero = false;
  for (T x : v) {
    const double d = scalar_traits<T>::to_double(x);
    nan |= std::isnan(d);
    inf |= std::isinf(d);
    sub |= d != 0 && std::fabs(d) < std::ldexp(1.0, scalar_traits<T>::min_normal_exponent);
    negzero |= d == 0 && std::signbit(d);
  }
  EXPECT_TRUE(nan && inf && sub && negzero) << scalar_traits<T>::name;
  for (T x : sample(prop::finite<T>(4), 2000)) {
    const double d = scalar_traits<T>::to_double(x);
    ASSERT_TRUE(std::isfinite(d));
    ASSERT_LT(std::fabs(d), 16.0);
  }
}

TEST(Generators, BitPatternsIncludeSpecials) {
  specials_covered<float>();
  specials_covered<half>();
  specials_covered<bfloat16>();
}

TEST(Generators, SpecsAreValidAndCoverEveryRopeType) {
  std::set<spec::rope_type> types;
  std::set<spec::rope_layout> layouts;
  bool partial = false;
  for (const auto& s : sample(prop::rope_spec(), 400)) {
    EXPECT_NO_THROW(spec::validate(spec::encoding{s})) << spec::to_spec_string(spec::encoding{s});
    types.insert(s.type);
    layouts.insert(s.layout);
    partial |= s.rotary_dim < s.head_dim;
  }
  EXPECT_EQ(types.size(), 8u);
  EXPECT_EQ(layouts.size(), 2u);
  EXPECT_TRUE(partial);
  for (const auto& s : sample(prop::sinusoidal_spec(), 100)) spec::validate(spec::encoding{s});
  for (const auto& s : sample(prop::alibi_spec(), 100)) spec::validate(spec::encoding{s});
  for (const auto& s : sample(prop::t5_spec(), 100)) spec::validate(spec::encoding{s});
}

TEST(Generators, ValuesShowInDecimalAndHex) {
  std::ostringstream os;
  rc::show(half(0.5f), os);
  EXPECT_NE(os.str().find("0x1p-1"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("0.5"), std::string::npos) << os.str();
  std::ostringstream spec_os;
  rc::show(spec::alibi{12, 8.0}, spec_os);
  EXPECT_NE(spec_os.str().find("num_heads=12"), std::string::npos) << spec_os.str();
}

}  // namespace
}  // namespace pev

// Self-consistency of the reference: at precision N and at 2N it agrees to within 2^−(N−16)
// relative, on random specs of every rope_type and sinusoidal layout and positions up to 2^40.

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <sstream>

#include "helpers.h"
#include "pev/ref/rope.h"
#include "pev/ref/sinusoidal.h"

namespace pev {
namespace {

std::string random_rope_spec(std::mt19937_64& rng) {
  const int dims[] = {2, 8, 64, 96, 128, 256};
  const double thetas[] = {10000, 500000, 1e6, 150000, 1234.5};
  const char* types[] = {"default", "linear", "ntk",      "dynamic",
                         "yarn",    "llama3", "longrope", "proportional"};
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  const char* type = types[pick(rng) % 8];
  int d = dims[pick(rng) % 6];
  // NTK exponents d/(d−2) need d ≥ 4.
  if (d == 2 && (std::string(type) == "ntk" || std::string(type) == "dynamic")) d = 8;
  std::ostringstream os;
  os.precision(17);
  os << "head_dim=" << d << ",rope_theta=" << thetas[pick(rng) % 5] << ",rope_type=" << type
     << ",layout=" << (pick(rng) % 2 ? "neox" : "interleaved");
  const double factor = 1 + (pick(rng) % 640) / 10.0;
  const std::string t = type;
  const int pairs = d / 2;
  if (t != "default") os << ",factor=" << factor;
  if (t == "dynamic") os << ",max_position_embeddings=" << (1 << (10 + pick(rng) % 8));
  if (t == "yarn" || t == "llama3" || t == "longrope") {
    os << ",original_max_position_embeddings=" << (1 << (10 + pick(rng) % 8));
  }
  if (t == "yarn") {
    os << ",beta_fast=" << 16 + pick(rng) % 32 << ",beta_slow=" << 1 + pick(rng) % 4
       << ",truncate=" << (pick(rng) % 2 ? "true" : "false");
  }
  if (t == "llama3") os << ",low_freq_factor=1,high_freq_factor=" << 2 + pick(rng) % 6;
  if (t == "longrope") {
    for (const char* key : {",short_factor=[", ",long_factor=["}) {
      os << key;
      for (int i = 0; i < pairs; ++i) os << (i ? "," : "") << 1 + (pick(rng) % 1000) / 100.0;
      os << "]";
    }
  }
  if (t == "proportional") os << ",partial_rotary_factor=" << (1 + pick(rng) % 4) / 4.0;
  return os.str();
}

struct snapshot {
  std::vector<real> values;
};

snapshot rope_values(const spec::rope& s, std::int64_t seq, const std::vector<std::int64_t>& pos) {
  const ref::rope_reference r(s, ref::exact_recipe(), seq);
  snapshot out;
  out.values = r.inv_freq();
  out.values.push_back(r.attention_factor());
  for (auto p : pos) {
    for (const auto& cs : r.row(p)) {
      out.values.push_back(cs.cos);
      out.values.push_back(cs.sin);
    }
  }
  return out;
}

// Largest relative deviation seen, as log2, per precision (printed at the end of each test).
double worst_log2 = -1e9;

void expect_agree(const snapshot& lo, const snapshot& hi, unsigned n, const std::string& what) {
  ASSERT_EQ(lo.values.size(), hi.values.size());
  const real tol = pow(real(2), -static_cast<int>(n - 16));
  for (std::size_t k = 0; k < lo.values.size(); ++k) {
    const real& a = lo.values[k];
    const real& b = hi.values[k];
    if (b == 0) {
      ASSERT_EQ(a, 0) << what << " value " << k;
      continue;
    }
    const real dev = abs(a - b) / abs(b);
    if (dev > 0) worst_log2 = std::max(worst_log2, static_cast<double>(log2(dev)) + double(n));
    ASSERT_LE(abs(a - b), tol * abs(b))
        << what << " value " << k << ": " << a.str(40) << " vs " << b.str(40);
  }
}

TEST(ReferencePrecision, NAndTwoNAgreeOnRandomRopeSpecs) {
  std::mt19937_64 rng(test::test_seed(20261122));
  std::uniform_int_distribution<std::int64_t> position(0, std::int64_t(1) << 40);
  for (unsigned n : {128u, 200u}) {
    for (int trial = 0; trial < 40; ++trial) {
      const std::string text = random_rope_spec(rng);
      const auto s = test::rope_spec(text);
      std::vector<std::int64_t> pos = {0, 1, std::int64_t(1) << 40};
      for (int k = 0; k < 3; ++k) pos.push_back(position(rng));
      const std::int64_t seq = position(rng) % (1 << 20);
      snapshot lo, hi;
      {
        const precision_scope p(n);
        lo = rope_values(s, seq, pos);
      }
      {
        const precision_scope p(2 * n);
        hi = rope_values(s, seq, pos);
      }
      expect_agree(lo, hi, n, "rope:" + text);
    }
  }
  std::cout << "worst relative deviation between N and 2N: 2^(" << worst_log2
            << " - N) (bound 2^(16 - N))\n";
}

TEST(ReferencePrecision, NAndTwoNAgreeOnSinusoidal) {
  std::mt19937_64 rng(test::test_seed(7));
  std::uniform_int_distribution<std::int64_t> position(0, std::int64_t(1) << 40);
  for (const char* text : {"sinusoidal:d_model=512", "sinusoidal:d_model=33,layout=blocked",
                           "sinusoidal:d_model=1024,base=1000000"}) {
    const auto s = std::get<spec::sinusoidal>(spec::parse_spec(text));
    for (int k = 0; k < 4; ++k) {
      const std::int64_t p = position(rng);
      snapshot lo, hi;
      {
        const precision_scope ps(128);
        lo.values = ref::sinusoidal_row(s, p);
      }
      {
        const precision_scope ps(256);
        hi.values = ref::sinusoidal_row(s, p);
      }
      expect_agree(lo, hi, 128, text);
    }
  }
}

}  // namespace
}  // namespace pev

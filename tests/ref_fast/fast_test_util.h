#pragma once
// Shared helpers of the fast-reference tests: the spec set, seeds, environment knobs and
// bit-exact comparison tallies.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "common/seed.h"
#include "pev/ref/fast.h"
#include "pev/scalar/round.h"
#include "pev/scalar/traits.h"
#include "pev/spec/parse.h"

namespace pev::test {

struct rope_case {
  std::string spec;  // SPEC body after "rope:"
  std::optional<std::int64_t> seq_len;
};

inline std::string factor_list(int n, double first, double step) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) {
    s += (i ? "," : "") + std::to_string(first + step * i);
  }
  return s + "]";
}

/// Every rope_type, head_dim 64/128/256 (and 80 with pass-through dims), θ 1e4/5e5/1e6, both
/// layouts, attention factors ≠ 1 (yarn, longrope), exact zero frequencies (proportional).
inline std::vector<rope_case> rope_cases() {
  return {
      {"head_dim=128", std::nullopt},
      {"head_dim=64,rope_theta=500000,layout=interleaved", std::nullopt},
      {"head_dim=256,rope_theta=1000000", std::nullopt},
      {"head_dim=80,partial_rotary_factor=0.5,layout=interleaved", std::nullopt},
      {"head_dim=128,rope_type=linear,factor=4", std::nullopt},
      {"head_dim=64,rope_type=ntk,factor=4,rope_theta=500000", std::nullopt},
      {"head_dim=128,rope_type=dynamic,factor=8,max_position_embeddings=4096", 20000},
      {"head_dim=128,rope_theta=1000000,rope_type=yarn,factor=16,"
       "original_max_position_embeddings=4096",
       std::nullopt},
      {"head_dim=64,rope_type=yarn,factor=40,original_max_position_embeddings=4096,mscale=0.707,"
       "mscale_all_dim=1,layout=interleaved",
       std::nullopt},
      {"head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
       "high_freq_factor=4,original_max_position_embeddings=8192",
       std::nullopt},
      {"head_dim=64,rope_type=longrope,factor=32,original_max_position_embeddings=4096,"
       "short_factor=" +
           factor_list(32, 1.0, 0.003) + ",long_factor=" + factor_list(32, 1.0, 0.9),
       8192},
      {"head_dim=128,rope_theta=1000000,rope_type=proportional,partial_rotary_factor=0.25,"
       "factor=8",
       std::nullopt},
  };
}

inline std::vector<std::string> sinusoidal_cases() {
  return {"d_model=64", "d_model=64,layout=blocked", "d_model=33,base=500000",
          "d_model=17,layout=blocked,freq_shift=0"};
}

inline spec::rope rope_spec(const std::string& body) {
  return std::get<spec::rope>(spec::parse_spec("rope:" + body));
}
inline spec::sinusoidal sinusoidal_spec(const std::string& body) {
  return std::get<spec::sinusoidal>(spec::parse_spec("sinusoidal:" + body));
}

inline std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 0) : fallback;
}

template <class T>
std::uint64_t bits_of(T v) {
  return static_cast<std::uint64_t>(scalar_traits<T>::to_bits(v));
}

template <class T>
std::string show(T v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a (0x%llx)", scalar_traits<T>::to_double(v),
                static_cast<unsigned long long>(bits_of(v)));
  return buf;
}

/// Calls f.template operator()<T>() for T = double, float, half, bfloat16.
template <class F>
void for_each_type(F&& f) {
  f.template operator()<double>();
  f.template operator()<float>();
  f.template operator()<half>();
  f.template operator()<bfloat16>();
}

/// Bit-exact comparison counts; the first few mismatches are kept for the failure message.
struct tally {
  std::uint64_t compared = 0;
  std::uint64_t mismatches = 0;
  std::vector<std::string> first;

  /// `what` is a string or a callable returning one (built only on a mismatch).
  template <class T, class What>
  void check(T got, T want, const What& what) {
    ++compared;
    if (bits_of(got) == bits_of(want)) [[likely]]
      return;
    ++mismatches;
    if (first.size() < 10) {
      std::string label;
      if constexpr (std::is_invocable_v<What>) {
        label = what();
      } else {
        label = what;
      }
      first.push_back(std::string(scalar_traits<T>::name) + " " + label + ": fast " + show(got) +
                      ", MPFR " + show(want));
    }
  }
  tally& operator+=(const tally& o) {
    compared += o.compared;
    mismatches += o.mismatches;
    for (const auto& s : o.first) {
      if (first.size() < 10) first.push_back(s);
    }
    return *this;
  }
  std::string report() const {
    std::ostringstream os;
    for (const auto& s : first) os << "  " << s << "\n";
    return os.str();
  }
};

inline void print_summary(const std::string& what, const tally& t, const ref::fast_stats& st) {
  std::cout << what << ": " << t.compared << " values compared, " << t.mismatches
            << " mismatches; fast path " << st.values << " values, " << st.refined
            << " decided by the double-double stage, " << st.fallbacks << " fallbacks (rate "
            << st.fallback_rate() << "), " << st.mpfr_rows << " MPFR rows\n";
}

}  // namespace pev::test

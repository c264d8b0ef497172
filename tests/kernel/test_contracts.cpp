// The accuracy-contract table of pev's production kernels (docs/design.md §11.3, §11.8): one line
// per (family/config, strategy, dtype, positions, reference, bound), each checked against the MPFR
// reference. Bounds are the analytic error models of docs/numerics.md §8–§10, §14.2, evaluated per
// pair and element by pev/metric/error_model.h (never measured constants); every line prints max ρ
// = err/B (≤ 1 passes), the max ulp distance to the correctly rounded reference value, and the
// rates of correctly rounded (CR) and faithful values.
//
// Reference levels: `exact` is R1 (exact frequencies and angles, one rounding); `hf` and `ggml` are
// the recipe references R2, against which the hf and ggml kernels must agree up to their libm's
// error (cosf/sinf ≤ 0.5607 ulp against the ideal libm's ≤ 0.5 ulp, plus the propagated effect of
// any frequency or magnitude factor whose libm result differs from the correctly rounded one).

#include <gtest/gtest.h>

#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.h"
#include "pev/compare/figures.h"
#include "pev/core/error.h"
#include "pev/core/hex.h"
#include "pev/impl/contract.h"
#include "pev/kernel/absolute.h"
#include "pev/kernel/relative.h"
#include "pev/kernel/rope.h"
#include "pev/metric/ulp.h"
#include "pev/ref/relative.h"
#include "pev/ref/rope.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"

namespace pev {
namespace {

using impl::alibi_model;
using impl::ggml_model;
using impl::hf_angle_error;
using impl::hf_model;
using impl::make_ggml_model;
using impl::path_bound;
using impl::rope_model;
using impl::trig_times_m;
using kernel::strategy;
using metric::exact;
using metric::f32;
using metric::f64;
using metric::format;
using metric::half_ulp;
using metric::kBF16;
using metric::kF16;
using metric::kF32;
using metric::kF64;
using metric::tv;
using metric::ulp_at;

std::uint64_t seed() {
  static const std::uint64_t s = test::test_seed(20240611);
  return s;
}

double to_d(const real& v) { return v.convert_to<double>(); }

const char* format_name(format f) {
  if (f.p == 24) return "fp32";
  if (f.p == 11) return "fp16";
  if (f.p == 8) return "bf16";
  return "fp64";
}

// ---------------------------------------------------------------------------------------------
// One line of the table.

struct line {
  line(std::string family_, std::string strategy_, std::string dtype_, std::string positions_,
       std::string reference_, std::string bound_)
      : family(std::move(family_)),
        strategy_name(std::move(strategy_)),
        dtype(std::move(dtype_)),
        positions(std::move(positions_)),
        reference(std::move(reference_)),
        bound(std::move(bound_)) {}

  std::string family, strategy_name, dtype, positions, reference, bound;
  // The figures come from the one comparison engine (pev/compare/figures.h): ρ with its slack,
  // ulp distances, correctly rounded and faithful counts; the line keeps the worst value's text.
  compare::figures figures{compare::figures::options{}};
  std::string worst = "-";
  std::uint64_t ulp_limit = std::numeric_limits<std::uint64_t>::max();  // extra contract
  std::string note;

  /// One value: its error, bound and ulp distance to the correctly rounded reference value.
  void add(double err, double bound, std::uint64_t ulp, const std::function<std::string()>& where) {
    const bool first = figures.values() == 0;
    const double before = figures.worst().rho;
    figures.add({0, 0, err, 0.0, ulp, 1.0}, "", {&bound, 1});
    if (first || figures.worst().rho > before) {
      std::ostringstream os;
      os << where() << " err " << err << " B " << bound;
      worst = os.str();
    }
  }

  void finish() const {
    report::check c;
    figures.finish(c);
    const std::size_t n = c.values;
    const double max_rho = c.max_rho;
    const std::uint64_t max_ulp = c.max_ulp_distance;
    const std::uint64_t cr = c.correctly_rounded, faithful = c.faithful;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%-22s %-10s %-5s %-16s %-6s %-24s %8zu  max_rho %-7.4f max_ulp %-4" PRIu64
                  " CR %8.4f%%  faithful %8.4f%%",
                  family.c_str(), strategy_name.c_str(), dtype.c_str(), positions.c_str(),
                  reference.c_str(), bound.c_str(), n, max_rho, max_ulp,
                  n ? 100.0 * static_cast<double>(cr) / static_cast<double>(n) : 100.0,
                  n ? 100.0 * static_cast<double>(faithful) / static_cast<double>(n) : 100.0);
    std::cout << buf << "\n    worst: " << worst << (note.empty() ? "" : "\n    note: ") << note
              << std::endl;
    EXPECT_LE(max_rho, 1.0) << family << " " << strategy_name << " " << dtype << " vs " << reference
                            << ": " << worst;
    EXPECT_LE(max_ulp, ulp_limit) << family << " " << strategy_name << " " << dtype << " vs "
                                  << reference << ": " << worst;
  }
};

void print_header(const std::string& what) {
  const std::uint64_t sd = seed();
  std::cout << "\n== accuracy contracts: " << what << " (seed " << sd << ")\n"
            << "family/config          strategy   dtype positions        vs     bound            "
               "        n\n";
}

// Values rounded once to every output type.
struct rounded {
  std::vector<double> y;  // nearest double (for errors)
  std::vector<float> f32;
  std::vector<half> f16;
  std::vector<bfloat16> bf16;

  void push(const real& v) {
    y.push_back(round_to<double>(v));
    f32.push_back(round_to<float>(v));
    f16.push_back(round_to<half>(v));
    bf16.push_back(round_to<bfloat16>(v));
  }
  /// A value that is already an fp32 (a recipe's output): its T value is RN_T of it.
  void push_f32(float v) {
    y.push_back(v);
    f32.push_back(v);
    f16.push_back(half(v));
    bf16.push_back(bfloat16(v));
  }
  template <class T>
  const std::vector<T>& get() const {
    if constexpr (std::is_same_v<T, float>) {
      return f32;
    } else if constexpr (std::is_same_v<T, half>) {
      return f16;
    } else {
      return bf16;
    }
  }
};

/// Checks kernel output `got` against reference values (exact or recipe) element by element.
template <class T>
void check_values(line& L, const std::vector<T>& got, const rounded& ref,
                  const std::function<double(std::size_t)>& bound,
                  const std::function<std::string(std::size_t)>& where) {
  const auto& rn = ref.get<T>();
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double g = test::as_double(got[k]);
    const double err = std::fabs(g - ref.y[k]);
    const std::uint64_t ulp = metric::ulp_distance(got[k], rn[k]);
    L.add(err, bound(k), ulp,
          [&] { return where(k) + " got " + hex(g) + " ref " + hex(ref.y[k]); });
  }
}

/// Faithfulness bound of an `accurate` value: 1 ulp of the output type at the exact value.
template <class T>
double one_ulp(double y) {
  return ulp_at(std::fabs(y), format_of<T>());
}

// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// RoPE table.

struct rope_case {
  const char* name;
  const char* spec;
  std::optional<std::int64_t> seq_len;
};

// Phi-3-style LongRoPE factor lists for 16 pairs.
#define PEV_SHORT16 "[1.0,1.01,1.02,1.03,1.05,1.07,1.1,1.13,1.17,1.21,1.26,1.31,1.37,1.44,1.52,1.6]"
#define PEV_LONG16 "[1.0,1.1,1.3,1.7,2.4,3.5,5.1,7.4,10.6,14.8,19.9,25.6,31.5,37.0,41.6,45.0]"

const rope_case kRopeCases[] = {
    {"default", "rope:head_dim=128,rope_theta=10000", std::nullopt},
    // glibc's powf is not correctly rounded for one of these 56 frequencies: the recipe line
    // then includes the propagated frequency difference.
    {"default_b1e6_d112", "rope:head_dim=112,rope_theta=1000000", std::nullopt},
    {"linear", "rope:head_dim=64,rope_type=linear,factor=4", std::nullopt},
    {"ntk", "rope:head_dim=64,rope_type=ntk,factor=4", std::nullopt},
    {"dynamic", "rope:head_dim=64,rope_type=dynamic,factor=10,max_position_embeddings=2048", 16384},
    {"yarn",
     "rope:head_dim=64,rope_type=yarn,factor=10,original_max_position_embeddings=2048,"
     "max_position_embeddings=20480",
     std::nullopt},
    {"llama3",
     "rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
     "high_freq_factor=4,original_max_position_embeddings=8192",
     std::nullopt},
    {"longrope",
     "rope:head_dim=32,rope_type=longrope,factor=32,original_max_position_embeddings=4096,"
     "short_factor=" PEV_SHORT16 ",long_factor=" PEV_LONG16,
     131072},
    {"proportional", "rope:head_dim=64,rope_type=proportional,partial_rotary_factor=0.5,factor=4",
     std::nullopt},
};

class KernelContractsRope : public ::testing::TestWithParam<rope_case> {};

struct rope_data {
  std::vector<std::int64_t> pos;
  std::int64_t pairs = 0;
  rounded cos, sin;
  std::vector<double> theta;  // exact frequencies
  double m = 1;
};

rope_data exact_rope(const spec::rope& s, std::optional<std::int64_t> seq,
                     const std::vector<std::int64_t>& pos) {
  rope_data d;
  d.pos = pos;
  d.pairs = s.pairs();
  const ref::rope_reference r(s, ref::exact_recipe(), seq);
  for (const real& t : r.inv_freq()) d.theta.push_back(to_d(t));
  d.m = to_d(r.attention_factor());
  for (std::int64_t p : pos) {
    for (const auto& cs : r.row(p)) {
      d.cos.push(cs.cos);
      d.sin.push(cs.sin);
    }
  }
  return d;
}

/// A recipe's fp32 values, frequencies and magnitude factor.
struct recipe_data {
  rounded cos, sin;
  std::vector<float> inv_freq;
  float m = 1;
};

recipe_data recipe_rope(const spec::rope& s, const ref::recipe& rec,
                        std::optional<std::int64_t> seq, const std::vector<std::int64_t>& pos) {
  recipe_data d;
  const ref::rope_reference r(s, rec, seq);
  for (const real& t : r.inv_freq()) d.inv_freq.push_back(round_to<float>(t));
  for (std::int64_t p : pos) {
    const auto row = r.row(p);
    for (const auto& cs : row) {
      d.cos.push_f32(round_to<float>(cs.cos));
      d.sin.push_f32(round_to<float>(cs.sin));
    }
    if (p == 0) d.m = round_to<float>(row[0].cos);  // cos 0 = 1: the fp32 magnitude operand
  }
  return d;
}

template <class T>
std::pair<std::vector<T>, std::vector<T>> run_rope(const kernel::rope_kernel& k,
                                                   const std::vector<std::int64_t>& pos) {
  std::vector<T> c(pos.size() * static_cast<std::size_t>(k.pairs()));
  std::vector<T> s(c.size());
  k.table<T>(pos, c, s);
  return {std::move(c), std::move(s)};
}

std::string positions_label(const std::vector<std::int64_t>& pos) {
  std::ostringstream os;
  os << "[0," << pos.back() << "] n=" << pos.size();
  return os.str();
}

template <class T>
void rope_lines(const rope_case& c, const spec::rope& s, const rope_data& ex,
                const recipe_data& hf_r, const recipe_data& ggml_r, const ggml_model& gm) {
  constexpr format out = format_of<T>();
  const std::string dtype = format_name(out);
  const auto P = static_cast<std::size_t>(ex.pairs);
  const std::string family = std::string("rope/") + c.name;
  auto where = [&](std::size_t k, bool is_sin) {
    std::ostringstream os;
    os << "p=" << ex.pos[k / P] << " i=" << k % P << (is_sin ? " sin" : " cos");
    return os.str();
  };
  for (strategy st : kernel::all_strategies()) {
    const kernel::rope_kernel kern(s, st, c.seq_len);
    const auto [kc, ks] = run_rope<T>(kern, ex.pos);
    line L{family, kernel::to_string(st), dtype, positions_label(ex.pos), "exact", ""};
    // The strategy's contract (pev/impl/contract.h), shared with the property suites.
    const impl::rope_contract contract(s, st, c.seq_len, ex.m);
    switch (st) {
      case strategy::hf:
      case strategy::table_fp16:
      case strategy::table_bf16:
        L.bound = "hf model (eps_i)";
        if (st != strategy::hf)
          L.bound += std::string(" + ") + (st == strategy::table_fp16 ? "fp16" : "bf16");
        break;
      case strategy::ggml:
        L.bound = "recurrence model";
        break;
      case strategy::accurate:
        L.bound = "1 ulp";
        L.ulp_limit = 1;
        // inv_freq() of accurate is the exact frequency rounded once.
        for (std::size_t i = 0; i < P; ++i) {
          EXPECT_EQ(kern.inv_freq()[i], static_cast<float>(ex.theta[i]))
              << family << " accurate inv_freq[" << i << "]";
        }
        break;
    }
    auto bound = [&](std::size_t k, bool is_sin) {
      return contract.table_bound(ex.pos[k / P], static_cast<std::int64_t>(k % P),
                                  (is_sin ? ex.sin : ex.cos).y[k], out);
    };
    check_values<T>(
        L, kc, ex.cos, [&](std::size_t k) { return bound(k, false); },
        [&](std::size_t k) { return where(k, false); });
    check_values<T>(
        L, ks, ex.sin, [&](std::size_t k) { return bound(k, true); },
        [&](std::size_t k) { return where(k, true); });
    L.finish();

    // Recipe faithfulness (R2).
    if (st != strategy::hf && st != strategy::ggml) continue;
    const recipe_data& rr = st == strategy::hf ? hf_r : ggml_r;
    line R{family, kernel::to_string(st), dtype, positions_label(ex.pos), kernel::to_string(st),
           "libm"};
    std::size_t differ = 0;
    for (std::size_t i = 0; i < P; ++i) differ += kern.inv_freq()[i] != rr.inv_freq[i] ? 1 : 0;
    const bool same_m = kern.attention_factor() == rr.m;
    std::ostringstream note;
    note << differ << "/" << P << " inv_freq differ from the recipe bit-exactly"
         << (same_m ? "" : "; magnitude factor differs");
    R.note = note.str();
    const float mk = kern.attention_factor();
    const float mr = rr.m;
    auto faith = [&](std::size_t k2, bool is_sin) {
      const std::int64_t p = ex.pos[k2 / P];
      const std::size_t i = k2 % P;
      double dtheta = 0;
      if (st == strategy::hf) {
        const float fk = kern.inv_freq()[i];
        const float fr = rr.inv_freq[i];
        if (fk != fr) {
          const auto ph = static_cast<double>(static_cast<float>(p));
          dtheta = ph * std::fabs(double(fk) - double(fr)) + half_ulp(ph * std::fabs(fk), kF32) +
                   half_ulp(ph * std::fabs(fr), kF32);
        }
      } else if (differ != 0) {
        // Both recurrences are within the model's bound of the exact angle.
        dtheta = 2 * gm.angles(p)[i].e;
      }
      const double r = std::fabs((is_sin ? rr.sin : rr.cos).y[k2]);
      const double c = r / mr;
      const double bcs =
          std::min(dtheta, 2.0) + (metric::kGlibc.sin_cos + 0.5) *
                                      ulp_at(std::min(c + dtheta + 0x1p-23, 1.0 - 0x1p-25), kF32);
      double B = mk * bcs + std::fabs(double(mk) - double(mr)) * (c + bcs);
      if (mk != 1.0f) B += half_ulp(mk * (c + bcs), kF32);
      if (mr != 1.0f) B += half_ulp(r, kF32);
      if (out.p != 24) B += half_ulp(r + B, out) + half_ulp(r + B, out);
      return B;
    };
    check_values<T>(
        R, kc, rr.cos, [&](std::size_t k2) { return faith(k2, false); },
        [&](std::size_t k2) { return where(k2, false); });
    check_values<T>(
        R, ks, rr.sin, [&](std::size_t k2) { return faith(k2, true); },
        [&](std::size_t k2) { return where(k2, true); });
    R.finish();
  }
}

TEST_P(KernelContractsRope, Table) {
  const rope_case& c = GetParam();
  const auto s = test::parse_as<spec::rope>(c.spec);
  print_header(std::string("rope/") + c.name + " = " + c.spec);
  const auto pos = test::octave_positions(512, 24, 12, seed());
  const rope_data ex = exact_rope(s, c.seq_len, pos);
  const recipe_data hf_r = recipe_rope(s, ref::hf_recipe(), c.seq_len, pos);
  const recipe_data ggml_r = recipe_rope(s, ref::ggml_recipe(), c.seq_len, pos);
  const rope_model hm = hf_model(s, c.seq_len, ex.m);
  const ggml_model gm = make_ggml_model(s, c.seq_len);
  // The models' exact values are the reference's (a check of the models themselves).
  for (std::size_t i = 0; i < ex.theta.size(); ++i) {
    EXPECT_NEAR(hm.freq[i].x, ex.theta[i], 1e-12 * ex.theta[i]) << "hf model, pair " << i;
    const double g = gm.angles(1 << 20)[i].x / double(1 << 20);
    EXPECT_NEAR(g, ex.theta[i], 1e-12 * ex.theta[i]) << "ggml model, pair " << i;
  }
  EXPECT_NEAR(gm.m.x, ex.m, 1e-12 * ex.m);
  rope_lines<float>(c, s, ex, hf_r, ggml_r, gm);
  rope_lines<half>(c, s, ex, hf_r, ggml_r, gm);
  rope_lines<bfloat16>(c, s, ex, hf_r, ggml_r, gm);
}

INSTANTIATE_TEST_SUITE_P(Table, KernelContractsRope, ::testing::ValuesIn(kRopeCases),
                         [](const auto& info) { return std::string(info.param.name); });

// The cases of the angle-bound tests below: every case of the table, the ggml form with per-pair
// factors and a partial YaRN mix, a partial rotary dim and rope_theta 500000.
const std::vector<rope_case>& angle_cases() {
  static const std::string ggml_factors = [] {
    std::string ff = "[";
    for (int i = 0; i < 64; ++i) {
      ff += (i ? "," : "") + std::to_string(0.9 + 0.2 * ((i * 37) % 64) / 64.0);
    }
    return "ggml:head_dim=128,mode=normal,freq_scale=1.4245,ext_factor=0.7465,attn_factor=1.4245,"
           "beta_fast=1,beta_slow=1,freq_factors=" +
           ff + "]";
  }();
  static const std::vector<rope_case> cases = [] {
    std::vector<rope_case> v(std::begin(kRopeCases), std::end(kRopeCases));
    v.push_back({"ggml_factors", ggml_factors.c_str(), std::nullopt});
    v.push_back({"ggml_yarn",
                 "ggml:head_dim=128,mode=neox,freq_base=500000,freq_scale=0.25,ext_factor=1,"
                 "attn_factor=0.9,n_ctx_orig=8192",
                 std::nullopt});
    v.push_back(
        {"ggml_partial", "ggml:head_dim=80,n_dims=20,mode=normal,freq_scale=0.5", std::nullopt});
    v.push_back({"b5e5", "rope:head_dim=128,rope_theta=500000", std::nullopt});
    return v;
  }();
  return cases;
}

// Positions 0 … 5000, around 2^24 (where fl(p) ≠ p), random ones up to 2^40 and a few negative
// ones and the extremes of int64.
std::vector<std::int64_t> angle_positions() {
  std::vector<std::int64_t> pos;
  for (std::int64_t p = 0; p <= 5000; ++p) pos.push_back(p);
  for (std::int64_t d = -300; d <= 300; ++d) pos.push_back((std::int64_t{1} << 24) + d);
  std::mt19937_64 rng(seed());
  for (int k = 0; k < 2000; ++k) {
    pos.push_back(static_cast<std::int64_t>(rng() >> (64 - 40)));  // [0, 2^40)
  }
  for (const std::int64_t p :
       {std::int64_t{-1}, std::int64_t{-7}, -(std::int64_t{1} << 30),
        std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()}) {
    pos.push_back(p);
  }
  return pos;
}

// The strategies whose contracts a case has (the ggml form has no hf pipeline).
std::vector<strategy> angle_strategies(const spec::rope& s) {
  std::vector<strategy> v = {strategy::ggml, strategy::accurate};
  if (s.type != spec::rope_type::ggml) {
    for (strategy st : {strategy::hf, strategy::table_fp16, strategy::table_bf16}) v.push_back(st);
  }
  return v;
}

// The scalar definition of angle_errors(p): ggml_model::angles' bounds, hf_angle_error of the hf
// model's frequencies, or zeros (accurate).
/// A case's spec, exact attention factor and the hf and ggml models the scalar definitions use.
struct case_models {
  explicit case_models(const rope_case& c)
      : s(test::parse_as<spec::rope>(c.spec)),
        m(to_d(ref::rope_reference(s, ref::exact_recipe(), c.seq_len).attention_factor())),
        hm(hf_model(s, c.seq_len, m)),
        gm(make_ggml_model(s, c.seq_len)) {}
  spec::rope s;
  double m;
  rope_model hm;
  ggml_model gm;
};

std::vector<double> scalar_angle_errors(strategy st, const rope_model& hm, const ggml_model& gm,
                                        std::int64_t p) {
  std::vector<double> want(hm.freq.size(), 0.0);
  if (st == strategy::ggml) {
    const std::vector<tv> angles = gm.angles(p);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = angles[i].e;
  } else if (st != strategy::accurate) {
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = hf_angle_error(p, hm.freq[i]);
  }
  return want;
}

// rope_contract::angle_errors (the vector loop over the hf frequencies, the ggml recurrence into
// the caller's buffer in branch-free arithmetic; docs/numerics.md §8.13) gives, bit for bit, the
// scalar definitions: hf_angle_error of the hf model's frequencies and ggml_model::angles, for
// every case and position of angle_cases and angle_positions.
TEST(KernelContracts, AngleErrorsEqualTheScalarDefinitions) {
  const std::vector<std::int64_t> pos = angle_positions();
  const auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
  for (const rope_case& c : angle_cases()) {
    SCOPED_TRACE(c.spec);
    const auto& [s, m, hm, gm] = case_models(c);
    std::vector<double> got;
    for (strategy st : angle_strategies(s)) {
      const impl::rope_contract contract(s, st, c.seq_len, m);
      std::size_t values = 0, differ = 0;
      for (std::int64_t p : pos) {
        contract.angle_errors(p, got);
        ASSERT_EQ(got.size(), static_cast<std::size_t>(s.pairs()));
        const std::vector<double> want = scalar_angle_errors(st, hm, gm, p);
        for (std::size_t i = 0; i < got.size(); ++i) {
          ++values;
          if (bits(got[i]) != bits(want[i]) && differ++ < 5) {
            ADD_FAILURE() << kernel::to_string(st) << " p=" << p << " pair " << i << ": "
                          << hex(got[i]) << " != " << hex(want[i]);
          }
        }
      }
      EXPECT_EQ(differ, 0u) << kernel::to_string(st);
      std::cout << c.name << " " << kernel::to_string(st) << ": " << values
                << " angle bounds equal bit for bit\n";
    }
  }
}

// Whether the fast ggml replay misses at p (docs/numerics.md §8.13): a step θ·ts whose |x| + e
// lies in a higher fp32 binade than its |x|, after which angle_errors replays the row in
// metric::f32.
bool ggml_replay_misses(const ggml_model& g, std::int64_t p) {
  const auto pd = static_cast<double>(p);
  tv theta{pd, std::fabs(double(float(p)) - pd)};
  for (std::int64_t i = 0; i < std::min(g.pairs, g.rotating); ++i) {
    const tv r = metric::arith::product(theta, g.ts);
    if (half_ulp(std::fabs(r.x) + r.e, kF32) != half_ulp(std::fabs(r.x), kF32)) return true;
    theta = f32.mul(theta, g.ts);
  }
  return false;
}

// rope_contract::angle_errors_rows (ggml: the replay across the rows of a block, in vector loops)
// gives angle_errors' values bit for bit: the scalar definitions of every row, in blocks of 1, 3,
// 64 and 65 rows in turn over angle_positions, and for ggml a block of 65 rows of which every
// fourth is a position where the fast replay misses (so that the metric::f32 replay runs for some
// rows of the block and not for the others).
TEST(KernelContracts, AngleErrorsRowsEqualTheScalarDefinitions) {
  const std::vector<std::int64_t> pos = angle_positions();
  const auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
  std::size_t mixed_blocks = 0;
  for (const rope_case& c : angle_cases()) {
    SCOPED_TRACE(c.spec);
    const auto& [s, m, hm, gm] = case_models(c);
    const auto n = static_cast<std::size_t>(s.pairs());
    // Blocks of 1, 3, 64 and 65 rows in turn.
    std::vector<std::vector<std::int64_t>> blocks;
    const std::size_t sizes[] = {1, 3, 64, 65};
    for (std::size_t at = 0, k = 0; at < pos.size(); ++k) {
      const std::size_t r = std::min(sizes[k % 4], pos.size() - at);
      blocks.emplace_back(pos.begin() + static_cast<std::ptrdiff_t>(at),
                          pos.begin() + static_cast<std::ptrdiff_t>(at + r));
      at += r;
    }
    // The ggml block that mixes rows where the fast replay misses with rows where it does not.
    std::vector<std::int64_t> misses, hits;
    for (std::int64_t p : pos) (ggml_replay_misses(gm, p) ? misses : hits).push_back(p);
    std::cout << c.name << ": the fast ggml replay misses at " << misses.size() << " of "
              << pos.size() << " positions\n";
    std::optional<std::size_t> mixed;
    if (!misses.empty()) {
      std::vector<std::int64_t> b;
      for (std::size_t q = 0; q < 65; ++q) {
        b.push_back(q % 4 == 0 ? misses[(q / 4) % misses.size()] : hits[q % hits.size()]);
      }
      mixed = blocks.size();
      blocks.push_back(b);
    }
    for (strategy st : angle_strategies(s)) {
      const impl::rope_contract contract(s, st, c.seq_len, m);
      ASSERT_EQ(contract.pairs(), n);
      std::size_t values = 0, differ = 0;
      std::vector<double> got;
      for (std::size_t k = 0; k < blocks.size(); ++k) {
        if (mixed && k == *mixed && st != strategy::ggml) continue;
        const std::vector<std::int64_t>& rows = blocks[k];
        got.assign(rows.size() * n, std::numeric_limits<double>::quiet_NaN());  // unwritten: NaN
        contract.angle_errors_rows(rows, got);
        for (std::size_t q = 0; q < rows.size(); ++q) {
          const std::vector<double> want = scalar_angle_errors(st, hm, gm, rows[q]);
          for (std::size_t i = 0; i < n; ++i) {
            ++values;
            if (bits(got[q * n + i]) != bits(want[i]) && differ++ < 5) {
              ADD_FAILURE() << kernel::to_string(st) << " block " << k << " of " << rows.size()
                            << " rows, row " << q << " p=" << rows[q] << " pair " << i << ": "
                            << hex(got[q * n + i]) << " != " << hex(want[i]);
            }
          }
        }
        if (mixed && k == *mixed) ++mixed_blocks;
      }
      EXPECT_EQ(differ, 0u) << kernel::to_string(st);
      std::cout << c.name << " " << kernel::to_string(st) << ": " << values
                << " angle bounds of blocks of rows equal bit for bit\n";
      // An output of the wrong size is refused.
      got.assign(3 * n + 1, 0.0);
      EXPECT_THROW(contract.angle_errors_rows(std::span(pos.data(), 3), got), pev::error);
    }
  }
  // Some case's ggml block mixes rows that the fast replay takes with rows it misses.
  EXPECT_GT(mixed_blocks, 0u);
}

// ---------------------------------------------------------------------------------------------
// Sinusoidal table.

struct sinusoidal_case {
  const char* name;
  const char* spec;
};

const sinusoidal_case kSinusoidalCases[] = {
    {"interleaved", "sinusoidal:d_model=128"},
    {"blocked", "sinusoidal:d_model=128,layout=blocked"},
    {"blocked_odd_shift0", "sinusoidal:d_model=65,layout=blocked,freq_shift=0"},
};

class KernelContractsSinusoidal : public ::testing::TestWithParam<sinusoidal_case> {};

template <class T>
void sinusoidal_lines(const sinusoidal_case& c, const spec::sinusoidal& s,
                      const std::vector<std::int64_t>& pos, const rounded& ex) {
  constexpr format out = format_of<T>();
  const auto d = static_cast<std::size_t>(s.d_model);
  for (strategy st : kernel::all_strategies()) {
    if (st == strategy::ggml) continue;
    std::vector<T> got(pos.size() * d);
    kernel::sinusoidal_table<T>(s, st, pos, got);
    line L{std::string("sinusoidal/") + c.name,
           kernel::to_string(st),
           format_name(out),
           positions_label(pos),
           "exact",
           ""};
    // The strategy's contract (pev/impl/contract.h), shared with the property suites.
    const impl::sinusoidal_contract contract(s, st);
    auto bound = [&](std::size_t k) {
      return contract.bound(pos[k / d], static_cast<std::int64_t>(k % d), ex.y[k], out);
    };
    if (st == strategy::accurate) {
      L.bound = "1 ulp";
      L.ulp_limit = 1;
    } else if (s.layout == spec::sinusoidal_layout::interleaved) {
      L.bound = "fp64 pipeline, cast once";
    } else {
      L.bound = "fp32 exp model";
    }
    if (st != strategy::hf && st != strategy::accurate) {
      L.bound += std::string(" + ") + (st == strategy::table_fp16 ? "fp16" : "bf16");
    }
    check_values<T>(L, got, ex, bound, [&](std::size_t k) {
      return "p=" + std::to_string(pos[k / d]) + " col=" + std::to_string(k % d);
    });
    L.finish();
  }
}

TEST_P(KernelContractsSinusoidal, Table) {
  const sinusoidal_case& c = GetParam();
  const auto s = test::parse_as<spec::sinusoidal>(c.spec);
  print_header(std::string("sinusoidal/") + c.name + " = " + c.spec);
  const auto pos = test::octave_positions(512, 24, 12, seed());
  rounded ex;
  for (std::int64_t p : pos) {
    for (const real& v : ref::sinusoidal_row(s, p)) ex.push(v);
  }
  sinusoidal_lines<float>(c, s, pos, ex);
  sinusoidal_lines<half>(c, s, pos, ex);
  sinusoidal_lines<bfloat16>(c, s, pos, ex);
}

INSTANTIATE_TEST_SUITE_P(Table, KernelContractsSinusoidal, ::testing::ValuesIn(kSinusoidalCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Learned table.

struct learned_case {
  const char* name;
  const char* spec;
};

const learned_case kLearnedCases[] = {
    {"lookup", "learned:num_positions=256,d_model=16,seed=3"},
    {"align_corners", "learned:num_positions=512,d_model=16,target_positions=2048,seed=7"},
    {"half_pixel",
     "learned:num_positions=512,d_model=16,target_positions=1536,align_corners=false,seed=11"},
};

class KernelContractsLearned : public ::testing::TestWithParam<learned_case> {};

template <class T>
void learned_lines(const learned_case& c, const spec::learned& s,
                   const std::vector<std::int64_t>& pos, const rounded& ex) {
  constexpr format out = format_of<T>();
  const auto d = static_cast<std::size_t>(s.d_model);
  const std::int64_t L_rows = s.num_positions;
  for (strategy st : kernel::all_strategies()) {
    if (st == strategy::ggml) continue;
    std::vector<T> got(pos.size() * d);
    kernel::learned_table<T>(s, st, pos, got);
    line L{std::string("learned/") + c.name,
           kernel::to_string(st),
           format_name(out),
           positions_label(pos),
           "exact",
           ""};
    const std::optional<dtype> stored = kernel::storage_of(st);
    std::function<double(std::size_t)> bound;
    if (st == strategy::accurate) {
      L.bound = "rounded once";
      L.ulp_limit = 0;
      bound = [&](std::size_t k) { return half_ulp(std::fabs(ex.y[k]), out); };
    } else if (s.target_positions == 0) {
      L.bound = "lookup, rounded once";
      bound = [&](std::size_t k) { return path_bound(0.0, std::fabs(ex.y[k]), stored, out, kF64); };
    } else {
      L.bound = "fp32 index + 3 roundings";
      bound = [&](std::size_t k) {
        const auto t = static_cast<double>(pos[k / d]);
        const std::size_t col = k % d;
        const double Lr = static_cast<double>(L_rows);
        const double Lp = static_cast<double>(s.target_positions);
        tv x;
        if (s.align_corners) {
          x = f32.mul(f32.div(test::as_f32(Lr - 1), test::as_f32(Lp - 1)), exact(t));
        } else {
          x = f32.sub(f32.mul(f32.div(test::as_f32(Lr), test::as_f32(Lp)), test::as_f32(t + 0.5)),
                      exact(0.5));
          if (x.x < 0) x.x = 0;
        }
        // The piecewise-linear interpolant's slope and magnitude around [x − e, x + e].
        const auto lo = static_cast<std::int64_t>(std::max(0.0, std::floor(x.x - x.e)));
        const auto hi =
            std::min<std::int64_t>(L_rows - 1, static_cast<std::int64_t>(std::ceil(x.x + x.e)) + 1);
        double slope = 0, mag = 0;
        for (std::int64_t i = lo; i <= hi; ++i) {
          const double v = s.table[static_cast<std::size_t>(i) * d + col];
          mag = std::max(mag, std::fabs(v));
          if (i < hi) {
            slope =
                std::max(slope, std::fabs(s.table[static_cast<std::size_t>(i + 1) * d + col] - v));
          }
        }
        // fl(1 − λ) (≤ 2^−25 off, times |a|), fl(λ0·a), fl(λ·b) and their sum.
        // (The weights sum to 1 + O(2^−25): the values stay below mag·(1 + 2^−22).)
        const double B = x.e * slope + 0x1p-25 * mag + 3 * half_ulp(mag * (1 + 0x1p-22), kF32);
        return path_bound(B, std::fabs(ex.y[k]), stored, out, kF32);
      };
    }
    if (st != strategy::hf && st != strategy::accurate) {
      L.bound += std::string(" + ") + (st == strategy::table_fp16 ? "fp16" : "bf16");
    }
    check_values<T>(L, got, ex, bound, [&](std::size_t k) {
      return "t=" + std::to_string(pos[k / d]) + " col=" + std::to_string(k % d);
    });
    L.finish();
  }
}

/// The exact interpolated value of row t, column c: the source index is the rational num/den
/// (align_corners: t·(L−1)/(L′−1); otherwise ((2t + 1)·L − L′)/(2L′), clamped at 0), and the value
/// (a·(den − rem) + b·rem)/den is formed exactly (one final MPFR division, exact whenever the
/// quotient is representable, e.g. at rounding ties of the output types).
real exact_learned(const spec::learned& s, std::int64_t t, std::int64_t c) {
  const std::int64_t L = s.num_positions;
  const std::int64_t d = s.d_model;
  if (s.target_positions == 0) return real(s.table[static_cast<std::size_t>(t * d + c)]);
  const std::int64_t Lp = s.target_positions;
  std::int64_t num, den;
  if (s.align_corners) {
    num = t * (L - 1);
    den = Lp - 1;
  } else {
    num = std::max<std::int64_t>(0, (2 * t + 1) * L - Lp);
    den = 2 * Lp;
  }
  const std::int64_t i0 = num / den;
  const std::int64_t rem = num % den;
  if (i0 >= L - 1) return real(s.table[static_cast<std::size_t>((L - 1) * d + c)]);
  const real a(s.table[static_cast<std::size_t>(i0 * d + c)]);
  if (rem == 0) return a;
  const real b(s.table[static_cast<std::size_t>((i0 + 1) * d + c)]);
  const precision_scope work(512);
  return (a * real_from_int(den - rem) + b * real_from_int(rem)) / real_from_int(den);
}

TEST_P(KernelContractsLearned, Table) {
  const learned_case& c = GetParam();
  const auto s = test::parse_as<spec::learned>(c.spec);
  print_header(std::string("learned/") + c.name + " = " + c.spec);
  std::vector<std::int64_t> pos;
  const std::int64_t rows = s.target_positions > 0 ? s.target_positions : s.num_positions;
  for (std::int64_t t = 0; t < rows; ++t) pos.push_back(t);
  rounded ex;
  // ref::learned_row forms the source index with a rounded scale (L−1)/(L′−1) or L/L′, so at
  // rational points it is off by ~2^−160 and can round exact ties the wrong way: the table is
  // checked against the exact rational value, and the reference's disagreements are counted.
  std::size_t ref_ties[3] = {0, 0, 0};
  for (std::int64_t t : pos) {
    const auto r = ref::learned_row(s, t);
    for (std::int64_t col = 0; col < s.d_model; ++col) {
      const real v = exact_learned(s, t, col);
      ex.push(v);
      const real& w = r[static_cast<std::size_t>(col)];
      ref_ties[0] += round_to<float>(w) != round_to<float>(v) ? 1 : 0;
      ref_ties[1] += round_to<half>(w) == round_to<half>(v) ? 0 : 1;
      ref_ties[2] += round_to<bfloat16>(w) == round_to<bfloat16>(v) ? 0 : 1;
    }
  }
  std::cout << "note: ref::learned_row rounds differently from the exact rational value in "
            << ref_ties[0] << " (fp32), " << ref_ties[1] << " (fp16), " << ref_ties[2]
            << " (bf16) of " << ex.y.size() << " values\n";
  learned_lines<float>(c, s, pos, ex);
  learned_lines<half>(c, s, pos, ex);
  learned_lines<bfloat16>(c, s, pos, ex);
}

INSTANTIATE_TEST_SUITE_P(Table, KernelContractsLearned, ::testing::ValuesIn(kLearnedCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// ALiBi slopes and bias.

class KernelContractsAlibi : public ::testing::TestWithParam<int> {};

template <class T>
void alibi_lines(const spec::alibi& s, const std::vector<real>& slopes,
                 const std::vector<std::int64_t>& q, const std::vector<std::int64_t>& kpos) {
  constexpr format out = format_of<T>();
  const std::string family = "alibi/H=" + std::to_string(s.num_heads);
  rounded ex_slopes, ex_bias;
  for (const real& m : slopes) ex_slopes.push(m);
  for (const real& m : slopes) {
    for (std::int64_t a : q) {
      for (std::int64_t b : kpos) ex_bias.push(ref::alibi_bias(m, a, b));
    }
  }
  for (strategy st : kernel::all_strategies()) {
    if (st == strategy::ggml) continue;
    const impl::alibi_contract contract(s, st);
    std::vector<T> got(slopes.size());
    kernel::alibi_slopes<T>(s, st, got);
    line L{family + "/slopes", kernel::to_string(st), format_name(out), "h=1..H", "exact", ""};
    std::vector<T> bias(slopes.size() * q.size() * kpos.size());
    kernel::alibi_bias<T>(s, st, q, kpos, bias);
    line B{family + "/bias", kernel::to_string(st), format_name(out), "|j-i|<2^16", "exact", ""};
    if (st == strategy::accurate) {
      L.bound = B.bound = "rounded once";
      L.ulp_limit = B.ulp_limit = 0;
      check_values<T>(
          L, got, ex_slopes,
          [&](std::size_t k) {
            return contract.slope_bound(static_cast<std::int64_t>(k), ex_slopes.y[k], out);
          },
          [&](std::size_t k) { return "h=" + std::to_string(k + 1); });
      check_values<T>(
          B, bias, ex_bias,
          [&](std::size_t k) {
            return contract.bias_bound(0, 0, ex_bias.y[k], out);  // accurate: rounded once
          },
          [&](std::size_t k) { return "element " + std::to_string(k); });
    } else {
      L.bound = "fp32 pow model";
      B.bound = "fp32 pow model + product";
      if (st != strategy::hf) {
        const std::string sfx = st == strategy::table_fp16 ? " + fp16" : " + bf16";
        L.bound += sfx;
        B.bound += sfx;
      }
      check_values<T>(
          L, got, ex_slopes,
          [&](std::size_t k) {
            return contract.slope_bound(static_cast<std::int64_t>(k), ex_slopes.y[k], out);
          },
          [&](std::size_t k) { return "h=" + std::to_string(k + 1); });
      const std::size_t per_head = q.size() * kpos.size();
      check_values<T>(
          B, bias, ex_bias,
          [&](std::size_t k) {
            const std::size_t h = k / per_head;
            const std::size_t a = (k % per_head) / kpos.size();
            const std::size_t b = k % kpos.size();
            return contract.bias_bound(static_cast<std::int64_t>(h), kpos[b] - q[a], ex_bias.y[k],
                                       out);
          },
          [&](std::size_t k) {
            const std::size_t a = (k % per_head) / kpos.size();
            const std::size_t b = k % kpos.size();
            return "h=" + std::to_string(k / per_head + 1) + " i=" + std::to_string(q[a]) +
                   " j=" + std::to_string(kpos[b]);
          });
    }
    L.finish();
    B.finish();
  }
}

TEST_P(KernelContractsAlibi, Table) {
  const auto s = test::parse_as<spec::alibi>("alibi:num_heads=" + std::to_string(GetParam()));
  print_header("alibi/H=" + std::to_string(GetParam()));
  const auto slopes = ref::alibi_slopes(s);
  std::vector<std::int64_t> pos;
  for (std::int64_t p = 0; p < 24; ++p) pos.push_back(p);
  for (std::int64_t p : {255, 256, 257, 2047, 2048, 2049, 4095, 32768, 65535}) pos.push_back(p);
  alibi_lines<float>(s, slopes, pos, pos);
  alibi_lines<half>(s, slopes, pos, pos);
  alibi_lines<bfloat16>(s, slopes, pos, pos);
}

INSTANTIATE_TEST_SUITE_P(Table, KernelContractsAlibi, ::testing::Values(8, 12, 16, 48),
                         [](const auto& info) { return "H" + std::to_string(info.param); });

// ---------------------------------------------------------------------------------------------
// T5 buckets and Shaw clipping (integers: the bound is on |Δbucket|).

struct t5_case {
  int buckets, max_distance;
  bool bidirectional;
};

class KernelContractsT5 : public ::testing::TestWithParam<t5_case> {};

TEST_P(KernelContractsT5, Table) {
  const t5_case& c = GetParam();
  const auto s = test::parse_as<spec::t5>("t5:num_buckets=" + std::to_string(c.buckets) +
                                          ",max_distance=" + std::to_string(c.max_distance) +
                                          ",bidirectional=" + (c.bidirectional ? "true" : "false"));
  const std::string family = "t5/" + std::to_string(c.buckets) + "," +
                             std::to_string(c.max_distance) + (c.bidirectional ? ",bi" : ",causal");
  print_header(family);
  std::vector<std::int64_t> r;
  for (std::int64_t v = -4 * c.max_distance; v <= 4 * c.max_distance; ++v) r.push_back(v);
  for (std::int64_t v : {std::int64_t{1} << 20, std::int64_t{1} << 40, INT64_MAX}) {
    r.push_back(v);
    r.push_back(-v);
  }
  r.push_back(INT64_MIN);
  // The exact buckets: ref::t5_bucket, corrected where it truncates an exact integer boundary
  // downward (its logarithms are rounded; the boundary is verified in integers).
  std::vector<std::int64_t> want;
  std::size_t corrected = 0;
  for (std::int64_t v : r) {
    const std::int64_t b = impl::t5_exact_bucket(s, v);
    corrected += b != ref::t5_bucket(s, v) ? 1 : 0;
    want.push_back(b);
  }
  std::cout << "note: " << corrected
            << " reference buckets corrected at exact integer boundaries\n";
  for (strategy st : kernel::all_strategies()) {
    if (st == strategy::ggml) {
      std::vector<std::int64_t> got(r.size());
      EXPECT_THROW(kernel::t5_buckets(s, st, r, got), error);
      continue;
    }
    std::vector<std::int64_t> got(r.size());
    kernel::t5_buckets(s, st, r, got);
    line L{family, kernel::to_string(st), "int64", "|r|<=4*max_dist", "exact", ""};
    L.bound = st == strategy::accurate ? "exact" : "fp32 log near integer";
    for (std::size_t k = 0; k < r.size(); ++k) {
      const double err = std::fabs(double(got[k] - want[k]));
      // Off by one only where the exact log-branch value is within the fp32 model's error of
      // an integer (truncation boundary).
      const double allowed = st != strategy::accurate && impl::t5_fp32_may_differ(s, r[k]) ? 1 : 0;
      L.add(err, allowed, err == 0 ? 0 : 1, [&] {
        return "r=" + std::to_string(r[k]) + " got " + std::to_string(got[k]) + " want " +
               std::to_string(want[k]);
      });
    }
    L.finish();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, KernelContractsT5,
                         ::testing::Values(t5_case{32, 128, true}, t5_case{32, 128, false},
                                           t5_case{16, 128, true}, t5_case{64, 256, true},
                                           t5_case{160, 800, true}, t5_case{320, 800, false},
                                           t5_case{48, 1000, true}, t5_case{32, 4096, false}),
                         [](const auto& info) {
                           return "nb" + std::to_string(info.param.buckets) + "_d" +
                                  std::to_string(info.param.max_distance) +
                                  (info.param.bidirectional ? "_bi" : "_causal");
                         });

TEST(KernelContractsShaw, Table) {
  print_header("shaw");
  for (int k : {0, 1, 16, 128}) {
    const auto s = test::parse_as<spec::shaw>("shaw:max_relative_position=" + std::to_string(k));
    std::vector<std::int64_t> r;
    for (std::int64_t v = -300; v <= 300; ++v) r.push_back(v);
    r.push_back(INT64_MIN);
    r.push_back(INT64_MAX);
    std::vector<std::int64_t> got(r.size());
    kernel::shaw_clip(s, r, got);
    line L{"shaw/k=" + std::to_string(k), "-", "int64", "|r|<=300,extremes", "exact", "exact"};
    for (std::size_t i = 0; i < r.size(); ++i) {
      const double err = std::fabs(double(got[i] - ref::shaw_clip(s, r[i])));
      L.add(err, 0, err == 0 ? 0 : 1, [&] { return "r=" + std::to_string(r[i]); });
    }
    L.finish();
  }
}

}  // namespace
}  // namespace pev

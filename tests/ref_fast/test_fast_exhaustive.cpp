// Exhaustive agreement of the fast reference with the MPFR path (label `exhaustive`):
//   - PEV_FAST_CASES (default 10^8) random (spec, position, pair) cases with positions up to 2^31
//     (half uniform, half log-uniform), every spec of fast_test_util.h (RoPE and sinusoidal), and
//   - every position p < 2^16 for every spec,
// each for fp64, fp32, fp16 and bf16 targets (cos and sin). Prints throughput, mismatches (must be
// 0) and the fallback rate. PEV_THREADS sets the oracle's threads (default: all cores), PEV_SEED
// the seed.
//
// The fast path runs on the main thread (its MPFR fallback uses Boost's global precision). The
// oracle evaluates the MPFR path's arithmetic with raw MPFR at the path's own precision — angle
// RN_W(p·θ), RN_W(sin), RN_W(cos), product with m — on worker threads, so no thread touches the
// global default precision; it is first checked bit for bit against rope_reference::row and
// sinusoidal_row.

#include <gtest/gtest.h>
#include <mpfr.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "fast_test_util.h"

namespace pev {
namespace {

using clock_type = std::chrono::steady_clock;
using ref::fast_stats;
using test::tally;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

unsigned thread_count() {
  const auto env = test::env_int("PEV_THREADS", 0);
  if (env > 0) return static_cast<unsigned>(env);
  return std::max(1u, std::thread::hardware_concurrency());
}

// One spec: the fast reference and what the oracle needs (read-only MPFR values).
struct spec_case {
  std::string name;
  std::unique_ptr<ref::fast_rope_reference> rope;
  std::unique_ptr<ref::fast_sinusoidal_reference> sinusoidal;
  std::vector<real> freq;  // θ_i, or ω of each sinusoidal slot
  // Sinusoidal slots: the sine and cosine columns of freq[k] (−1: none).
  std::vector<std::int64_t> sin_col, cos_col;
  std::vector<std::size_t> zero_cols;  // sinusoidal padding columns (always +0)
  real m;                              // attention factor (RoPE)
  bool m_one = true;
  mpfr_prec_t work = 0;   // precision of the MPFR path's values
  std::size_t width = 0;  // pairs (RoPE) or d_model (sinusoidal)
  std::size_t slots = 0;  // frequencies per row: the "pairs" of a case

  std::size_t values_per_row() const { return rope ? 2 * width : width; }
};

std::vector<spec_case> make_cases() {
  std::vector<spec_case> out;
  for (const auto& c : test::rope_cases()) {
    spec_case k;
    k.name = "rope:" + c.spec;
    k.rope = std::make_unique<ref::fast_rope_reference>(test::rope_spec(c.spec), c.seq_len);
    const auto& r = k.rope->reference();
    k.freq = r.inv_freq();
    k.m = r.attention_factor();
    k.m_one = k.m == 1;
    k.work = mpfr_get_prec(r.row(1)[0].cos.backend().data());
    k.width = static_cast<std::size_t>(k.rope->pairs());
    k.slots = k.width;
    out.push_back(std::move(k));
  }
  for (const auto& body : test::sinusoidal_cases()) {
    spec_case k;
    k.name = "sinusoidal:" + body;
    const auto s = test::sinusoidal_spec(body);
    k.sinusoidal = std::make_unique<ref::fast_sinusoidal_reference>(s);
    std::vector<real> w;
    {
      const precision_scope scope(precision_bits() + ref::kGuardBits);  // as sinusoidal_row
      w = ref::sinusoidal_frequencies(s);
    }
    const auto d = s.d_model;
    if (s.layout == spec::sinusoidal_layout::interleaved) {
      for (std::int64_t j = 0; j < d; j += 2) {
        k.freq.push_back(w[j]);
        k.sin_col.push_back(j);
        k.cos_col.push_back(j + 1 < d ? j + 1 : -1);
      }
    } else {
      for (std::int64_t j = 0; j < d / 2; ++j) {
        k.freq.push_back(w[j]);
        k.sin_col.push_back(j);
        k.cos_col.push_back(j + d / 2);
      }
      if (d % 2 != 0) k.zero_cols.push_back(static_cast<std::size_t>(d - 1));
    }
    k.work = mpfr_get_prec(ref::sinusoidal_row(s, 1)[0].backend().data());
    k.width = static_cast<std::size_t>(d);
    k.slots = k.freq.size();
    out.push_back(std::move(k));
  }
  return out;
}

// Raw-MPFR evaluation of one row of the MPFR path (thread-safe: explicit precisions only).
class oracle {
 public:
  explicit oracle(const spec_case& c) : c_(c) {
    mpfr_inits2(c.work, a_, s_, co_, static_cast<mpfr_ptr>(nullptr));
    mpfr_init2(p_, 64);
    // Reals for pev::round_to (their construction only reads the default precision).
    mpfr_set_prec(rs_.backend().data(), c.work);
    mpfr_set_prec(rc_.backend().data(), c.work);
  }
  ~oracle() {
    mpfr_clears(a_, s_, co_, static_cast<mpfr_ptr>(nullptr));
    mpfr_clear(p_);
  }
  oracle(const oracle&) = delete;
  oracle& operator=(const oracle&) = delete;

  // Sets sin() and cos() to the path's values for frequency k at position p.
  void eval(std::int64_t p, std::size_t k) {
    mpfr_set_sj(p_, static_cast<intmax_t>(p), MPFR_RNDN);  // exact
    mpfr_mul(a_, p_, c_.freq[k].backend().data(), MPFR_RNDN);
    mpfr_sin_cos(s_, co_, a_, MPFR_RNDN);
    if (c_.rope && !c_.m_one) {
      mpfr_mul(rs_.backend().data(), s_, c_.m.backend().data(), MPFR_RNDN);
      mpfr_mul(rc_.backend().data(), co_, c_.m.backend().data(), MPFR_RNDN);
    } else {
      mpfr_set(rs_.backend().data(), s_, MPFR_RNDN);  // exact: same precision
      mpfr_set(rc_.backend().data(), co_, MPFR_RNDN);
    }
  }
  const real& sin() const { return rs_; }
  const real& cos() const { return rc_; }

 private:
  const spec_case& c_;
  mpfr_t p_, a_, s_, co_;
  real rs_, rc_;
};

bool same_mpfr(const real& a, const real& b) {
  return mpfr_equal_p(a.backend().data(), b.backend().data()) != 0 &&
         mpfr_signbit(a.backend().data()) == mpfr_signbit(b.backend().data());
}

// The oracle reproduces the MPFR path exactly (checked on the main thread).
void check_oracle(const spec_case& c, std::mt19937_64& rng) {
  oracle o(c);
  std::vector<std::int64_t> positions = {0, 1, 4095, 65535, (std::int64_t{1} << 31) - 1};
  for (int k = 0; k < 12; ++k) positions.push_back(static_cast<std::int64_t>(rng() >> 33));
  for (std::int64_t p : positions) {
    if (c.rope) {
      const auto row = c.rope->reference().row(p);
      for (std::size_t i = 0; i < c.slots; ++i) {
        o.eval(p, i);
        ASSERT_TRUE(same_mpfr(o.cos(), row[i].cos) && same_mpfr(o.sin(), row[i].sin))
            << c.name << " p=" << p << " pair " << i;
      }
    } else {
      const auto row = ref::sinusoidal_row(c.sinusoidal->spec(), p);
      for (std::size_t k = 0; k < c.slots; ++k) {
        o.eval(p, k);
        ASSERT_TRUE(same_mpfr(o.sin(), row[static_cast<std::size_t>(c.sin_col[k])]))
            << c.name << " p=" << p << " column " << c.sin_col[k];
        if (c.cos_col[k] >= 0) {
          ASSERT_TRUE(same_mpfr(o.cos(), row[static_cast<std::size_t>(c.cos_col[k])]))
              << c.name << " p=" << p << " column " << c.cos_col[k];
        }
      }
    }
  }
}

// Fast results of one batch of rows, for every target.
struct batch_results {
  std::vector<double> d[2];
  std::vector<float> f[2];
  std::vector<half> h[2];
  std::vector<bfloat16> b[2];
};

template <class T>
std::vector<T>* slot_of(batch_results& r, int which) {
  if constexpr (std::is_same_v<T, double>) return &r.d[which];
  if constexpr (std::is_same_v<T, float>) return &r.f[which];
  if constexpr (std::is_same_v<T, half>) return &r.h[which];
  if constexpr (std::is_same_v<T, bfloat16>) return &r.b[which];
}

struct totals {
  std::uint64_t cases = 0;
  tally t;
  fast_stats st;
  double fast_seconds = 0;
  double oracle_seconds = 0;
};

// Runs one batch: the fast path on this thread, then the oracle on `threads` workers.
void run_batch(const spec_case& c, const std::vector<std::int64_t>& positions, unsigned threads,
               totals& tot) {
  batch_results res;
  const auto t0 = clock_type::now();
  test::for_each_type([&]<class T>() {
    if (c.rope) {
      auto* cs = slot_of<T>(res, 0);
      auto* sn = slot_of<T>(res, 1);
      cs->resize(positions.size() * c.width);
      sn->resize(positions.size() * c.width);
      c.rope->table<T>(positions, *cs, *sn, &tot.st);
    } else {
      auto* out = slot_of<T>(res, 0);
      out->resize(positions.size() * c.width);
      c.sinusoidal->pe<T>(positions, *out, &tot.st);
    }
  });
  tot.fast_seconds += seconds_since(t0);

  const auto t1 = clock_type::now();
  std::vector<tally> part(threads);
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < threads; ++w) {
    pool.emplace_back([&, w] {
      oracle o(c);
      tally& t = part[w];
      for (std::size_t r = w; r < positions.size(); r += threads) {
        const std::int64_t p = positions[r];
        for (std::size_t z : c.zero_cols) {
          test::for_each_type([&]<class T>() {
            t.check((*slot_of<T>(res, 0))[r * c.width + z], T{}, "padding column");
          });
        }
        for (std::size_t k = 0; k < c.slots; ++k) {
          o.eval(p, k);
          auto where = [&, k] {
            return c.name + " p=" + std::to_string(p) + " k=" + std::to_string(k);
          };
          test::for_each_type([&]<class T>() {
            if (c.rope) {
              t.check((*slot_of<T>(res, 0))[r * c.width + k], round_to<T>(o.cos()), where);
              t.check((*slot_of<T>(res, 1))[r * c.width + k], round_to<T>(o.sin()), where);
            } else {
              const auto& row = *slot_of<T>(res, 0);
              const std::size_t base = r * c.width;
              t.check(row[base + static_cast<std::size_t>(c.sin_col[k])], round_to<T>(o.sin()),
                      where);
              if (c.cos_col[k] >= 0) {
                t.check(row[base + static_cast<std::size_t>(c.cos_col[k])], round_to<T>(o.cos()),
                        where);
              }
            }
          });
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  for (const auto& t : part) tot.t += t;
  tot.oracle_seconds += seconds_since(t1);
  tot.cases += positions.size() * c.slots;
}

void print_totals(const std::string& what, const totals& tot, unsigned threads) {
  test::print_summary(what, tot.t, tot.st);
  std::cout << "  " << tot.cases << " (spec, position, pair) cases; fast path "
            << static_cast<double>(tot.st.values) / tot.fast_seconds / 1e6
            << " M values/s (1 thread, 4 targets), MPFR oracle "
            << static_cast<double>(tot.cases) / tot.oracle_seconds / 1e6 << " M cases/s ("
            << threads << " threads); fallback rate " << tot.st.fallback_rate()
            << ", double-double stage " << tot.st.refined << " values\n";
}

TEST(RefFastExhaustive, RandomCasesUpTo2p31MatchMpfr) {
  std::mt19937_64 rng(test::test_seed(0x5eed));
  const auto cases = make_cases();
  for (const auto& c : cases) check_oracle(c, rng);
  const std::uint64_t target =
      static_cast<std::uint64_t>(test::env_int("PEV_FAST_CASES", 100'000'000));
  const unsigned threads = thread_count();
  totals tot;
  std::uniform_int_distribution<std::size_t> pick(0, cases.size() - 1);
  std::uniform_real_distribution<double> unit(0, 1);
  while (tot.cases < target) {
    const spec_case& c = cases[pick(rng)];
    const std::size_t rows =
        std::min<std::size_t>(2048, (target - tot.cases + c.slots - 1) / c.slots);
    std::vector<std::int64_t> positions(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      positions[r] =
          r % 2 == 0
              ? static_cast<std::int64_t>(rng() >> 33)
              : static_cast<std::int64_t>(std::ldexp(unit(rng), static_cast<int>(rng() % 32)));
    }
    run_batch(c, positions, threads, tot);
  }
  print_totals("random cases, positions < 2^31", tot, threads);
  EXPECT_GE(tot.cases, target);
  EXPECT_EQ(tot.t.mismatches, 0u) << tot.t.report();
}

TEST(RefFastExhaustive, EveryPositionBelow2p16MatchesMpfr) {
  std::mt19937_64 rng(test::test_seed(0x5eed));
  const auto cases = make_cases();
  const unsigned threads = thread_count();
  const std::int64_t limit = test::env_int("PEV_FAST_POSITIONS", std::int64_t{1} << 16);
  totals all;
  for (const auto& c : cases) {
    check_oracle(c, rng);
    totals tot;
    for (std::int64_t p0 = 0; p0 < limit; p0 += 2048) {
      std::vector<std::int64_t> positions;
      for (std::int64_t p = p0; p < std::min(limit, p0 + 2048); ++p) positions.push_back(p);
      run_batch(c, positions, threads, tot);
    }
    print_totals(c.name + ", every p < " + std::to_string(limit), tot, threads);
    EXPECT_EQ(tot.t.mismatches, 0u) << tot.t.report();
    all.cases += tot.cases;
    all.t += tot.t;
    all.st += tot.st;
    all.fast_seconds += tot.fast_seconds;
    all.oracle_seconds += tot.oracle_seconds;
  }
  print_totals("all specs, every p < " + std::to_string(limit), all, threads);
}

}  // namespace
}  // namespace pev

// Survey of the `accurate` strategy (ctest label `exhaustive`, not part of the default run): the
// production kernels against the fast exact reference (pev/ref/fast.h: bit-identical to
// round_to<T> of the MPFR reference), so the full figures take minutes.
//
// Configurations:
//   RoPE: head_dim ∈ {64, 128, 256} × rope_theta ∈ {1e4, 5e5, 1e6} × every rope_type (default,
//     linear, ntk, dynamic, yarn, llama3, longrope, proportional; parameters in rope_configs(),
//     dynamic and longrope at a sequence length past their original length), cos and sin.
//   Sinusoidal: d_model ∈ {128, 512, 1024} × layout ∈ {interleaved, blocked}.
// Each for float, half and bfloat16 outputs, on two position sets:
//   sweep   every p < PEV_SURVEY_POSITIONS (default 2^16), all pairs;
//   random  random p < 2^PEV_SURVEY_RANDOM_BITS (default 31) drawn from one seeded sequence, every
//           configuration using a prefix of it. With PEV_SURVEY_RANDOM_UNIT=cases (the default)
//           PEV_SURVEY_RANDOM (default 10^7) counts (p, pair) cases per configuration: the first
//           ⌈N/pairs⌉ positions, each with all its pairs (a pair is a RoPE pair or a sinusoidal
//           frequency, i.e. a sin/cos column pair). With PEV_SURVEY_RANDOM_UNIT=positions it counts
//           positions, each with all pairs (10^7 positions: pairs× the random set's work, hours).
//           With PEV_SURVEY_RANDOM_UNIT=disjoint it also counts positions with all their pairs, but
//           each configuration takes the next unused slice of the sequence, so the union over the
//           78 configurations holds 78·N distinct draws (N = 128206 gives ≥ 10^7 random positions,
//           each checked with all pairs in one configuration, in about a minute per 10^9 values).
// PEV_SURVEY_QUICK=1 makes the defaults small (every p < 1024, 10^5 cases); explicit variables
// still win. PEV_SEED sets the seed, PEV_SURVEY_THREADS the threads (default: all cores).
//
// Per configuration and dtype: values compared, correctly rounded (ulp distance 0 to the fast
// reference), within 1 ulp, max ulp distance. Fails unless every value is within 1 ulp (the
// contract) and, on each position set, ≥ 99.99 % of fp32 and ≥ 99.9 % of fp16/bf16 values are
// correctly rounded. A summary table (one line per configuration × dtype, per-dtype aggregates,
// the worst lines, the total runtime) is printed after the last test.
//
// Threads: the fast references may fall back to the MPFR path, which changes Boost's process-wide
// precision, and sinusoidal_table plans with MPFR on every call; so both run on the main thread
// only. Worker threads run what touches no pev::real: the RoPE kernel tables (planned on the main
// thread) and the comparisons.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "helpers.h"
#include "pev/kernel/absolute.h"
#include "pev/kernel/rope.h"
#include "pev/metric/ulp.h"
#include "pev/ref/fast.h"
#include "pev/scalar/traits.h"

namespace pev {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

constexpr int kSets = 2;  // 0: sweep, 1: random
constexpr const char* kSetNames[kSets] = {"sweep", "random"};
constexpr int kTypes = 3;  // float, half, bfloat16
constexpr const char* kTypeNames[kTypes] = {"fp32", "fp16", "bf16"};
// Minimum correctly-rounded rate per dtype: numerator / denominator (99.99 %, 99.9 %, 99.9 %).
constexpr std::uint64_t kMinCrNum[kTypes] = {9999, 999, 999};
constexpr std::uint64_t kMinCrDen[kTypes] = {10000, 1000, 1000};

// Calls f(std::type_identity<T>{}, k) for the k-th output type.
template <class F>
void for_each_dtype(F&& f) {
  f(std::type_identity<float>{}, 0);
  f(std::type_identity<half>{}, 1);
  f(std::type_identity<bfloat16>{}, 2);
}

// ---------------------------------------------------------------------------------------------
// Settings and position sets (main thread).

struct survey_settings {
  bool quick = false;
  std::uint64_t sweep = 0;   // every p < sweep
  std::uint64_t random = 0;  // (p, pair) cases per configuration, or positions
  bool random_positions = false;
  bool random_disjoint = false;  // each configuration its own slice of the sequence
  unsigned bits = 31;            // random p < 2^bits
  std::uint64_t seed = 0;
  unsigned threads = 1;
};

std::string random_description(const survey_settings& s) {
  const std::string bound = " random p < 2^" + std::to_string(s.bits);
  if (s.random_disjoint) {
    return std::to_string(s.random) + bound +
           " per config, each with all pairs, every config its own slice of the sequence";
  }
  if (s.random_positions) return std::to_string(s.random) + bound + ", each with all pairs";
  return std::to_string(s.random) + " (p, pair) cases per config: the first ceil(" +
         std::to_string(s.random) + "/pairs) of the" + bound + ", each with all its pairs";
}

const survey_settings& settings() {
  static const survey_settings s = [] {
    survey_settings r;
    r.quick = test::env_count("PEV_SURVEY_QUICK", 0) != 0;
    r.sweep = test::env_count("PEV_SURVEY_POSITIONS", r.quick ? 1024 : 65536);
    r.random = test::env_count("PEV_SURVEY_RANDOM", r.quick ? 100000 : 10000000);
    const char* unit = std::getenv("PEV_SURVEY_RANDOM_UNIT");
    const std::string_view u = unit ? unit : "cases";
    if (u != "cases" && u != "positions" && u != "disjoint") {
      ADD_FAILURE() << "PEV_SURVEY_RANDOM_UNIT must be `cases`, `positions` or `disjoint`, not "
                    << u;
    }
    r.random_positions = u == "positions" || u == "disjoint";
    r.random_disjoint = u == "disjoint";
    r.bits = static_cast<unsigned>(
        std::clamp<std::uint64_t>(test::env_count("PEV_SURVEY_RANDOM_BITS", 31), 1, 62));
    r.seed = test::test_seed(99);
    const std::uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
    r.threads = static_cast<unsigned>(
        std::clamp<std::uint64_t>(test::env_count("PEV_SURVEY_THREADS", cores), 1, 256));
    std::cout << "survey" << (r.quick ? " (PEV_SURVEY_QUICK)" : "") << ": sweep every p < "
              << r.sweep << "; random " << random_description(r) << "; " << r.threads
              << " thread(s)\n  (PEV_SURVEY_POSITIONS, PEV_SURVEY_RANDOM, PEV_SURVEY_RANDOM_UNIT, "
                 "PEV_SURVEY_RANDOM_BITS, PEV_SURVEY_THREADS, PEV_SURVEY_QUICK, PEV_SEED)"
              << std::endl;
    return r;
  }();
  return s;
}

const std::vector<std::int64_t>& sweep_positions() {
  static const std::vector<std::int64_t> p = [] {
    std::vector<std::int64_t> v(settings().sweep);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i);
    return v;
  }();
  return p;
}

// n positions of the seeded random sequence: its first n (every configuration uses a prefix),
// or with the `disjoint` unit the next n not given to an earlier configuration.
std::span<const std::int64_t> random_positions(std::size_t n) {
  static std::vector<std::int64_t> pool;
  static test::splitmix rng(settings().seed);
  static std::size_t used = 0;
  const std::size_t first = settings().random_disjoint ? used : 0;
  used = first + n;
  const unsigned shift = 64 - settings().bits;
  while (pool.size() < first + n) pool.push_back(static_cast<std::int64_t>(rng.next() >> shift));
  return std::span<const std::int64_t>(pool).subspan(first, n);
}

// Random positions of a configuration with `pairs` pairs per row.
std::size_t random_count(std::size_t pairs) {
  const survey_settings& s = settings();
  if (s.random_positions) return s.random;
  return static_cast<std::size_t>((s.random + pairs - 1) / pairs);
}

// ---------------------------------------------------------------------------------------------
// Tallies.

struct location {
  std::int64_t p = 0;
  std::int64_t index = 0;  // pair (RoPE) or column (sinusoidal)
  const char* what = "";   // cos, sin or col
  double got = 0, want = 0;
};

struct tally {
  std::uint64_t n = 0;
  std::uint64_t off = 0;  // ulp distance > 0
  std::uint64_t far = 0;  // ulp distance > 1
  std::uint64_t max_ulp = 0;
  location worst;  // first value at max_ulp (in position-set order)

  std::uint64_t cr() const { return n - off; }
  std::uint64_t faithful() const { return n - far; }
  double cr_pct() const { return n ? 100.0 * double(cr()) / double(n) : 100.0; }
  double faithful_pct() const { return n ? 100.0 * double(faithful()) / double(n) : 100.0; }
  void merge(const tally& o) {
    n += o.n;
    off += o.off;
    far += o.far;
    if (o.max_ulp > max_ulp) {
      max_ulp = o.max_ulp;
      worst = o.worst;
    }
  }
};

using dtype_tallies = std::array<tally, kTypes>;

std::string describe(const location& w, std::uint64_t ulp) {
  char buf[192];
  std::snprintf(buf, sizeof buf, "p=%lld %s=%lld %s: got %.9g, RN %.9g (%llu ulp)",
                static_cast<long long>(w.p), std::string_view(w.what) == "col" ? "col" : "i",
                static_cast<long long>(w.index), w.what, w.got, w.want,
                static_cast<unsigned long long>(ulp));
  return buf;
}

// A chunk's values: `parts` planes (RoPE: cos then sin; sinusoidal: one) of [pos.size(), width].
struct geometry {
  std::size_t width = 0;
  bool rope = false;
};

template <class T>
void compare(std::span<const T> got, std::span<const T> want, std::span<const std::int64_t> pos,
             const geometry& g, tally& t) {
  using traits = scalar_traits<T>;
  const std::size_t plane = pos.size() * g.width;
  t.n += got.size();
  for (std::size_t j = 0; j < got.size(); ++j) {
    if (traits::to_bits(got[j]) == traits::to_bits(want[j])) continue;
    const std::uint64_t d = metric::ulp_distance(got[j], want[j]);
    if (d == 0) continue;  // ±0
    ++t.off;
    t.far += d > 1;
    if (d > t.max_ulp) {
      t.max_ulp = d;
      const std::size_t k = j % plane;
      t.worst = {pos[k / g.width], static_cast<std::int64_t>(k % g.width),
                 g.rope ? (j < plane ? "cos" : "sin") : "col", test::as_double(got[j]),
                 test::as_double(want[j])};
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Chunks: the main thread produces (fast reference, and for sinusoidal the kernel), workers
// consume (RoPE kernel, comparisons). Results are merged in chunk order (deterministic).

template <class T>
struct planes {
  std::vector<T> want, got;
};

struct job {
  std::size_t index = 0;
  std::span<const std::int64_t> pos;
  std::tuple<planes<float>, planes<half>, planes<bfloat16>> data;
};

struct chunk_results {
  std::array<dtype_tallies, kSets> t;
};

template <class Produce, class Consume>
chunk_results run_chunks(const std::array<std::span<const std::int64_t>, kSets>& sets,
                         std::size_t row_values, std::size_t chunk_values, Produce&& produce,
                         Consume&& consume) {
  std::vector<std::unique_ptr<job>> jobs;
  std::vector<int> set_of;
  const std::size_t rows =
      std::max<std::size_t>(1, chunk_values / std::max<std::size_t>(1, row_values));
  for (int s = 0; s < kSets; ++s) {
    for (std::size_t b = 0; b < sets[s].size(); b += rows) {
      auto j = std::make_unique<job>();
      j->index = jobs.size();
      j->pos = sets[s].subspan(b, std::min(rows, sets[s].size() - b));
      jobs.push_back(std::move(j));
      set_of.push_back(s);
    }
  }
  std::vector<dtype_tallies> out(jobs.size());
  const unsigned workers = settings().threads - 1;
  if (workers == 0) {
    for (auto& j : jobs) {
      produce(*j);
      out[j->index] = consume(*j);
      j.reset();
    }
  } else {
    std::mutex mu;
    std::condition_variable has_items, has_space;
    std::deque<std::unique_ptr<job>> queue;
    bool done = false;
    std::exception_ptr failure;
    auto worker = [&] {
      for (;;) {
        std::unique_ptr<job> j;
        {
          std::unique_lock lock(mu);
          has_items.wait(lock, [&] { return !queue.empty() || done; });
          if (queue.empty()) return;
          j = std::move(queue.front());
          queue.pop_front();
        }
        has_space.notify_one();
        try {
          out[j->index] = consume(*j);
        } catch (...) {
          const std::lock_guard lock(mu);
          if (!failure) failure = std::current_exception();
        }
      }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w) pool.emplace_back(worker);
    auto finish = [&] {
      {
        const std::lock_guard lock(mu);
        done = true;
      }
      has_items.notify_all();
      for (auto& t : pool) t.join();
    };
    try {
      for (auto& j : jobs) {
        produce(*j);
        {
          std::unique_lock lock(mu);
          has_space.wait(lock, [&] { return queue.size() < workers; });
          queue.push_back(std::move(j));
        }
        has_items.notify_one();
      }
    } catch (...) {
      finish();
      throw;
    }
    finish();
    if (failure) std::rethrow_exception(failure);
  }
  chunk_results r;
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (int k = 0; k < kTypes; ++k) r.t[set_of[i]][k].merge(out[i][k]);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Results, per-test report and checks, and the summary printed after the last test.

struct config_result {
  std::string family;  // rope or sinusoidal
  std::string label;
  std::size_t pairs = 0;
  std::array<std::size_t, kSets> positions{};
  chunk_results r;
  std::array<ref::fast_stats, kTypes> stats;  // per dtype
  double seconds = 0;
};

std::vector<config_result>& results() {
  static std::vector<config_result> v;
  return v;
}

// Rates of one dtype over both position sets.
std::string rates(const std::array<tally, kSets>& t, std::uint64_t fallbacks) {
  tally all = t[0];
  all.merge(t[1]);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%12llu values  CR %11.7f%% (sweep %11.7f%%, random %11.7f%%; not CR %llu + %llu)"
                "  <=1ulp %11.7f%%  max %llu  fallbacks %llu",
                static_cast<unsigned long long>(all.n), all.cr_pct(), t[0].cr_pct(), t[1].cr_pct(),
                static_cast<unsigned long long>(t[0].off),
                static_cast<unsigned long long>(t[1].off), all.faithful_pct(),
                static_cast<unsigned long long>(all.max_ulp),
                static_cast<unsigned long long>(fallbacks));
  std::string line = buf;
  if (all.max_ulp > 0) line += "  first worst " + describe(all.worst, all.max_ulp);
  return line;
}

std::string table_line(const config_result& c, int k) {
  char head[64];
  std::snprintf(head, sizeof head, "%-34s %-4s ", c.label.c_str(), kTypeNames[k]);
  return head + rates({c.r.t[0][k], c.r.t[1][k]}, c.stats[k].fallbacks);
}

std::uint64_t not_cr(const config_result& c, int k) { return c.r.t[0][k].off + c.r.t[1][k].off; }

void report_and_check(config_result c) {
  std::cout << c.label << ": " << c.positions[0] << " sweep + " << c.positions[1]
            << " random positions x " << c.pairs << " pairs; " << c.seconds << " s\n";
  for (int k = 0; k < kTypes; ++k) std::cout << "  " << table_line(c, k) << "\n";
  std::cout << std::flush;
  for (int k = 0; k < kTypes; ++k) {
    for (int s = 0; s < kSets; ++s) {
      const tally& t = c.r.t[s][k];
      if (t.n == 0) continue;
      EXPECT_EQ(t.far, 0u) << c.label << " " << kTypeNames[k] << " " << kSetNames[s] << ": "
                           << t.far << " of " << t.n << " values > 1 ulp; worst "
                           << describe(t.worst, t.max_ulp);
      EXPECT_GE(t.cr() * kMinCrDen[k], t.n * kMinCrNum[k])
          << c.label << " " << kTypeNames[k] << " " << kSetNames[s] << ": correctly rounded "
          << std::fixed << std::setprecision(7) << t.cr_pct() << "% < "
          << 100.0 * double(kMinCrNum[k]) / double(kMinCrDen[k]) << "% (" << t.off << " of " << t.n
          << " values not correctly rounded)";
    }
  }
  results().push_back(std::move(c));
}

class summary_printer : public ::testing::Environment {
 public:
  void SetUp() override {
    start_ = clock_type::now();
    (void)settings();  // prints the sizes and the seed
  }
  void TearDown() override {
    const auto& all = results();
    if (all.empty()) return;
    const survey_settings& s = settings();
    std::cout << "\n=== accurate survey vs the fast exact reference ===\n"
              << "sweep: every p < " << s.sweep << ", all pairs; random: " << random_description(s)
              << "; seed " << s.seed << "\n";
    for (const auto& c : all) {
      for (int k = 0; k < kTypes; ++k) std::cout << table_line(c, k) << "\n";
    }
    std::uint64_t total = 0, fallbacks = 0;
    std::cout << "\n--- aggregate per family and dtype ---\n";
    for (const char* family : {"rope", "sinusoidal", "all"}) {
      for (int k = 0; k < kTypes; ++k) {
        std::array<tally, kSets> agg;
        std::uint64_t fb = 0;
        std::size_t n_configs = 0;
        for (const auto& c : all) {
          if (std::string_view(family) != "all" && c.family != family) continue;
          ++n_configs;
          fb += c.stats[k].fallbacks;
          for (int st = 0; st < kSets; ++st) agg[st].merge(c.r.t[st][k]);
        }
        if (n_configs == 0) continue;
        if (std::string_view(family) == "all") {
          total += agg[0].n + agg[1].n;
          fallbacks += fb;
        }
        char head[64];
        std::snprintf(head, sizeof head, "%-10s %-4s %2zu configs ", family, kTypeNames[k],
                      n_configs);
        std::cout << head << rates(agg, fb) << "\n";
      }
    }
    std::cout << "\n--- worst lines (most values not correctly rounded; up to 8 per dtype) ---\n";
    for (int k = 0; k < kTypes; ++k) {
      std::vector<const config_result*> v;
      for (const auto& c : all) {
        if (not_cr(c, k) > 0) v.push_back(&c);
      }
      std::stable_sort(v.begin(), v.end(), [&](const auto* a, const auto* b) {
        return double(not_cr(*a, k)) / double(a->r.t[0][k].n + a->r.t[1][k].n) >
               double(not_cr(*b, k)) / double(b->r.t[0][k].n + b->r.t[1][k].n);
      });
      if (v.empty()) std::cout << kTypeNames[k] << ": every value correctly rounded\n";
      for (std::size_t i = 0; i < std::min<std::size_t>(8, v.size()); ++i) {
        std::cout << table_line(*v[i], k) << "\n";
      }
    }
    std::cout << "\ntotal: " << all.size() << " configs, " << total
              << " values checked (kernel vs fast reference), fast-reference fallbacks "
              << fallbacks << ", runtime " << seconds_since(start_) << " s" << std::endl;
  }

 private:
  clock_type::time_point start_;
};

[[maybe_unused]] ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new summary_printer);

// ---------------------------------------------------------------------------------------------
// RoPE.

struct rope_config {
  std::string name;   // test name
  std::string label;  // table label
  std::string spec;
  std::optional<std::int64_t> seq_len;
};

// Phi-3-style LongRoPE factor lists of n entries: smooth ramps 1 → 1.6 (short) and 1 → 45 (long).
std::string factor_list(std::int64_t n, double top) {
  std::string s = "[";
  for (std::int64_t i = 0; i < n; ++i) {
    const double t = n > 1 ? double(i) / double(n - 1) : 0.0;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", 1.0 + (top - 1.0) * t * t);
    s += (i ? "," : "") + std::string(buf);
  }
  return s + "]";
}

std::vector<rope_config> rope_configs() {
  std::vector<rope_config> out;
  const std::pair<const char*, const char*> thetas[] = {
      {"1e4", "10000"}, {"5e5", "500000"}, {"1e6", "1000000"}};
  for (const std::int64_t d : {64, 128, 256}) {
    for (const auto& [tname, tvalue] : thetas) {
      const std::string base =
          "rope:head_dim=" + std::to_string(d) + ",rope_theta=" + std::string(tvalue);
      auto add = [&](const char* type, const std::string& params, std::optional<std::int64_t> seq) {
        rope_config c;
        c.name = "d" + std::to_string(d) + "_theta" + tname + "_" + type;
        c.label = "rope d=" + std::to_string(d) + " theta=" + tname + " " + type;
        c.spec = base + params;
        c.seq_len = seq;
        out.push_back(std::move(c));
      };
      add("default", "", std::nullopt);
      add("linear", ",rope_type=linear,factor=4", std::nullopt);
      add("ntk", ",rope_type=ntk,factor=4", std::nullopt);
      // Dynamic NTK past its length: α = 4·16384/4096 − 3 = 13.
      add("dynamic", ",rope_type=dynamic,factor=4,max_position_embeddings=4096", 16384);
      // Qwen2.5-style YaRN.
      add("yarn",
          ",rope_type=yarn,factor=4,original_max_position_embeddings=32768,"
          "max_position_embeddings=131072",
          std::nullopt);
      // Llama 3.1.
      add("llama3",
          ",rope_type=llama3,factor=8,low_freq_factor=1,high_freq_factor=4,"
          "original_max_position_embeddings=8192",
          std::nullopt);
      // Phi-3-128k-style LongRoPE (factor 131072/4096 = 32), long factors in use.
      add("longrope",
          ",rope_type=longrope,original_max_position_embeddings=4096,"
          "max_position_embeddings=131072,short_factor=" +
              factor_list(d / 2, 1.6) + ",long_factor=" + factor_list(d / 2, 45.0),
          131072);
      // A quarter of the pairs rotate (the rest is NoPE), frequencies divided by 8.
      add("proportional", ",rope_type=proportional,partial_rotary_factor=0.25,factor=8",
          std::nullopt);
    }
  }
  return out;
}

void PrintTo(const rope_config& c, std::ostream* os) {
  *os << c.spec;
  if (c.seq_len) *os << " (seq_len " << *c.seq_len << ")";
}

class KernelAccurateSurveyRope : public ::testing::TestWithParam<rope_config> {};

TEST_P(KernelAccurateSurveyRope, Rates) {
  const rope_config& c = GetParam();
  const auto t0 = clock_type::now();
  const auto s = test::parse_as<spec::rope>(c.spec);
  const kernel::rope_kernel k(s, kernel::strategy::accurate, c.seq_len);
  const ref::fast_rope_reference fast(s, c.seq_len);
  const auto P = static_cast<std::size_t>(s.pairs());
  const geometry g{P, true};

  config_result res;
  res.family = "rope";
  res.label = c.label;
  res.pairs = P;
  const std::array<std::span<const std::int64_t>, kSets> sets = {sweep_positions(),
                                                                 random_positions(random_count(P))};
  res.positions = {sets[0].size(), sets[1].size()};

  auto produce = [&](job& j) {
    const std::size_t n = j.pos.size() * P;
    for_each_dtype([&](auto tag, int kk) {
      using T = typename decltype(tag)::type;
      auto& w = std::get<planes<T>>(j.data).want;
      w.resize(2 * n);
      const std::span<T> all(w);
      fast.table<T>(j.pos, all.first(n), all.subspan(n), &res.stats[kk]);
    });
  };
  auto consume = [&](job& j) {
    const std::size_t n = j.pos.size() * P;
    dtype_tallies t;
    for_each_dtype([&](auto tag, int kk) {
      using T = typename decltype(tag)::type;
      auto& pl = std::get<planes<T>>(j.data);
      pl.got.resize(2 * n);
      const std::span<T> all(pl.got);
      k.table<T>(j.pos, all.first(n), all.subspan(n));
      compare<T>(pl.got, pl.want, j.pos, g, t[kk]);
      pl = {};
    });
    return t;
  };
  res.r = run_chunks(sets, 2 * P, std::size_t{1} << 20, produce, consume);
  res.seconds = seconds_since(t0);
  report_and_check(std::move(res));
}

INSTANTIATE_TEST_SUITE_P(Survey, KernelAccurateSurveyRope, ::testing::ValuesIn(rope_configs()),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------
// Sinusoidal.

struct sinusoidal_config {
  std::int64_t d_model = 0;
  const char* layout = "";
};

void PrintTo(const sinusoidal_config& c, std::ostream* os) {
  *os << "sinusoidal:d_model=" << c.d_model << ",layout=" << c.layout;
}

class KernelAccurateSurveySinusoidal : public ::testing::TestWithParam<sinusoidal_config> {};

TEST_P(KernelAccurateSurveySinusoidal, Rates) {
  const sinusoidal_config& c = GetParam();
  const auto t0 = clock_type::now();
  const auto s = test::parse_as<spec::sinusoidal>(
      "sinusoidal:d_model=" + std::to_string(c.d_model) + ",layout=" + c.layout);
  const ref::fast_sinusoidal_reference fast(s);
  const auto d = static_cast<std::size_t>(s.d_model);
  const geometry g{d, false};

  config_result res;
  res.family = "sinusoidal";
  res.label = "sinusoidal d=" + std::to_string(c.d_model) + " " + c.layout;
  res.pairs = (d + 1) / 2;
  const std::array<std::span<const std::int64_t>, kSets> sets = {
      sweep_positions(), random_positions(random_count(res.pairs))};
  res.positions = {sets[0].size(), sets[1].size()};

  // Both the reference and the kernel (which plans with MPFR on every call) on the main thread.
  auto produce = [&](job& j) {
    for_each_dtype([&](auto tag, int kk) {
      using T = typename decltype(tag)::type;
      auto& pl = std::get<planes<T>>(j.data);
      pl.want.resize(j.pos.size() * d);
      pl.got.resize(j.pos.size() * d);
      fast.pe<T>(j.pos, pl.want, &res.stats[kk]);
      kernel::sinusoidal_table<T>(s, kernel::strategy::accurate, j.pos, pl.got);
    });
  };
  auto consume = [&](job& j) {
    dtype_tallies t;
    for_each_dtype([&](auto tag, int kk) {
      using T = typename decltype(tag)::type;
      auto& pl = std::get<planes<T>>(j.data);
      compare<T>(pl.got, pl.want, j.pos, g, t[kk]);
      pl = {};
    });
    return t;
  };
  res.r = run_chunks(sets, d, std::size_t{1} << 22, produce, consume);
  res.seconds = seconds_since(t0);
  report_and_check(std::move(res));
}

INSTANTIATE_TEST_SUITE_P(
    Survey, KernelAccurateSurveySinusoidal,
    ::testing::Values(sinusoidal_config{128, "interleaved"}, sinusoidal_config{128, "blocked"},
                      sinusoidal_config{512, "interleaved"}, sinusoidal_config{512, "blocked"},
                      sinusoidal_config{1024, "interleaved"}, sinusoidal_config{1024, "blocked"}),
    [](const auto& info) {
      return "d" + std::to_string(info.param.d_model) + "_" + info.param.layout;
    });

}  // namespace
}  // namespace pev

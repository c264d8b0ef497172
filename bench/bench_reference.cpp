// Throughput of the fast exact reference (pev::ref::fast_rope_reference::table,
// fast_sinusoidal_reference::pe) against the direct MPFR path it reproduces bit for bit
// (rope_reference::row or sinusoidal_row, then pev::round_to<T>), both measured in the same run
// (docs/design.md §11.9). After the run the program prints, per case, the throughput of each path
// in cos/sin values per second (every (cos, sin) pair counts as one cos and one sin) and the ratio
// fast/MPFR; the target is ≥ 100× for fp32 targets.
//
// Cases: RoPE head_dim 128, rope_theta 10000 (64 pairs), and sinusoidal d_model 128, exact
// recipe, default MPFR precision; positions either a sweep block (p < 2^12) or random positions
// < 2^31 (fixed seed). Fast path for fp32, fp16, bf16 and fp64 targets; the MPFR path rounds to
// fp32 (its cost does not depend on the target). Default --benchmark_min_time is 0.5 s.
//
// Baselines for RoPE fp32, every one counting values as above (two per (cos, sin) pair): the fast
// reference with its per-element double stage (before the vector rows), direct MPFR
// (mpfr_sin_cos at 53 bits on a 128-bit angle), glibc sincosf on fp32 angles, and store bandwidth
// (memcpy of fp32 values); the ratios are printed after the MPFR table.

#include <benchmark/benchmark.h>
#include <mpfr.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "pev/ref/fast.h"
#include "pev/ref/rope.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"

namespace {

using pev::bfloat16;
using pev::half;
using pev::scalar_traits;

constexpr std::int64_t kHeadDim = 128;
constexpr std::int64_t kDModel = 128;
constexpr std::size_t kFastBlock = 256;  // positions per fast-path iteration
constexpr std::size_t kMpfrBlock = 4;    // positions per MPFR iteration

pev::spec::rope rope_spec() {
  pev::spec::rope s;
  s.head_dim = kHeadDim;
  s.rotary_dim = kHeadDim;
  s.rope_theta = 10000.0;
  return s;
}

pev::spec::sinusoidal sinusoidal_spec() {
  pev::spec::sinusoidal s;
  s.d_model = kDModel;
  return s;
}

// Position sets: "sweep" (0 … 4095, cycled) and "random" (uniform < 2^31, seeded).
const std::vector<std::int64_t>& positions(std::string_view set) {
  static const std::vector<std::int64_t> sweep = [] {
    std::vector<std::int64_t> v(4096);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i);
    return v;
  }();
  static const std::vector<std::int64_t> random = [] {
    std::mt19937_64 rng(20240611);
    std::vector<std::int64_t> v(4096);
    for (auto& p : v) p = static_cast<std::int64_t>(rng() >> 33);
    return v;
  }();
  return set == "sweep" ? sweep : random;
}

// The next `n` positions of a set, cycling.
std::vector<std::int64_t> block(std::string_view set, std::size_t& cursor, std::size_t n) {
  const auto& all = positions(set);
  std::vector<std::int64_t> out(n);
  for (auto& p : out) {
    p = all[cursor];
    cursor = (cursor + 1) % all.size();
  }
  return out;
}

void set_rate(benchmark::State& state, std::size_t values) {
  state.SetItemsProcessed(static_cast<std::int64_t>(values));
  state.counters["values/s"] =
      benchmark::Counter(static_cast<double>(values), benchmark::Counter::kIsRate);
}

void bm_rope_mpfr(benchmark::State& state, std::string set) {
  const pev::ref::rope_reference ref(rope_spec());
  std::size_t cursor = 0, values = 0;
  for (auto _ : state) {
    for (std::int64_t p : block(set, cursor, kMpfrBlock)) {
      for (const auto& cs : ref.row(p)) {
        benchmark::DoNotOptimize(pev::round_to<float>(cs.cos));
        benchmark::DoNotOptimize(pev::round_to<float>(cs.sin));
        values += 2;
      }
    }
  }
  set_rate(state, values);
}

template <class T>
void bm_rope_fast(benchmark::State& state, std::string set) {
  const pev::ref::fast_rope_reference fast(rope_spec());
  const std::size_t n = static_cast<std::size_t>(fast.pairs());
  std::vector<T> c(kFastBlock * n), s(kFastBlock * n);
  std::size_t cursor = 0, values = 0;
  pev::ref::fast_stats st;
  for (auto _ : state) {
    const auto pos = block(set, cursor, kFastBlock);
    fast.table<T>(pos, c, s, &st);
    benchmark::DoNotOptimize(c.data());
    benchmark::DoNotOptimize(s.data());
    values += 2 * kFastBlock * n;
  }
  set_rate(state, values);
  state.counters["fallback_rate"] = st.fallback_rate();
}

// The fast reference with the double stage forced to the per-element code: the pre-vector
// throughput, the baseline of the vector rows (docs/performance.md).
void bm_rope_fast_scalar(benchmark::State& state, std::string set) {
  pev::ref::fast_detail::force_scalar_rows(true);
  bm_rope_fast<float>(state, set);
  pev::ref::fast_detail::force_scalar_rows(false);
}

// Direct MPFR, not pev's path: p·θ_i at 128 bits, mpfr_sin_cos at 53 bits, rounded to float (a
// double rounding: a lower bound on the cost of a correctly rounded answer, not one).
void bm_rope_mpfr53(benchmark::State& state, std::string set) {
  const pev::ref::fast_rope_reference fast(rope_spec());
  const std::size_t n = static_cast<std::size_t>(fast.pairs());
  std::vector<std::array<mpfr_t, 1>> theta(n);
  for (std::size_t i = 0; i < n; ++i) {
    mpfr_init2(theta[i][0], 128);
    mpfr_set(theta[i][0], fast.reference().inv_freq()[i].backend().data(), MPFR_RNDN);
  }
  mpfr_t a, sn, cs;
  mpfr_init2(a, 128);
  mpfr_init2(sn, 53);
  mpfr_init2(cs, 53);
  std::size_t cursor = 0, values = 0;
  for (auto _ : state) {
    for (std::int64_t p : block(set, cursor, kMpfrBlock * 16)) {
      for (std::size_t i = 0; i < n; ++i) {
        mpfr_mul_si(a, theta[i][0], static_cast<long>(p), MPFR_RNDN);
        mpfr_sin_cos(sn, cs, a, MPFR_RNDN);
        benchmark::DoNotOptimize(mpfr_get_flt(cs, MPFR_RNDN));
        benchmark::DoNotOptimize(mpfr_get_flt(sn, MPFR_RNDN));
        values += 2;
      }
    }
  }
  mpfr_clears(a, sn, cs, static_cast<mpfr_ptr>(nullptr));
  for (auto& t : theta) mpfr_clear(t[0]);
  set_rate(state, values);
}

// glibc's sincosf on the fp32 angle fp32(p)·fp32(θ_i): no correct rounding, no error bound.
void bm_rope_sincosf(benchmark::State& state, std::string set) {
  const pev::ref::fast_rope_reference fast(rope_spec());
  const std::vector<float>& theta = fast.inv_freq<float>();
  std::vector<float> c(kFastBlock * theta.size()), s(kFastBlock * theta.size());
  std::size_t cursor = 0, values = 0;
  for (auto _ : state) {
    const auto pos = block(set, cursor, kFastBlock);
    for (std::size_t r = 0; r < pos.size(); ++r) {
      const float p = static_cast<float>(pos[r]);
      for (std::size_t i = 0; i < theta.size(); ++i) {
        ::sincosf(p * theta[i], &s[r * theta.size() + i], &c[r * theta.size() + i]);
      }
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::DoNotOptimize(s.data());
    values += 2 * kFastBlock * theta.size();
  }
  set_rate(state, values);
}

// Store bandwidth: memcpy of fp32 values into a 64 MiB buffer (beyond the caches), counted as
// values written.
void bm_store_memcpy(benchmark::State& state) {
  constexpr std::size_t kChunk = kFastBlock * kHeadDim;  // one fast block's values
  std::vector<float> src(kChunk, 1.0f), dst(std::size_t{16} << 20);
  std::size_t at = 0, values = 0;
  for (auto _ : state) {
    std::memcpy(dst.data() + at, src.data(), kChunk * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    at = at + 2 * kChunk > dst.size() ? 0 : at + kChunk;
    values += kChunk;
  }
  set_rate(state, values);
}

void bm_sinusoidal_mpfr(benchmark::State& state, std::string set) {
  const auto spec = sinusoidal_spec();
  std::size_t cursor = 0, values = 0;
  for (auto _ : state) {
    for (std::int64_t p : block(set, cursor, kMpfrBlock)) {
      for (const auto& v : pev::ref::sinusoidal_row(spec, p)) {
        benchmark::DoNotOptimize(pev::round_to<float>(v));
        ++values;
      }
    }
  }
  set_rate(state, values);
}

template <class T>
void bm_sinusoidal_fast(benchmark::State& state, std::string set) {
  const pev::ref::fast_sinusoidal_reference fast(sinusoidal_spec());
  const std::size_t d = static_cast<std::size_t>(fast.d_model());
  std::vector<T> out(kFastBlock * d);
  std::size_t cursor = 0, values = 0;
  pev::ref::fast_stats st;
  for (auto _ : state) {
    const auto pos = block(set, cursor, kFastBlock);
    fast.pe<T>(pos, out, &st);
    benchmark::DoNotOptimize(out.data());
    values += kFastBlock * d;
  }
  set_rate(state, values);
  state.counters["fallback_rate"] = st.fallback_rate();
}

// Console output as usual, plus each benchmark's values/s for the ratio table.
class rate_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type == Run::RT_Aggregate) continue;
      if (auto it = r.counters.find("values/s"); it != r.counters.end()) {
        rates_[r.run_name.function_name].push_back(it->second.value);
      }
    }
  }
  // Median values/s of `name` over repetitions; 0 if it did not run.
  double rate(const std::string& name) const {
    auto it = rates_.find(name);
    if (it == rates_.end() || it->second.empty()) return 0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

 private:
  std::map<std::string, std::vector<double>> rates_;
};

const char* const kSets[] = {"sweep", "random"};

template <class T>
void register_fast() {
  const std::string t(scalar_traits<T>::name);
  for (const char* set : kSets) {
    benchmark::RegisterBenchmark(("rope/fast/" + t + "/" + set).c_str(), bm_rope_fast<T>, set);
    benchmark::RegisterBenchmark(("sinusoidal/fast/" + t + "/" + set).c_str(),
                                 bm_sinusoidal_fast<T>, set);
  }
}

void print_ratios(const rate_reporter& rep) {
  std::printf("\nfast exact reference vs MPFR path (same run; cos/sin values per second):\n");
  std::printf("%-12s %-7s %-5s %14s %14s %9s\n", "encoding", "set", "dtype", "fast", "MPFR",
              "ratio");
  for (const char* enc : {"rope", "sinusoidal"}) {
    for (const char* set : kSets) {
      const double mpfr = rep.rate(std::string(enc) + "/mpfr/" + set);
      for (const char* t : {"fp32", "fp16", "bf16", "fp64"}) {
        const double fast = rep.rate(std::string(enc) + "/fast/" + t + "/" + set);
        if (fast == 0 || mpfr == 0) continue;
        std::printf(
            "%-12s %-7s %-5s %14.4g %14.4g %8.1fx%s\n", enc, set, t, fast, mpfr, fast / mpfr,
            std::string_view(t) == "fp32"
                ? (fast / mpfr >= 100 ? "  (target >= 100x: met)" : "  (target >= 100x: NOT met)")
                : "");
      }
    }
  }
  std::printf(
      "\nrope fp32 fast reference against the baselines (same run; values/s; ratio = fast / "
      "baseline):\n");
  std::printf("%-7s %-34s %14s %14s %9s\n", "set", "baseline", "fast", "baseline", "ratio");
  const double store = rep.rate("store/memcpy");
  for (const char* set : kSets) {
    const double fast = rep.rate(std::string("rope/fast/fp32/") + set);
    const std::pair<const char*, std::string> base[] = {
        {"per-element code (force_scalar_rows)", std::string("rope/fast-scalar/fp32/") + set},
        {"direct mpfr_sin_cos, 53 bits", std::string("rope/mpfr53/") + set},
        {"glibc sincosf (fp32 angle)", std::string("rope/sincosf/") + set},
        {"store bandwidth (memcpy)", "store/memcpy"}};
    for (const auto& [label, name] : base) {
      const double b = name == "store/memcpy" ? store : rep.rate(name);
      if (fast == 0 || b == 0) continue;
      std::printf("%-7s %-34s %14.4g %14.4g %8.2fx\n", set, label, fast, b, fast / b);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  static std::string min_time = "--benchmark_min_time=0.5";
  std::vector<char*> args(argv, argv + argc);
  if (std::none_of(args.begin(), args.end(), [](const char* a) {
        return std::string_view(a).starts_with("--benchmark_min_time");
      })) {
    args.insert(args.begin() + 1, min_time.data());
  }
  int n = static_cast<int>(args.size());
  for (const char* set : kSets) {
    benchmark::RegisterBenchmark((std::string("rope/mpfr/") + set).c_str(), bm_rope_mpfr, set);
    benchmark::RegisterBenchmark((std::string("sinusoidal/mpfr/") + set).c_str(),
                                 bm_sinusoidal_mpfr, set);
  }
  for (const char* set : kSets) {
    benchmark::RegisterBenchmark((std::string("rope/fast-scalar/fp32/") + set).c_str(),
                                 bm_rope_fast_scalar, set);
    benchmark::RegisterBenchmark((std::string("rope/mpfr53/") + set).c_str(), bm_rope_mpfr53, set);
    benchmark::RegisterBenchmark((std::string("rope/sincosf/") + set).c_str(), bm_rope_sincosf,
                                 set);
  }
  benchmark::RegisterBenchmark("store/memcpy", bm_store_memcpy);
  register_fast<float>();
  register_fast<half>();
  register_fast<bfloat16>();
  register_fast<double>();
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  rate_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  print_ratios(rep);
  benchmark::Shutdown();
  return 0;
}

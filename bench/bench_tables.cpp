// Table generation throughput of every strategy (pev::kernel::rope_kernel::table and
// sinusoidal_table), reported as a ratio to the `hf` strategy's throughput for the same output
// dtype measured in the same run (docs/design.md §11.9).
//
// Cases: RoPE cos/sin tables for P = 4096 positions, head_dim 128 (64 pairs), rope_theta 10000;
// sinusoidal PE tables for the same positions, d_model 512; outputs fp32, fp16, bf16. Kernels are
// planned outside the timed loop (planning is once per spec). A strategy that has no pipeline for
// an encoding (ggml for sinusoidal) is reported as skipped.
//
// After the run the program prints one line per case with its ratio to hf and the target
// (accurate ≥ 0.5× hf). Default --benchmark_min_time is 0.2 s per benchmark.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pev/core/error.h"
#include "pev/kernel/absolute.h"
#include "pev/kernel/rope.h"
#include "pev/kernel/strategy.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"
#include "ratio_report.h"

namespace {

using pev::bfloat16;
using pev::half;
using pev::scalar_traits;
using pev::kernel::strategy;

constexpr std::int64_t kPositions = 4096;
constexpr std::int64_t kHeadDim = 128;
constexpr std::int64_t kDModel = 512;

const std::vector<std::int64_t>& positions() {
  static const std::vector<std::int64_t> p = [] {
    std::vector<std::int64_t> v(kPositions);
    for (std::int64_t i = 0; i < kPositions; ++i) v[i] = i;
    return v;
  }();
  return p;
}

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

template <class T>
void bench_rope(benchmark::State& state, strategy st) {
  std::unique_ptr<pev::kernel::rope_kernel> k;
  try {
    k = std::make_unique<pev::kernel::rope_kernel>(rope_spec(), st);
  } catch (const pev::error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const std::int64_t pairs = k->pairs();
  std::vector<T> cos(static_cast<std::size_t>(kPositions * pairs));
  std::vector<T> sin(cos.size());
  for (auto _ : state) {
    k->table<T>(positions(), cos, sin);
    benchmark::DoNotOptimize(cos.data());
    benchmark::DoNotOptimize(sin.data());
    benchmark::ClobberMemory();
  }
  // Items: cos/sin pairs (Mitems/s in the ratio table); bytes: the table written.
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kPositions * pairs);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 2 * kPositions * pairs *
                          static_cast<std::int64_t>(sizeof(T)));
}

template <class T>
void bench_sinusoidal(benchmark::State& state, strategy st) {
  std::vector<T> out(static_cast<std::size_t>(kPositions * kDModel));
  // Unsupported strategies throw on the first call: report them as skipped.
  try {
    pev::kernel::sinusoidal_table<T>(sinusoidal_spec(), st, positions(), out);
  } catch (const pev::error& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    pev::kernel::sinusoidal_table<T>(sinusoidal_spec(), st, positions(), out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kPositions * kDModel);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kPositions * kDModel *
                          static_cast<std::int64_t>(sizeof(T)));
}

struct row {
  std::string name;      // benchmark name
  std::string baseline;  // the hf benchmark of the same family and dtype
  std::string label;     // printed case
  double target = 0;     // minimum ratio to hf; 0: none
};
std::vector<row>& rows() {
  static std::vector<row> r;
  return r;
}

template <class T>
void register_dtype() {
  const std::string dtype(scalar_traits<T>::name);
  for (const char* family : {"rope", "sinusoidal"}) {
    const std::string base = std::string(family) + "/" + dtype + "/";
    for (const strategy st : pev::kernel::all_strategies()) {
      const std::string name = base + pev::kernel::to_string(st);
      const bool rope = std::string(family) == "rope";
      auto* b = benchmark::RegisterBenchmark(name.c_str(), [st, rope](benchmark::State& s) {
        if (rope) {
          bench_rope<T>(s, st);
        } else {
          bench_sinusoidal<T>(s, st);
        }
      });
      b->UseRealTime()->Unit(benchmark::kMillisecond);
      rows().push_back({name, base + "hf", name, st == strategy::accurate ? 0.5 : 0.0});
    }
  }
}

void print_ratios(const pev::bench::capturing_reporter& rep) {
  std::printf(
      "\nTable generation throughput / the hf strategy's (same family and dtype, same run):\n");
  std::printf("%-32s %14s %10s %8s\n", "case (family / dtype / strategy)", "Mitems/s", "ratio",
              "target");
  int misses = 0;
  for (const row& r : rows()) {
    const double t = rep.time_of(r.name);
    const double t_hf = rep.time_of(r.baseline);
    if (t <= 0) {
      std::printf("%-32s %14s\n", r.label.c_str(), "skipped");
      continue;
    }
    const bool rope = r.name.rfind("rope/", 0) == 0;
    const double values = rope ? double(kPositions) * double(kHeadDim / 2)  // pairs
                               : double(kPositions) * double(kDModel);
    const double rate = values / (t * 1e-3) / 1e6;  // times are ms per iteration
    char ratio[32] = "-";
    char target[32] = "";
    if (t_hf > 0) {
      const double x = t_hf / t;
      std::snprintf(ratio, sizeof ratio, "%.2f", x);
      if (r.target > 0) {
        std::snprintf(target, sizeof target, "≥ %.1f%s", r.target, x >= r.target ? "" : " MISS");
        if (x < r.target) ++misses;
      }
    }
    std::printf("%-32s %14.1f %10s %8s\n", r.label.c_str(), rate, ratio, target);
  }
  if (misses > 0) std::printf("%d case(s) below target\n", misses);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = pev::bench::with_default_min_time(argc, argv, "0.2");
  int n = static_cast<int>(args.size());
  register_dtype<float>();
  register_dtype<half>();
  register_dtype<bfloat16>();
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  pev::bench::capturing_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  print_ratios(rep);
  benchmark::Shutdown();
  return 0;
}

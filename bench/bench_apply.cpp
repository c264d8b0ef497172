// RoPE application throughput (pev::kernel::rope_apply / rope_apply_qk), reported as a ratio to
// memcpy of the same bytes measured in the same run (docs/design.md §11.9).
//
// Cases: T = 4096 tokens, head_dim D = 128, full rotary, NeoX and interleaved layouts; q only (32
// heads) and q + k with GQA (32 + 8 heads), rotated in place; q/k in fp32, bf16 and fp16 with an
// fp32 table and with a table in the q/k dtype. The bytes of a case are the q/k tensors' size; the
// baseline copies that many bytes from one buffer to another with std::memcpy. Both rates are
// bytes/s of the same byte count, so the ratio is apply throughput / memcpy throughput
// (= memcpy time / apply time).
//
// After the run the program prints one line per case with the ratio and the target
// (fp32 q/k with an fp32 table ≥ 0.7, bf16 q/k ≥ 0.5). Timings are wall-clock (memory-bound work).
// Default --benchmark_min_time is 0.2 s per benchmark; pass the flag to override.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pev/kernel/apply.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"
#include "ratio_report.h"

namespace {

using pev::bfloat16;
using pev::half;
using pev::scalar_traits;

constexpr std::int64_t kTokens = 4096;
constexpr std::int64_t kHeadDim = 128;
constexpr std::int64_t kQHeads = 32;
constexpr std::int64_t kKHeads = 8;

pev::spec::rope make_spec(pev::spec::rope_layout layout) {
  pev::spec::rope s;
  s.head_dim = kHeadDim;
  s.rotary_dim = kHeadDim;
  s.rope_theta = 10000.0;
  s.layout = layout;
  return s;
}

// Deterministic values in [−1, 1) (a 64-bit LCG; the distribution does not matter for speed, only
// that the values are ordinary normal numbers).
template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<T> v(n);
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& e : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const float f = static_cast<float>(static_cast<std::int64_t>(x >> 40) - (1 << 23)) / (1 << 23);
    e = T(f);
  }
  return v;
}

// A cos/sin table of kTokens positions (row p = position p), from double cos/sin of p·θ_i.
template <class TT>
struct table {
  std::vector<TT> cos, sin;
  pev::kernel::rope_table_view<TT> view() const { return {cos, sin, kTokens, kHeadDim / 2}; }
};

template <class TT>
const table<TT>& get_table() {
  static const table<TT> t = [] {
    table<TT> r;
    const std::int64_t pairs = kHeadDim / 2;
    r.cos.resize(static_cast<std::size_t>(kTokens * pairs));
    r.sin.resize(r.cos.size());
    for (std::int64_t p = 0; p < kTokens; ++p) {
      for (std::int64_t i = 0; i < pairs; ++i) {
        const double theta = std::pow(10000.0, -2.0 * double(i) / double(kHeadDim));
        r.cos[p * pairs + i] = TT(static_cast<float>(std::cos(double(p) * theta)));
        r.sin[p * pairs + i] = TT(static_cast<float>(std::sin(double(p) * theta)));
      }
    }
    return r;
  }();
  return t;
}

const std::vector<std::int64_t>& get_rows() {
  static const std::vector<std::int64_t> rows = [] {
    std::vector<std::int64_t> r(kTokens);
    for (std::int64_t t = 0; t < kTokens; ++t) r[t] = t;
    return r;
  }();
  return rows;
}

// Buffers of the case being measured; kept while consecutive benchmarks use the same key so that
// setup runs once per case, not once per runner call.
struct buffers {
  std::string key;
  std::vector<std::byte> a, b;
};
buffers& cache() {
  static buffers c;
  return c;
}

template <class TQ>
std::vector<std::byte> random_bytes(std::size_t elements, std::uint64_t seed) {
  const auto v = random_values<TQ>(elements, seed);
  std::vector<std::byte> bytes(elements * sizeof(TQ));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

template <class TQ>
buffers& get_buffers(std::int64_t heads, bool with_copy_target) {
  const std::string key = std::string(scalar_traits<TQ>::name) + "/" + std::to_string(heads) +
                          (with_copy_target ? "/copy" : "");
  buffers& c = cache();
  if (c.key != key) {
    c.key.clear();
    c.a.clear();
    c.a.shrink_to_fit();
    c.b.clear();
    c.b.shrink_to_fit();
    const auto elements = static_cast<std::size_t>(kTokens * heads * kHeadDim);
    c.a = random_bytes<TQ>(elements, 1);
    // The copy target is written before timing so that its pages are mapped (value-initialised).
    if (with_copy_target) c.b.assign(c.a.size(), std::byte{1});
    c.key = key;
  }
  return c;
}

// What the ratio table needs to know about each registered benchmark.
struct case_info {
  std::string case_name;  // shared by an apply benchmark and its baseline
  bool baseline = false;
  double target = 0;  // 0: no target
};
std::map<std::string, case_info>& registry() {
  static std::map<std::string, case_info> r;
  return r;
}
std::vector<std::string>& case_order() {
  static std::vector<std::string> v;
  return v;
}

void bench_memcpy(benchmark::State& state, std::size_t bytes) {
  // Reuse whichever case is cached when it has the right size; else make fresh buffers.
  buffers& c = cache();
  if (c.b.size() != bytes || c.a.size() != bytes) {
    c.key = "memcpy/" + std::to_string(bytes);
    c.a.assign(bytes, std::byte{2});
    c.b.assign(bytes, std::byte{1});
  }
  for (auto _ : state) {
    std::memcpy(c.b.data(), c.a.data(), bytes);
    benchmark::DoNotOptimize(c.b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
}

template <class TQ, class TT>
void bench_apply(benchmark::State& state, pev::spec::rope_layout layout, bool with_k) {
  const pev::spec::rope spec = make_spec(layout);
  const auto& tab = get_table<TT>();
  const auto& rows = get_rows();
  const std::int64_t q_elems = kTokens * kQHeads * kHeadDim;
  const std::int64_t k_elems = kTokens * kKHeads * kHeadDim;
  // q and k live in one allocation (q first), as a fused qkv projection would leave them.
  buffers& c = get_buffers<TQ>(with_k ? kQHeads + kKHeads : kQHeads, false);
  TQ* base = reinterpret_cast<TQ*>(c.a.data());
  pev::kernel::heads_view<TQ> q{
      {base, static_cast<std::size_t>(q_elems)}, kTokens, kQHeads, kHeadDim};
  pev::kernel::heads_view<TQ> k{
      {base + q_elems, static_cast<std::size_t>(k_elems)}, kTokens, kKHeads, kHeadDim};
  for (auto _ : state) {
    if (with_k) {
      pev::kernel::rope_apply_qk<TQ, TT>(spec, tab.view(), rows, q, k);
    } else {
      pev::kernel::rope_apply<TQ, TT>(spec, tab.view(), rows,
                                      {q.data, q.tokens, q.heads, q.head_dim}, q);
    }
    benchmark::DoNotOptimize(base);
    benchmark::ClobberMemory();
  }
  const std::int64_t bytes =
      (with_k ? q_elems + k_elems : q_elems) * static_cast<std::int64_t>(sizeof(TQ));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * bytes);
}

void add(const std::string& name, const case_info& info, benchmark::internal::Benchmark* b) {
  b->UseRealTime()->Unit(benchmark::kMillisecond);
  registry()[name] = info;
}

template <class TQ, class TT>
void register_case(pev::spec::rope_layout layout, bool with_k, double target) {
  const std::string shape = with_k ? "q+k_32/8" : "q_32";
  const std::string case_name = std::string(scalar_traits<TQ>::name) +
                                "/table:" + std::string(scalar_traits<TT>::name) + "/" +
                                pev::spec::to_string(layout) + "/" + shape;
  const std::string name = "apply/" + case_name;
  add(name, {case_name, false, target},
      benchmark::RegisterBenchmark(name.c_str(), [layout, with_k](benchmark::State& st) {
        bench_apply<TQ, TT>(st, layout, with_k);
      }));
  // The baseline right after its case: same bytes, buffers of the same size.
  const std::int64_t heads = with_k ? kQHeads + kKHeads : kQHeads;
  const auto bytes = static_cast<std::size_t>(kTokens * heads * kHeadDim) * sizeof(TQ);
  const std::string base_name = "memcpy/" + case_name;
  add(base_name, {case_name, true, 0},
      benchmark::RegisterBenchmark(base_name.c_str(),
                                   [bytes](benchmark::State& st) { bench_memcpy(st, bytes); }));
  case_order().push_back(case_name);
}

template <class TQ>
void register_dtype(double target) {
  for (const auto layout : {pev::spec::rope_layout::neox, pev::spec::rope_layout::interleaved}) {
    for (const bool with_k : {false, true}) {
      register_case<TQ, float>(layout, with_k, target);
      if constexpr (!std::is_same_v<TQ, float>) register_case<TQ, TQ>(layout, with_k, target);
    }
  }
}

void print_ratios(const pev::bench::capturing_reporter& rep) {
  std::printf("\nRoPE apply throughput / memcpy throughput (same bytes, same run):\n");
  std::printf("%-44s %12s %12s %7s %8s\n", "case (q/k dtype / table / layout / heads)",
              "apply GB/s", "memcpy GB/s", "ratio", "target");
  int misses = 0;
  for (const std::string& c : case_order()) {
    const double t_apply = rep.time_of("apply/" + c);
    const double t_copy = rep.time_of("memcpy/" + c);
    if (t_apply <= 0 || t_copy <= 0) continue;  // filtered out or failed
    const std::string shape = c.substr(c.rfind('/') + 1);
    const std::int64_t heads = shape == "q_32" ? kQHeads : kQHeads + kKHeads;
    const std::size_t elem = c.rfind("fp32/", 0) == 0 ? 4 : 2;
    const double bytes = double(kTokens * heads * kHeadDim) * double(elem);
    // Times are in milliseconds per iteration.
    const double gbs_apply = bytes / (t_apply * 1e-3) / 1e9;
    const double gbs_copy = bytes / (t_copy * 1e-3) / 1e9;
    const double ratio = t_copy / t_apply;
    const double target = registry()["apply/" + c].target;
    char target_text[32] = "";
    if (target > 0) {
      std::snprintf(target_text, sizeof target_text, "≥ %.1f%s", target,
                    ratio >= target ? "" : " MISS");
      if (ratio < target) ++misses;
    }
    std::printf("%-44s %12.2f %12.2f %7.2f %8s\n", c.c_str(), gbs_apply, gbs_copy, ratio,
                target_text);
  }
  if (misses > 0) std::printf("%d case(s) below target\n", misses);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = pev::bench::with_default_min_time(argc, argv, "0.2");
  int n = static_cast<int>(args.size());

  register_dtype<float>(0.7);
  register_dtype<bfloat16>(0.5);
  register_dtype<half>(0);

  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  pev::bench::capturing_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  print_ratios(rep);
  benchmark::Shutdown();
  return 0;
}

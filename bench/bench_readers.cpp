// Input readers at scale: is parsing linear in the input size? Each case parses a generated input
// of N entries (N = 10^3 … 10^6) and is reported as a ratio to a baseline measured in the same run:
// nlohmann::json (std::map objects) parsing the same JSON text. A linear reader keeps the same
// ratio at every N; a quadratic one multiplies it by ~10 per decade.
//
//   safetensors_header/N  a safetensors file with N one-element F32 tensors (header ~70 N bytes)
//   config_layer_types/N  a config.json whose rope_parameters has N layer-type groups and whose
//                         layer_types lists N names (the per-layer-type lookup)
//   npy_header/N          an npy header whose shape tuple has N entries (up to the 1 MiB cap)
//
// After the run one line per case gives the time per entry and the ratio to the baseline.
// Default --benchmark_min_time is 0.05 s per benchmark; pass the flag to override.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pev/core/error.h"
#include "pev/io/npy.h"
#include "pev/io/safetensors.h"
#include "pev/spec/config.h"
#include "ratio_report.h"

namespace {

// A safetensors file of n tensors "t0" … of shape [1], F32: header JSON then 4n data bytes.
std::string safetensors_file(std::int64_t n, std::string* header_json) {
  std::string h = "{";
  for (std::int64_t k = 0; k < n; ++k) {
    if (k) h += ',';
    h += "\"t" + std::to_string(k) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
         std::to_string(4 * k) + "," + std::to_string(4 * k + 4) + "]}";
  }
  h += "}";
  *header_json = h;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((h.size() >> (8 * i)) & 0xFF);
  return out + h + std::string(static_cast<std::size_t>(4 * n), '\0');
}

// A Gemma-style config: n layer-type groups (the first is full_attention), each a small rope dict.
std::string config_text(std::int64_t n) {
  std::string groups, names;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::string name = k == 0 ? "full_attention" : "group_" + std::to_string(k);
    if (k) {
      groups += ',';
      names += ',';
    }
    groups += "\"" + name + "\":{\"rope_type\":\"default\",\"rope_theta\":10000.0}";
    names += "\"" + name + "\"";
  }
  return "{\"head_dim\":64,\"max_position_embeddings\":4096,\"layer_types\":[" + names +
         "],\"rope_parameters\":{" + groups + "}}";
}

// An npy file (v2.0) whose shape has n entries of 1, one f32 element of data.
std::string npy_file(std::int64_t n, std::string* shape_json) {
  std::string shape = "(";
  std::string js = "[";
  for (std::int64_t k = 0; k < n; ++k) {
    shape += "1,";
    js += k ? ",1" : "1";
  }
  shape += ")";
  js += "]";
  *shape_json = js;
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  dict.append((64 - (12 + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x02';
  out += '\0';
  for (int i = 0; i < 4; ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xFF);
  return out + dict + std::string(4, '\0');
}

void bm_safetensors(benchmark::State& state) {
  std::string header;
  const std::string file = safetensors_file(state.range(0), &header);
  for (auto _ : state) {
    auto t = pev::io::parse_safetensors(file, "bench");
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void bm_safetensors_json(benchmark::State& state) {
  std::string header;
  safetensors_file(state.range(0), &header);
  for (auto _ : state) {
    auto j = nlohmann::json::parse(header);
    benchmark::DoNotOptimize(j);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void bm_config(benchmark::State& state) {
  const std::string text = config_text(state.range(0));
  for (auto _ : state) {
    auto r = pev::spec::parse_config_text(text, "bench", {}, [](std::string_view) {});
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void bm_config_json(benchmark::State& state) {
  const std::string text = config_text(state.range(0));
  for (auto _ : state) {
    auto j = nlohmann::json::parse(text);
    benchmark::DoNotOptimize(j);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void bm_npy(benchmark::State& state) {
  std::string shape;
  const std::string file = npy_file(state.range(0), &shape);
  for (auto _ : state) {
    try {
      auto a = pev::io::parse_npy(file, "bench");
      benchmark::DoNotOptimize(a);
    } catch (const pev::error&) {
      // More than 32 dimensions is refused after the header is parsed: the parse is what is timed.
    }
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void bm_npy_json(benchmark::State& state) {
  std::string shape;
  npy_file(state.range(0), &shape);
  for (auto _ : state) {
    auto j = nlohmann::json::parse(shape);
    benchmark::DoNotOptimize(j);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = pev::bench::with_default_min_time(argc, argv, "0.05");
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  const std::vector<std::int64_t> sizes = {1000, 10000, 100000, 1000000};
  struct family {
    const char* name;
    void (*fn)(benchmark::State&);
    const char* baseline;
    void (*base)(benchmark::State&);
    std::int64_t max_n;
  };
  // npy headers are capped at 1 MiB: 2 bytes per shape entry allows ~5·10^5 entries.
  const family families[] = {
      {"safetensors_header", bm_safetensors, "safetensors_header_json", bm_safetensors_json,
       1000000},
      {"config_layer_types", bm_config, "config_layer_types_json", bm_config_json, 1000000},
      {"npy_header", bm_npy, "npy_header_json", bm_npy_json, 100000},
  };
  for (const family& f : families) {
    for (const std::int64_t s : sizes) {
      if (s > f.max_n) continue;
      const std::string suffix = "/" + std::to_string(s);
      benchmark::RegisterBenchmark((f.name + suffix).c_str(), f.fn)
          ->Arg(s)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark((f.baseline + suffix).c_str(), f.base)
          ->Arg(s)
          ->Unit(benchmark::kMillisecond);
    }
  }
  pev::bench::capturing_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n%-20s %9s %14s %16s\n", "reader", "N", "ns per entry", "ratio to json");
  for (const family& f : families) {
    for (const std::int64_t s : sizes) {
      const std::string suffix = "/" + std::to_string(s);
      const double t = reporter.time_of(f.name + suffix);
      const double b = reporter.time_of(f.baseline + suffix);
      if (t == 0 || b == 0) continue;
      std::printf("%-20s %9lld %14.1f %16.2f\n", f.name, static_cast<long long>(s),
                  t * 1e6 / static_cast<double>(s), t / b);
    }
  }
  benchmark::Shutdown();
  return 0;
}

#pragma once
// Shared by the benchmark programs: a console reporter that also keeps each benchmark's time, so
// that main() can print ratios to a baseline measured in the same run (docs/design.md §11.9), and
// the default
// --benchmark_min_time.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pev::bench {

/// Console output as usual, plus the real time per iteration of every run, by benchmark family
/// name (the name given to RegisterBenchmark).
class capturing_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const std::string& name = r.run_name.function_name;
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") median_[name] = r.GetAdjustedRealTime();
      } else {
        times_[name].push_back(r.GetAdjustedRealTime());
      }
    }
  }

  /// Time per iteration of `name` in its time unit: the median over repetitions; 0 if it did not
  /// run (filtered out or failed).
  double time_of(const std::string& name) const {
    if (auto it = median_.find(name); it != median_.end()) return it->second;
    auto it = times_.find(name);
    if (it == times_.end() || it->second.empty()) return 0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

 private:
  std::map<std::string, std::vector<double>> times_;
  std::map<std::string, double> median_;
};

/// argv with `--benchmark_min_time=<seconds>` added unless the user gave one.
inline std::vector<char*> with_default_min_time(int argc, char** argv, const char* seconds) {
  static std::string flag;
  flag = std::string("--benchmark_min_time=") + seconds;
  std::vector<char*> args(argv, argv + argc);
  const bool given = std::any_of(args.begin(), args.end(), [](const char* a) {
    return std::string_view(a).starts_with("--benchmark_min_time");
  });
  if (!given) args.insert(args.begin() + 1, flag.data());
  return args;
}

}  // namespace pev::bench

#pragma once
// Internals of the sweeps, exported for tests.

#include <array>
#include <cstddef>
#include <cstdint>

namespace pev::sweep::detail {

/// Histogram of non-negative values with 64 logarithmic bins per binade over [2^−100, 2^16)
/// (below: the first bin; above and +Inf: the last), plus exact zeros. Streaming and
/// order-independent, so p99 needs no stored values: quantile(q) is the upper edge of the bin
/// holding the nearest-rank q-quantile, ≥ the true quantile by less than 1/64 relative.
class log_histogram {
 public:
  void add(double v);
  double quantile(double q) const;
  std::uint64_t count() const { return count_; }

 private:
  static constexpr int kMinExp = -100;
  static constexpr int kMaxExp = 15;
  static constexpr std::size_t kSub = 64;
  static constexpr std::size_t kBins = static_cast<std::size_t>(kMaxExp - kMinExp + 1) * kSub + 1;
  static double upper_edge(std::size_t b);
  std::array<std::uint32_t, kBins> bins_{};
  std::uint64_t count_ = 0;
  std::uint64_t zeros_ = 0;
};

}  // namespace pev::sweep::detail

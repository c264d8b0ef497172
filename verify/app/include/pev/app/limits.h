#pragma once
// The ranges of the numeric options both front ends take (pev's command line, pev's Python module):
// checked before any work.

#include <cstdint>
#include <string>
#include <utility>

namespace pev::app {

/// The largest --max-position (report, certify): positions are sampled per octave [2^k, 2^(k+1)),
/// and the octave above 2^62 does not fit in int64.
inline constexpr std::int64_t kMaxPositionLimit = std::int64_t{1} << 62;

/// The most worker threads (oneTBB's allocator crashes with tens of thousands).
inline constexpr std::int64_t kMaxThreads = 1024;
/// The most sampled positions per octave (report --samples-per-octave, certify --samples).
inline constexpr std::int64_t kMaxSamples = 65536;

/// Throws pev::error "FLAG: expected a value in [LO, HI], got V" unless lo ≤ v ≤ hi (NaN is
/// outside every range). Every numeric option is checked so before any work.
void require_range(const char* flag, double v, double lo, double hi);
void require_range(const char* flag, std::int64_t v, std::int64_t lo, std::int64_t hi);

/// Parses --shard I/N (0-based, 0 ≤ I < N ≤ 2^20; report and certify); pev::error naming --shard.
std::pair<int, int> parse_shard(const std::string& text);

}  // namespace pev::app

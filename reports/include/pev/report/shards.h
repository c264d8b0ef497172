#pragma once
// The bound on sharding a run (`--shard I/N`, a shard's recorded count; docs/cli.md §2.1).

namespace pev::report {

/// The most shards a run splits into: 2^20, far beyond any job array. A larger N given to
/// `--shard`, or recorded in a shard's certificate.json or report.json, is refused by name before
/// any work (an N of 2^40 read as int was 0: "1 of 0 shards given").
inline constexpr int kMaxShards = 1 << 20;

}  // namespace pev::report

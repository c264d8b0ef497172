#pragma once
// Merging shards (docs/design.md §9.2): the shards of one sweep (same suite, options and shard
// count, every index once) combine into the results an unsharded run gives; provenance counters are
// summed.

#include <vector>

#include "pev/report/result.h"

namespace pev::report {

/// Throws pev::error when the shards do not belong together or one is missing or repeated.
results merge(std::vector<results> shards);

}  // namespace pev::report

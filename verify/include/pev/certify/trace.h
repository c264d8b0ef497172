#pragma once
// Certifying a whole model from its trace (docs/certify.md §8): every site the trace records — a
// decoder layer's rotation of q/k (or the table it used), a learned table added at the input,
// T5's buckets — held to the encoding the model's config gives that site (pev/spec/model.h), with
// a grade per site and the model's grade, the worst site's. A site that fails is diagnosed as the
// integration mistakes of the field show themselves: rotated where the config says NoPE, not
// rotated where it says RoPE, another layer type's RoPE (a sliding layer with the global θ or
// scaling), a batch row with another row's positions, packed sequences whose positions do not
// restart — else by the one-dump diagnosis of the site's own encoding (the mutant catalogue).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/spec/model.h"

namespace pev::certify {

/// Whether a dump is a model trace: it holds a tensor named as a site of docs/certify.md §8.1
/// (`layers.{i}.…`, `embed.…`, `encoder.buckets`, `decoder.buckets`).
bool is_trace(const dump& d);

/// The indices of the decoder layers a trace records (layers.{i}.…), ascending.
std::vector<std::int64_t> traced_layers(const dump& d);

/// The most sites one certification of a trace holds (docs/certify.md §8.2): a trace of more is
/// refused before any work, naming its count; certify its layers in parts (--layers). Each site
/// costs about 70 KB of memory and 1.2 ms (10^4 one-layer sites: 0.7 GB, 12 s on one thread,
/// docs/performance.md §4), most of it the certificate's rows and checks.
inline constexpr std::size_t kMaxTraceSites = 16384;

struct trace_options {
  /// The layers the trace was made of (`--layers`); empty: every layer of the config, each of
  /// which the trace must hold (pev::error naming the first missing otherwise).
  std::vector<std::int64_t> layers;
  /// The most sites certified in one run (kMaxTraceSites).
  std::size_t max_sites = kMaxTraceSites;
};

/// Certifies the trace `d` against the model `m` with the options `o` for every site (its
/// recipe, layouts, threads; positions come from the trace's position_ids). pev::error for input
/// that cannot be certified as given (a layer missing, a tensor that no layer of the config has,
/// sharding, which a trace does not support, more sites than `to.max_sites`), naming it. `d` is
/// taken by value: each site's tensors are let go (their mapped pages handed back) as soon as the
/// site is certified, so a caller that moves its dump in holds only the sites being certified.
certificate certify_trace(const spec::model_spec& m, dump d, const options& o,
                          const trace_options& to = {});

}  // namespace pev::certify

#pragma once
// What certify_rope read and compared (rope.cpp), kept for its diagnosis (rope_diagnosis.cpp),
// which runs right after the comparison or later on the same data (context::later,
// docs/certify.md §8.3).

#include <cstdint>
#include <optional>
#include <vector>

#include "detail.h"
#include "layout.h"
#include "pev/compare/bounds.h"
#include "pev/compare/reference.h"
#include "pev/impl/contract.h"
#include "recover.h"

namespace pev::certify::detail {

/// Positions the library measure reads (recover.h: fit_table, fit_rotation): every one with
/// --max-trig-ulp, which gates the claim on the measure.
inline constexpr std::size_t kLibraryFitRows = 8192;

/// A RoPE certification's inputs and comparison state.
struct rope_run {
  explicit rope_run(const spec::rope& spec) : s(spec) {}
  spec::rope s;
  std::optional<table_source> t;
  std::vector<qk_source> qk;
  std::vector<std::int64_t> pos, qk_pos;  // MRoPE: [streams, rows] each
  std::optional<std::int64_t> seq;
  std::optional<compare::rope_reference> ref;
  std::optional<compare::rope_bounds> bounds;
  bool hf_pipeline = true;  // false: the ggml form, without a transformers pipeline
  const impl::rope_contract* hf = nullptr;
  const impl::rope_contract* ggml = nullptr;
  table_fit fit;
  std::vector<float> replayed;  // the frequencies the table's replay follows
};

/// The library fit of every row of the table (recover.h), into r.fit and the certificate: a
/// failing shard's, whose diagnosis reads the whole dump (docs/design.md §9.3; rope.cpp).
void fit_whole_table(rope_run& r, context& k);
/// The diagnosis of a RoPE certification that is not certified (docs/certify.md §3): the mistakes
/// replayed (diagnosis.h) on the pipelines of replay_bases, the parameters the data imply
/// (rope_diagnosis.cpp). Nothing when certified, without o.diagnose, or when only an unchecked
/// claim fails.
void diagnose_run(rope_run& r, context& k);

}  // namespace pev::certify::detail

#pragma once
// Output shapes shared by `pev reference` and `pev compute` (docs/design.md §5.4): the same names,
// shapes, csv columns and safetensors tensors for the reference and for every strategy, so that
// their outputs can be compared file against file.

#include <cstdint>
#include <string>
#include <vector>

#include "output.h"
#include "pev/spec/spec.h"

namespace pev::cli {

/// Progress on stderr when it is a terminal (docs/design.md §5.7), for requests that take more than
/// a moment.
class progress {
 public:
  progress(std::size_t total, const char* label);
  void step(std::size_t done);

 private:
  std::size_t total_;
  const char* label_;
  bool on_;
};

/// The family's main output: table (rope), pe (sinusoidal, learned), bias (alibi), buckets (t5,
/// shaw).
std::string default_what(const spec::encoding& e);
/// Throws the bad-usage error for a --what that the family does not have.
[[noreturn]] void what_mismatch(const std::string& what, const spec::encoding& e,
                                const char* allowed);
/// Whether --what needs positions.
bool what_needs_positions(const std::string& what);

/// RoPE table [P, pairs, 2] of (cos, sin); safetensors parts cos, sin [P, pairs]. Values: reserve
/// only.
/// `pos` holds `streams` rows of positions for MRoPE (docs/encodings.md §4.6): [streams, P].
void shape_table(output& out, std::int64_t pairs, const std::vector<std::int64_t>& pos,
                 std::int64_t streams = 1);
/// After filling out.main.values, copies them into the cos and sin parts.
void split_table(output& out);
/// PE [P, d].
void shape_pe(output& out, std::int64_t d, const std::vector<std::int64_t>& pos);
/// ALiBi bias [H, P, P] over query × key positions.
void shape_bias(output& out, std::int64_t heads, const std::vector<std::int64_t>& pos);
/// A vector indexed by `row_label` (inv_freq by pair, slopes by head).
void shape_vector(output& out, const std::string& name, std::int64_t n,
                  const std::string& row_label);
/// One number.
void shape_scalar(output& out, const std::string& name);
/// Bucket ids [P] for relative distances.
void shape_buckets(output& out, const std::vector<std::int64_t>& distances);

}  // namespace pev::cli

#pragma once
// Finding a RoPE table and rotated q/k in a dump, and how they are laid out (certify.h's
// table_layout, qk_layout and qk_order; docs/encodings.md §4.4, docs/certify.md §4): from the
// options, the dump's metadata, the tensors' names and shapes, the positions and, where those
// leave two readings, the data. A reading is never guessed: where two still fit, pev::error names
// the option that settles it. Tables: layout_table.cpp; q/k: layout_qk.cpp (the stages) on
// layout_qk_reading.h (the readings and the tests of the data); what both share:
// layout_evidence.h.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detail.h"

namespace pev::certify::detail {

/// One plane (cos or sin) of a table in the dump: flat element = row·row_stride +
/// col·col_stride + offset.
struct plane {
  const io::array* a = nullptr;
  std::int64_t row_stride = 0, col_stride = 1, offset = 0;
  std::size_t at(std::int64_t r, std::int64_t c) const {
    return static_cast<std::size_t>(r * row_stride + c * col_stride + offset);
  }
};

/// A RoPE cos/sin table found in a dump.
struct table_source {
  plane cos, sin;
  /// Rows of every batch together (batch-major: a batch's rows are contiguous) and columns.
  std::int64_t rows = 0, width = 0;
  /// A leading batch dimension B ([B, P, …]): rows = B·P.
  std::int64_t batch = 1;
  /// Every batch holds the first batch's values bit for bit.
  bool batch_identical = false;
  std::vector<std::int64_t> pair;  // the pair of each column
  table_layout layout = table_layout::separate;
  bool detected = true;  // read from names, shapes and data (not forced by --layout)
  /// cos/sin [P, rotary_dim] read as halves or repeated: whether the data show a duplicate
  /// pattern (false: neither holds, and the spec's layout decided).
  bool duplicates_shown = true;
  std::string source;  // which tensors, for the certificate
  /// How the table was read, for the certificate (role "table").
  report::layout_reading reading;
};

/// The table of `d` for spec `s`, in the `forced` layout or the one detected; pev::error naming
/// the tensors when there is none, its shape does not fit, or two layouts fit (naming --layout).
table_source find_rope_table(const dump& d, const spec::rope& s,
                             std::optional<table_layout> forced);
/// Whether the dump holds a cos/sin table (by the names and shapes find_rope_table reads).
bool table_present(const dump& d, const spec::rope& s, const options& o);
/// When every batch of `t` is the same and so are its positions (`pos`, one per row), reads the
/// first batch only (rows and `pos` shrink to it) and says so in t.reading.
void fold_identical_batches(table_source& t, std::vector<std::int64_t>& pos);

/// A pair of input and rotated output tensors (q_in/q_out or k_in/k_out), as [tokens, heads, dim]
/// row-major copies: the dumped layout transposed (bhtd) and the outputs put in the inputs'
/// pair order (half-split), so that token row r holds position pos[r].
struct qk_source {
  std::string name;  // "q" or "k"
  std::shared_ptr<const io::array> in, out;
  std::int64_t tokens = 0, heads = 0, dim = 0;
  std::string source;  // the tensors as dumped, for the certificate
};

/// The rotated q and k of a dump (none, one or both), their positions and how they were read.
struct qk_set {
  std::vector<qk_source> qk;
  std::vector<std::int64_t> pos;  // one per token row (batch-major)
  std::string what;               // the reading, for the certificate's `what`
  report::layout_reading reading;
};

/// The rotated q and k of `d`. Their positions: `qk_positions`; without a table also --positions,
/// `positions` or `position_ids`; else 0 … T − 1 in every batch. pev::error for a half pair, a
/// shape no layout fits, positions no reading fits, or two readings that still fit (naming
/// --qk-layout or
/// --qk-order).
qk_set find_qk(const dump& d, const spec::rope& s, const options& o, bool with_table);

}  // namespace pev::certify::detail

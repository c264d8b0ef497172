#pragma once
// Finding a RoPE table and rotated q/k in a dump, and how they are laid out (certify.h's
// table_layout; docs/encodings.md §4.4).

#include <cstdint>
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
  std::int64_t rows = 0, width = 0;
  std::vector<std::int64_t> pair;  // the pair of each column
  table_layout layout = table_layout::separate;
  bool detected = true;  // read from names, shapes and data (not forced by --layout)
  std::string source;    // which tensors, for the certificate
};

/// The table of `d` for spec `s`, in the `forced` layout or the one detected; pev::error naming
/// the tensors when there is none or its shape does not fit.
table_source find_rope_table(const dump& d, const spec::rope& s,
                             std::optional<table_layout> forced);
/// Whether the dump holds a cos/sin table (by the names and shapes find_rope_table reads).
bool table_present(const dump& d, const spec::rope& s, const options& o);

/// A pair of input and rotated output tensors [T, H, D] in the dump (q_in/q_out or k_in/k_out).
struct qk_source {
  std::string name;  // "q" or "k"
  const io::array* in = nullptr;
  const io::array* out = nullptr;
  std::int64_t tokens = 0, heads = 0, dim = 0;
};

/// The rotated q and k of `d` (none, one or both); pev::error for a half pair or a shape that
/// does not fit.
std::vector<qk_source> find_qk(const dump& d, const spec::rope& s);

}  // namespace pev::certify::detail

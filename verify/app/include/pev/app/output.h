#pragma once
// What `pev reference` and `pev compute` write (docs/design.md §5.4): one main tensor in that
// shape, the positions it was evaluated at, and its provenance; written as text, csv, json, npy or
// safetensors.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pev/core/real.h"
#include "pev/io/array.h"
#include "pev/scalar/dtype.h"

namespace pev::app {

/// `--dtype`: a float dtype, or none for `exact` (real values, printed with 21 significant digits
/// and stored as fp64 in binary files). Integer outputs (bucket ids) are dtype::int64.
std::optional<dtype> parse_out_dtype(const std::string& name);
/// "exact" for none, else the dtype's name.
std::string out_dtype_name(std::optional<dtype> t);

enum class out_format { text, csv, json, npy, safetensors };
out_format parse_out_format(const std::string& name);

/// A tensor of reals (rounded to the dtype at write time) or of integers.
struct tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<real> values;        // when !integer
  std::vector<std::int64_t> ints;  // when integer
  bool integer = false;
  std::size_t size() const { return integer ? ints.size() : values.size(); }
};

struct output {
  std::string what;                 // table, inv_freq, pe, bias, slopes, buckets, …
  std::optional<pev::dtype> dtype;  // none: exact
  std::string spec;                 // canonical SPEC string
  std::string recipe;
  unsigned precision_bits = 0;
  std::optional<std::vector<std::int64_t>> positions;  // row labels, when rows are positions
  std::int64_t position_streams = 1;   // MRoPE: positions is [streams, rows] (labels: stream 0)
  std::string row_label = "position";  // csv name of the leading index
  std::vector<std::string> columns;    // csv names of one row's values
  tensor main;                         // docs/design.md §5.4 shape
  std::vector<tensor> parts;           // safetensors tensors (e.g. cos and sin); empty: {main}
  int digits = 0;                      // significant digits for exact text; 0: default
  std::size_t text_row_width = 0;      // values per text line; 0: all dims after the first
  /// Long-format csv (one value per line): the name of each dim, and whether its index maps through
  /// `positions`. Empty: wide csv (row_label, then `columns`).
  std::vector<std::string> dim_names;
  std::vector<bool> dim_is_position;
};

/// The tensor rounded once to dtype `d` (exact: fp64; integers: int64), as npy and safetensors
/// files hold it.
io::array to_array(const tensor& t, std::optional<dtype> d);

/// Writes `out` to `file` (atomically) or to stdout when `file` is empty (text, csv, json only).
void write_output(const output& out, out_format format, const std::filesystem::path& file);

/// The main tensor's rows produced chunk by chunk in the output dtype, for tables too large to
/// hold (docs/design.md §5.4): fill(r0, r1, bytes) writes rows [r0, r1) (`width` values each) as
/// the dtype's little-endian encodings. Memory stays at one chunk whatever the table's size.
struct row_stream {
  std::size_t rows = 0;
  std::size_t width = 0;
  std::function<void(std::size_t r0, std::size_t r1, std::byte* out)> fill;
  /// Rows per chunk for rows of `width` values.
  static std::size_t chunk_rows(std::size_t width);
};

/// write_output for `out` (shapes and provenance set, no values, a float dtype) whose main tensor
/// comes from `rows`: the same bytes, written as the rows are produced. Safetensors parts
/// interleave (part j holds main values j, j + n, j + 2n, … for n parts, as split_table makes
/// them); a seekable file gets them in one pass, a device or pipe in one pass per part.
void write_output(const output& out, const row_stream& rows, out_format format,
                  const std::filesystem::path& file);

/// One value as text in the output dtype (shortest round-trip for fp32/fp16/bf16, 17 significant
/// digits for fp64, `digits` (default 21) significant digits for exact).
std::string format_value(const real& v, std::optional<dtype> t, int digits = 0);

}  // namespace pev::app

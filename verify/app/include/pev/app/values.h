#pragma once
// The values of `pev reference` and `pev compute` (docs/design.md §5.4), which the CLI writes and
// pev's Python module returns as arrays (docs/python.md §3): the same code, so that both give the
// same bits. `out` comes from start_output (shapes.h: what, dtype); the shapes are those of
// docs/design.md §5.4. pev::error for a `what` the family does not have or a request of more than
// 2^26 values.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pev/app/output.h"
#include "pev/io/array.h"
#include "pev/kernel/strategy.h"
#include "pev/ref/recipe.h"
#include "pev/scalar/dtype.h"
#include "pev/spec/spec.h"

namespace pev::app {

/// The output of `pev reference` as rows produced chunk by chunk, for the outputs that stream
/// (docs/design.md §5.4: RoPE tables and sinusoidal PE in a float dtype with the exact recipe;
/// `mpfr`: --reference mpfr): shapes set in `out`, the positions moved into it. None for the
/// outputs fill_reference holds in memory.
std::optional<row_stream> reference_rows(output& out, const spec::encoding& e, const ref::recipe& r,
                                         std::vector<std::int64_t>& pos,
                                         std::optional<std::int64_t> seq_len, bool mpfr);
/// The recipe's exact values of `e` at `pos` (stateful rope types: `seq_len`, else max + 1).
void fill_reference(output& out, const spec::encoding& e, const ref::recipe& r,
                    const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len);
/// `pev reference`'s output written to `file` (stdout when empty) in `format`: streamed from
/// reference_rows where the output streams, else filled in memory (the positions may be moved).
void write_reference(output& out, const spec::encoding& e, const ref::recipe& r,
                     std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len, bool mpfr,
                     out_format format, const std::filesystem::path& file);
/// The same values as an array in out.dtype (the bytes write_reference's npy file holds; the fast
/// references where the output streams).
io::array reference_array(output& out, const spec::encoding& e, const ref::recipe& r,
                          std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len);

/// Strategy `st`'s kernel output of `e` at `pos` in out.dtype (fp32, fp16 or bf16).
void fill_compute(output& out, const spec::encoding& e, kernel::strategy st,
                  const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len);
/// `pev compute`'s output written to `file` (stdout when empty) in `format`: RoPE tables and PE
/// streamed one chunk of rows at a time, the rest filled in memory (the positions may be moved).
void write_compute(output& out, const spec::encoding& e, kernel::strategy st,
                   std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len,
                   out_format format, const std::filesystem::path& file);
/// The same values as an array in out.dtype (the bytes write_compute's npy file holds).
io::array compute_array(output& out, const spec::encoding& e, kernel::strategy st,
                        const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len);

}  // namespace pev::app

// pev.reference and pev.compute (docs/python.md §3): the values `pev reference` and `pev compute`
// write, computed by the same code (pev::app's reference_array and compute_array, values.h),
// returned as numpy arrays that own the bytes (no copy).

#include "pev/app/values.h"

#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "pev/app/limits.h"
#include "pev/app/positions.h"
#include "pev/app/shapes.h"
#include "pev/core/error.h"
#include "pev/core/real.h"
#include "pev/kernel/strategy.h"
#include "pev/ref/recipe.h"

namespace pev::python {
namespace {

using positions_array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

std::optional<std::vector<std::int64_t>> to_vector(const std::optional<positions_array>& a) {
  if (!a) return std::nullopt;
  if (a->ndim() != 1) throw error("positions: expected a 1-d array of integers");
  return std::vector<std::int64_t>(a->data(), a->data() + a->size());
}

// The positions of a request for `what` (as `pev reference` reads them, with the positions
// given as a range string or a list): relative distances of T5/Shaw may be negative; outputs
// without positions use {0}.
std::vector<std::int64_t> request_positions(const spec::encoding& e, const std::string& what,
                                            const std::optional<std::string>& range,
                                            const std::optional<std::vector<std::int64_t>>& list) {
  const bool relative =
      std::holds_alternative<spec::t5>(e) || std::holds_alternative<spec::shaw>(e);
  // MRoPE (docs/encodings.md §4.6): a range is text tokens, a list holds the streams one after
  // another — as the CLI reads --positions and --positions-file.
  if (range) {
    return app::stream_positions(e, app::parse_position_range(*range, relative), true, "positions");
  }
  if (list) {
    app::check_positions(*list, relative, "positions");
    return app::stream_positions(e, *list, false, "positions");
  }
  if (app::what_needs_positions(what)) {
    throw error("positions: required for what='" + what +
                "' (a range, an array of integers or 'A:B[:STEP]')");
  }
  return {0};
}

struct request {
  std::string what;
  std::optional<std::string> range;
  std::optional<std::vector<std::int64_t>> list;
  std::optional<std::int64_t> seq_len;
};

app::output start(const spec_handle& s, const request& r, std::optional<dtype> t) {
  if (r.seq_len) app::require_range("seq_len", *r.seq_len, 1, INT64_MAX);
  return app::start_output(s.e, r.what, t);
}

py::array reference(const spec_handle& s, const request& r, const std::string& dtype_name,
                    const std::string& recipe, unsigned precision) {
  app::output out = start(s, r, app::parse_out_dtype(dtype_name));
  const ref::recipe& rc = ref::find_recipe(recipe);
  std::vector<std::int64_t> pos = request_positions(s.e, out.what, r.range, r.list);
  io::array a = run_long([&] {
    std::optional<precision_scope> scope;
    if (precision) scope.emplace(precision);
    return app::reference_array(out, s.e, rc, pos, r.seq_len);
  });
  return to_numpy(std::move(a));
}

py::array compute(const std::string& strategy, const spec_handle& s, const request& r,
                  const std::string& dtype_name) {
  const kernel::strategy st = kernel::parse_strategy(strategy);
  const std::optional<dtype> t = app::parse_out_dtype(dtype_name);
  if (!t || t == dtype::fp64) {
    throw error("dtype: kernels produce fp32, fp16 or bf16, got '" + dtype_name + "'");
  }
  app::output out = start(s, r, t);
  const std::vector<std::int64_t> pos = request_positions(s.e, out.what, r.range, r.list);
  io::array a = run_long([&] { return app::compute_array(out, s.e, st, pos, r.seq_len); });
  return to_numpy(std::move(a));
}

}  // namespace

void bind_values(py::module_& m) {
  m.def(
      "reference",
      [](const spec_handle& s, std::optional<std::string> range,
         const std::optional<positions_array>& list, const std::string& what,
         const std::string& dtype_name, const std::string& recipe,
         std::optional<std::int64_t> seq_len, unsigned precision) {
        return reference(s, {what, std::move(range), to_vector(list), seq_len}, dtype_name, recipe,
                         precision);
      },
      py::arg("spec"), py::arg("range"), py::arg("positions"), py::arg("what"), py::arg("dtype"),
      py::arg("recipe"), py::arg("seq_len"), py::arg("precision"));
  m.def(
      "compute",
      [](const std::string& strategy, const spec_handle& s, std::optional<std::string> range,
         const std::optional<positions_array>& list, const std::string& what,
         const std::string& dtype_name, std::optional<std::int64_t> seq_len) {
        return compute(strategy, s, {what, std::move(range), to_vector(list), seq_len}, dtype_name);
      },
      py::arg("strategy"), py::arg("spec"), py::arg("range"), py::arg("positions"), py::arg("what"),
      py::arg("dtype"), py::arg("seq_len"));
  m.def("default_what", [](const spec_handle& s) { return app::default_what(s.e); });
  m.def("what_needs_positions", &app::what_needs_positions);
}

}  // namespace pev::python

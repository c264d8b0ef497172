// pev.Spec (docs/python.md §2): SPEC strings, config.json files and config dicts (as JSON text)
// parsed and validated by pev's own parsers, warnings returned to Python (which issues them as
// pev.PevWarning), and the inputs a certificate lists for them.

#include <string>
#include <vector>

#include "common.h"
#include "pev/app/encoding.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/core/real.h"
#include "pev/io/file.h"
#include "pev/kernel/strategy.h"
#include "pev/ref/recipe.h"
#include "pev/report/result.h"
#include "pev/scalar/dtype.h"
#include "pev/spec/config.h"

namespace pev::python {
namespace {

using parsed = std::pair<spec_handle, std::vector<std::string>>;

parsed from_string(const std::string& text) {
  std::vector<std::string> warnings;
  if (text.empty()) throw error("spec: empty SPEC string (family[:key=value,...]; see pev list)");
  spec_handle h;
  h.e = app::parse_encoding(text, [&](std::string_view w) { warnings.emplace_back(w); });
  h.text = spec::to_spec_string(h.e);
  return {std::move(h), std::move(warnings)};
}

parsed from_config_text(const std::string& text, const std::string& source,
                        const std::string& layer_type, bool record) {
  std::vector<std::string> warnings;
  spec::config_options co;
  co.layer_type = layer_type;
  spec_handle h;
  // The encoding the config's family uses — RoPE, ALiBi, T5 buckets, sinusoidal — as `pev
  // reference/certify --config` read it (docs/python.md §2).
  h.e = spec::parse_config_encoding_text(text, source, co,
                                         [&](std::string_view w) { warnings.emplace_back(w); });
  h.text = spec::to_spec_string(h.e);
  if (record) h.inputs.push_back({source, "config", certify::sha256_bytes(text)});
  return {std::move(h), std::move(warnings)};
}

py::dict info(const spec_handle& h) {
  py::dict d;
  d["family"] = spec::family_name(h.e);
  d["text"] = h.text;
  std::visit(
      [&](const auto& s) {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, spec::rope>) {
          d["head_dim"] = s.head_dim;
          d["rotary_dim"] = s.rotary_dim;
          d["pairs"] = s.pairs();
          d["rope_type"] = spec::to_string(s.type);
          d["layout"] = spec::to_string(s.layout);
          d["stateful"] = s.stateful();
        } else if constexpr (std::is_same_v<T, spec::sinusoidal> ||
                             std::is_same_v<T, spec::learned>) {
          d["d_model"] = s.d_model;
        } else if constexpr (std::is_same_v<T, spec::alibi>) {
          d["num_heads"] = s.num_heads;
        }
      },
      h.e);
  return d;
}

}  // namespace

void bind_spec(py::module_& m) {
  py::class_<spec_handle>(m, "_Spec")
      .def_readonly("text", &spec_handle::text)
      .def_property_readonly("family", [](const spec_handle& h) { return spec::family_name(h.e); })
      .def_property_readonly("inputs",
                             [](const spec_handle& h) {
                               py::list l;
                               for (const auto& i : h.inputs) {
                                 l.append(py::make_tuple(i.path, i.format, i.sha256));
                               }
                               return l;
                             })
      .def("info", &info);
  m.def("spec_from_string", &from_string, py::arg("text"));
  m.def(
      "spec_from_config_text",
      [](const std::string& text, const std::string& source, const std::string& layer_type) {
        return from_config_text(text, source, layer_type, true);
      },
      py::arg("text"), py::arg("source"), py::arg("layer_type"));
  m.def(
      "spec_from_config_file",
      [](const std::string& path, const std::string& layer_type) {
        // Read once, parsed and hashed (as pev certify --config does).
        const std::string text = io::read_file(path, spec::max_config_bytes);
        return from_config_text(text, path, layer_type, true);
      },
      py::arg("path"), py::arg("layer_type"));
  m.def("vocabulary", [] {
    py::dict d;
    py::list dtypes, recipes, strategies;
    dtypes.append("exact");
    for (dtype t : {dtype::fp64, dtype::fp32, dtype::fp16, dtype::bf16})
      dtypes.append(to_string(t));
    for (const ref::recipe* r : ref::all_recipes()) recipes.append(std::string(r->name));
    for (kernel::strategy s : kernel::all_strategies()) strategies.append(kernel::to_string(s));
    d["dtypes"] = dtypes;
    d["recipes"] = recipes;
    d["strategies"] = strategies;
    return d;
  });
  m.def("build_info", [] {
    // The build's provenance, as every result states it (report::this_build).
    const report::provenance b = report::this_build();
    py::dict d;
    d["version"] = b.pev_version;
    d["git_revision"] = b.git_revision;
    d["compiler"] = b.compiler;
    d["fp_flags"] = b.fp_flags;
    d["precision_bits"] = default_precision_bits();
    return d;
  });
}

}  // namespace pev::python

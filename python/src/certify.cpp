// pev.certify (docs/python.md §4): dumps given as tensors (numpy arrays, DLPack capsules) or files,
// certified by certify_dump; callables certified by certify_live through a live backend that asks
// them, with the property suites of `pev certify --exec`; certificates with pev::app's writers.

#include "pev/certify/certify.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "live_backend.h"
#include "pev/app/certify.h"
#include "pev/app/inputs.h"
#include "pev/app/limits.h"
#include "pev/app/positions.h"
#include "pev/app/properties.h"
#include "pev/app/request.h"
#include "pev/certify/trace.h"
#include "pev/core/error.h"
#include "pev/core/text.h"
#include "pev/impl/live.h"
#include "pev/impl/live_backend.h"
#include "pev/io/file.h"
#include "pev/kernel/strategy.h"
#include "pev/report/json.h"
#include "pev/report/write.h"
#include "pev/spec/config.h"
#include "pev/spec/model.h"
#include "pev/spec/parse.h"
#include "watchdog.h"

namespace pev::python {
namespace {

namespace fs = std::filesystem;
using positions_array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

/// What the watchdog raises in a callable past its time limit (pev._pev._CallTimedOut, a
/// BaseException: `except Exception` in the callable does not swallow it). Never freed.
PyObject* timed_out_type = nullptr;

/// pev.certify's SIGINT handler while a callable is certified (pev/_certify.py, _watching_sigint;
/// docs/python.md §4.3): notes that the signal came, then runs the handler it replaced. It is C, so
/// it runs before any bytecode — an exception the watchdog raised asynchronously in the thread
/// (pending while the callable was blocked in C) cannot preempt the note, as it would a Python
/// handler's first line.
struct sigint_watch {
  py::object previous;
  bool seen = false;
};

/// A certificate and the files it was made from (which its directory may not hold).
struct certificate_handle {
  certify::certificate c;
  std::vector<app::input_path> files;
  std::string callable_layout;  // a callable's tables: the layout they came in
};

/// The failed check of an implementation that ended during the property suites (where a call
/// that fails may only make a generated spec "not applicable"): the certificate names it.
certify::check ended_check(const impl::live_implementation& im, const certify::live_options& lo,
                           const std::string& why) {
  certify::check c =
      certify::failed_check(im.claimed_spec(), std::nullopt, im.kind() + " " + im.source(), lo.type,
                            why + " (during the property suites)");
  c.strategy = "properties";
  return c;
}

// ---- Certification ----------------------------------------------------------------------------

/// The options every pev.certify shares, into a request (pev/app/request.h): its defaults are the
/// request's, which the binding's keywords replace only where given.
struct common_options {
  std::optional<std::string> recipe;
  std::optional<std::string> layout;
  bool diagnose = true;
  std::string reference = "fast";
  std::string libm = "any";
  std::optional<double> max_trig_ulp;

  /// A Python request for `s` (none: the dump's metadata names the spec).
  app::certify_request request(const spec_handle* s) const {
    app::certify_request r;
    r.front = app::front_end::python;
    if (s) {
      r.encoding = s->e;
      r.encoding_inputs = s->inputs;
    }
    r.recipe = recipe.value_or("");
    r.layout = layout.value_or("");
    r.diagnose = diagnose;
    r.reference = reference;
    r.libm = libm;
    r.max_trig_ulp = max_trig_ulp;
    return r;
  }
};

std::vector<app::input_path> input_files(const spec_handle* s, const std::vector<std::string>& f) {
  std::vector<app::input_path> v;
  if (s) {
    for (const auto& i : s->inputs) {
      if (fs::exists(i.path)) v.push_back({"config", i.path});
    }
  }
  for (const auto& p : f) v.push_back({"dump", p});
  return v;
}

/// The live options given (none: the request's defaults, pev certify's; docs/certify.md §9).
struct live_given {
  std::optional<std::string> type;
  std::optional<std::int64_t> max_position, samples, property_cases;
  bool exhaustive = false;
  std::optional<std::uint64_t> seed;
  std::optional<std::string> accuracy;
  std::optional<bool> properties;
  std::optional<double> timeout;

  void into(app::certify_request& r) const {
    if (max_position) r.max_position = *max_position;
    if (samples) r.samples = *samples;
    if (property_cases) r.property_cases = *property_cases;
    r.exhaustive = exhaustive;
    if (seed) r.seed = *seed;
    if (accuracy) r.accuracy = *accuracy;
    if (properties) r.properties = *properties;
  }
};

certificate_handle certify_tensors(app::certify_request r, const spec_handle* s,
                                   const py::list& tensors, const std::vector<std::string>& files) {
  for (const auto& item : tensors) {
    const auto t = py::reinterpret_borrow<py::tuple>(item);
    const std::string name = t[0].cast<std::string>();
    r.tensors.emplace(name, to_io_array(name, t[1]));
  }
  r.files.assign(files.begin(), files.end());
  certificate_handle h;
  h.files = input_files(s, files);
  h.c = run_long([&] { return app::certify(std::move(r)); });
  return h;
}

/// A model trace (docs/certify.md §8.1) in dump files, against the config.json at `config` or one
/// spec `s`, its layers `layers`: what `pev certify --config C --impl TRACE [--layers L]` does
/// (pev.certify of a pev.torch.Trace saves it to a temporary safetensors file and comes here with
/// what the tracer saw, docs/python.md §9).
certificate_handle certify_trace(app::certify_request r, const std::optional<std::string>& config,
                                 const spec_handle* s, const std::vector<std::string>& files) {
  certificate_handle h;
  if (config) {
    r.config_file = *config;
    h.files.push_back({"config", *config});
  } else {
    h.files = input_files(s, {});
  }
  for (const auto& f : files) h.files.push_back({"dump", f});
  r.files.assign(files.begin(), files.end());
  h.c = run_long([&] { return app::certify(std::move(r)); });
  return h;
}

certificate_handle certify_callable(app::certify_request r, const spec_handle& s, py::object call,
                                    std::string name, std::string source,
                                    const std::vector<std::string>& files, const live_given& lg) {
  // Checked before the callable is first asked, as `pev certify` checks its flags.
  lg.into(r);
  (void)app::live_options(r);
  // As `pev certify --timeout`: NaN and infinities are out of range too.
  if (lg.timeout) app::require_range("timeout", *lg.timeout, 0.001, 86400);
  certify::options checked;
  app::set_certify_options(checked, r.reference, r.libm, r.max_trig_ulp);
  std::optional<certify::table_layout> layout;
  if (!r.layout.empty()) layout = certify::parse_table_layout(r.layout);
  r.layout.clear();  // the callable's layout; pev collects its answers as separate cos and sin
  (void)kernel::parse_strategy(r.accuracy);
  std::optional<dtype> t;
  if (lg.type) t = parse_float_dtype(*lg.type);
  if (t && !is_float(*t)) throw error("dtype: expected fp32, fp16 or bf16");
  std::optional<call_watchdog> watchdog;
  if (lg.timeout) watchdog.emplace(*lg.timeout, timed_out_type);
  auto backend = std::make_shared<python_backend>(
      std::move(call), std::move(name), std::move(source),
      std::vector<fs::path>(files.begin(), files.end()), layout, watchdog ? &*watchdog : nullptr);
  backend->greet(s.e, t);
  r.live = [backend, t](const spec::encoding& e, kernel::strategy acc, certify::live_options& lo) {
    lo.type = t.value_or(backend->greeted_type().value_or(dtype::fp32));
    if (lo.type == dtype::fp64) {
      throw error(
          "dtype: the callable answers float64; live certification asks for fp32, fp16 or bf16 "
          "(certify float64 tensors as a dump: pev.certify(spec, {...}))");
    }
    lo.property_checks = [backend](const impl::live_implementation& live,
                                   const certify::live_options& l) {
      std::vector<certify::check> checks = app::live_property_checks(live, l);
      if (const auto& why = backend->ended()) checks.push_back(ended_check(live, l, *why));
      return checks;
    };
    return std::make_unique<impl::live_implementation>(backend, e, acc);
  };
  certificate_handle h;
  h.files = input_files(&s, {});
  h.c = run_long([&] { return app::certify(std::move(r)); });
  h.callable_layout = backend->layout_seen();
  if (!h.callable_layout.empty()) {
    h.c.notes.push_back("the callable's tables: " + h.callable_layout);
  }
  return h;
}

/// The request's defaults for pev.certify's keywords (docs/certify.md §9).
py::dict certify_defaults() {
  const app::certify_request r;
  py::dict d;
  d["max_position"] = r.max_position;
  d["samples"] = r.samples;
  d["seed"] = r.seed;
  d["accuracy"] = r.accuracy;
  d["properties"] = r.properties;
  d["property_cases"] = r.property_cases;
  d["reference"] = r.reference;
  d["libm"] = r.libm;
  d["diagnosis"] = r.diagnose;
  return d;
}

}  // namespace

void bind_certify(py::module_& m) {
  timed_out_type = PyErr_NewExceptionWithDoc(
      "pev._pev._CallTimedOut", "A callable ran past pev.certify's timeout (docs/python.md §4.3).",
      PyExc_BaseException, nullptr);
  if (!timed_out_type) throw py::error_already_set();
  m.attr("_CallTimedOut") = py::handle(timed_out_type);
  py::class_<sigint_watch>(m, "_SigintWatch")
      .def(py::init([](py::object previous) { return sigint_watch{std::move(previous)}; }),
           py::arg("previous"))
      .def_readonly("seen", &sigint_watch::seen)
      .def_readonly("previous", &sigint_watch::previous)
      .def("__call__", [](sigint_watch& w, py::object signum, py::object frame) {
        w.seen = true;
        return w.previous(std::move(signum), std::move(frame));
      });
  py::class_<certificate_handle>(m, "_Certificate")
      .def("json", [](const certificate_handle& h) { return report::to_json(h.c); })
      .def("text",
           [](const certificate_handle& h) {
             return escaped(certify::to_text(h.c), {.keep_newlines = true});
           })
      .def_property_readonly("exit_code",
                             [](const certificate_handle& h) { return h.c.exit_code(); })
      .def_readonly("callable_layout", &certificate_handle::callable_layout)
      .def(
          "write",
          [](const certificate_handle& h, const std::string& dir) {
            app::refuse_inputs_inside_out(dir, h.files);
            py::gil_scoped_release nogil;
            io::check_output_directory(dir);
            app::write_certificate(h.c, dir);
          },
          py::arg("dir"));
  m.def(
      "read_dump",
      [](const std::vector<std::string>& files) {
        certify::dump d = run_long([&] {
          return certify::read_dump({files.begin(), files.end()});
        });
        py::dict tensors, metadata;
        for (auto& [name, a] : d.tensors) tensors[py::str(name)] = to_numpy(std::move(a));
        for (const auto& [k, v] : d.metadata) metadata[py::str(k)] = v;
        return py::make_tuple(tensors, metadata);
      },
      py::arg("files"));
  m.def("certify_defaults", &certify_defaults);
  m.def(
      "certify_tensors",
      [](const spec_handle* s, const py::list& tensors, const std::vector<std::string>& files,
         std::optional<std::string> recipe, std::optional<std::string> layout,
         const std::optional<std::string>& positions_range,
         const std::optional<positions_array>& positions, std::optional<std::int64_t> seq_len,
         bool exhaustive, bool diagnose, const std::string& reference, const std::string& libm,
         std::optional<double> max_trig_ulp) {
        app::certify_request r =
            common_options{std::move(recipe), std::move(layout), diagnose, reference, libm,
                           max_trig_ulp}
                .request(s);
        if (positions_range) {
          // "A:B[:STEP]" or a range, as `pev certify --positions` reads it.
          r.positions_given = app::parse_position_range(*positions_range, false);
        } else if (positions) {
          if (positions->ndim() != 1) throw error("positions: expected a 1-d array of integers");
          r.positions_given.emplace(positions->data(), positions->data() + positions->size());
        }
        r.seq_len = seq_len;
        r.exhaustive = exhaustive;
        return certify_tensors(std::move(r), s, tensors, files);
      },
      py::arg("spec").none(true), py::arg("tensors"), py::arg("files"), py::arg("recipe"),
      py::arg("layout"), py::arg("positions_range"), py::arg("positions"), py::arg("seq_len"),
      py::arg("exhaustive"), py::arg("diagnose"), py::arg("reference"), py::arg("libm"),
      py::arg("max_trig_ulp"));
  m.def(
      "certify_trace",
      [](const std::optional<std::string>& config, const spec_handle* s,
         const std::vector<std::string>& files, const std::optional<std::string>& layers,
         std::optional<std::string> recipe, std::optional<std::string> layout, bool diagnose,
         const std::string& reference, const std::string& libm,
         std::optional<double> max_trig_ulp) {
        // What pev.torch's tracer saw travels in the trace's metadata (docs/certify.md §8.1), as
        // for `pev certify` of the saved file.
        app::certify_request r =
            common_options{std::move(recipe), std::move(layout), diagnose, reference, libm,
                           max_trig_ulp}
                .request(config ? nullptr : s);
        r.layers = layers.value_or("");
        return certify_trace(std::move(r), config, s, files);
      },
      py::arg("config").none(true), py::arg("spec").none(true), py::arg("files"),
      py::arg("layers").none(true), py::arg("recipe"), py::arg("layout"), py::arg("diagnose"),
      py::arg("reference"), py::arg("libm"), py::arg("max_trig_ulp"));
  m.def(
      "is_trace",
      [](const std::vector<std::string>& files) {
        // Whether dump files hold a model trace (docs/certify.md §8.1): pev.certify of a config
        // and such files certifies them layer by layer.
        return certify::is_trace(
            certify::read_dump(std::vector<fs::path>(files.begin(), files.end()), false));
      },
      py::arg("files"));
  m.def(
      "certify_callable",
      [](const spec_handle& s, py::object call, std::string name, std::string source,
         const std::vector<std::string>& files, std::optional<std::string> recipe,
         std::optional<std::string> layout, bool diagnose, const std::string& reference,
         const std::string& libm, std::optional<double> max_trig_ulp,
         std::optional<std::string> type, std::optional<std::int64_t> max_position,
         std::optional<std::int64_t> samples, bool exhaustive, std::optional<std::uint64_t> seed,
         std::optional<std::string> accuracy, std::optional<bool> properties,
         std::optional<std::int64_t> property_cases, std::optional<double> timeout) {
        app::certify_request r =
            common_options{std::move(recipe), std::move(layout), diagnose, reference, libm,
                           max_trig_ulp}
                .request(&s);
        const live_given lg{std::move(type),     max_position, samples,
                            property_cases,      exhaustive,   seed,
                            std::move(accuracy), properties,   timeout};
        return certify_callable(std::move(r), s, std::move(call), std::move(name),
                                std::move(source), files, lg);
      },
      py::arg("spec"), py::arg("call"), py::arg("name"), py::arg("source"), py::arg("files"),
      py::arg("recipe"), py::arg("layout"), py::arg("diagnose"), py::arg("reference"),
      py::arg("libm"), py::arg("max_trig_ulp"), py::arg("dtype").none(true),
      py::arg("max_position").none(true), py::arg("samples").none(true), py::arg("exhaustive"),
      py::arg("seed").none(true), py::arg("accuracy").none(true), py::arg("properties").none(true),
      py::arg("property_cases").none(true), py::arg("timeout").none(true));
}

}  // namespace pev::python

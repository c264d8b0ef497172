// pev.certify (docs/python.md §4): dumps given as tensors (numpy arrays, DLPack capsules) or files,
// certified by certify_dump; callables certified by certify_live through a live backend that asks
// them, with the property suites of `pev certify --exec`; certificates with pev::app's writers.

#include "pev/certify/certify.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common.h"
#include "pev/app/certify.h"
#include "pev/app/inputs.h"
#include "pev/app/limits.h"
#include "pev/app/positions.h"
#include "pev/app/properties.h"
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
using impl::detail::call_result;
using impl::detail::live_request;

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

/// The shape without its leading dimensions of size 1 (a batch of one), as certify reads dumps.
std::vector<std::int64_t> squeezed(std::vector<std::int64_t> shape) {
  while (shape.size() > 1 && shape.front() == 1) shape.erase(shape.begin());
  return shape;
}

// ---- Callables --------------------------------------------------------------------------------

/// A live implementation backed by a Python callable (docs/python.md §4.2). `call_` is pev's
/// Python-side adapter of the user's function (pev/_certify.py, _Implementation): called with the
/// positions (int64 array), the SPEC string, the dtype name, the sequence length (or None) and the
/// request name; it returns None (unsupported), a dict of tensors (numpy arrays or DLPack
/// capsules), a string (the user's function raised: the message), or ("ended", message): the
/// function raised SystemExit or KeyboardInterrupt (not a Ctrl-C), which ends the implementation as
/// an exit ends an --exec process. A call past the `watchdog`'s limit ends it too (docs/python.md
/// §4.3). Ended, it is a failed check and is not called again. A Python exception that leaves the
/// adapter (a Ctrl-C's KeyboardInterrupt; pev.Error for a tensor pev cannot read, such as a CUDA
/// tensor) stops the certification and is raised by pev.certify.
class python_backend final : public impl::detail::live_backend {
 public:
  python_backend(py::object call, std::string name, std::string source, std::vector<fs::path> files,
                 std::optional<certify::table_layout> layout, call_watchdog* watchdog)
      : call_(std::move(call)),
        name_(std::move(name)),
        source_(std::move(source)),
        files_(std::move(files)),
        layout_(layout),
        forced_(layout.has_value()),
        watchdog_(watchdog) {}
  ~python_backend() override {
    py::gil_scoped_acquire gil;
    call_ = py::object();
  }

  /// The first call (positions 0 … 15, the claimed spec): what the callable answers, in which
  /// dtype (`type`, else fp32 is asked and the dtype of its answer kept), and its tables' layout
  /// (unless `layout` was given): sixteen rows tell halves from repeated pairs, which one row
  /// cannot. A Python exception that leaves the adapter is raised; the user's function raising is a
  /// failure (a failed check, as for --exec). GIL held.
  void greet(const spec::encoding& e, std::optional<dtype> type) {
    const std::string text = spec::to_spec_string(e);
    std::vector<std::int64_t> p0(16);
    for (std::size_t k = 0; k < p0.size(); ++k) p0[k] = static_cast<std::int64_t>(k);
    const auto* r = std::get_if<spec::rope>(&e);
    const std::int64_t seq = r && r->stateful() ? static_cast<std::int64_t>(p0.size()) : -1;
    const live_request req{text, type.value_or(dtype::fp32), seq, p0};
    py::object res;
    try {
      res = invoke(req, "greeting");
    } catch (const error& ex) {
      failure_ = std::string(ex.what()) + " (at its first call, positions 0 to 15)";
      return;
    }
    if (res.is_none()) return;
    if (py::isinstance<py::str>(res)) {
      failure_ =
          name_ + " raised at its first call (positions 0 to 15): " + res.cast<std::string>();
      return;
    }
    try {
      const certify::dump d = to_dump(res, req);
      if (r) {
        if (has_table(d)) {
          const certify::table_read t = certify::read_rope_table(d, *r, layout_);
          outputs_.insert(impl::output::rope_table);
          type_ = t.cos.type;
          note_layout(t);
        }
        if (const io::array* f = d.find("inv_freq")) {
          if (f->type != dtype::fp32) {
            throw error("tensor 'inv_freq' has dtype " + std::string(to_string(f->type)) +
                        "; pev certifies the fp32 inv_freq that transformers keeps (return it as "
                        "float32, or leave it out)");
          }
          outputs_.insert(impl::output::inv_freq);
        }
      } else if (std::holds_alternative<spec::sinusoidal>(e)) {
        type_ = pe_of(d).type;
        outputs_.insert(impl::output::sinusoidal_pe);
      }
    } catch (const error& ex) {
      failure_ = name_ + " at its first call (positions 0 to 15): " + ex.what();
    }
    if (type) type_ = type;
  }
  /// The dtype of the greeting's answer (none: it answered nothing pev reads).
  std::optional<dtype> greeted_type() const { return type_; }
  /// The layout its tables came in, for the certificate ("halves, detected").
  std::string layout_seen() const { return layout_note_; }
  /// Why it ended (SystemExit, KeyboardInterrupt, a timeout), if it did.
  const std::optional<std::string>& ended() const { return ended_; }

  std::string kind() const override { return "python"; }
  std::string source() const override { return source_; }
  std::string name() const override { return name_; }
  std::vector<fs::path> files() const override { return files_; }
  std::optional<std::string> failure() const override { return failure_; }
  bool has(impl::output what) const override { return outputs_.count(what) > 0; }

  call_result rope_table(const live_request& r, std::int64_t pairs, void* cos, void* sin) override {
    const gil g;
    // One position is asked as two equal ones: a dump's leading dimensions of size 1 are dropped
    // (a batch of one), so a table of one row would lose its row dimension.
    const std::vector<std::int64_t> twice(2, r.positions.empty() ? 0 : r.positions[0]);
    const bool one = r.positions.size() == 1;
    const live_request asked{r.spec, r.type, r.seq_len,
                             one ? std::span<const std::int64_t>(twice) : r.positions};
    const std::optional<certify::dump> d = ask(asked, "rope_table");
    if (!d) return call_result::unsupported;
    const certify::table_read t = certify::read_rope_table(*d, rope_spec(r.spec), layout_);
    const auto P = static_cast<std::int64_t>(asked.positions.size());
    if (t.cos.shape[0] != P) {
      throw error(name_ + ": " + t.source + " has " + std::to_string(t.cos.shape[0]) +
                  " rows for " + std::to_string(P) + " positions");
    }
    require_type(t.cos.type, r.type, t.source);
    const std::size_t bytes =
        r.positions.size() * static_cast<std::size_t>(pairs) * size_of(t.cos.type);
    if (t.cos.data.size() < bytes) throw error(name_ + ": " + t.source + ": too few values");
    std::memcpy(cos, t.cos.data.data(), bytes);
    std::memcpy(sin, t.sin.data.data(), bytes);
    if (P >= 2) note_layout(t);
    return call_result::ok;
  }

  call_result inv_freq(const live_request& r, std::int64_t pairs, float* out) override {
    const gil g;
    const std::vector<std::int64_t> p0 = {0};
    const live_request r0{r.spec, r.type, r.seq_len, p0};
    const std::optional<certify::dump> d = ask(r0, "inv_freq");
    if (!d) return call_result::unsupported;
    const io::array* f = d->find("inv_freq");
    if (!f) return call_result::unsupported;
    if (f->type != dtype::fp32 || squeezed(f->shape) != std::vector<std::int64_t>{pairs}) {
      throw error(name_ + ": tensor 'inv_freq' must be fp32 [" + std::to_string(pairs) + "], got " +
                  to_string(f->type) + " " + io::shape_string(f->shape));
    }
    std::memcpy(out, f->data.data(), f->data.size());
    return call_result::ok;
  }

  call_result rope_rotate(const live_request&, std::int64_t, std::int64_t, const void*,
                          void*) override {
    return call_result::unsupported;  // a callable answers positions with tables (has() says no)
  }

  call_result sinusoidal_pe(const live_request& r, std::int64_t d_model, void* out) override {
    const gil g;
    // One position is asked as two equal ones (see rope_table).
    const std::vector<std::int64_t> twice(2, r.positions.empty() ? 0 : r.positions[0]);
    const bool one = r.positions.size() == 1;
    const live_request asked{r.spec, r.type, r.seq_len,
                             one ? std::span<const std::int64_t>(twice) : r.positions};
    const std::optional<certify::dump> d = ask(asked, "sinusoidal_pe");
    if (!d) return call_result::unsupported;
    const io::array& pe = pe_of(*d);
    const std::vector<std::int64_t> want = {static_cast<std::int64_t>(asked.positions.size()),
                                            d_model};
    if (squeezed(pe.shape) != want) {
      throw error(name_ + ": tensor 'pe' has shape " + io::shape_string(pe.shape) + ", expected " +
                  io::shape_string(want));
    }
    require_type(pe.type, r.type, "tensor 'pe'");
    std::memcpy(out, pe.data.data(),
                r.positions.size() * static_cast<std::size_t>(d_model) * size_of(pe.type));
    return call_result::ok;
  }

 private:
  // The layout of its tables, kept from the first table of several rows (unless given).
  void note_layout(const certify::table_read& t) {
    if (!layout_note_.empty()) return;
    if (!forced_) layout_ = t.layout;
    layout_note_ = std::string(certify::to_string(t.layout)) +
                   (forced_ ? ", given (" : ", detected (") + t.source + ")";
  }

  // The GIL for a call, unless the work was told to stop (then at once: pev::interrupted).
  struct gil {
    gil() {
      if (long_call::stopped()) throw interrupted{};
      acquired.emplace();
    }
    std::optional<py::gil_scoped_acquire> acquired;
  };

  static py::array positions_array(std::span<const std::int64_t> p) {
    py::array_t<std::int64_t> a(static_cast<py::ssize_t>(p.size()));
    if (!p.empty()) std::memcpy(a.mutable_data(), p.data(), p.size() * sizeof(std::int64_t));
    return a;
  }

  static bool has_table(const certify::dump& d) {
    for (const char* n : {"cos", "cos_cached", "cos_sin_cache", "table", "freqs_cis", "cos_sin"}) {
      if (d.find(n)) return true;
    }
    return false;
  }

  const io::array& pe_of(const certify::dump& d) const {
    if (const io::array* a = d.find("pe")) return *a;
    if (d.tensors.size() == 1) return d.tensors.begin()->second;
    throw error(name_ + ": expected a tensor 'pe' (or a single tensor)");
  }

  void require_type(dtype got, dtype want, const std::string& what) const {
    if (got != want) {
      throw error(name_ + ": " + what + " has dtype " + to_string(got) + "; pev asked for " +
                  to_string(want) + " (pev.certify's dtype=, else the dtype of its first answer)");
    }
  }

  const spec::rope& rope_spec(const std::string& text) {
    auto it = specs_.find(text);
    if (it == specs_.end()) it = specs_.emplace(text, spec::parse_spec(text)).first;
    const auto* r = std::get_if<spec::rope>(&it->second);
    if (!r) throw error(name_ + ": a RoPE table for the spec " + text);
    return *r;
  }

  // Calls the adapter within the time limit (GIL held): its answer, or pev::error when the
  // implementation ended (now or before). A Python exception that leaves it propagates.
  py::object invoke(const live_request& r, const char* request) {
    if (ended_) throw error(*ended_);
    if (watchdog_) watchdog_->arm();
    py::object res;
    try {
      res =
          call_(positions_array(r.positions), r.spec, to_string(r.type),
                r.seq_len < 0 ? py::object(py::none()) : py::object(py::int_(r.seq_len)), request);
    } catch (py::error_already_set& e) {
      const bool timed = watchdog_ && watchdog_->disarm();
      // A Ctrl-C stops pev also when the call is past its limit — a callable blocked in C, which
      // the watchdog cannot stop, is what Ctrl-C is pressed for (docs/python.md §4.3).
      if (ctrl_c()) {
        if (e.matches(PyExc_KeyboardInterrupt)) throw;
        PyErr_SetNone(PyExc_KeyboardInterrupt);  // the watchdog's stop came first: replaced
        throw py::error_already_set();
      }
      if (!timed) throw;
      end_by_timeout(r);
    }
    if (watchdog_ && watchdog_->disarm()) end_by_timeout(r);
    if (py::isinstance<py::tuple>(res)) {  // ("ended", message)
      ended_ = name_ + " " + py::cast<std::string>(py::reinterpret_borrow<py::tuple>(res)[1]) +
               "; pev stopped asking it";
      throw error(*ended_);
    }
    return res;
  }

  // Whether SIGINT reached Python's handler while the callable ran (the adapter's `sigint`, set by
  // pev/_certify.py's _watching_sigint). GIL held.
  bool ctrl_c() const {
    return py::hasattr(call_, "sigint") && py::bool_(call_.attr("sigint")).cast<bool>();
  }

  [[noreturn]] void end_by_timeout(const live_request& r) {
    const std::string asked = r.positions.size() == 1
                                  ? "position " + std::to_string(r.positions[0])
                                  : fmt::format("{} positions ({} to {})", r.positions.size(),
                                                r.positions.front(), r.positions.back());
    ended_ = fmt::format(
        "{} timed out: no answer within {} s (timeout=) when asked for {} of {}; pev stopped it "
        "and stopped asking it",
        name_, watchdog_->seconds(), asked, r.spec);
    throw error(*ended_);
  }

  // Asks the adapter (GIL held); none: unsupported.
  std::optional<certify::dump> ask(const live_request& r, const char* request) {
    py::object res;
    try {
      res = invoke(r, request);
    } catch (py::error_already_set& e) {
      long_call::stop_with(e);
      throw interrupted{};
    }
    if (res.is_none()) return std::nullopt;
    if (py::isinstance<py::str>(res)) throw error(name_ + ": " + res.cast<std::string>());
    return to_dump(res, r);
  }

  // The answer's tensors as a dump; a `positions` tensor must be the positions asked for.
  certify::dump to_dump(const py::object& res, const live_request& r) const {
    certify::dump d;
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(res)) {
      const std::string name = py::str(k);
      d.tensors.emplace(name, to_io_array(name, v));
    }
    for (const char* n : {"positions", "position_ids"}) {
      const auto it = d.tensors.find(n);
      if (it == d.tensors.end()) continue;
      const std::vector<std::int64_t> got = it->second.to_int64();
      if (!std::equal(got.begin(), got.end(), r.positions.begin(), r.positions.end())) {
        throw error(name_ + ": tensor '" + n + "' differs from the positions pev asked for");
      }
      d.tensors.erase(it);
    }
    return d;
  }

  py::object call_;
  std::string name_, source_;
  std::vector<fs::path> files_;
  std::optional<certify::table_layout> layout_;
  bool forced_;
  std::string layout_note_;
  std::optional<std::string> failure_;
  std::set<impl::output> outputs_;
  std::optional<dtype> type_;
  std::map<std::string, spec::encoding> specs_;
  call_watchdog* watchdog_;  // none: no time limit
  std::optional<std::string> ended_;
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

struct common_options {
  std::optional<std::string> recipe;
  std::optional<std::string> layout;
  bool diagnose = true;
  std::string reference = "fast";
  std::string libm = "any";
  std::optional<double> max_trig_ulp;

  certify::options make() const {
    certify::options o;
    o.recipe = recipe;
    if (layout) o.layout = certify::parse_table_layout(*layout);
    o.diagnose = diagnose;
    app::set_certify_options(o, reference, libm, max_trig_ulp);
    return o;
  }
};

void add_inputs(certify::certificate& c, const spec_handle* s) {
  if (!s || !c.certification) return;
  auto& in = c.certification->inputs;
  in.insert(in.end(), s->inputs.begin(), s->inputs.end());
}

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

certificate_handle certify_tensors(const spec_handle* s, const py::list& tensors,
                                   const std::vector<std::string>& files, const common_options& co,
                                   std::optional<std::vector<std::int64_t>> positions,
                                   std::optional<std::int64_t> seq_len, bool exhaustive) {
  certify::options o = co.make();
  if (positions) o.positions = std::move(*positions);
  if (seq_len) app::require_range("seq_len", *seq_len, 1, INT64_MAX);
  o.seq_len = seq_len;
  o.exhaustive = exhaustive;
  certify::dump d;
  for (const auto& item : tensors) {
    const auto t = py::reinterpret_borrow<py::tuple>(item);
    const std::string name = t[0].cast<std::string>();
    d.tensors.emplace(name, to_io_array(name, t[1]));
  }
  certificate_handle h;
  h.files = input_files(s, files);
  h.c = run_long([&] {
    if (!files.empty()) {
      d = certify::read_dump(std::vector<fs::path>(files.begin(), files.end()));
    } else {
      // Each tensor is hashed as its row-major little-endian bytes (hashlib.sha256 of
      // numpy's tobytes() gives the same).
      for (const auto& [name, a] : d.tensors) {
        d.files.push_back(
            {"tensor '" + name + "' " + to_string(a.type) + " " + io::shape_string(a.shape),
             "python",
             certify::sha256_bytes(
                 std::string_view(reinterpret_cast<const char*>(a.data.data()), a.data.size()))});
      }
    }
    spec::encoding e;
    if (s) {
      e = s->e;
    } else if (const auto it = d.metadata.find("spec"); it != d.metadata.end()) {
      e = spec::parse_spec(it->second);
    } else {
      throw error("spec: required (the dump's metadata names no spec)");
    }
    return certify::certify_dump(e, d, o);
  });
  add_inputs(h.c, s);
  return h;
}

/// A model trace (docs/certify.md §8.1) in dump files, against the config.json at `config`: what
/// `pev certify --config C --impl TRACE` does (pev.certify of a pev.torch.Trace saves it to a
/// temporary safetensors file and comes here with what the tracer saw, docs/python.md §9).
certificate_handle certify_trace(const std::string& config, const std::vector<std::string>& files,
                                 const common_options& co) {
  const certify::options o = co.make();
  certificate_handle h;
  h.files.push_back({"config", config});
  for (const auto& f : files) h.files.push_back({"dump", f});
  h.c = run_long([&]() -> certify::certificate {
    certify::dump d = certify::read_dump(std::vector<fs::path>(files.begin(), files.end()));
    // Every layer against the encoding the config gives it (pev/spec/model.h); the config's
    // bytes are both parsed and hashed, as `pev certify` does.
    const std::string text = io::read_file(config, spec::max_config_bytes);
    certify::certificate c =
        certify::certify_trace(spec::parse_config_model_text(text, config), std::move(d), o);
    c.certification->inputs.push_back({config, "config", certify::sha256_bytes(text)});
    return c;
  });
  return h;
}

certificate_handle certify_callable(const spec_handle& s, py::object call, std::string name,
                                    std::string source, const std::vector<std::string>& files,
                                    const common_options& co, std::optional<std::string> type,
                                    std::int64_t max_position, std::int64_t samples,
                                    bool exhaustive, std::uint64_t seed,
                                    const std::string& accuracy, bool properties,
                                    std::int64_t property_cases, std::optional<double> timeout) {
  app::require_range("max_position", max_position, 0, app::kMaxPositionLimit);
  // As `pev certify --timeout`: NaN and infinities are out of range too.
  if (timeout) app::require_range("timeout", *timeout, 0.001, 86400);
  app::require_range("samples", samples, 0, app::kMaxSamples);
  app::require_range("property_cases", property_cases, 1, 1000000);
  certify::options o = co.make();
  const std::optional<certify::table_layout> layout = o.layout;
  o.layout.reset();  // the callable's layout; pev collects its answers as separate cos and sin
  const kernel::strategy acc = kernel::parse_strategy(accuracy);
  std::optional<dtype> t;
  if (type) t = parse_float_dtype(*type);
  if (t && !is_float(*t)) throw error("dtype: expected fp32, fp16 or bf16");
  std::optional<call_watchdog> watchdog;
  if (timeout) watchdog.emplace(*timeout, timed_out_type);
  auto backend = std::make_shared<python_backend>(
      std::move(call), std::move(name), std::move(source),
      std::vector<fs::path>(files.begin(), files.end()), layout, watchdog ? &*watchdog : nullptr);
  backend->greet(s.e, t);
  certify::live_options lo;
  lo.max_position = max_position;
  lo.samples = static_cast<int>(samples);
  lo.exhaustive = exhaustive;
  lo.seed = seed;
  lo.type = t.value_or(backend->greeted_type().value_or(dtype::fp32));
  if (lo.type == dtype::fp64) {
    throw error(
        "dtype: the callable answers float64; live certification asks for fp32, fp16 or bf16 "
        "(certify float64 tensors as a dump: pev.certify(spec, {...}))");
  }
  lo.properties = properties;
  lo.property_cases = static_cast<int>(property_cases);
  lo.property_checks = [backend](const impl::live_implementation& live,
                                 const certify::live_options& l) {
    std::vector<certify::check> checks = app::live_property_checks(live, l);
    if (const auto& why = backend->ended()) checks.push_back(ended_check(live, l, *why));
    return checks;
  };
  const impl::live_implementation im(backend, s.e, acc);
  certificate_handle h;
  h.files = input_files(&s, {});
  h.c = run_long([&] { return certify::certify_live(s.e, im, o, lo); });
  h.callable_layout = backend->layout_seen();
  if (!h.callable_layout.empty()) {
    h.c.notes.push_back("the callable's tables: " + h.callable_layout);
  }
  add_inputs(h.c, &s);
  return h;
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
  m.def(
      "certify_tensors",
      [](const spec_handle* s, const py::list& tensors, const std::vector<std::string>& files,
         std::optional<std::string> recipe, std::optional<std::string> layout,
         const std::optional<std::string>& positions_range,
         const std::optional<positions_array>& positions, std::optional<std::int64_t> seq_len,
         bool exhaustive, bool diagnose, const std::string& reference, const std::string& libm,
         std::optional<double> max_trig_ulp) {
        std::optional<std::vector<std::int64_t>> pos;
        if (positions_range) {
          // "A:B[:STEP]" or a range, as `pev certify --positions` reads it.
          pos = app::parse_position_range(*positions_range, false);
        } else if (positions) {
          if (positions->ndim() != 1) throw error("positions: expected a 1-d array of integers");
          pos.emplace(positions->data(), positions->data() + positions->size());
        }
        return certify_tensors(
            s, tensors, files,
            {std::move(recipe), std::move(layout), diagnose, reference, libm, max_trig_ulp},
            std::move(pos), seq_len, exhaustive);
      },
      py::arg("spec").none(true), py::arg("tensors"), py::arg("files"), py::arg("recipe"),
      py::arg("layout"), py::arg("positions_range"), py::arg("positions"), py::arg("seq_len"),
      py::arg("exhaustive"), py::arg("diagnose"), py::arg("reference"), py::arg("libm"),
      py::arg("max_trig_ulp"));
  m.def(
      "certify_trace",
      [](const std::string& config, const std::vector<std::string>& files,
         std::optional<std::string> recipe, std::optional<std::string> layout, bool diagnose,
         const std::string& reference, const std::string& libm,
         std::optional<double> max_trig_ulp) {
        // What pev.torch's tracer saw travels in the trace's metadata (docs/certify.md §8.1), as
        // for `pev certify` of the saved file.
        return certify_trace(
            config, files,
            {std::move(recipe), std::move(layout), diagnose, reference, libm, max_trig_ulp});
      },
      py::arg("config"), py::arg("files"), py::arg("recipe"), py::arg("layout"),
      py::arg("diagnose"), py::arg("reference"), py::arg("libm"), py::arg("max_trig_ulp"));
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
         std::optional<std::string> type, std::int64_t max_position, std::int64_t samples,
         bool exhaustive, std::uint64_t seed, const std::string& accuracy, bool properties,
         std::int64_t property_cases, std::optional<double> timeout) {
        return certify_callable(
            s, std::move(call), std::move(name), std::move(source), files,
            {std::move(recipe), std::move(layout), diagnose, reference, libm, max_trig_ulp},
            std::move(type), max_position, samples, exhaustive, seed, accuracy, properties,
            property_cases, timeout);
      },
      py::arg("spec"), py::arg("call"), py::arg("name"), py::arg("source"), py::arg("files"),
      py::arg("recipe"), py::arg("layout"), py::arg("diagnose"), py::arg("reference"),
      py::arg("libm"), py::arg("max_trig_ulp"), py::arg("dtype"), py::arg("max_position"),
      py::arg("samples"), py::arg("exhaustive"), py::arg("seed"), py::arg("accuracy"),
      py::arg("properties"), py::arg("property_cases"), py::arg("timeout"));
}

}  // namespace pev::python

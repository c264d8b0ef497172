// pev.certify of a callable (docs/python.md §4.2): the live backend that asks a Python callable
// (pev/_certify.py's adapter) for tables and reads its answers as dumps.

#include "live_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "pev/core/error.h"
#include "pev/io/file.h"
#include "pev/spec/parse.h"

namespace pev::python {
namespace {

namespace fs = std::filesystem;
using impl::detail::call_result;
using impl::detail::live_request;

/// The shape without its leading dimensions of size 1 (a batch of one), as certify reads dumps.
std::vector<std::int64_t> squeezed(std::vector<std::int64_t> shape) {
  while (shape.size() > 1 && shape.front() == 1) shape.erase(shape.begin());
  return shape;
}

// The GIL for a call, unless the work was told to stop (then at once: pev::interrupted).
struct gil {
  gil() {
    if (long_call::stopped()) throw interrupted{};
    acquired.emplace();
  }
  std::optional<py::gil_scoped_acquire> acquired;
};

py::array positions_array(std::span<const std::int64_t> p) {
  py::array_t<std::int64_t> a(static_cast<py::ssize_t>(p.size()));
  if (!p.empty()) std::memcpy(a.mutable_data(), p.data(), p.size() * sizeof(std::int64_t));
  return a;
}

bool has_table(const certify::dump& d) {
  for (const char* n : {"cos", "cos_cached", "cos_sin_cache", "table", "freqs_cis", "cos_sin"}) {
    if (d.find(n)) return true;
  }
  return false;
}

}  // namespace

python_backend::python_backend(py::object call, std::string name, std::string source,
                               std::vector<fs::path> files,
                               std::optional<certify::table_layout> layout, call_watchdog* watchdog)
    : call_(std::move(call)),
      name_(std::move(name)),
      source_(std::move(source)),
      files_(std::move(files)),
      layout_(layout),
      forced_(layout.has_value()),
      watchdog_(watchdog) {}
python_backend::~python_backend() {
  py::gil_scoped_acquire gil;
  call_ = py::object();
}

void python_backend::greet(const spec::encoding& e, std::optional<dtype> type) {
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
    failure_ = name_ + " raised at its first call (positions 0 to 15): " + res.cast<std::string>();
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

call_result python_backend::rope_table(const live_request& r, std::int64_t pairs, void* cos,
                                       void* sin) {
  const gil g;
  std::size_t rows = 0;
  const std::optional<certify::dump> d = ask_rows(r, "rope_table", rows);
  if (!d) return call_result::unsupported;
  const certify::table_read t = certify::read_rope_table(*d, rope_spec(r.spec), layout_);
  const auto P = static_cast<std::int64_t>(rows);
  if (t.cos.shape[0] != P) {
    throw error(name_ + ": " + t.source + " has " + std::to_string(t.cos.shape[0]) + " rows for " +
                std::to_string(P) + " positions");
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

call_result python_backend::inv_freq(const live_request& r, std::int64_t pairs, float* out) {
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

call_result python_backend::rope_rotate(const live_request&, std::int64_t, std::int64_t,
                                        const void*, void*) {
  return call_result::unsupported;  // a callable answers positions with tables (has() says no)
}

call_result python_backend::sinusoidal_pe(const live_request& r, std::int64_t d_model, void* out) {
  const gil g;
  std::size_t rows = 0;
  const std::optional<certify::dump> d = ask_rows(r, "sinusoidal_pe", rows);
  if (!d) return call_result::unsupported;
  const io::array& pe = pe_of(*d);
  const std::vector<std::int64_t> want = {static_cast<std::int64_t>(rows), d_model};
  if (squeezed(pe.shape) != want) {
    throw error(name_ + ": tensor 'pe' has shape " + io::shape_string(pe.shape) + ", expected " +
                io::shape_string(want));
  }
  require_type(pe.type, r.type, "tensor 'pe'");
  std::memcpy(out, pe.data.data(),
              r.positions.size() * static_cast<std::size_t>(d_model) * size_of(pe.type));
  return call_result::ok;
}

// The layout of its tables, kept from the first table of several rows (unless given).
void python_backend::note_layout(const certify::table_read& t) {
  if (!layout_note_.empty()) return;
  if (!forced_) layout_ = t.layout;
  layout_note_ = std::string(certify::to_string(t.layout)) +
                 (forced_ ? ", given (" : ", detected (") + t.source + ")";
}

const io::array& python_backend::pe_of(const certify::dump& d) const {
  if (const io::array* a = d.find("pe")) return *a;
  if (d.tensors.size() == 1) return d.tensors.begin()->second;
  throw error(name_ + ": expected a tensor 'pe' (or a single tensor)");
}

void python_backend::require_type(dtype got, dtype want, const std::string& what) const {
  if (got != want) {
    throw error(name_ + ": " + what + " has dtype " + to_string(got) + "; pev asked for " +
                to_string(want) + " (pev.certify's dtype=, else the dtype of its first answer)");
  }
}

const spec::rope& python_backend::rope_spec(const std::string& text) {
  auto it = specs_.find(text);
  if (it == specs_.end()) it = specs_.emplace(text, spec::parse_spec(text)).first;
  const auto* r = std::get_if<spec::rope>(&it->second);
  if (!r) throw error(name_ + ": a RoPE table for the spec " + text);
  return *r;
}

// Calls the adapter within the time limit (GIL held): its answer, or pev::error when the
// implementation ended (now or before). A Python exception that leaves it propagates.
py::object python_backend::invoke(const live_request& r, const char* request) {
  if (ended_) throw error(*ended_);
  if (watchdog_) watchdog_->arm();
  py::object res;
  try {
    res = call_(positions_array(r.positions), r.spec, to_string(r.type),
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
bool python_backend::ctrl_c() const {
  return py::hasattr(call_, "sigint") && py::bool_(call_.attr("sigint")).cast<bool>();
}

void python_backend::end_by_timeout(const live_request& r) {
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
std::optional<certify::dump> python_backend::ask(const live_request& r, const char* request) {
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
std::optional<certify::dump> python_backend::ask_rows(const live_request& r, const char* request,
                                                      std::size_t& rows) {
  // One position is asked as two equal ones: a dump's leading dimensions of size 1 are dropped
  // (a batch of one), so a table of one row would lose its row dimension.
  const std::vector<std::int64_t> twice(2, r.positions.empty() ? 0 : r.positions[0]);
  const bool one = r.positions.size() == 1;
  const live_request asked{r.spec, r.type, r.seq_len,
                           one ? std::span<const std::int64_t>(twice) : r.positions};
  rows = asked.positions.size();
  return ask(asked, request);
}

certify::dump python_backend::to_dump(const py::object& res, const live_request& r) const {
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

}  // namespace pev::python

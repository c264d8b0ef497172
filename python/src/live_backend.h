#pragma once
// pev.certify of a callable (docs/python.md §4.2): the live backend that asks a Python callable for
// the values pev certifies, as `pev certify --exec` asks a process.

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common.h"
#include "pev/certify/certify.h"
#include "pev/impl/live_backend.h"
#include "watchdog.h"

namespace pev::python {

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
  using call_result = impl::detail::call_result;
  using live_request = impl::detail::live_request;

  python_backend(py::object call, std::string name, std::string source,
                 std::vector<std::filesystem::path> files,
                 std::optional<certify::table_layout> layout, call_watchdog* watchdog);
  ~python_backend() override;

  /// The first call (positions 0 … 15, the claimed spec): what the callable answers, in which
  /// dtype (`type`, else fp32 is asked and the dtype of its answer kept), and its tables' layout
  /// (unless `layout` was given): sixteen rows tell halves from repeated pairs, which one row
  /// cannot. A Python exception that leaves the adapter is raised; the user's function raising is a
  /// failure (a failed check, as for --exec). GIL held.
  void greet(const spec::encoding& e, std::optional<dtype> type);
  /// The dtype of the greeting's answer (none: it answered nothing pev reads).
  std::optional<dtype> greeted_type() const { return type_; }
  /// The layout its tables came in, for the certificate ("halves, detected").
  std::string layout_seen() const { return layout_note_; }
  /// Why it ended (SystemExit, KeyboardInterrupt, a timeout), if it did.
  const std::optional<std::string>& ended() const { return ended_; }

  std::string kind() const override { return "python"; }
  std::string source() const override { return source_; }
  std::string name() const override { return name_; }
  std::vector<std::filesystem::path> files() const override { return files_; }
  std::optional<std::string> failure() const override { return failure_; }
  bool has(impl::output what) const override { return outputs_.count(what) > 0; }

  call_result rope_table(const live_request& r, std::int64_t pairs, void* cos, void* sin) override;
  call_result inv_freq(const live_request& r, std::int64_t pairs, float* out) override;
  call_result rope_rotate(const live_request&, std::int64_t, std::int64_t, const void*,
                          void*) override;
  call_result sinusoidal_pe(const live_request& r, std::int64_t d_model, void* out) override;

 private:
  void note_layout(const certify::table_read& t);
  const io::array& pe_of(const certify::dump& d) const;
  void require_type(dtype got, dtype want, const std::string& what) const;
  const spec::rope& rope_spec(const std::string& text);
  py::object invoke(const live_request& r, const char* request);
  bool ctrl_c() const;
  [[noreturn]] void end_by_timeout(const live_request& r);
  std::optional<certify::dump> ask(const live_request& r, const char* request);
  // Asks for r's positions as rows of a table (`rows`: how many the answer holds).
  std::optional<certify::dump> ask_rows(const live_request& r, const char* request,
                                        std::size_t& rows);
  certify::dump to_dump(const py::object& res, const live_request& r) const;

  py::object call_;
  std::string name_, source_;
  std::vector<std::filesystem::path> files_;
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

}  // namespace pev::python

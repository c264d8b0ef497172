#pragma once
// pev's Python module (docs/python.md): what the binding sources share — specs with the inputs they
// were read from, arrays between numpy/DLPack and pev::io::array, and long work run without the
// GIL and interruptible by Ctrl-C (docs/python.md §6).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pev/core/interrupt.h"
#include "pev/io/array.h"
#include "pev/report/result.h"
#include "pev/spec/spec.h"

namespace pev::python {

namespace py = pybind11;

/// A validated spec and the inputs it was read from (a config file or dict: path, "config",
/// SHA-256), which a certificate lists as `pev certify --config` does.
struct spec_handle {
  spec::encoding e;
  std::string text;  // canonical SPEC string
  std::vector<report::input_file> inputs;
};

/// A copy of a tensor as pev reads it: a C-contiguous numpy array in native (little-endian) byte
/// order, or a DLPack capsule (any strides; host memory only). numpy dtypes: float64/32/16,
/// uint16 and ml_dtypes' bfloat16 (bf16 encodings, as pev's npy files hold them), int32, int64,
/// complex64/128 (a trailing dimension of 2: real and imaginary parts). pev::error naming `name`
/// for anything else.
io::array to_io_array(const std::string& name, const py::handle& obj);

/// A numpy array that owns `a`'s bytes (no copy); bf16 as uint16 encodings, as in pev's npy files.
py::array to_numpy(io::array a);

/// The outermost long call in progress: while it lives, pev's interruption points
/// (pev/core/interrupt.h) check Python's signals (at most every 50 ms, taking the GIL), and a
/// Python exception that must end the call (KeyboardInterrupt, or an error raised in pev's own
/// Python layer while a callable's answer was read) is kept until the call returns.
class long_call {
 public:
  long_call();
  ~long_call();
  long_call(const long_call&) = delete;
  long_call& operator=(const long_call&) = delete;

  /// Keeps the Python exception being handled (`e`) and stops the work: every later interruption
  /// point throws pev::interrupted. The first one kept wins. The GIL must be held.
  static void stop_with(py::error_already_set& e);
  /// Whether the work was told to stop.
  static bool stopped();
  /// With the GIL held, after the work: raises the kept exception (KeyboardInterrupt when none was
  /// kept) if the work was stopped, or when `interrupted` (pev::interrupted reached the caller).
  void raise_if_stopped(bool interrupted = false);
};

/// Runs f() with the GIL released inside a long_call, raising the Python exception that stopped
/// it, if one did.
template <class F>
auto run_long(F&& f) -> decltype(f()) {
  long_call call;
  using R = decltype(f());
  if constexpr (std::is_void_v<R>) {
    bool caught = false;
    try {
      py::gil_scoped_release nogil;
      f();
    } catch (const interrupted&) {
      caught = true;
    }
    call.raise_if_stopped(caught);
  } else {
    std::optional<R> r;
    try {
      py::gil_scoped_release nogil;
      r.emplace(f());
    } catch (const interrupted&) {
    }
    call.raise_if_stopped(!r);
    return std::move(*r);
  }
}

void bind_spec(py::module_& m);
void bind_values(py::module_& m);
void bind_certify(py::module_& m);

}  // namespace pev::python

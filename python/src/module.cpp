// pev's Python module, `pev._pev` (docs/python.md): the compiled half of the `pev` package. The
// pure-Python layer (python/pev/) gives it its documented interface; this half wraps pev's library
// and the application layer that the CLI stands on too (pev::app, verify/app/) so that Python gets
// the same values, certificates and messages as `pev`.

#include <exception>
#include <new>

#include "common.h"
#include "pev/core/error.h"
#include "pev/core/text.h"

namespace {

// pev.Error: never freed, as it must outlive the interpreter's last use of it.
PyObject* error_type = nullptr;

}  // namespace

PYBIND11_MODULE(_pev, m) {
  namespace py = pybind11;
  m.doc() = "pev's compiled core; use the `pev` package (docs/python.md)";
  // pev.Error is a ValueError: bad input, named in pev's own message (escaped: messages quote
  // names and text from inputs).
  error_type = (new py::exception<pev::error>(m, "Error", PyExc_ValueError))->ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const pev::error& e) {
      PyErr_SetString(error_type, pev::escaped(e.what()).c_str());
    } catch (const pev::interrupted&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const py::builtin_exception& e) {
      e.set_error();
    } catch (py::error_already_set& e) {
      e.restore();
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "pev: out of memory");
    } catch (const std::exception& e) {
      // Handled here, not by another extension's translators: the module has its own C++ runtime
      // (python/CMakeLists.txt).
      PyErr_SetString(PyExc_RuntimeError, pev::escaped(e.what()).c_str());
    }
  });
  pev::python::bind_spec(m);
  pev::python::bind_values(m);
  pev::python::bind_certify(m);
}

#include "common.h"

#include <atomic>
#include <chrono>
#include <cstring>

#include "pev/core/error.h"
#include "pev/io/npy.h"

namespace pev::python {

// ---- Arrays
// ---------------------------------------------------------------------------------------

namespace {

// The DLPack ABI (dlpack.h, version 0.x as PyTorch 1.13 exports it): a capsule named "dltensor"
// holding a DLManagedTensor. Declared here from its specification; the consumer renames the capsule
// "used_dltensor" and calls the deleter when it is done.
struct dl_device {
  std::int32_t device_type;  // 1: CPU, 2: CUDA, 3: CUDA host (pinned), …
  std::int32_t device_id;
};
struct dl_data_type {
  std::uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct dl_tensor {
  void* data;
  dl_device device;
  std::int32_t ndim;
  dl_data_type dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null: row-major
  std::uint64_t byte_offset;
};
struct dl_managed_tensor {
  dl_tensor dl;
  void* manager_ctx;
  void (*deleter)(dl_managed_tensor*);
};

constexpr std::int32_t kDLCPU = 1, kDLCUDAHost = 3;

// pev's dtype of an element of `bits` bits of DLPack type code `code`; complex types are pairs of
// floats (`pairs` set).
dtype dlpack_dtype(const std::string& name, dl_data_type t, bool& pairs) {
  pairs = false;
  if (t.lanes == 1) {
    switch (t.code) {
      case 0:
        if (t.bits == 32) return dtype::int32;
        if (t.bits == 64) return dtype::int64;
        break;
      case 2:
        if (t.bits == 64) return dtype::fp64;
        if (t.bits == 32) return dtype::fp32;
        if (t.bits == 16) return dtype::fp16;
        break;
      case 4:
        if (t.bits == 16) return dtype::bf16;
        break;
      case 5:
        pairs = true;
        if (t.bits == 128) return dtype::fp64;
        if (t.bits == 64) return dtype::fp32;
        break;
      default:
        break;
    }
  }
  throw error("tensor '" + name + "': DLPack dtype (code " + std::to_string(t.code) + ", " +
              std::to_string(t.bits) + " bits, " + std::to_string(t.lanes) +
              " lanes) is not one pev reads (float64, float32, float16, bfloat16, int32, int64, "
              "complex64, complex128)");
}

io::array from_dlpack(const std::string& name, py::capsule cap) {
  auto* m = static_cast<dl_managed_tensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  if (!m) {
    PyErr_Clear();
    throw error("tensor '" + name + "': a DLPack capsule that was already used");
  }
  const dl_tensor& t = m->dl;
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost) {
    throw error("tensor '" + name + "' is not in host memory (DLPack device type " +
                std::to_string(t.device.device_type) + "): pass " + name + ".cpu()");
  }
  bool pairs = false;
  io::array a;
  a.type = dlpack_dtype(name, t.dtype, pairs);
  const std::size_t es = (t.dtype.bits + 7) / 8;  // bytes of one element (a complex: both parts)
  std::size_t n = 1;
  for (std::int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0) throw error("tensor '" + name + "': negative dimension");
    a.shape.push_back(t.shape[d]);
    n *= static_cast<std::size_t>(t.shape[d]);
  }
  a.data.resize(n * es);
  const auto* base = static_cast<const std::byte*>(t.data) + t.byte_offset;
  if (n > 0) {
    // Row-major copy through the strides (elements), one index counter per dimension.
    std::vector<std::int64_t> stride(static_cast<std::size_t>(t.ndim));
    std::int64_t s = 1;
    for (std::int32_t d = t.ndim; d-- > 0;) {
      stride[static_cast<std::size_t>(d)] = t.strides ? t.strides[d] : s;
      s *= t.shape[d];
    }
    bool contiguous = true;
    s = 1;
    for (std::int32_t d = t.ndim; d-- > 0;) {
      if (t.shape[d] != 1 && stride[static_cast<std::size_t>(d)] != s) contiguous = false;
      s *= t.shape[d];
    }
    if (contiguous) {
      std::memcpy(a.data.mutable_data(), base, n * es);
    } else {
      std::vector<std::int64_t> idx(static_cast<std::size_t>(t.ndim), 0);
      std::int64_t off = 0;  // element offset of idx
      for (std::size_t k = 0; k < n; ++k) {
        std::memcpy(a.data.mutable_data() + k * es, base + off * static_cast<std::int64_t>(es), es);
        for (std::int32_t d = t.ndim; d-- > 0;) {
          const auto u = static_cast<std::size_t>(d);
          off += stride[u];
          if (++idx[u] < t.shape[d]) break;
          off -= stride[u] * t.shape[d];
          idx[u] = 0;
        }
      }
    }
  }
  if (pairs) a.shape.push_back(2);
  // Consumed: the producer's capsule destructor must not free it again.
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  if (m->deleter) m->deleter(m);
  return a;
}

}  // namespace

io::array to_io_array(const std::string& name, const py::handle& obj) {
  if (PyCapsule_CheckExact(obj.ptr()))
    return from_dlpack(name, py::reinterpret_borrow<py::capsule>(obj));
  if (!py::isinstance<py::array>(obj)) {
    throw error("tensor '" + name + "': expected a numpy array or a DLPack capsule");
  }
  const auto arr = py::reinterpret_borrow<py::array>(obj);
  const py::dtype dt = arr.dtype();
  const char kind = dt.kind();
  const auto size = static_cast<std::size_t>(dt.itemsize());
  const std::string dname = py::str(dt.attr("name"));
  io::array a;
  bool pairs = false;
  if (kind == 'f' && size == 8) {
    a.type = dtype::fp64;
  } else if (kind == 'f' && size == 4) {
    a.type = dtype::fp32;
  } else if (kind == 'f' && size == 2) {
    a.type = dtype::fp16;
  } else if ((kind == 'u' && size == 2) || (dname == "bfloat16" && size == 2)) {
    a.type = dtype::bf16;  // bf16 encodings, as pev's npy files hold them
  } else if (kind == 'i' && size == 4) {
    a.type = dtype::int32;
  } else if (kind == 'i' && size == 8) {
    a.type = dtype::int64;
  } else if (kind == 'c' && (size == 8 || size == 16)) {
    a.type = size == 8 ? dtype::fp32 : dtype::fp64;
    pairs = true;
  } else {
    throw error("tensor '" + name + "' has numpy dtype " + dname +
                "; pev reads float64, float32, float16, bfloat16 (or its uint16 encodings), "
                "int32, int64, complex64 and complex128");
  }
  if (!(arr.flags() & py::array::c_style) || dt.attr("byteorder").cast<std::string>() == ">") {
    throw error("tensor '" + name + "': expected a C-contiguous little-endian array");
  }
  for (py::ssize_t d = 0; d < arr.ndim(); ++d) a.shape.push_back(arr.shape(d));
  if (pairs) a.shape.push_back(2);
  const auto bytes = static_cast<std::size_t>(arr.nbytes());
  a.data.resize(bytes);
  if (bytes) std::memcpy(a.data.mutable_data(), arr.data(), bytes);
  return a;
}

py::array to_numpy(io::array a) {
  auto* owned = new io::array(std::move(a));
  py::capsule owner(owned, [](void* p) { delete static_cast<io::array*>(p); });
  std::vector<py::ssize_t> shape(owned->shape.begin(), owned->shape.end());
  // The npy descr of the dtype (bf16: its "<u2" encodings, as pev's npy files hold them). numpy
  // arrays are writable: a read-only view of a mapped dump becomes owned bytes first.
  return py::array(py::dtype(std::string(io::npy_descr(owned->type))), shape, {},
                   owned->data.mutable_data(), owner);
}

// ---- Long calls ---------------------------------------------------------------------------------

namespace {

int depth = 0;  // nested long calls (a callable that calls pev): changed with the GIL held
std::atomic<bool> stop{false};
std::atomic<std::int64_t> next_check{0};  // steady_clock nanoseconds
// The Python exception that stopped the work (PyErr_Fetch's triple; the GIL guards it).
PyObject *kept_type = nullptr, *kept_value = nullptr, *kept_trace = nullptr;

constexpr std::int64_t kCheckEvery = 50'000'000;  // ns

void keep_current_error() {
  if (kept_type) {
    PyErr_Clear();
    return;
  }
  PyErr_Fetch(&kept_type, &kept_value, &kept_trace);
}

// The interruption check (pev/core/interrupt.h): Python's signal handlers run here, on the main
// thread, with the GIL; a handler that raises (SIGINT's KeyboardInterrupt) stops the work.
bool check_signals() {
  if (stop.load()) return true;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  if (now < next_check.load(std::memory_order_relaxed)) return false;
  next_check.store(now + kCheckEvery, std::memory_order_relaxed);
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) {
    keep_current_error();
    stop.store(true);
    return true;
  }
  return false;
}

}  // namespace

long_call::long_call() {
  if (depth++ == 0) {
    stop.store(false);
    next_check.store(0);
    set_interrupt_check(&check_signals);
  }
}

long_call::~long_call() {
  if (--depth == 0) {
    set_interrupt_check(nullptr);
    stop.store(false);
    Py_CLEAR(kept_type);
    Py_CLEAR(kept_value);
    Py_CLEAR(kept_trace);
  }
}

void long_call::stop_with(py::error_already_set& e) {
  e.restore();
  keep_current_error();
  stop.store(true);
}

bool long_call::stopped() { return stop.load(); }

void long_call::raise_if_stopped(bool interrupted) {
  if (!stop.load() && !interrupted) return;
  // The stop flag stays set: an outer call (a callable that called pev) stops too.
  if (kept_type) {
    PyErr_Restore(kept_type, kept_value, kept_trace);
    kept_type = kept_value = kept_trace = nullptr;
  } else {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
  }
  throw py::error_already_set();
}

}  // namespace pev::python

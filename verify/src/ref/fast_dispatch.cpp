// The fast exact reference's choice of code (fast_dispatch.h) and its testing hooks
// (pev/ref/fast.h).

#include "fast_dispatch.h"

#include <atomic>
#include <cmath>

#include "fast_avx2.h"
#include "fast_round.h"
#include "pev/ref/fast.h"

namespace pev::ref::fast_detail {
namespace {

std::atomic<bool> g_force_portable{false};

bool cpu_has_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("fma");
  return has;
#elif defined(FP_FAST_FMA)
  return true;
#else
  return false;
#endif
}

std::atomic<bool> g_force_scalar{false};

}  // namespace

bool use_fma() { return cpu_has_fma() && !g_force_portable.load(std::memory_order_relaxed); }

// Whether the vector rows run: AVX2 and FMA, unless the scalar code is forced (either hook).
bool use_vector_rows() {
  return cpu_has_avx2() && use_fma() && !g_force_scalar.load(std::memory_order_relaxed);
}

void force_portable_arithmetic(bool on) { g_force_portable.store(on); }
void force_scalar_rows(bool on) { g_force_scalar.store(on); }
bool uses_vector_rows() { return use_vector_rows(); }
bool uses_fma() { return use_fma(); }
template <class T>
T round_double(double v) {
  return round_nearest<T>(v);
}
template double round_double<double>(double);
template float round_double<float>(double);
template half round_double<half>(double);
template bfloat16 round_double<bfloat16>(double);

}  // namespace pev::ref::fast_detail

#pragma once
// Which code the fast exact reference runs: hardware FMA or the portable arithmetic (dispatch),
// and the vector rows of fast_avx2.cpp or the scalar ones.

namespace pev::ref::fast_detail {

// The evaluation bodies are lambdas forced inline into run_fma / run_portable, so that the FMA
// instantiation is compiled for the FMA target (__builtin_fma becomes one instruction).
#if defined(__x86_64__) && defined(__GNUC__)
#define PEV_FAST_FMA_TARGET __attribute__((target("fma")))
#else
#define PEV_FAST_FMA_TARGET
#endif
#define PEV_FAST_INLINE __attribute__((always_inline))

/// Whether evaluations use hardware FMA (the CPU has it, and no test forced the portable code).
bool use_fma();

// Calls body.template operator()<true>() in a function compiled for FMA, or <false>().
template <class Body>
PEV_FAST_FMA_TARGET void run_fma(Body& body) {
  body.template operator()<true>();
}
template <class Body>
void run_portable(Body& body) {
  body.template operator()<false>();
}
template <class Body>
void dispatch(Body&& body) {
  if (use_fma()) {
    run_fma(body);
  } else {
    run_portable(body);
  }
}

/// Whether the vector rows run: AVX2 and FMA, unless the scalar code is forced (either hook).
bool use_vector_rows();

}  // namespace pev::ref::fast_detail

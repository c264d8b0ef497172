#pragma once
// Internals shared by the property bodies.

#include <rapidcheck.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "pev/impl/contract.h"
#include "pev/metric/error_model.h"
#include "pev/prop/gen.h"
#include "pev/prop/properties.h"
#include "pev/scalar/traits.h"

namespace pev::prop::detail {

template <class T>
double dbl(T v) {
  return scalar_traits<T>::to_double(v);
}

/// Calls f.template operator()<T>() for the C++ type of dtype t.
template <class F>
void dispatch(dtype t, F&& f) {
  visit_output_float(t, [&](auto tag) { f.template operator()<typename decltype(tag)::type>(); });
}

/// A generated spec of `family`-specific generator `g` that the subject accepts.
template <class S>
S accepted(const subject& s, rc::Gen<S> g) {
  return *rc::gen::suchThat(std::move(g),
                            [&s](const S& v) { return s.accepts(spec::encoding{v}); });
}

// Property bodies (rope.cpp, scaling.cpp, other.cpp).
void rope_inv_freq_exact(const subject&, dtype);
void rope_attention_factor_exact(const subject&, dtype);
void rope_table_exact(const subject&, dtype);
void rope_rotate_exact(const subject&, dtype);
void rope_norm(const subject&, dtype);
void rope_identity_at_zero(const subject&, dtype);
void rope_composition(const subject&, dtype);
void rope_inverse(const subject&, dtype);
void rope_passthrough(const subject&, dtype);
void rope_out_of_place(const subject&, dtype);
void rope_relative_shift(const subject&, dtype);
void rope_kv_cache(const subject&, dtype);
void rope_kv_cache_stateful(const subject&, dtype);
void mrope_table_exact(const subject&, dtype);
void mrope_rotate_exact(const subject&, dtype);
void mrope_sections_plain(const subject&, dtype);
void scaling_factor_one(const subject&, dtype);
void scaling_linear_stretch(const subject&, dtype);
void scaling_ntk_base(const subject&, dtype);
void scaling_yarn_bands(const subject&, dtype);
void scaling_llama3_bands(const subject&, dtype);
void scaling_dynamic_below(const subject&, dtype);
void scaling_longrope_select(const subject&, dtype);
void scaling_proportional_tail(const subject&, dtype);
void sinusoidal_pe_exact(const subject&, dtype);
void sinusoidal_linearity(const subject&, dtype);
void alibi_slopes_exact(const subject&, dtype);
void alibi_bias_exact(const subject&, dtype);
void alibi_shift_invariance(const subject&, dtype);
void t5_range(const subject&, dtype);
void t5_monotone(const subject&, dtype);
void t5_symmetry(const subject&, dtype);
void t5_exact(const subject&, dtype);

}  // namespace pev::prop::detail

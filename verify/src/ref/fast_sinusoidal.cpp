// The fast exact-recipe sinusoidal reference (pev/ref/fast.h): the scalar evaluation of
// fast_scalar.h, with the MPFR path where the rounding test cannot decide.

#include <vector>

#include "fast_bound.h"
#include "fast_dispatch.h"
#include "fast_round.h"
#include "fast_scalar.h"
#include "fast_tables.h"
#include "pev/ref/fast.h"

namespace pev::ref {

using namespace fast_detail;

fast_sinusoidal_reference::fast_sinusoidal_reference(const spec::sinusoidal& s)
    : spec_(s), base_bits_(precision_bits()), work_bits_(precision_bits() + kGuardBits) {
  spec::validate(spec::encoding{s});
  (void)consts();
  std::vector<real> w;
  {
    // sinusoidal_row evaluates the frequencies inside its own working-precision scope.
    const precision_scope scope(work_bits_);
    w = sinusoidal_frequencies(s);
  }
  const std::int64_t d = s.d_model;
  if (s.layout == spec::sinusoidal_layout::interleaved) {
    for (std::int64_t j = 0; j < d; j += 2) {
      freq_.push_back(prepare(w[j].backend().data(), 1.0, work_bits_));
      slots_.push_back({j, j + 1 < d ? j + 1 : -1});
    }
  } else {
    const std::int64_t h = d / 2;
    for (std::int64_t j = 0; j < h; ++j) {
      freq_.push_back(prepare(w[j].backend().data(), 1.0, work_bits_));
      slots_.push_back({j, j + h});
    }
    if (d % 2 != 0) zero_cols_.push_back(d - 1);
  }
  position_independent_bound(1.0, 0.0, work_bits_, e0_);
}

const std::vector<real>& fast_sinusoidal_reference::mpfr_row(std::int64_t p, fast_stats& st) const {
  if (!cached_p_ || *cached_p_ != p) {
    const precision_scope scope(base_bits_);
    cached_row_ = sinusoidal_row(spec_, p);
    cached_p_ = p;
    ++st.mpfr_rows;
  }
  return cached_row_;
}

template <class T>
void fast_sinusoidal_reference::pe(std::span<const std::int64_t> positions, std::span<T> out,
                                   fast_stats* stats) const {
  const std::size_t d = static_cast<std::size_t>(spec_.d_model);
  check_size(out.size(), positions.size() * d, "pe output");
  fast_stats st;
  const constants& K = consts();
  const T one = round_nearest<T>(1.0);
  const scale sc{{1.0, 0.0}, true, e0_};
  dispatch([&]<bool F>() PEV_FAST_INLINE {
    for (std::size_t r = 0; r < positions.size(); ++r) {
      const std::int64_t p = positions[r];
      const position P = split_position(p);
      T* row = out.data() + r * d;
      for (std::int64_t j : zero_cols_) {
        row[j] = signed_zero<T>(false);
        ++st.values;
      }
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        const frequency& f = freq_[i];
        const slot& sl = slots_[i];
        st.values += sl.cos_col >= 0 ? 2 : 1;
        if ((p == 0 && f.k == frequency::kind::regular) || f.k == frequency::kind::zero) {
          row[sl.sin_col] = signed_zero<T>(std::signbit(static_cast<double>(p) * f.t[0]));
          if (sl.cos_col >= 0) row[sl.cos_col] = one;
          continue;
        }
        bool ok_s = false, ok_c = sl.cos_col < 0;
        if (f.k == frequency::kind::regular) {
          sincos_round<F, T>(K, f, P, sc, &row[sl.sin_col],
                             sl.cos_col >= 0 ? &row[sl.cos_col] : nullptr, ok_s, ok_c, st);
        }
        if (!ok_s || !ok_c) [[unlikely]] {
          const auto& exact = mpfr_row(p, st);
          if (!ok_s) {
            row[sl.sin_col] = round_to<T>(exact[static_cast<std::size_t>(sl.sin_col)]);
            ++st.fallbacks;
          }
          if (!ok_c) {
            row[sl.cos_col] = round_to<T>(exact[static_cast<std::size_t>(sl.cos_col)]);
            ++st.fallbacks;
          }
        }
      }
    }
  });
  if (stats) *stats += st;
}

#define PEV_FAST_INSTANTIATE(T)                                                               \
  template void fast_sinusoidal_reference::pe<T>(std::span<const std::int64_t>, std::span<T>, \
                                                 fast_stats*) const;
PEV_FAST_INSTANTIATE(double)
PEV_FAST_INSTANTIATE(float)
PEV_FAST_INSTANTIATE(half)
PEV_FAST_INSTANTIATE(bfloat16)
#undef PEV_FAST_INSTANTIATE

}  // namespace pev::ref

#include "pev/compare/reference.h"

#include "pev/core/interrupt.h"
#include "pev/ref/relative.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"

namespace pev::compare {

// ---- RoPE -----------------------------------------------------------------------------------

rope_reference::rope_reference(const spec::rope& s, std::optional<std::int64_t> seq,
                               reference_path path)
    : fast_(s, seq), path_(path) {
  m_ = fast_.reference().attention_factor().convert_to<double>();
  if (!s.mrope_section.empty()) stream_of_pair_ = spec::mrope_streams(s);
}

template <class T>
void rope_reference::table_streams(std::span<const std::int64_t> positions, typed_values<T>& cos,
                                   typed_values<T>& sin, bool rounded_doubles) {
  // The 1-D rows of every stream's positions ([S, n, pairs]), then pair i from its stream.
  const auto S = static_cast<std::size_t>(spec().streams());
  const std::int64_t n = static_cast<std::int64_t>(positions.size() / S);
  typed_values<T> c, s;
  table<T>(positions, c, s, rounded_doubles);
  const std::vector<std::int64_t> map = spec::mrope_streams(spec());
  const std::size_t size = static_cast<std::size_t>(n) * map.size();
  for (auto* v : {&cos, &sin}) {
    v->rn.resize(size);
    v->exact.resize(size);
  }
  spec::select_streams<T>(map, n, c.rn, cos.rn);
  spec::select_streams<T>(map, n, s.rn, sin.rn);
  spec::select_streams<double>(map, n, c.exact, cos.exact);
  spec::select_streams<double>(map, n, s.exact, sin.exact);
}

template <class T>
void rope_reference::rotate_streams(std::span<const std::int64_t> stream_positions,
                                    std::span<const double> x, std::span<T> rn,
                                    std::span<double> exact) {
  const std::size_t D = x.size();
  const std::vector<std::int64_t> map = spec::mrope_streams(spec());
  const std::vector<std::int64_t> pair = spec::dim_pairs(spec());
  std::vector<T> r(D);
  std::vector<double> e(D);
  for (std::size_t k = 0; k < stream_positions.size(); ++k) {
    rotate<T>(stream_positions[k], x, r, e);
    for (std::size_t j = 0; j < D; ++j) {
      const std::int64_t i = pair[j];
      if ((i >= 0 ? static_cast<std::size_t>(map[static_cast<std::size_t>(i)]) : 0) == k) {
        rn[j] = r[j];
        exact[j] = e[j];
      }
    }
  }
}

template <class T>
void rope_reference::table(std::span<const std::int64_t> positions, typed_values<T>& cos,
                           typed_values<T>& sin, bool rounded_doubles) {
  interruption_point();  // between chunks of rows (pev/core/interrupt.h)
  table_on_worker<T>(positions, cos, sin, rounded_doubles);
}

template <class T>
void rope_reference::table_on_worker(std::span<const std::int64_t> positions, typed_values<T>& cos,
                                     typed_values<T>& sin, bool rounded_doubles) {
  const std::size_t P = static_cast<std::size_t>(pairs());
  const std::size_t n = positions.size() * P;
  cos.rn.resize(n);
  sin.rn.resize(n);
  cos.exact.resize(n);
  sin.exact.resize(n);
  if (path_ == reference_path::mpfr) {
    for (std::size_t r = 0; r < positions.size(); ++r) {
      const auto row = fast_.reference().row(positions[r]);
      for (std::size_t i = 0; i < P; ++i) {
        cos.rn[r * P + i] = round_to<T>(row[i].cos);
        sin.rn[r * P + i] = round_to<T>(row[i].sin);
        cos.exact[r * P + i] = row[i].cos.convert_to<double>();
        sin.exact[r * P + i] = row[i].sin.convert_to<double>();
      }
    }
    stats_.values += 2 * n;
    stats_.fallbacks += 2 * n;
    stats_.mpfr_rows += positions.size();
    return;
  }
  if (rounded_doubles) {
    fast_.table<T>(positions, cos.rn, sin.rn, &stats_);
    if constexpr (std::is_same_v<T, double>) {
      cos.exact = cos.rn;
      sin.exact = sin.rn;
    } else {
      fast_.table<double>(positions, cos.exact, sin.exact, &stats_);
    }
    return;
  }
  fast_.table_values<T>(positions, cos.rn, sin.rn, cos.exact, sin.exact, &stats_);
}

void rope_reference::table_all(std::span<const std::int64_t> positions, rounded_values& cos,
                               rounded_values& sin) {
  interruption_point();  // between chunks of rows (pev/core/interrupt.h)
  const std::size_t P = static_cast<std::size_t>(pairs());
  const std::size_t n = positions.size() * P;
  auto fill = [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto& c = cos.get<T>();
    auto& s = sin.get<T>();
    c.resize(n);
    s.resize(n);
    if (path_ == reference_path::fast) {
      fast_.table<T>(positions, c, s, &stats_);
      return;
    }
    for (std::size_t k = 0; k < positions.size(); ++k) {
      const auto row = fast_.reference().row(positions[k]);
      for (std::size_t i = 0; i < P; ++i) {
        c[k * P + i] = round_to<T>(row[i].cos);
        s[k * P + i] = round_to<T>(row[i].sin);
      }
    }
    stats_.values += 2 * n;
    stats_.fallbacks += 2 * n;
  };
  fill(std::type_identity<double>{});
  fill(std::type_identity<float>{});
  fill(std::type_identity<half>{});
  fill(std::type_identity<bfloat16>{});
}

double rope_reference::exact_value(std::int64_t p, std::int64_t i, bool sin) const {
  const auto row = fast_.reference().row(p);
  const auto& cs = row[static_cast<std::size_t>(i)];
  return (sin ? cs.sin : cs.cos).convert_to<double>();
}

template <class T>
void rope_reference::rotate(std::int64_t p, std::span<const double> x, std::span<T> rn,
                            std::span<double> exact) {
  if (path_ == reference_path::mpfr) {
    const std::vector<real> xr(x.begin(), x.end());
    const std::vector<real> yr = fast_.reference().rotate(p, xr);
    for (std::size_t u = 0; u < yr.size(); ++u) {
      rn[u] = round_to<T>(yr[u]);
      exact[u] = yr[u].convert_to<double>();
    }
    stats_.values += yr.size();
    stats_.fallbacks += yr.size();
    ++stats_.mpfr_rows;
    return;
  }
  fast_.rotate_with_double<T>(p, x, rn, exact, &stats_);
}

// ---- Sinusoidal ---------------------------------------------------------------------------------

sinusoidal_reference::sinusoidal_reference(const spec::sinusoidal& s, reference_path path)
    : s_(s), fast_(s), path_(path) {}

template <class T>
void sinusoidal_reference::pe(std::span<const std::int64_t> positions, typed_values<T>& out) {
  interruption_point();  // between chunks of rows (pev/core/interrupt.h)
  const auto d = static_cast<std::size_t>(s_.d_model);
  out.rn.resize(positions.size() * d);
  out.exact.resize(out.rn.size());
  if (path_ == reference_path::mpfr) {
    for (std::size_t k = 0; k < positions.size(); ++k) {
      const std::vector<real> row = ref::sinusoidal_row(s_, positions[k]);
      for (std::size_t j = 0; j < d; ++j) {
        out.rn[k * d + j] = round_to<T>(row[j]);
        out.exact[k * d + j] = row[j].convert_to<double>();
      }
    }
    stats_.values += out.rn.size();
    stats_.fallbacks += out.rn.size();
    stats_.mpfr_rows += positions.size();
    return;
  }
  fast_.pe<T>(positions, out.rn, &stats_);
  if constexpr (std::is_same_v<T, double>) {
    out.exact = out.rn;
  } else {
    fast_.pe<double>(positions, out.exact, &stats_);
  }
}

void sinusoidal_reference::pe_all(std::span<const std::int64_t> positions, rounded_values& out) {
  interruption_point();  // between chunks of rows (pev/core/interrupt.h)
  const auto d = static_cast<std::size_t>(s_.d_model);
  auto fill = [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto& v = out.get<T>();
    v.resize(positions.size() * d);
    if (path_ == reference_path::fast) {
      fast_.pe<T>(positions, v, &stats_);
      return;
    }
    for (std::size_t k = 0; k < positions.size(); ++k) {
      const auto row = ref::sinusoidal_row(s_, positions[k]);
      for (std::size_t j = 0; j < d; ++j) v[k * d + j] = round_to<T>(row[j]);
    }
    stats_.values += v.size();
    stats_.fallbacks += v.size();
  };
  fill(std::type_identity<double>{});
  fill(std::type_identity<float>{});
  fill(std::type_identity<half>{});
  fill(std::type_identity<bfloat16>{});
}

// ---- ALiBi --------------------------------------------------------------------------------------

alibi_reference::alibi_reference(const spec::alibi& s) : slopes_(ref::alibi_slopes(s)) {}

real alibi_reference::bias(std::int64_t h, std::int64_t q, std::int64_t k) const {
  return ref::alibi_bias(slopes_[static_cast<std::size_t>(h)], q, k);
}

#define PEV_COMPARE_INSTANTIATE(T)                                                                \
  template void rope_reference::table<T>(std::span<const std::int64_t>, typed_values<T>&,         \
                                         typed_values<T>&, bool);                                 \
  template void rope_reference::table_on_worker<T>(std::span<const std::int64_t>,                 \
                                                   typed_values<T>&, typed_values<T>&, bool);     \
  template void rope_reference::rotate<T>(std::int64_t, std::span<const double>, std::span<T>,    \
                                          std::span<double>);                                     \
  template void rope_reference::table_streams<T>(std::span<const std::int64_t>, typed_values<T>&, \
                                                 typed_values<T>&, bool);                         \
  template void rope_reference::rotate_streams<T>(                                                \
      std::span<const std::int64_t>, std::span<const double>, std::span<T>, std::span<double>);   \
  template void sinusoidal_reference::pe<T>(std::span<const std::int64_t>, typed_values<T>&);
PEV_COMPARE_INSTANTIATE(double)
PEV_COMPARE_INSTANTIATE(float)
PEV_COMPARE_INSTANTIATE(half)
PEV_COMPARE_INSTANTIATE(bfloat16)
#undef PEV_COMPARE_INSTANTIATE

}  // namespace pev::compare

// The diagnosis (diagnosis.h): known mistakes replayed on the dump's inputs and compared with
// the data in units of the hf recipe's bound, then the certificate settled.

#include "diagnosis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "pev/impl/mutants.h"
#include "pev/kernel/apply.h"
#include "pev/metric/error_model.h"

namespace pev::certify::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kChunkRows = 2048;

/// Calls f(mutant, evidence) for every mistake of `family` that applies to `e` and can produce
/// `what` in dtype `t`.
template <class F>
void for_each_mistake(const spec::encoding& e, const char* family, impl::output what, dtype t,
                      evidence_map& ev, F&& f) {
  for (const impl::mutant_info& info : impl::mutant_catalogue()) {
    if (std::string_view(info.family) != family || !info.applies(e)) continue;
    const auto m = impl::make_mutant(info.id, e);
    if (!m->supports(what, t)) continue;
    evidence& x = ev[info.id];
    x.description = info.description;
    f(*m, x);
  }
}

template <class T>
void rope_table_as(context& k, const spec::rope& s, std::optional<std::int64_t> seq,
                   const impl::rope_contract& hf, const table_source& t,
                   const std::vector<std::int64_t>& pos, evidence_map& ev) {
  constexpr format out = format_of<T>();
  const std::int64_t pairs = s.pairs();
  std::vector<T> mc, ms;
  for_each_mistake(
      k.e, "rope", impl::output::rope_table, dtype_of<T>(), ev,
      [&](const impl::implementation& m, evidence& x) {
        for (std::size_t r0 = 0; r0 < pos.size(); r0 += kChunkRows) {
          const std::size_t n = std::min(kChunkRows, pos.size() - r0);
          const std::span<const std::int64_t> chunk(pos.data() + r0, n);
          mc.resize(n * static_cast<std::size_t>(pairs));
          ms.resize(mc.size());
          m.rope_table(chunk, seq, std::span<T>(mc), std::span<T>(ms));
          for (std::size_t rr = 0; rr < n; ++rr) {
            const auto r = static_cast<std::int64_t>(r0 + rr);
            for (std::int64_t j = 0; j < t.width; ++j) {
              const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
              const std::size_t el =
                  rr * static_cast<std::size_t>(pairs) + static_cast<std::size_t>(i);
              for (int which = 0; which < 2; ++which) {
                const plane& pl = which == 0 ? t.cos : t.sin;
                const double g = scalar_traits<T>::to_double(element<T>(*pl.a, pl.at(r, j)));
                const double mv = scalar_traits<T>::to_double(which == 0 ? mc[el] : ms[el]);
                // The bound at the larger magnitude of the two values compared (no reference
                // needed: the bound depends on the exact value only through its magnitude).
                const double b =
                    hf.table_bound(pos[r0 + rr], i, std::max(std::fabs(g), std::fabs(mv)), out);
                x.add(rho_against(g, mv, b));
              }
            }
          }
        }
      });
}

template <class T>
void rotation_as(context& k, const spec::rope& s, std::optional<std::int64_t> seq,
                 const impl::rope_contract& hf, const qk_source& q,
                 const std::vector<std::int64_t>& pos, evidence_map& ev) {
  constexpr format out = format_of<T>();
  const std::size_t n = static_cast<std::size_t>(q.tokens * q.heads * q.dim);
  std::vector<T> in(n), got(n);
  for (std::size_t u = 0; u < n; ++u) in[u] = element<T>(*q.in, u);
  const std::vector<std::int64_t> pair = spec::dim_pairs(s);
  std::vector<double> x(static_cast<std::size_t>(q.dim));
  for_each_mistake(
      k.e, "rope", impl::output::rope_rotate, dtype_of<T>(), ev,
      [&](const impl::implementation& m, evidence& ex) {
        m.rope_rotate(pos, seq, kernel::heads_view<const T>{in, q.tokens, q.heads, q.dim},
                      kernel::heads_view<T>{got, q.tokens, q.heads, q.dim});
        for (std::int64_t t = 0; t < q.tokens; ++t) {
          const std::int64_t p = pos[static_cast<std::size_t>(t)];
          for (std::int64_t h = 0; h < q.heads; ++h) {
            const auto base = static_cast<std::size_t>((t * q.heads + h) * q.dim);
            for (std::int64_t j = 0; j < q.dim; ++j) {
              x[static_cast<std::size_t>(j)] =
                  scalar_traits<T>::to_double(in[base + std::size_t(j)]);
            }
            for (std::int64_t j = 0; j < q.dim; ++j) {
              const auto u = static_cast<std::size_t>(j);
              // Pass-through dims and pairs of the mistaken kernel: the bound of a rotated
              // element of this pair's magnitude (a mistaken pairing moves values between dims).
              const std::int64_t i = std::max<std::int64_t>(pair[u], 0);
              const auto [a, c] = spec::pair_dims(s, i);
              const double x0 = pair[u] >= 0 ? x[static_cast<std::size_t>(a)] : 0;
              const double x1 = pair[u] >= 0 ? x[static_cast<std::size_t>(c)] : 0;
              const double g = scalar_traits<T>::to_double(element<T>(*q.out, base + u));
              const double mv = scalar_traits<T>::to_double(got[base + u]);
              const double b = hf.rotation_bound_at(hf.angle_error(p, i), x0, x1,
                                                    std::max(std::fabs(g), std::fabs(mv)), out);
              ex.add(rho_against(g, mv, b));
            }
          }
        }
      });
}

template <class T>
void sinusoidal_as(context& k, const spec::sinusoidal& s, const io::array& a,
                   const std::vector<std::int64_t>& pos, evidence_map& ev) {
  constexpr format out = format_of<T>();
  const impl::sinusoidal_contract hf(s, kernel::strategy::hf);
  const auto dm = static_cast<std::size_t>(s.d_model);
  std::vector<T> mv(dm * pos.size());
  for_each_mistake(k.e, "sinusoidal", impl::output::sinusoidal_pe, dtype_of<T>(), ev,
                   [&](const impl::implementation& m, evidence& x) {
                     m.sinusoidal_pe(pos, std::span<T>(mv));
                     for (std::size_t e = 0; e < mv.size(); ++e) {
                       const double g = scalar_traits<T>::to_double(element<T>(a, e));
                       const double v = scalar_traits<T>::to_double(mv[e]);
                       const auto col = static_cast<std::int64_t>(e % dm);
                       const double b =
                           hf.bound(pos[e / dm], col, std::max(std::fabs(g), std::fabs(v)), out);
                       x.add(rho_against(g, v, b));
                     }
                   });
}

template <class T>
void alibi_as(context& k, const spec::alibi& s, const io::array* slopes, const io::array* bias,
              const std::vector<std::int64_t>& qs, const std::vector<std::int64_t>& ks,
              evidence_map& ev) {
  constexpr format out = format_of<T>();
  const impl::alibi_contract hf(s, kernel::strategy::hf);
  const std::int64_t H = s.num_heads;
  auto mag = [](double g, double v) { return std::max(std::fabs(g), std::fabs(v)); };
  if (slopes) {
    for_each_mistake(k.e, "alibi", impl::output::alibi_slopes, dtype_of<T>(), ev,
                     [&](const impl::implementation& m, evidence& x) {
                       std::vector<T> mv(static_cast<std::size_t>(H));
                       m.alibi_slopes(std::span<T>(mv));
                       for (std::int64_t h = 0; h < H; ++h) {
                         const auto u = static_cast<std::size_t>(h);
                         const double g = scalar_traits<T>::to_double(element<T>(*slopes, u));
                         const double v = scalar_traits<T>::to_double(mv[u]);
                         x.add(rho_against(g, v, hf.slope_bound(h, mag(g, v), out)));
                       }
                     });
  }
  if (bias) {
    for_each_mistake(k.e, "alibi", impl::output::alibi_bias, dtype_of<T>(), ev,
                     [&](const impl::implementation& m, evidence& x) {
                       std::vector<T> mv(static_cast<std::size_t>(H) * qs.size() * ks.size());
                       m.alibi_bias(qs, ks, std::span<T>(mv));
                       std::size_t e = 0;
                       for (std::int64_t h = 0; h < H; ++h) {
                         for (std::int64_t qi : qs) {
                           for (std::int64_t kj : ks) {
                             const double g = scalar_traits<T>::to_double(element<T>(*bias, e));
                             const double v = scalar_traits<T>::to_double(mv[e++]);
                             x.add(rho_against(g, v, hf.bias_bound(h, kj - qi, mag(g, v), out)));
                           }
                         }
                       }
                     });
  }
}

}  // namespace

void evidence::add(double rho) {
  max_rho = std::max(max_rho, rho);
  sum2 += std::isfinite(rho) ? rho * rho : 1e300;
  ++count;
}

double rho_against(double g, double mv, double b) {
  if (!(std::isfinite(g) && std::isfinite(mv))) {
    return (std::isnan(g) && std::isnan(mv)) || g == mv ? 0.0 : kInf;
  }
  if (!(b > 0)) return g == mv ? 0.0 : kInf;
  return std::fabs(g - mv) / b;
}

void add_explanations(const evidence_map& ev, certificate& cert) {
  report::certification& z = *cert.certification;
  if (!z.why) z.why.emplace();
  for (const auto& [id, x] : ev) {
    const double rms = x.count ? std::sqrt(x.sum2 / static_cast<double>(x.count)) : 0;
    z.why->explanations.push_back({id, x.description, x.max_rho, rms, x.max_rho <= kExplainRho});
  }
}

void diagnose_rope_table(context& k, const spec::rope& s, std::optional<std::int64_t> seq,
                         const impl::rope_contract& hf, const table_source& t,
                         const std::vector<std::int64_t>& pos, evidence_map& ev) {
  visit_float(t.cos.a->type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, double>) rope_table_as<T>(k, s, seq, hf, t, pos, ev);
  });
}

void diagnose_rotation(context& k, const spec::rope& s, std::optional<std::int64_t> seq,
                       const impl::rope_contract& hf, const qk_source& q,
                       const std::vector<std::int64_t>& pos, evidence_map& ev) {
  visit_float(q.in->type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, double>) rotation_as<T>(k, s, seq, hf, q, pos, ev);
  });
}

void diagnose_sinusoidal(context& k, const spec::sinusoidal& s, const io::array& a,
                         const std::vector<std::int64_t>& pos, evidence_map& ev) {
  visit_float(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, double>) sinusoidal_as<T>(k, s, a, pos, ev);
  });
}

void diagnose_alibi(context& k, const spec::alibi& s, const io::array* slopes,
                    const io::array* bias, const std::vector<std::int64_t>& qs,
                    const std::vector<std::int64_t>& ks, evidence_map& ev) {
  visit_float((slopes ? slopes : bias)->type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, double>) alibi_as<T>(k, s, slopes, bias, qs, ks, ev);
  });
}

void diagnose_t5(context& k, const std::vector<std::int64_t>& got,
                 const std::vector<std::int64_t>& distances, evidence_map& ev) {
  for_each_mistake(k.e, "t5", impl::output::t5_buckets, dtype::fp32, ev,
                   [&](const impl::implementation& m, evidence& x) {
                     std::vector<std::int64_t> mv(distances.size());
                     m.t5_buckets(distances, mv);
                     // Integer ids: a mistake explains the data when every id agrees.
                     for (std::size_t e = 0; e < got.size(); ++e) {
                       x.add(got[e] == mv[e] ? 0.0 : kInf);
                     }
                   });
}

void finish(certificate& cert) {
  grade_and_claim(cert);
  report::certification& z = *cert.certification;
  if (!z.why) return;
  auto& x = z.why->explanations;
  std::stable_sort(x.begin(), x.end(), [](const explanation& a, const explanation& b) {
    return a.max_rho != b.max_rho ? a.max_rho < b.max_rho : a.rms_rho < b.rms_rho;
  });
  z.why->named.reset();
  if (cert.exit_code() == 0) {
    z.why.reset();  // certified: nothing to explain
  } else if (!x.empty() && x.front().explains) {
    z.why->named = x.front().mutant;
  }
}

}  // namespace pev::certify::detail

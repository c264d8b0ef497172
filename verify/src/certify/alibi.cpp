// Certification of ALiBi slopes and biases: every value against the exact reference (a bias is a
// slope times an integer), with the recipes' bounds of the ALiBi contracts.

#include <fmt/format.h>

#include <cmath>

#include "detail.h"
#include "diagnosis.h"
#include "pev/core/error.h"
#include "pev/impl/contract.h"
#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"
#include "pev/scalar/round.h"

namespace pev::certify::detail {

namespace {

/// The bounds of an ALiBi value in bound_names(false)'s order: 1 ulp, drift-free (2 ulps of the
/// value itself), then the recipes that have an ALiBi pipeline (hf, and hf with a 16-bit store).
struct alibi_bounds {
  impl::alibi_contract hf, v16, vbf;
  alibi_bounds(const spec::alibi& s, const metric::libm& lib)
      : hf(s, kernel::strategy::hf, lib),
        v16(s, kernel::strategy::table_fp16, lib),
        vbf(s, kernel::strategy::table_bf16, lib) {}
  template <class Bound>
  void fill(Bound&& bound, double y, format out, std::span<double> b) const {
    b[0] = metric::ulp_at(std::fabs(y), out);
    b[1] = 2 * metric::ulp_at(std::fabs(y), out);
    b[2] = bound(hf);
    b[3] = bound(v16);
    b[4] = bound(vbf);
  }
};

template <class T>
void alibi_checks(const spec::alibi& s, context& k, const io::array* slopes_t,
                  const io::array* bias_t, const std::vector<std::int64_t>& qs,
                  const std::vector<std::int64_t>& ks) {
  constexpr format out = format_of<T>();
  const compare::alibi_reference ref(s);
  const alibi_bounds bounds(s, *k.o.libm);
  const std::int64_t H = s.num_heads;
  std::vector<double> b(bound_names(false).size());
  auto value = [&](std::int64_t p, std::int64_t i, T got, const real& exact) {
    const double y = exact.convert_to<double>();
    return compare::value{p,
                          i,
                          scalar_traits<T>::to_double(got),
                          y,
                          metric::ulp_distance(got, round_to<T>(exact)),
                          metric::ulp_at(std::fabs(y), out)};
  };
  if (slopes_t) {
    compare::figures f(figure_options(k.o, 2, H, false, &k.mismatches));
    for (std::int64_t h = 0; h < H; ++h) {
      const real& exact = ref.slopes()[static_cast<std::size_t>(h)];
      const compare::value v =
          value(0, h, element<T>(*slopes_t, static_cast<std::size_t>(h)), exact);
      bounds.fill([&](const impl::alibi_contract& c) { return c.slope_bound(h, v.exact, out); },
                  v.exact, out, b);
      f.add(v, "slopes", b);
    }
    k.cert.checks.push_back(make_check("slopes", "tensor 'slopes'", dtype_of<T>(), f, k.o));
  }
  if (bias_t) {
    std::int64_t top = 0;
    for (std::int64_t q : qs) top = std::max(top, q);
    compare::figures f(figure_options(k.o, top + 1, H, false, &k.mismatches));
    std::size_t e = 0;
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t qi : qs) {
        for (std::int64_t kj : ks) {
          const compare::value v = value(qi, h, element<T>(*bias_t, e++), ref.bias(h, qi, kj));
          bounds.fill(
              [&](const impl::alibi_contract& c) { return c.bias_bound(h, kj - qi, v.exact, out); },
              v.exact, out, b);
          f.add(v, "bias", b);
        }
      }
    }
    k.cert.checks.push_back(
        make_check("bias", fmt::format("tensor 'bias' {}", io::shape_string(bias_t->shape)),
                   dtype_of<T>(), f, k.o));
  }
}

}  // namespace

void certify_alibi(const spec::alibi& s, context& k) {
  const dump& d = k.d;
  const io::array* slopes = d.find("slopes");
  const io::array* bias = d.find("bias");
  if (!slopes && !bias) {
    throw error(
        fmt::format("no ALiBi tensor in the dump (expected 'slopes' [{}] and/or 'bias' [{}, Q, "
                    "K]); it holds {}",
                    s.num_heads, s.num_heads, tensor_list(d)));
  }
  if (slopes && bias && slopes->type != bias->type) {
    throw error("tensors 'slopes' and 'bias' have different dtypes");
  }
  const std::int64_t H = s.num_heads;
  if (slopes) {
    const auto sh = squeezed(slopes->shape);
    if (sh.size() != 1 || sh[0] != H) {
      throw error(fmt::format("tensor 'slopes' has shape {}, expected [{}] (num_heads)",
                              io::shape_string(slopes->shape), H));
    }
  }
  std::vector<std::int64_t> qs, ks;
  if (bias) {
    const auto sh = squeezed(bias->shape);
    if (sh.size() != 3 || sh[0] != H) {
      throw error(
          fmt::format("tensor 'bias' has shape {}, expected [{}, Q, K] (heads, queries, keys)",
                      io::shape_string(bias->shape), H));
    }
    qs = index_positions(d, "queries", sh[1]);
    ks = index_positions(d, "keys", sh[2]);
  }
  k.c().what = std::string("alibi ") + (bias ? "bias" : "slopes");
  // ALiBi's checks are small and run whole in shard 0 (docs/design.md §9.3).
  if (!whole_checks(k.o)) return grade_and_claim(k.cert);
  visit_tensor(*(slopes ? slopes : bias), "the ALiBi tensors", [&](auto tag) {
    alibi_checks<typename decltype(tag)::type>(s, k, slopes, bias, qs, ks);
  });
  grade_and_claim(k.cert);
  if (!k.o.diagnose || k.cert.exit_code() != 1) return;
  evidence_map ev;
  diagnose_alibi(k, s, slopes, bias, qs, ks, ev);
  add_explanations(ev, k.cert);
}

}  // namespace pev::certify::detail

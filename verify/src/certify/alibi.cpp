// Certification of ALiBi slopes and biases: every value against the exact reference (a bias is a
// slope times an integer), with the recipes' bounds of the ALiBi contracts.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>

#include "detail.h"
#include "diagnosis.h"
#include "pev/core/error.h"
#include "pev/impl/contract.h"
#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"
#include "pev/scalar/round.h"

namespace pev::certify::detail {

namespace {

/// An ALiBi value's bounds by name, of its head h, its key − query distance (none: a slope) and
/// its exact value y: one ulp and drift-free (2 ulps of the value itself), then the recipes that
/// have an ALiBi pipeline (hf, and hf with a 16-bit store: impl::alibi_contract).
using alibi_bounds = compare::bound_set<std::int64_t, std::optional<std::int64_t>, double>;

template <class T>
alibi_bounds alibi_bounds_of(const impl::alibi_contract& hf, const impl::alibi_contract& v16,
                             const impl::alibi_contract& vbf) {
  const auto recipe = [](const impl::alibi_contract& c) {
    return [&c](std::int64_t h, std::optional<std::int64_t> distance, double y) {
      return distance ? c.bias_bound(h, *distance, y, format_of<T>())
                      : c.slope_bound(h, y, format_of<T>());
    };
  };
  return ladder_bounds<std::int64_t, std::optional<std::int64_t>, double>(
      false, true,
      {{"exact", [](std::int64_t, std::optional<std::int64_t>,
                    double y) { return metric::ulp_at(std::fabs(y), format_of<T>()); }},
       {"drift-free", [](std::int64_t, std::optional<std::int64_t>,
                         double y) { return 2 * metric::ulp_at(std::fabs(y), format_of<T>()); }},
       {"hf", recipe(hf)},
       {"vllm-fp16", recipe(v16)},
       {"vllm-bf16", recipe(vbf)}},
      "alibi");
}

template <class T>
void alibi_checks(const spec::alibi& s, context& k, const io::array* slopes_t,
                  const io::array* bias_t, const std::vector<std::int64_t>& qs,
                  const std::vector<std::int64_t>& ks) {
  const compare::alibi_reference ref(s);
  const metric::libm& lib = contract_libm(k.o);
  const impl::alibi_contract hf(s, kernel::strategy::hf, lib),
      v16(s, kernel::strategy::table_fp16, lib), vbf(s, kernel::strategy::table_bf16, lib);
  const alibi_bounds bounds = alibi_bounds_of<T>(hf, v16, vbf);
  const std::int64_t H = s.num_heads;
  std::vector<double> b(bounds.size());
  auto value = [&](std::int64_t p, std::int64_t i, T got, const real& exact) {
    return compare::value_of<T>(p, i, got, round_to<T>(exact), exact.convert_to<double>());
  };
  if (slopes_t) {
    compare::figures f(figure_options(k.o, 2, H, false, &k.mismatches));
    for (std::int64_t h = 0; h < H; ++h) {
      const real& exact = ref.slopes()[static_cast<std::size_t>(h)];
      const compare::value v =
          value(0, h, element<T>(*slopes_t, static_cast<std::size_t>(h)), exact);
      bounds.fill(b, h, std::nullopt, v.exact);
      f.add(v, "slopes", b);
    }
    k.cert.checks.push_back(make_check("slopes", "tensor 'slopes'", dtype_of<T>(), f, k.o));
  }
  if (bias_t) {
    std::int64_t top = 0;
    for (std::int64_t q : qs) top = std::max(top, q);
    compare::figures f(figure_options(k.o, layout_end(top), H, false, &k.mismatches));
    std::size_t e = 0;
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t qi : qs) {
        for (std::int64_t kj : ks) {
          const compare::value v = value(qi, h, element<T>(*bias_t, e++), ref.bias(h, qi, kj));
          bounds.fill(b, h, kj - qi, v.exact);
          f.add(v, "bias", b);
        }
      }
    }
    k.cert.checks.push_back(
        make_check("bias", fmt::format("tensor 'bias' {}", io::shape_string(bias_t->shape)),
                   dtype_of<T>(), f, k.o));
  }
}

/// The slopes of the heads beyond the largest power of two P < H, as powers of 2^(−b/2P): where
/// they are 1 + step·k for a step other than the rule's 2 (1, 3, 5, …), the sentence naming the
/// step the data implies; else empty. Read from the slopes, else from the bias's first query
/// (slope = bias / (key − query) at its first other key).
std::string extra_slopes_step(const spec::alibi& s, const io::array* slopes, const io::array* bias,
                              const std::vector<std::int64_t>& qs,
                              const std::vector<std::int64_t>& ks) {
  const std::int64_t H = s.num_heads;
  const auto P = static_cast<std::int64_t>(std::bit_floor(static_cast<std::uint64_t>(H)));
  if (P == H || !(s.max_bias > 0)) return {};
  std::vector<double> m(static_cast<std::size_t>(H));
  if (slopes) {
    const std::vector<double> v = slopes->to_doubles();
    std::copy_n(v.begin(), m.size(), m.begin());
  } else {
    std::size_t j = 0;
    while (j < ks.size() && ks[j] == qs.front()) ++j;
    if (j == ks.size()) return {};
    const std::vector<double> v = bias->to_doubles();
    for (std::size_t h = 0; h < m.size(); ++h) {
      m[h] = v[h * qs.size() * ks.size() + j] / static_cast<double>(ks[j] - qs.front());
    }
  }
  // The powers, to the nearest integer (a 16-bit slope holds its power within 0.05 for P ≤ 64).
  std::vector<std::int64_t> power;
  for (std::int64_t h = P; h < H; ++h) {
    const double e =
        -std::log2(m[static_cast<std::size_t>(h)]) * 2.0 * static_cast<double>(P) / s.max_bias;
    if (!std::isfinite(e) || std::fabs(e - std::nearbyint(e)) > 0.05) return {};
    power.push_back(static_cast<std::int64_t>(std::nearbyint(e)));
  }
  if (power.size() < 2 || power.front() != 1) return {};
  const std::int64_t step = power[1] - power[0];
  for (std::size_t i = 1; i < power.size(); ++i) {
    if (power[i] - power[i - 1] != step) return {};
  }
  if (step == 2) return {};
  return fmt::format(
      "the slopes of heads {}…{} are powers {} of 2^(−{:g}/{}): step {} (the rule takes every "
      "other power, 1, 3, 5, …: step 2)",
      P, H - 1, fmt::join(power, ", "), s.max_bias, 2 * P, step);
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
  const std::string step = extra_slopes_step(s, slopes, bias, qs, ks);
  if (!step.empty()) k.c().why->findings.push_back(step);
}

}  // namespace pev::certify::detail

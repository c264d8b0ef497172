// Certification of sinusoidal PE tables: every value against the exact reference, with the
// recipes' bounds of the sinusoidal contracts (hf; table-fp16/bf16 for a 16-bit cache).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "detail.h"
#include "diagnosis.h"
#include "pev/core/error.h"
#include "pev/impl/contract.h"
#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"

namespace pev::certify::detail {

namespace {

constexpr std::size_t kChunkRows = 2048;

template <class T>
void pe_check(const spec::sinusoidal& s, context& k, const io::array& a, const std::string& name,
              const std::vector<std::int64_t>& pos) {
  constexpr format out = format_of<T>();
  const auto dm = static_cast<std::size_t>(s.d_model);
  compare::sinusoidal_reference ref(s, k.path());
  using kernel::strategy;
  const metric::libm& lib = contract_libm(k.o);
  const impl::sinusoidal_contract hf(s, strategy::hf, lib), v16(s, strategy::table_fp16, lib),
      vbf(s, strategy::table_bf16, lib);
  compare::figures f(figure_options(k.o, layout_end(*std::max_element(pos.begin(), pos.end())),
                                    s.d_model, false, &k.mismatches));
  // A value's bounds by name, of its position p, column c and exact magnitude ay: one ulp,
  // drift-free (2 ulps of 1, the largest magnitude), and the recipes' contracts.
  const double drift = 2 * metric::ulp_at(1.0, out);
  const auto recipe = [&](const impl::sinusoidal_contract& r) {
    return [&r](std::int64_t p, std::int64_t c, double ay) {
      return r.bound(p, c, ay, format_of<T>());
    };
  };
  const auto bounds = ladder_bounds<std::int64_t, std::int64_t, double>(
      false, true,
      {{"exact",
        [](std::int64_t, std::int64_t, double ay) { return metric::ulp_at(ay, format_of<T>()); }},
       {"drift-free", [drift](std::int64_t, std::int64_t, double) { return drift; }},
       {"hf", recipe(hf)},
       {"vllm-fp16", recipe(v16)},
       {"vllm-bf16", recipe(vbf)}},
      "sinusoidal");
  std::vector<double> b(bounds.size());
  const double scale_ulp = metric::ulp_at(1.0, out);
  compare::typed_values<T> rv;
  const auto [first_row, end_row] = shard_rows(pos.size(), k.o);  // --shard: this shard's rows
  for (std::size_t r0 = first_row; r0 < end_row; r0 += kChunkRows) {
    const std::size_t n = std::min(kChunkRows, end_row - r0);
    const std::span<const std::int64_t> chunk(pos.data() + r0, n);
    ref.pe<T>(chunk, rv);
    for (std::size_t rr = 0; rr < n; ++rr) {
      const std::int64_t p = chunk[rr];
      f.add_position(p);
      for (std::size_t col = 0; col < dm; ++col) {
        const std::size_t e = rr * dm + col;
        const T got = element<T>(a, r0 * dm + e);
        const double y = rv.exact[e];
        const auto c = static_cast<std::int64_t>(col);
        bounds.fill(b, p, c, std::fabs(y));
        f.add(compare::value_of<T>(p, c, got, rv.rn[e], y, 1.0, scale_ulp), "pe", b);
      }
    }
  }
  k.count(ref.stats());
  check c = make_check("pe", fmt::format("tensor '{}' {}", name, io::shape_string(a.shape)),
                       dtype_of<T>(), f, k.o);
  record_rows(c, first_row, end_row, pos.size(), dm, arena_threads(k.o),
              [&a, dm](std::size_t r, std::span<std::uint64_t> bits) {
                for (std::size_t col = 0; col < dm; ++col) {
                  bits[col] = static_cast<std::uint64_t>(
                      scalar_traits<T>::to_bits(element<T>(a, r * dm + col)));
                }
              });
  k.cert.checks.push_back(std::move(c));
}

}  // namespace

void certify_sinusoidal(const spec::sinusoidal& s, context& k) {
  const dump& d = k.d;
  std::string name;
  const io::array* a = find_any(d, {"pe", "PE", "pos_embedding", "weight"}, &name);
  if (!a && d.tensors.size() - (d.find("positions") ? 1 : 0) == 1) {
    for (const auto& [n, t] : d.tensors) {
      if (n != "positions") {
        a = &t;
        name = n;
      }
    }
  }
  if (!a) {
    throw error(
        fmt::format("no sinusoidal PE table in the dump (expected a tensor 'pe' [P, {}]); "
                    "it holds {}",
                    s.d_model, tensor_list(d)));
  }
  const auto sh = squeezed(a->shape);
  if (sh.size() != 2 || sh[1] != s.d_model) {
    throw error(fmt::format("tensor '{}' has shape {}, expected [P, {}] (d_model)", name,
                            io::shape_string(a->shape), s.d_model));
  }
  const std::vector<std::int64_t> pos = row_positions(d, k.o, sh[0]);
  if (pos.empty()) throw error("the table has no rows");
  k.c().what = "sinusoidal pe";
  record_positions(k.c(), pos);
  visit_tensor(*a, fmt::format("tensor '{}'", name),
               [&](auto tag) { pe_check<typename decltype(tag)::type>(s, k, *a, name, pos); });
  grade_and_claim(k.cert);
  if (!k.o.diagnose || k.cert.exit_code() != 1) return;
  evidence_map ev;
  diagnose_sinusoidal(k, s, *a, pos, ev);
  add_explanations(ev, k.cert);
}

}  // namespace pev::certify::detail

// Certification of T5 relative-position buckets: integers, compared with the exact bucket
// (correctly rounded) and with transformers' fp32-log bucket (recipe:hf); they differ only next to
// integer boundaries of the log branch (docs/encodings.md §3.2, docs/numerics.md §10.5).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "detail.h"
#include "diagnosis.h"
#include "pev/core/error.h"
#include "pev/ref/recipe.h"
#include "pev/ref/relative.h"

namespace pev::certify::detail {

void certify_t5(const spec::t5& s, context& k) {
  const dump& d = k.d;
  const io::array* b = d.find("buckets");
  std::string dn;
  const io::array* r = find_any(d, {"distances", "relative_position", "relative_positions"}, &dn);
  if (!b || !r) {
    throw error(
        fmt::format("a T5 dump needs tensors 'buckets' and 'distances' (relative positions "
                    "key − query, same shape); it holds {}",
                    tensor_list(d)));
  }
  if (b->type != dtype::int32 && b->type != dtype::int64) {
    throw error(fmt::format("tensor 'buckets' has dtype {}, expected I32 or I64",
                            io::safetensors_name(b->type)));
  }
  if (b->shape != r->shape) {
    throw error(fmt::format("tensors 'buckets' {} and '{}' {} must have the same shape",
                            io::shape_string(b->shape), dn, io::shape_string(r->shape)));
  }
  const auto got = b->to_int64();
  const auto dist = r->to_int64();
  k.c().what = "t5 buckets";
  k.c().positions = dist.size();
  if (!dist.empty()) {
    k.c().min_position = *std::min_element(dist.begin(), dist.end());
    k.c().max_position = *std::max_element(dist.begin(), dist.end());
  }
  // T5's check is small and runs whole in shard 0 (docs/design.md §9.3).
  if (!whole_checks(k.o)) return grade_and_claim(k.cert);
  // Integer outputs: correctly rounded = the exact bucket (bound 0, one "ulp" is 1); recipe:hf =
  // transformers' fp32-log bucket everywhere (a recipe reference rather than a bound around the
  // exact value: its ρ is 0 when every bucket equals it, +∞ otherwise).
  compare::figures::options fo;
  std::int64_t top = 0;  // the octaves of positive distances (negative ones: the first)
  for (std::int64_t r : dist) top = std::max(top, r);
  fo.max_position = layout_end(top);
  fo.indices = std::max<std::int64_t>(1, static_cast<std::int64_t>(got.size()));
  fo.bounds = {"exact"};
  fo.worst = compare::worst_by::ulp_error;
  compare::figures f(fo);
  std::uint64_t hf_equal = 0;
  const double zero = 0;
  for (std::size_t e = 0; e < got.size(); ++e) {
    const std::int64_t want = ref::t5_bucket(s, dist[e]);
    const std::int64_t hfb = ref::t5_bucket(s, dist[e], ref::hf_recipe());
    hf_equal += got[e] == hfb;
    const double err = std::fabs(static_cast<double>(got[e] - want));
    f.add({dist[e], static_cast<std::int64_t>(e), static_cast<double>(got[e]),
           static_cast<double>(want), static_cast<std::uint64_t>(err), 1.0},
          "buckets", {&zero, 1});
    if (got[e] != (k.o.recipe == "exact" ? want : hfb) && k.mismatches.size() < 8) {
      k.mismatches.push_back({"buckets", dist[e], static_cast<std::int64_t>(e),
                              static_cast<double>(got[e]), static_cast<double>(want), 0});
    }
  }
  check c;
  f.finish(c);
  c.id = "buckets";
  c.spec_name = "certify";
  c.strategy = k.o.recipe ? "claims " + *k.o.recipe : "dump";
  c.source = fmt::format("tensors 'buckets' and '{}' {}", dn, io::shape_string(b->shape));
  c.dtype = to_string(b->type);
  c.recipe_rho = {{"hf", hf_equal == c.values ? 0.0 : std::numeric_limits<double>::infinity()}};
  c.best = c.correctly_rounded == c.values ? grade::correctly_rounded
           : hf_equal == c.values          ? grade::recipe_hf
                                           : grade::not_certified;
  c.bound_name = "transformers' fp32-log buckets; grade " + std::string(to_string(*c.best));
  c.pass = *c.best != grade::not_certified;
  k.cert.checks.push_back(c);
  grade_and_claim(k.cert);
  if (!k.o.diagnose || k.cert.exit_code() != 1) return;
  evidence_map ev;
  diagnose_t5(k, got, dist, ev);
  add_explanations(ev, k.cert);
  // The other direction's buckets: the parameter the data implies.
  const char* other = s.bidirectional ? "t5-unidirectional-buckets" : "t5-bidirectional-buckets";
  if (const auto x = ev.find(other); x != ev.end() && x->second.max_rho <= kExplainRho) {
    k.c().why->findings.push_back(
        fmt::format("the buckets of bidirectional={} (the config's are bidirectional={})",
                    !s.bidirectional, s.bidirectional));
  }
}

}  // namespace pev::certify::detail

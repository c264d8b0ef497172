// The check rows of a certificate: which bounds a certified value is measured against, how its
// figures are kept, how a check is graded, and whether the claimed recipe holds.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/impl/contract.h"
#include "pev/metric/error_model.h"

namespace pev::certify::detail {

namespace {
constexpr std::size_t kFirstMismatches = 8;

double rho(const check& c, const char* name) {
  const auto it = c.recipe_rho.find(name);
  return it == c.recipe_rho.end() ? std::numeric_limits<double>::infinity() : it->second;
}
bool within(const check& c, const char* name) { return rho(c, name) <= 1.0; }
}  // namespace

std::vector<std::string> bound_names(const options& o, bool ggml) {
  std::vector<std::string> v = {"hf", "vllm-fp16", "vllm-bf16"};
  if (ggml) v.push_back("ggml");
  v.push_back("drift-free");
  if (o.recipe == "exact") v.push_back("exact");
  return v;
}

compare::figures::options figure_options(const options& o, std::int64_t max_position,
                                         std::int64_t indices, bool ggml,
                                         std::vector<report::mismatch>* mismatches) {
  compare::figures::options f;
  f.max_position = std::max<std::int64_t>(2, max_position);
  f.indices = std::max<std::int64_t>(1, indices);
  f.bounds = bound_names(o, ggml);
  f.gate = 0;  // hf: the check's max_rho, as the summary shows it
  f.per_bound_rho = true;
  f.worst = compare::worst_by::ulp_error;
  const std::string claimed = !o.recipe || *o.recipe == "vllm" ? "hf" : *o.recipe;
  const auto it = std::find(f.bounds.begin(), f.bounds.end(), claimed);
  if (it != f.bounds.end()) f.mismatch_bound = static_cast<std::size_t>(it - f.bounds.begin());
  f.mismatches = mismatches;
  f.max_mismatches = kFirstMismatches;
  return f;
}

void recipe_bounds(double e, double y, format out, double drift, const options& o,
                   std::span<double> b) {
  y = std::fabs(y);
  std::size_t k = 0;
  b[k++] = impl::path_bound(e, y, std::nullopt, out, metric::kF32);
  b[k++] = impl::path_bound(e, y, dtype::fp16, out, metric::kF32);
  b[k++] = impl::path_bound(e, y, dtype::bf16, out, metric::kF32);
  b[k++] = drift;
  if (o.recipe == "exact") b[k++] = metric::ulp_at(y, out);
}

check make_check(const std::string& name, const std::string& source, dtype t,
                 const compare::figures& f, const options& o, std::optional<double> worst_exact) {
  check c;
  f.finish(c, worst_exact);
  c.id = name;
  c.spec_name = "certify";
  c.family = "";  // set by the caller's certificate (the spec's family)
  c.strategy = o.recipe ? "claims " + *o.recipe : "dump";
  c.dtype = to_string(t);
  c.source = source;
  const std::vector<std::string> names = bound_names(o, c.recipe_rho.count("ggml") > 0);
  const auto drift = std::find(names.begin(), names.end(), "drift-free") - names.begin();
  c.drift_free_bound = f.max_bound(static_cast<std::size_t>(drift));
  c.best = grade_of(c);
  c.bound_name = "hf recipe bound (rho); grade " + std::string(to_string(*c.best));
  c.pass = *c.best != grade::not_certified;
  return c;
}

grade grade_of(const check& c) {
  if (c.non_finite > 0) return grade::not_certified;
  if (c.correctly_rounded == c.values) return grade::correctly_rounded;
  if (c.max_ulp_error <= 1.0) return grade::faithful;
  if (within(c, "drift-free")) return grade::drift_free;
  if (within(c, "hf")) return grade::recipe_hf;
  if (within(c, "vllm-fp16") || within(c, "vllm-bf16")) return grade::recipe_vllm;
  if (within(c, "ggml")) return grade::recipe_ggml;
  return grade::not_certified;
}

void grade_and_claim(certificate& cert) {
  report::certification& z = *cert.certification;
  // The dump's grade: the worst over its checks.
  z.result = grade::correctly_rounded;
  for (const check& c : cert.checks) {
    z.result = std::max(z.result, c.best.value_or(grade::not_certified));
  }
  // The claim holds when every check is within that recipe's bound or faithful (a correct
  // implementation more precise than its recipe); exact holds for a faithful dump.
  if (z.claimed_recipe) {
    const std::string& r = *z.claimed_recipe;
    z.claim_holds = true;
    for (const check& c : cert.checks) {
      bool holds = c.best.value_or(grade::not_certified) <= grade::faithful;
      if (r == "hf") holds = holds || within(c, "hf");
      if (r == "vllm")
        holds = holds || within(c, "hf") || within(c, "vllm-fp16") || within(c, "vllm-bf16");
      if (r == "ggml") holds = holds || within(c, "ggml");
      z.claim_holds = z.claim_holds && holds;
    }
  }
}

}  // namespace pev::certify::detail

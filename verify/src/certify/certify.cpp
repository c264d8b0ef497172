// certify_dump (certify.h): the certificate's frame — spec, inputs, provenance — then the
// family's checks (rope.cpp, sinusoidal.cpp, alibi.cpp, t5.cpp), then grade, claim and diagnosis.

#include "pev/certify/certify.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "detail.h"
#include "pev/core/error.h"

namespace pev::certify {

namespace detail {

void context::count(const ref::fast_stats& s) {
  cert.prov.reference_values += s.values;
  cert.prov.reference_fallbacks += s.fallbacks;
}

}  // namespace detail

certificate certify_dump(const spec::encoding& e, const dump& d, const options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.recipe) (void)detail::claim_grade(*o.recipe);  // pev::error for an unknown recipe
  certificate cert;
  cert.prov = report::this_build();
  cert.prov.reference = o.mpfr_reference ? "mpfr" : "fast";
  cert.prov.suite = "certify";
  report::certification& z = cert.certification.emplace();
  z.spec = spec::to_spec_string(e);
  z.inputs = d.files;
  // Files of an --impl directory that were not read are said, not dropped silently.
  cert.notes.insert(cert.notes.end(), d.skipped.begin(), d.skipped.end());
  z.claimed_recipe = o.recipe;
  z.explain_threshold = kExplainRho;
  z.library.assumed = o.libm->name;
  z.library.max_trig_ulp = o.max_trig_ulp;
  detail::context k{e, d, o, cert, {}};
  if (const auto* s = std::get_if<spec::rope>(&e)) {
    detail::certify_rope(*s, k);
  } else if (const auto* s = std::get_if<spec::sinusoidal>(&e)) {
    detail::certify_sinusoidal(*s, k);
  } else if (const auto* s = std::get_if<spec::alibi>(&e)) {
    detail::certify_alibi(*s, k);
  } else if (const auto* s = std::get_if<spec::t5>(&e)) {
    detail::certify_t5(*s, k);
  } else {
    throw error(
        fmt::format("certify: the {} family is not supported yet (rope, sinusoidal, "
                    "alibi and t5 are)",
                    spec::family_name(e)));
  }
  const std::string family = spec::family_name(e);
  for (check& c : cert.checks) c.family = family;
  cert.prov.max_position = z.max_position;
  cert.prov.exhaustive = z.exhaustive;
  // Where the data leaves the bound it is held to, and how far it is from the exact values in
  // that bound (hf for a check without the claimed recipe's pipeline).
  bool any_hf = false, any_ggml = false, any_recipe = false;
  for (const check& c : cert.checks) {
    any_recipe = any_recipe || !c.recipe_rho.empty();
    any_hf = any_hf || c.recipe_rho.count("hf") > 0;
    any_ggml = any_ggml || c.recipe_rho.count("ggml") > 0;
  }
  z.held_to = detail::held_bound(o, any_ggml, any_hf || !any_recipe);
  report::diagnosis& why = z.why ? *z.why : z.why.emplace();
  why.first = std::move(k.mismatches);
  for (const check& c : cert.checks) {
    // The bound the data is held to, else hf, else ggml (the ggml form has no hf rung).
    auto it = c.recipe_rho.find(z.held_to);
    if (it == c.recipe_rho.end()) it = c.recipe_rho.find("hf");
    if (it == c.recipe_rho.end()) it = c.recipe_rho.find("ggml");
    if (it != c.recipe_rho.end()) why.max_rho_without = std::max(why.max_rho_without, it->second);
  }
  detail::finish(cert);
  z.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cert;
}

}  // namespace pev::certify

// certify_dump (certify.h): the certificate's frame (certificate_frame: provenance, suite, inputs,
// claimed recipe, thresholds, library fields; every certificate of certify starts from it) — then
// the family's checks (rope.cpp, sinusoidal.cpp, learned.cpp, alibi.cpp, t5.cpp), then grade, claim
// and diagnosis.

#include "pev/certify/certify.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>

#include "detail.h"
#include "pev/core/error.h"

namespace pev::certify {

namespace detail {

double max_rho_without(const certificate& cert) {
  const report::certification& z = *cert.certification;
  double r = 0;
  for (const check& c : cert.checks) {
    // The bound the data is held to, else hf, else ggml (the ggml form has no hf rung).
    auto it = c.recipe_rho.find(z.held_to);
    if (it == c.recipe_rho.end()) it = c.recipe_rho.find("hf");
    if (it == c.recipe_rho.end()) it = c.recipe_rho.find("ggml");
    if (it != c.recipe_rho.end()) r = std::max(r, it->second);
  }
  return r;
}

void context::count(const ref::fast_stats& s) {
  cert.prov.reference_values += s.values;
  cert.prov.reference_fallbacks += s.fallbacks;
}

}  // namespace detail

std::string run_options(const options& o) {
  // Everything of `options` that changes a certificate, but the shard itself. Positions given
  // as options are summarized by their count and SHA-256 (a positions file is an input too).
  std::string pos;
  for (std::int64_t p : o.positions) pos += std::to_string(p) + ",";
  return fmt::format(
      "recipe={} layout={} qk_layout={} qk_order={} positions={}:{} seq_len={} diagnosis={} "
      "exhaustive={} reference={} libm={} max_trig_ulp={}",
      o.recipe.value_or("-"), o.layout ? to_string(*o.layout) : "-",
      o.qk_layout ? to_string(*o.qk_layout) : "-", o.qk_order ? to_string(*o.qk_order) : "-",
      o.positions.size(), o.positions.empty() ? "-" : detail::sha256_text(pos),
      o.seq_len ? std::to_string(*o.seq_len) : "-", o.diagnose, o.exhaustive,
      o.mpfr_reference ? "mpfr" : "fast", o.libm->name,
      o.max_trig_ulp ? fmt::format("{}", *o.max_trig_ulp) : "-");
}

namespace detail {

certificate certificate_frame(const options& o, const dump& d, bool compared) {
  certificate cert;
  cert.prov = report::this_build();
  cert.prov.suite = "certify";
  report::certification& z = cert.certification.emplace();
  z.inputs = d.files;
  // Files of an --impl directory that were not read are said, not dropped silently.
  cert.notes.insert(cert.notes.end(), d.skipped.begin(), d.skipped.end());
  z.claimed_recipe = o.recipe;
  z.explain_threshold = kExplainRho;
  if (!compared) return cert;
  cert.prov.reference = o.mpfr_reference ? "mpfr" : "fast";
  z.library.assumed = o.libm->name;
  z.libm_claimed = o.libm != &metric::kAnyConforming;
  z.library.max_trig_ulp = o.max_trig_ulp;
  if (o.shard_count > 1) {
    cert.prov.shard_index = o.shard_index;
    cert.prov.shard_count = o.shard_count;
    z.shard = report::certification::shard_of{o.shard_index, o.shard_count, run_options(o)};
  }
  return cert;
}

certificate certify_frame(const spec::encoding& e, const dump& d, const options& o,
                          const std::function<void(context&)>& checks) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.recipe) (void)detail::claim_grade(*o.recipe);  // pev::error for an unknown recipe
  if (o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count) {
    throw error(
        fmt::format("--shard: {}/{} is not a shard (0 <= I < N)", o.shard_index, o.shard_count));
  }
  certificate cert = certificate_frame(o, d, /*compared=*/true);
  report::certification& z = *cert.certification;
  z.spec = spec::to_spec_string(e);
  // Files read but not hashed yet (read_dump(files, false)): hashed beside the comparison — on a
  // thread of its own unless the run is held to one thread (--threads 1) — since hashing a dump
  // of gigabytes takes about as long as reading it.
  std::future<void> hashing;
  const bool unhashed = std::any_of(z.inputs.begin(), z.inputs.end(),
                                    [](const input_file& f) { return f.sha256.empty(); });
  if (unhashed && o.threads != 1) {
    hashing = std::async(std::launch::async, [&z] { hash_inputs(z.inputs); });
  }
  context k{e, d, o, cert, {}};
  checks(k);
  if (hashing.valid()) {
    hashing.get();
  } else if (unhashed) {
    hash_inputs(z.inputs);
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
  z.held_to = held_bound(o, any_ggml, any_hf || !any_recipe);
  report::diagnosis& why = z.why ? *z.why : z.why.emplace();
  why.first = std::move(k.mismatches);
  why.max_rho_without = max_rho_without(cert);
  finish(cert);
  z.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cert;
}

}  // namespace detail

certificate certify_dump(const spec::encoding& e, const dump& d, const options& o) {
  return detail::certify_frame(e, d, o, [&e](detail::context& k) {
    if (const auto* s = std::get_if<spec::rope>(&e)) {
      detail::certify_rope(*s, k);
    } else if (const auto* s = std::get_if<spec::sinusoidal>(&e)) {
      detail::certify_sinusoidal(*s, k);
    } else if (const auto* s = std::get_if<spec::alibi>(&e)) {
      detail::certify_alibi(*s, k);
    } else if (const auto* s = std::get_if<spec::t5>(&e)) {
      detail::certify_t5(*s, k);
    } else if (const auto* s = std::get_if<spec::learned>(&e)) {
      detail::certify_learned(*s, k);
    } else {
      throw error(
          fmt::format("certify: the {} family is not supported yet (rope, sinusoidal, "
                      "learned, alibi and t5 are)",
                      spec::family_name(e)));
    }
  });
}

}  // namespace pev::certify

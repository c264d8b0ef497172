// The property registry, subjects, and the RapidCheck driver (properties.h).

#include <rapidcheck.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "detail.h"
#include "pev/core/error.h"
#include "rapidcheck/detail/Configuration.h"
#include "rapidcheck/detail/Results.h"
#include "rapidcheck/detail/TestListener.h"

namespace pev::prop {
namespace {

bool any(kernel::strategy) { return true; }
// Frequency-level properties need a per-pair frequency bound: ggml's angles come from a
// recurrence and its inv_freq() carries no contract of its own.
bool has_freq_bound(kernel::strategy st) { return st != kernel::strategy::ggml; }

using namespace detail;  // NOLINT(google-build-using-namespace): the bodies

const property kProperties[] = {
    {"rope.inv_freq_exact", "rope", "inv_freq within the contract's per-pair bound of exact θ_i",
     has_freq_bound, rope_inv_freq_exact, false},
    {"rope.attention_factor_exact", "rope", "attention factor within its bound of the exact m", any,
     rope_attention_factor_exact, false},
    {"rope.table_exact", "rope", "m·cos, m·sin within the contract bound of the exact values", any,
     rope_table_exact, true},
    {"rope.rotate_exact", "rope", "rotated q/k within the rotation contract of the exact rotation",
     any, rope_rotate_exact, true},
    {"rope.norm", "rope", "‖R(p)x‖ = m·‖x‖ over the rotary dims", any, rope_norm, true},
    {"rope.identity_at_zero", "rope", "R(0)x = m·x", any, rope_identity_at_zero, true},
    {"rope.composition", "rope", "R(a)R(b)x = m·R(a+b)x", any, rope_composition, true},
    {"rope.inverse", "rope", "R(p)ᵀR(p)x = m²x (transpose of the implementation's table)", any,
     rope_inverse, true},
    {"rope.passthrough_bitexact", "rope", "dims ≥ rotary_dim copied bit for bit", any,
     rope_passthrough, true},
    {"rope.out_of_place", "rope", "out of place leaves the input intact; in place gives the same",
     any, rope_out_of_place, true},
    {"rope.relative_shift", "rope", "<R(m)q, R(n)k> depends only on n − m", any,
     rope_relative_shift, true},
    {"rope.kv_cache", "rope", "keys rotated when cached = keys rotated now (static types)", any,
     rope_kv_cache, true},
    {"mrope.table_exact", "rope",
     "MRoPE [S, T] positions: each pair within the contract of the exact value at its stream's "
     "position",
     any, mrope_table_exact, true},
    {"mrope.rotate_exact", "rope",
     "MRoPE rotation: each pair within the rotation contract at its stream's position", any,
     mrope_rotate_exact, true},
    {"mrope.sections_plain", "rope",
     "sections partition the pairs; each section is plain RoPE of its own stream (text tokens: "
     "1-D RoPE) bit for bit",
     any, mrope_sections_plain, true},
    {"scaling.factor_one", "rope", "factor 1 reproduces plain RoPE for every scaling type", any,
     scaling_factor_one, true},
    {"scaling.linear_stretch", "rope", "linear(f) at f·t = plain at t", any, scaling_linear_stretch,
     true},
    {"scaling.ntk_base", "rope", "ntk(f) = plain with base b·f^(d/(d−2))", any, scaling_ntk_base,
     true},
    {"scaling.yarn_bands", "rope", "YaRN θ' ∈ [θ/f, θ]; pairs ≤ low keep θ, pairs ≥ high use θ/f",
     has_freq_bound, scaling_yarn_bands, false},
    {"scaling.llama3_bands", "rope", "llama3 bands, θ' ∈ [θ/f, θ], continuous monotone blend",
     has_freq_bound, scaling_llama3_bands, false},
    {"scaling.dynamic_below", "rope", "dynamic at seq_len ≤ L = plain", any, scaling_dynamic_below,
     true},
    {"scaling.longrope_select", "rope", "LongRoPE uses long factors iff seq_len > Lo", any,
     scaling_longrope_select, true},
    {"scaling.proportional_tail", "rope", "proportional NoPE pairs: inv_freq 0, cos 1, sin 0", any,
     scaling_proportional_tail, true},
    {"sinusoidal.pe_exact", "sinusoidal", "PE within the contract bound of the exact values", any,
     sinusoidal_pe_exact, true},
    {"sinusoidal.linearity", "sinusoidal", "PE(t+k) = M(k)·PE(t), M(k) independent of t", any,
     sinusoidal_linearity, true},
    {"alibi.slopes_exact", "alibi", "slopes within the contract bound of the exact rule", any,
     alibi_slopes_exact, true},
    {"alibi.bias_exact", "alibi", "bias within the contract bound of m·(j − i)", any,
     alibi_bias_exact, true},
    {"alibi.shift_invariance", "alibi", "bias depends only on j − i; zero on the diagonal", any,
     alibi_shift_invariance, true},
    {"t5.range", "t5", "bucket ids in [0, num_buckets)", any, t5_range, false},
    {"t5.monotone", "t5", "buckets monotone in |distance|", any, t5_monotone, false},
    {"t5.symmetry", "t5", "bidirectional offset rule; causal keys after the query in bucket 0", any,
     t5_symmetry, false},
    {"t5.exact", "t5", "buckets equal the exact buckets", any, t5_exact, false},
};

// Reported, not hidden: KV-cache consistency of stateful encodings (docs/encodings.md §10.3).
const property kKvStateful = {"rope.kv_cache_stateful",
                              "rope",
                              "keys rotated when cached = keys rotated now (dynamic, longrope)",
                              any,
                              rope_kv_cache_stateful,
                              true};

bool env_has_key(const char* key) {
  const char* env = std::getenv("RC_PARAMS");
  return env && std::string(env).find(std::string(key) + "=") != std::string::npos;
}

}  // namespace

std::span<const property> all_properties() { return kProperties; }

const property& known_non_property_kv_cache() { return kKvStateful; }

const property& find_property(const std::string& id) {
  for (const property& p : kProperties) {
    if (id == p.id) return p;
  }
  if (id == kKvStateful.id) return kKvStateful;
  throw error("unknown property '" + id + "'");
}

subject builtin_subject(kernel::strategy st) {
  subject s;
  s.name = kernel::to_string(st);
  s.make = [st](const spec::encoding& e) { return impl::make_builtin(e, st); };
  s.accepts = [st](const spec::encoding& e) {
    if (!impl::builtin_supports(e, st)) return false;
    // llama.cpp always truncates YaRN's correction range (docs/encodings.md §8.3): a spec with
    // truncate=false is outside the ggml recipe, whose contract (and pev's ggml model) assume it.
    const auto* r = std::get_if<spec::rope>(&e);
    return !(st == kernel::strategy::ggml && r && r->type == spec::rope_type::yarn && !r->truncate);
  };
  return s;
}

subject mutant_subject(const impl::mutant_info& m) {
  subject s;
  s.name = std::string("mutant:") + m.id;
  s.make = [&m](const spec::encoding& e) -> std::unique_ptr<impl::implementation> {
    if (m.applies(e)) return impl::make_mutant(m.id, e);
    return impl::make_builtin(e, kernel::strategy::hf);
  };
  s.accepts = [&m](const spec::encoding& e) { return m.applies(e); };
  return s;
}

subject control_subject() {
  subject s;
  s.name = "mutant:control";
  s.make = [](const spec::encoding& e) { return impl::make_control(e); };
  s.accepts = [](const spec::encoding& e) {
    return impl::builtin_supports(e, kernel::strategy::hf);
  };
  return s;
}

run_config default_config(std::uint64_t default_seed) {
  // RC_PARAMS parsed directly (rc::detail::configuration() would also print a random seed that is
  // not the one used).
  const char* env = std::getenv("RC_PARAMS");
  const auto rc_conf = rc::detail::configFromString(env ? env : "").testParams;
  run_config c;
  const char* seed = std::getenv("PEV_SEED");
  c.seed = env_has_key("seed") ? rc_conf.seed
           : (seed && *seed)   ? std::strtoull(seed, nullptr, 0)
                               : default_seed;
  const char* cases = std::getenv("PEV_PROP_CASES");
  c.max_success = env_has_key("max_success") ? rc_conf.maxSuccess
                  : (cases && *cases)        ? std::atoi(cases)
                                             : 100;
  c.max_size = rc_conf.maxSize;
  c.shrink = !rc_conf.disableShrinking;
  return c;
}

outcome check(const property& p, const subject& s, dtype t, const run_config& cfg,
              const std::string& test_id, const std::string& gtest_filter) {
  rc::detail::TestMetadata meta;
  // One reproduce key per (test, property, dtype): a test may check several properties.
  meta.id = test_id + "/" + p.id + "/" + to_string(t);
  meta.description = std::string(p.id) + " on " + s.name + " (" + to_string(t) + ")";
  rc::detail::TestParams params;
  params.seed = cfg.seed;
  params.maxSuccess = cfg.max_success;
  params.maxSize = cfg.max_size;
  params.disableShrinking = !cfg.shrink;
  auto body = [&p, &s, t] { p.run(s, t); };
  // RC_PARAMS="reproduce=…" replays through RapidCheck's own configuration. Quiet: a listener
  // that reports nothing and no reproduce map, so RapidCheck's configuration (which prints the
  // seed it would use) is never read and nothing is printed at exit.
  struct silent : rc::detail::TestListener {
    void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
    void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
    void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
  } listener;
  const auto result = cfg.quiet ? rc::detail::checkProperty(rc::detail::toProperty(body), meta,
                                                            params, listener, {})
                      : env_has_key("reproduce") ? rc::detail::checkTestable(body, meta)
                                                 : rc::detail::checkTestable(body, meta, params);
  outcome o;
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  o.message = msg.str();
  std::ostringstream replay;
  replay << "RC_PARAMS=\"seed=" << cfg.seed << " max_success=" << cfg.max_success
         << "\" <test binary> --gtest_filter='" << (gtest_filter.empty() ? test_id : gtest_filter)
         << "' (or the RC_PARAMS=\"reproduce=…\" RapidCheck prints at exit)";
  o.replay = replay.str();
  rc::detail::SuccessResult ok;
  rc::detail::FailureResult fail;
  rc::detail::GaveUpResult gave_up;
  if (result.match(ok)) {
    o.result = outcome::status::passed;
    o.num_success = ok.numSuccess;
    o.distribution = ok.distribution;
  } else if (result.match(fail)) {
    o.result = outcome::status::failed;
    o.num_success = fail.numSuccess;
    o.description = fail.description;
    std::ostringstream ce;
    for (const auto& [type, value] : fail.counterExample)
      ce << "  " << type << ": " << value << "\n";
    o.counterexample = ce.str();
  } else if (result.match(gave_up)) {
    o.result = outcome::status::gave_up;
    o.num_success = gave_up.numSuccess;
    o.description = gave_up.description;
  } else {
    o.result = outcome::status::failed;
    o.description = o.message;
  }
  return o;
}

}  // namespace pev::prop

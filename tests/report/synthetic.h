#pragma once
// Synthetic results for the writer tests: two RoPE checks (one failing), a T5 check, an
// invariance series and a wavelength series, with values chosen to exercise escaping and
// non-finite numbers; and a synthetic certificate (a claim that does not hold, a diagnosis, and
// properties that passed, failed and do not apply).

#include <cmath>
#include <limits>

#include "pev/report/result.h"

namespace pev::test {

inline report::check synthetic_check(std::int64_t index, const std::string& spec,
                                     const std::string& strategy, const std::string& dtype,
                                     double scale, bool pass) {
  report::check c;
  c.index = index;
  c.spec_name = spec;
  c.spec = "rope:head_dim=8";
  c.family = "rope";
  c.strategy = strategy;
  c.dtype = dtype;
  c.id = spec + "/" + strategy + "/" + dtype;
  c.bound_name = "model <&> \"quoted\"";
  c.pass = pass;
  c.values = 0;
  for (int k = 0; k < 6; ++k) {
    report::octave o;
    o.lo = k == 0 ? 0 : std::int64_t{1} << k;
    o.hi = std::int64_t{1} << (k + 1);
    o.positions = static_cast<std::uint64_t>(o.hi - o.lo);
    o.values = o.positions * 8;
    o.max_abs = scale * static_cast<double>(o.hi);
    o.p99_abs = 0.5 * o.max_abs;
    o.max_bound = 2 * o.max_abs;
    o.max_rho = pass ? 0.5 : 1.5;
    o.rho_by_index = {0.1, 0.2, o.max_rho, 0.3};
    c.values += o.values;
    c.octaves.push_back(o);
  }
  c.positions = 64;
  c.max_position = 63;
  c.max_abs = c.octaves.back().max_abs;
  c.max_rho = pass ? 0.5 : 1.5;
  c.max_ulp_error = 3.25;
  c.max_ulp_distance = 4;
  c.pct_correctly_rounded = 90;
  c.pct_faithful = 99;
  c.ulp_histogram = {1, 2, 3, 4, 5, 6, c.values - 21};
  c.worst = {63,  2,         "cos",    0.5,      0.25,
             0.5, c.max_rho, "0x1p-1", "0x1p-2", {{"angle", "0x1p+0", "0x1.8p+0"}}};
  return c;
}

inline report::results synthetic_results() {
  report::results r;
  r.prov.pev_version = "0.1.0";
  r.prov.git_revision = "abc";
  r.prov.compiler = "GCC";
  r.prov.fp_flags = "-ffp-contract=off";
  r.prov.reference = "fast";
  r.prov.seed = 42;
  r.prov.max_position = 64;
  r.prov.generated_at = "2026-01-01T00:00:00Z";
  r.specs = {{"spec<a>", "rope", "rope:head_dim=8", "--config a<b>/config.json"},
             {"t5", "t5", "t5:num_buckets=32", "built-in suite"}};
  r.checks.push_back(synthetic_check(0, "spec<a>", "hf", "fp32", 0x1p-24, true));
  r.checks.push_back(synthetic_check(1, "spec<a>", "hf", "bf16", 0x1p-9, false));
  auto t5 = synthetic_check(2, "t5", "accurate", "int64", 0, true);
  t5.family = "t5";
  t5.max_rho = std::numeric_limits<double>::infinity();  // a non-finite figure survives JSON
  t5.worst.got = std::numeric_limits<double>::quiet_NaN();
  r.checks.push_back(t5);
  report::invariance_series s;
  s.index = 3;
  s.spec_name = "spec<a>";
  s.strategy = "hf";
  s.dtype = "fp32";
  s.offset = 16;
  for (int k = 0; k < 10; ++k) {
    s.position.push_back(std::int64_t{1} << k);
    s.max_drift.push_back(std::ldexp(1.0, k - 24));
  }
  r.invariance.push_back(s);
  report::wavelength_series w;
  w.index = 4;
  w.spec_name = "scaled";
  for (int i = 0; i < 4; ++i) {
    w.plain.push_back(std::pow(10.0, i));
    w.scaled.push_back(4 * std::pow(10.0, i));
  }
  r.wavelengths.push_back(w);
  r.notes.push_back("a note | with a pipe");
  return r;
}

/// A live certificate of 0 … 131071 claiming recipe:hf: the cos check holds only vllm's bounds
/// (NOT CERTIFIED, grade recipe:vllm), with a named mistake, a finding, and one property of each
/// outcome.
inline report::results synthetic_certificate() {
  report::results r;
  r.prov.pev_version = "0.1.0";
  r.prov.git_revision = "abc";
  r.prov.compiler = "GCC";
  r.prov.fp_flags = "-ffp-contract=off";
  r.prov.reference = "fast";
  r.prov.seed = 20261122;
  r.prov.max_position = 131071;
  r.prov.exhaustive = true;
  report::certification& z = r.certification.emplace();
  z.spec = "rope:head_dim=8,rope_theta=10000";
  z.held_to = "hf";
  z.what = "live plugin:example <x>: rope table (separate layout, detected)";
  z.inputs = {{"dump/table.npy", "npy", std::string(64, 'a')}};
  z.positions = 131072;
  z.min_position = 0;
  z.max_position = 131071;
  z.exhaustive = true;
  z.claimed_recipe = "hf";
  z.claim_holds = false;
  z.live = true;
  z.result = report::grade::recipe_vllm;
  z.library.assumed = "<= 2 ulp trig (CUDA libdevice)";
  z.library.trig_ulp = 0.558;
  z.library.trig_abs = 3.24e-8;
  z.library.trig_class = "glibc";
  z.library.angles = "hf";
  z.explain_threshold = 4;
  report::diagnosis& d = z.why.emplace();
  d.first = {{"cos", 70000, 3, 0.5, 0.25, 1e-6}};
  d.explanations = {{"theta-wrong", "rope_theta of another model", 0.5, 0.1, true, 0},
                    {"position-off-by-one", "positions shifted by one", 900, 300, false, 0}};
  d.named = "theta-wrong";
  d.indistinguishable = {"theta-other"};
  d.findings = {"rope_theta: the frequencies imply 10000 (the spec says 500000)"};
  d.max_rho_without = 3.5;
  z.seconds = 1.5;
  auto cos = synthetic_check(0, "certify", "data", "fp32", 0x1p-24, true);
  cos.id = "cos";
  cos.source = "cos [131072, 8]";
  cos.values = 131072 * 8;
  cos.correctly_rounded = cos.values / 2;
  cos.faithful = cos.values - 10;
  cos.recipe_rho = {{"exact", 1e7}, {"drift-free", 2e3}, {"hf", 3.5},
                    {"ggml", 2.25}, {"vllm-fp16", 0.75}, {"vllm-bf16", 0.625}};
  cos.ladder_rho = {{"exact", 1e7}, {"drift-free", 2e3}, {"hf", 3.5},
                    {"ggml", 2.25}, {"vllm-fp16", 0.75}, {"vllm-bf16", 0.625}};
  cos.best = report::grade::recipe_vllm;
  r.checks.push_back(cos);
  const auto property = [&](const std::string& id, const std::string& outcome, std::uint64_t n) {
    report::check c;
    c.index = static_cast<std::int64_t>(r.checks.size());
    c.id = "property " + id;
    c.spec_name = "certify";
    c.family = "rope";
    c.dtype = "fp32";
    c.source = "what " + id + " checks";
    c.values = n;
    c.property = outcome;
    c.pass = outcome != "failed";
    c.best = c.pass ? report::grade::correctly_rounded : report::grade::not_certified;
    return c;
  };
  r.checks.push_back(property("rope.norm", "passed", 100));
  auto failed = property("rope.table_exact", "failed", 3);
  failed.note = "m·cos at p=256 pair=0: got -0.999 expected -0.0398";
  failed.counterexample = "pev::spec::rope: rope:head_dim=2,rope_theta=100\nlong: 1\n";
  failed.replay =
      "pev certify --spec rope:head_dim=8,rope_theta=10000 --plugin ./libx.so --seed 20261122 "
      "--property-cases 100";
  r.checks.push_back(failed);
  auto na = property("scaling.ntk_base", "not applicable", 0);
  na.note = "not applicable: the implementation does not serve rope_type=dynamic";
  r.checks.push_back(na);
  return r;
}

}  // namespace pev::test

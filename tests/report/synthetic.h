#pragma once
// Synthetic results for the writer tests: two RoPE checks (one failing), a T5 check, an
// invariance series and a wavelength series, with values chosen to exercise escaping and
// non-finite numbers.

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

}  // namespace pev::test

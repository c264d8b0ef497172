// certificate.json and the text summary of `pev certify`.

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "pev/certify/certify.h"
#include "pev/core/version.h"

namespace pev::certify {
namespace {

using json = nlohmann::ordered_json;

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// JSON has no infinity: figures that are infinite (NaN/Inf in the data) are written as null.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string figure(double v) { return std::isfinite(v) ? fmt::format("{:.3g}", v) : "inf"; }

}  // namespace

std::string to_json(const certificate& c) {
  json j;
  j["schema_version"] = 1;
  j["tool"] = {{"name", "pev"},          {"version", version()}, {"git_revision", git_revision()},
               {"compiler", compiler()}, {"flags", fp_flags()},  {"libc", libc_version()}};
  j["spec"] = c.spec;
  j["what"] = c.what;
  json inputs = json::array();
  for (const auto& f : c.inputs) {
    inputs.push_back({{"path", f.path}, {"format", f.format}, {"sha256", f.sha256}});
  }
  j["inputs"] = inputs;
  j["positions"] = {{"count", c.positions},
                    {"min", c.min_position},
                    {"max", c.max_position},
                    {"exhaustive", c.exhaustive}};
  j["reference"] = {
      {"backend",
       c.reference_backend == "mpfr" ? "mpfr (direct)" : "fast exact reference (MPFR fallback)"},
      {"precision_bits", c.precision_bits},
      {"values", c.reference_values},
      {"mpfr_fallbacks", c.reference_fallbacks}};
  j["seeds"] = json::array();  // dumps are compared value by value: nothing is random
  j["claimed_recipe"] = c.claimed_recipe ? json(*c.claimed_recipe) : json(nullptr);
  j["claim_holds"] = c.claim_holds;
  json checks = json::array();
  for (const check& k : c.checks) {
    json rho = json::object();
    for (const auto& [r, v] : k.max_rho) rho[r] = number(v);
    checks.push_back(
        {{"name", k.name},
         {"source", k.source},
         {"dtype", k.dtype},
         {"count", k.count},
         {"correctly_rounded", k.correctly_rounded},
         {"faithful", k.faithful},
         {"non_finite", k.non_finite},
         {"max_abs_error", number(k.max_abs_error)},
         {"max_ulp_error", number(k.max_ulp_error)},
         {"max_rho", rho},
         {"drift_free_bound", k.drift_free_bound},
         {"worst",
          {{"position", k.worst.position},
           {"index", k.worst.index},
           {"got", hex(k.worst.got)},
           {"want", hex(k.worst.want)},
           {"abs_error", number(k.worst.abs_error)},
           {"ulp_error", number(k.worst.ulp_error)}}},
         {"grade", to_string(k.best)},
         {"property", k.property_status.empty() ? json(nullptr) : json(k.property_status)},
         {"note", k.note}});
  }
  j["checks"] = checks;
  j["grade"] = to_string(c.result);
  j["certified"] = c.exit_code() == 0;
  if (c.why) {
    json first = json::array();
    for (const auto& m : c.why->first) {
      first.push_back({{"check", m.check},
                       {"position", m.position},
                       {"index", m.index},
                       {"got", hex(m.got)},
                       {"want", hex(m.want)},
                       {"bound", m.bound}});
    }
    json ex = json::array();
    for (const auto& x : c.why->explanations) {
      ex.push_back({{"mutant", x.mutant},
                    {"description", x.description},
                    {"max_rho", number(x.max_rho)},
                    {"rms_rho", number(x.rms_rho)},
                    {"explains", x.explains}});
    }
    j["diagnosis"] = {{"first_mismatches", first},
                      {"max_rho_without_explanation", number(c.why->max_rho_without)},
                      {"named", c.why->named ? json(*c.why->named) : json(nullptr)},
                      {"explain_threshold_rho", kExplainRho},
                      {"explanations", ex}};
  }
  j["seconds"] = c.seconds;  // wall time: the one field that differs between identical runs
  // Paths and messages come from outside (a file name need not be UTF-8): never a JSON exception.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string to_text(const certificate& c) {
  std::string s;
  s += fmt::format("spec      {}\n", c.spec);
  for (const auto& f : c.inputs) s += fmt::format("input     {} (sha256 {})\n", f.path, f.sha256);
  s +=
      fmt::format("data      {}, {} positions in [{}, {}]{}\n", c.what, c.positions, c.min_position,
                  c.max_position, c.exhaustive ? " (every position: exhaustive)" : "");
  s += fmt::format("{:<18} {:<5} {:>10} {:>9} {:>9} {:>10} {:>8} {:>8}  {}\n", "check", "dtype",
                   "values", "CR %", "faith %", "max abs", "max ulp", "rho hf", "grade");
  for (const check& k : c.checks) {
    if (!k.property_status.empty()) {
      s += fmt::format("{:<40} {:>6} cases  {}\n", k.name, k.count, k.property_status);
      continue;
    }
    const double n = k.count ? static_cast<double>(k.count) : 1;
    const auto rho = k.max_rho.find("hf");
    s += fmt::format("{:<18} {:<5} {:>10} {:>9.5f} {:>9.5f} {:>10} {:>8} {:>8}  {}\n", k.name,
                     k.dtype, k.count, 100.0 * double(k.correctly_rounded) / n,
                     100.0 * double(k.faithful) / n, figure(k.max_abs_error),
                     figure(k.max_ulp_error), rho == k.max_rho.end() ? "-" : figure(rho->second),
                     to_string(k.best));
  }
  for (const check& k : c.checks) {
    if (!k.note.empty() && k.property_status != "not applicable") {
      s += fmt::format("note      {}: {}\n", k.name, k.note);
    }
    if (k.non_finite > 0) {
      s += fmt::format(
          "note      {}: {} non-finite value(s) (NaN or Inf) where the exact value "
          "is finite\n",
          k.name, k.non_finite);
    }
  }
  s += fmt::format("grade     {}\n", to_string(c.result));
  if (c.claimed_recipe) {
    s += fmt::format("claim     recipe {}: {}\n", *c.claimed_recipe,
                     c.claim_holds ? "holds" : "does NOT hold");
  }
  if (c.why) {
    s += fmt::format("diagnosis max rho against the exact value (hf bounds): {}\n",
                     figure(c.why->max_rho_without));
    for (std::size_t k = 0; k < c.why->first.size() && k < 3; ++k) {
      const mismatch& m = c.why->first[k];
      s += fmt::format(
          "          first mismatch: {} at position {}, index {}: got {} ({}), want "
          "{} ({}), bound {:.3g}\n",
          m.check, m.position, m.index, m.got, hex(m.got), m.want, hex(m.want), m.bound);
    }
    if (c.why->named) {
      const auto& x = c.why->explanations.front();
      s += fmt::format("          explained by: {} — {} (max rho {} against it, {} without)\n",
                       x.mutant, x.description, figure(x.max_rho), figure(c.why->max_rho_without));
    } else if (!c.why->explanations.empty()) {
      const auto& x = c.why->explanations.front();
      s += fmt::format("          no known mistake explains the data (closest: {}, max rho {})\n",
                       x.mutant, figure(x.max_rho));
    }
  }
  s += fmt::format(
      "result    {} ({:.2f} s, {} reference values from the {} reference, {} MPFR "
      "fallbacks)\n",
      c.exit_code() == 0 ? "CERTIFIED" : "NOT CERTIFIED", c.seconds, c.reference_values,
      c.reference_backend, c.reference_fallbacks);
  return s;
}

}  // namespace pev::certify

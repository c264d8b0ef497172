// report.json (json.h).

#include "pev/report/json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "pev/core/error.h"
#include "pev/core/hex.h"
#include "pev/core/json_check.h"

namespace pev::report {
namespace {

using json = nlohmann::ordered_json;

json num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double to_num(const nlohmann::json& j) {
  if (j.is_string()) {
    const auto s = j.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return j.get<double>();
}

json nums(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(num(x));
  return a;
}

std::vector<double> to_nums(const nlohmann::json& j) {
  std::vector<double> v;
  for (const auto& x : j) v.push_back(to_num(x));
  return v;
}

json steps(const worst_case& w) {
  json a = json::array();
  for (const auto& st : w.intermediates) {
    a.push_back({{"name", st.name}, {"got_hex", st.got_hex}, {"exact_hex", st.exact_hex}});
  }
  return a;
}

json certification_fields(const certification& c, json j) {
  j["spec"] = c.spec;
  j["held_to"] = c.held_to;
  j["what"] = c.what;
  json layouts = json::array();
  for (const auto& l : c.layouts) {
    layouts.push_back({{"role", l.role},
                       {"layout", l.layout},
                       {"tensors", l.tensors},
                       {"read_as", l.read_as},
                       {"decided_by", l.decided_by}});
  }
  j["layouts"] = layouts;
  json inputs = json::array();
  for (const auto& f : c.inputs) {
    inputs.push_back({{"path", f.path}, {"format", f.format}, {"sha256", f.sha256}});
  }
  j["inputs"] = inputs;
  j["positions"] = {{"count", c.positions},
                    {"min", c.min_position},
                    {"max", c.max_position},
                    {"exhaustive", c.exhaustive}};
  j["claimed_recipe"] = c.claimed_recipe ? json(*c.claimed_recipe) : json(nullptr);
  j["claim_holds"] = c.claim_holds;
  j["live"] = c.live;
  j["grade"] = to_string(c.result);
  j["certified"] = c.exit_code() == 0;
  const library_figures& lib = c.library;
  auto opt = [](const std::optional<double>& v) { return v ? num(*v) : json(nullptr); };
  j["library"] = {{"assumed", lib.assumed},        {"max_trig_ulp", opt(lib.max_trig_ulp)},
                  {"trig_ulp", opt(lib.trig_ulp)}, {"trig_abs", opt(lib.trig_abs)},
                  {"pow_ulp", opt(lib.pow_ulp)},   {"trig_class", lib.trig_class},
                  {"angles", lib.angles},          {"note", lib.note},
                  {"measured_on", lib.measured_on}};
  j["diagnosis"] = nullptr;
  if (c.why) {
    json first = json::array();
    for (const auto& m : c.why->first) {
      first.push_back({{"check", m.check},
                       {"position", m.position},
                       {"index", m.index},
                       {"got", hex(m.got)},
                       {"want", hex(m.want)},
                       {"bound", num(m.bound)}});
    }
    json ex = json::array();
    for (const auto& x : c.why->explanations) {
      ex.push_back({{"mutant", x.mutant},
                    {"description", x.description},
                    {"max_rho", num(x.max_rho)},
                    {"rms_rho", num(x.rms_rho)},
                    {"explains", x.explains}});
    }
    j["diagnosis"] = {{"first_mismatches", first},
                      {"max_rho_without_explanation", num(c.why->max_rho_without)},
                      {"named", c.why->named ? json(*c.why->named) : json(nullptr)},
                      {"indistinguishable", c.why->indistinguishable},
                      {"findings", c.why->findings},
                      {"explain_threshold_rho", c.explain_threshold},
                      {"explanations", ex}};
  }
  j["seconds"] = c.seconds;  // wall time: differs between identical runs
  return j;
}

/// The fields a certificate's check adds (a report leaves them out).
void certificate_check_fields(const check& c, json& j) {
  j["source"] = c.source;
  j["correctly_rounded"] = c.correctly_rounded;
  j["faithful"] = c.faithful;
  j["non_finite"] = c.non_finite;
  json rho = json::object();
  for (const auto& [name, v] : c.recipe_rho) rho[name] = num(v);
  j["recipes"] = rho;
  json ladder = json::object();
  for (const auto& [name, v] : c.ladder_rho) ladder[name] = num(v);
  j["ladder"] = ladder;
  json vac = json::object();
  for (const auto& [name, v] : c.vacuous) {
    vac[name] = {{"values", v.values}, {"first_position", v.first_position}};
  }
  j["vacuous"] = vac;
  j["drift_free_bound"] = num(c.drift_free_bound);
  j["grade"] = c.best ? json(to_string(*c.best)) : json(nullptr);
  j["property"] = c.property.empty() ? json(nullptr) : json(c.property);
  if (c.property == "failed") {
    j["counterexample"] = c.counterexample;
    j["replay"] = c.replay;
  }
  j["worst"]["ulp_error"] = num(c.worst.ulp_error);
}

}  // namespace

std::string to_json(const results& r) {
  json j;
  j["schema_version"] = r.schema_version;
  const provenance& p = r.prov;
  j["provenance"] = {{"pev_version", p.pev_version},
                     {"git_revision", p.git_revision},
                     {"compiler", p.compiler},
                     {"fp_flags", p.fp_flags},
                     {"build_flags", p.build_flags},
                     {"libc", p.libc},
                     {"host", p.host},
                     {"cpu", p.cpu},
                     {"mpfr_precision_bits", p.mpfr_precision_bits},
                     {"reference", p.reference},
                     {"reference_values", p.reference_values},
                     {"reference_fallbacks", p.reference_fallbacks},
                     {"seed", p.seed},
                     {"suite", p.suite},
                     {"max_position", p.max_position},
                     {"exhaustive", p.exhaustive},
                     {"dense_below", p.dense_below},
                     {"samples_per_octave", p.samples_per_octave},
                     {"search_radius", p.search_radius},
                     {"shard_index", p.shard_index},
                     {"shard_count", p.shard_count},
                     {"merged_shards", p.merged_shards},
                     {"generated_at", p.generated_at}};
  if (!r.certification) {
    json specs = json::array();
    for (const suite_spec& s : r.specs) {
      specs.push_back(
          {{"name", s.name}, {"family", s.family}, {"spec", s.spec}, {"source", s.source}});
    }
    j["specs"] = specs;
  }
  j["metrics"] = {
      {"abs", "|computed - exact|, exact = the MPFR-exact value (correctly rounded to double)"},
      {"ulp_error", "|computed - exact| / ulp_T(exact), T the output type (docs/numerics.md §3.1)"},
      {"ulp_distance",
       "ordinal distance to the correctly rounded value RN_T(exact) (docs/numerics.md §3.2)"},
      {"rho",
       "|computed - exact| / B, B = the strategy's analytic bound (docs/numerics.md §3.5); pass: "
       "rho <= 1"},
      {"p99_abs",
       "upper edge of the log histogram bin (64 per binade) holding the nearest-rank 99th "
       "percentile"},
      {"ulp_histogram_buckets", kUlpBucketNames}};
  json checks = json::array();
  for (const check& c : r.checks) {
    json oct = json::array();
    for (const octave& o : c.octaves) {
      oct.push_back({{"lo", o.lo},
                     {"hi", o.hi},
                     {"positions", o.positions},
                     {"values", o.values},
                     {"max_abs", num(o.max_abs)},
                     {"p99_abs", num(o.p99_abs)},
                     {"max_bound", num(o.max_bound)},
                     {"max_rho", num(o.max_rho)},
                     {"rho_by_index", nums(o.rho_by_index)}});
    }
    const worst_case& w = c.worst;
    json row = {{"index", c.index},
                {"id", c.id},
                {"spec_name", c.spec_name},
                {"spec", c.spec},
                {"family", c.family},
                {"strategy", c.strategy},
                {"dtype", c.dtype},
                {"bound", c.bound_name},
                {"note", c.note},
                {"pass", c.pass},
                {"values", c.values},
                {"positions", c.positions},
                {"max_position", c.max_position},
                {"max_abs", num(c.max_abs)},
                {"max_rho", num(c.max_rho)},
                {"max_ulp_error", num(c.max_ulp_error)},
                {"max_ulp_distance", c.max_ulp_distance},
                {"pct_correctly_rounded", num(c.pct_correctly_rounded)},
                {"pct_faithful", num(c.pct_faithful)},
                {"ulp_histogram", c.ulp_histogram},
                {"worst",
                 {{"position", w.position},
                  {"index", w.index},
                  {"component", w.component},
                  {"got", num(w.got)},
                  {"exact", num(w.exact)},
                  {"got_hex", w.got_hex},
                  {"exact_hex", w.exact_hex},
                  {"bound", num(w.bound)},
                  {"rho", num(w.rho)},
                  {"intermediates", steps(w)}}},
                {"octaves", oct}};
    if (r.certification) certificate_check_fields(c, row);
    checks.push_back(std::move(row));
  }
  j["checks"] = checks;
  json inv = json::array();
  for (const auto& s : r.invariance) {
    inv.push_back({{"index", s.index},
                   {"spec_name", s.spec_name},
                   {"strategy", s.strategy},
                   {"dtype", s.dtype},
                   {"offset", s.offset},
                   {"position", s.position},
                   {"max_drift", nums(s.max_drift)}});
  }
  j["invariance"] = inv;
  json wl = json::array();
  for (const auto& s : r.wavelengths) {
    wl.push_back({{"index", s.index},
                  {"spec_name", s.spec_name},
                  {"scaled", nums(s.scaled)},
                  {"plain", nums(s.plain)}});
  }
  j["wavelengths"] = wl;
  j["notes"] = r.notes;
  if (r.certification) j = certification_fields(*r.certification, std::move(j));
  // Paths and messages come from outside (a file name need not be UTF-8): never a JSON exception.
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

results from_json(std::string_view text, const std::string& source) {
  // Read with std::map objects after a linear check of the nesting: ordered_json's objects are
  // vectors searched on every insertion, so a hostile report.json of n keys took O(n²).
  using json = nlohmann::json;
  json_limits limits;
  limits.max_depth = 16;
  limits.too_deep = [&](int) { throw error(source + ": not a pev report: nested too deeply"); };
  check_json(text, limits);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw error(source + ": not JSON: " + e.what());
  }
  results r;
  try {
    r.schema_version = j.at("schema_version").get<int>();
    if (r.schema_version != kSchemaVersion) {
      throw error(source + ": schema_version " + std::to_string(r.schema_version) +
                  ", this pev reads " + std::to_string(kSchemaVersion));
    }
    const json& p = j.at("provenance");
    provenance& v = r.prov;
    v.pev_version = p.at("pev_version").get<std::string>();
    v.git_revision = p.at("git_revision").get<std::string>();
    v.compiler = p.at("compiler").get<std::string>();
    v.fp_flags = p.at("fp_flags").get<std::string>();
    v.build_flags = p.at("build_flags").get<std::string>();
    v.libc = p.at("libc").get<std::string>();
    v.host = p.at("host").get<std::string>();
    v.cpu = p.at("cpu").get<std::string>();
    v.mpfr_precision_bits = p.at("mpfr_precision_bits").get<unsigned>();
    v.reference = p.at("reference").get<std::string>();
    v.reference_values = p.at("reference_values").get<std::uint64_t>();
    v.reference_fallbacks = p.at("reference_fallbacks").get<std::uint64_t>();
    v.seed = p.at("seed").get<std::uint64_t>();
    v.suite = p.at("suite").get<std::string>();
    v.max_position = p.at("max_position").get<std::int64_t>();
    v.exhaustive = p.at("exhaustive").get<bool>();
    v.dense_below = p.at("dense_below").get<std::int64_t>();
    v.samples_per_octave = p.at("samples_per_octave").get<int>();
    v.search_radius = p.at("search_radius").get<int>();
    v.shard_index = p.at("shard_index").get<int>();
    v.shard_count = p.at("shard_count").get<int>();
    v.merged_shards = p.at("merged_shards").get<std::vector<int>>();
    v.generated_at = p.at("generated_at").get<std::string>();
    if (j.contains("specs")) {
      for (const json& s : j.at("specs")) {
        r.specs.push_back({s.at("name").get<std::string>(), s.at("family").get<std::string>(),
                           s.at("spec").get<std::string>(), s.at("source").get<std::string>()});
      }
    }
    for (const json& c : j.at("checks")) {
      check k;
      k.index = c.at("index").get<std::int64_t>();
      k.id = c.at("id").get<std::string>();
      k.spec_name = c.at("spec_name").get<std::string>();
      k.spec = c.at("spec").get<std::string>();
      k.family = c.at("family").get<std::string>();
      k.strategy = c.at("strategy").get<std::string>();
      k.dtype = c.at("dtype").get<std::string>();
      k.bound_name = c.at("bound").get<std::string>();
      k.note = c.at("note").get<std::string>();
      k.pass = c.at("pass").get<bool>();
      k.values = c.at("values").get<std::uint64_t>();
      k.positions = c.at("positions").get<std::uint64_t>();
      k.max_position = c.at("max_position").get<std::int64_t>();
      k.max_abs = to_num(c.at("max_abs"));
      k.max_rho = to_num(c.at("max_rho"));
      k.max_ulp_error = to_num(c.at("max_ulp_error"));
      k.max_ulp_distance = c.at("max_ulp_distance").get<std::uint64_t>();
      k.pct_correctly_rounded = to_num(c.at("pct_correctly_rounded"));
      k.pct_faithful = to_num(c.at("pct_faithful"));
      k.ulp_histogram = c.at("ulp_histogram").get<std::array<std::uint64_t, kUlpBuckets>>();
      const json& w = c.at("worst");
      k.worst = {w.at("position").get<std::int64_t>(),
                 w.at("index").get<std::int64_t>(),
                 w.at("component").get<std::string>(),
                 to_num(w.at("got")),
                 to_num(w.at("exact")),
                 to_num(w.at("bound")),
                 to_num(w.at("rho")),
                 w.at("got_hex").get<std::string>(),
                 w.at("exact_hex").get<std::string>(),
                 {},
                 0};
      for (const json& st : w.at("intermediates")) {
        k.worst.intermediates.push_back({st.at("name").get<std::string>(),
                                         st.at("got_hex").get<std::string>(),
                                         st.at("exact_hex").get<std::string>()});
      }
      for (const json& o : c.at("octaves")) {
        k.octaves.push_back({o.at("lo").get<std::int64_t>(), o.at("hi").get<std::int64_t>(),
                             o.at("positions").get<std::uint64_t>(),
                             o.at("values").get<std::uint64_t>(), to_num(o.at("max_abs")),
                             to_num(o.at("p99_abs")), to_num(o.at("max_bound")),
                             to_num(o.at("max_rho")), to_nums(o.at("rho_by_index"))});
      }
      r.checks.push_back(std::move(k));
    }
    for (const json& s : j.at("invariance")) {
      invariance_series v2;
      v2.index = s.at("index").get<std::int64_t>();
      v2.spec_name = s.at("spec_name").get<std::string>();
      v2.strategy = s.at("strategy").get<std::string>();
      v2.dtype = s.at("dtype").get<std::string>();
      v2.offset = s.at("offset").get<std::int64_t>();
      v2.position = s.at("position").get<std::vector<std::int64_t>>();
      v2.max_drift = to_nums(s.at("max_drift"));
      r.invariance.push_back(std::move(v2));
    }
    for (const json& s : j.at("wavelengths")) {
      wavelength_series w;
      w.index = s.at("index").get<std::int64_t>();
      w.spec_name = s.at("spec_name").get<std::string>();
      w.scaled = to_nums(s.at("scaled"));
      w.plain = to_nums(s.at("plain"));
      r.wavelengths.push_back(std::move(w));
    }
    r.notes = j.at("notes").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    throw error(source + ": not a pev report: " + e.what());
  }
  return r;
}

}  // namespace pev::report

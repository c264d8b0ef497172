// report.json (json.h).

#include "pev/report/json.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <utility>

#include "json_field.h"
#include "pev/core/error.h"
#include "pev/core/hex.h"
#include "pev/core/json_check.h"
#include "pev/core/names.h"
#include "pev/core/text.h"
#include "pev/report/shards.h"

namespace pev::report {
namespace {

using json = nlohmann::ordered_json;
using detail::bad_field;
using detail::field;

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

/// A count (values, rows): nlohmann's get<std::uint64_t> turns a negative number into 2^64 minus
/// it, so that a certificate edited to count -1 values read as 18446744073709551615.
std::uint64_t count_of(const nlohmann::json& j) {
  if (!j.is_number_unsigned()) {
    throw nlohmann::json::type_error::create(
        302, "a count is " + j.dump() + ", not a non-negative integer", &j);
  }
  return j.get<std::uint64_t>();
}
template <std::size_t N>
std::array<std::uint64_t, N> counts_of(const nlohmann::json& j) {
  if (!j.is_array() || j.size() != N) {
    throw nlohmann::json::type_error::create(302, "expected " + std::to_string(N) + " counts", &j);
  }
  std::array<std::uint64_t, N> a{};
  for (std::size_t i = 0; i < N; ++i) a[i] = count_of(j[i]);
  return a;
}
std::vector<std::uint64_t> counts_of(const nlohmann::json& j) {
  std::vector<std::uint64_t> v;
  for (const auto& x : j) v.push_back(count_of(x));
  return v;
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

json worst_json(const worst_case& w) {
  return {{"position", w.position},   {"index", w.index},      {"component", w.component},
          {"got", num(w.got)},        {"exact", num(w.exact)}, {"got_hex", w.got_hex},
          {"exact_hex", w.exact_hex}, {"bound", num(w.bound)}, {"rho", num(w.rho)},
          {"intermediates", steps(w)}};
}

/// A worst case with its ulp error (a certificate's checks and a shard's figure state; a report's
/// rows leave it out).
json worst_with_ulp_error(const worst_case& w) {
  json j = worst_json(w);
  j["ulp_error"] = num(w.ulp_error);
  return j;
}

json histogram_json(const figure_state::histogram& h) {
  json bins = json::array();
  for (const auto& [b, n] : h.bins) bins.push_back({b, n});
  return {{"count", h.count}, {"zeros", h.zeros}, {"bins", bins}};
}

/// A shard's figures (figure_state): every accumulator, histogram bins sparse.
json state_json(const figure_state& s) {
  json oct = json::array();
  for (const auto& o : s.octaves) {
    oct.push_back({{"positions", o.positions},
                   {"values", o.values},
                   {"max_abs", num(o.max_abs)},
                   {"max_bound", num(o.max_bound)},
                   {"max_rho", num(o.max_rho)},
                   {"argmax", o.argmax},
                   {"rho_by_index", nums(o.rho_by_index)},
                   {"histogram", histogram_json(o.hist)}});
  }
  return {{"max_position", s.max_position},
          {"indices", s.indices},
          {"bounds", s.bounds},
          {"octaves", oct},
          {"max_pos", s.max_pos},
          {"values", s.values},
          {"correctly_rounded", s.correctly_rounded},
          {"faithful", s.faithful},
          {"non_finite", s.non_finite},
          {"max_ulp_distance", s.max_ulp_distance},
          {"max_abs", num(s.max_abs)},
          {"max_ulp_error", num(s.max_ulp_error)},
          {"max_rho", nums(s.max_rho)},
          {"max_bound", nums(s.max_bound)},
          {"ladder_rho", nums(s.ladder_rho)},
          {"vacuous", s.vacuous},
          {"first_vacuous", s.first_vacuous},
          {"ulp_histogram", s.ulp_histogram},
          {"worst", worst_with_ulp_error(s.worst)},
          {"worst_ulp", num(s.worst_ulp)},
          {"rows", s.rows ? json{{"first", s.rows->first},
                                 {"end", s.rows->end},
                                 {"total", s.rows->total},
                                 {"width", s.rows->width},
                                 {"digest", s.rows->digest},
                                 {"dump_digest", s.rows->dump_digest}}
                          : json(nullptr)}};
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
  j["libm_claimed"] = c.libm_claimed;
  j["claim_unchecked"] = c.claim_unchecked.empty() ? json(nullptr) : json(c.claim_unchecked);
  j["live"] = c.live;
  j["grade"] = to_string(c.result);
  j["certified"] = c.exit_code() == 0;
  const library_figures& lib = c.library;
  auto opt = [](const std::optional<double>& v) { return v ? num(*v) : json(nullptr); };
  j["library"] = {{"assumed", lib.assumed},
                  {"max_trig_ulp", opt(lib.max_trig_ulp)},
                  {"trig_ulp", opt(lib.trig_ulp)},
                  {"trig_abs", opt(lib.trig_abs)},
                  {"pow_ulp", opt(lib.pow_ulp)},
                  {"trig_class", lib.trig_class},
                  {"angles", lib.angles},
                  {"note", lib.note},
                  {"measured_on", lib.measured_on},
                  {"trig_ulp_at_least", opt(lib.trig_ulp_at_least)},
                  {"trig_abs_at_least", opt(lib.trig_abs_at_least)},
                  {"trig_slope_at_least", opt(lib.trig_slope_at_least)},
                  {"outside_class", lib.outside_class}};
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
                      {"replayed_on", c.why->replayed_on},
                      {"recipe_vacuous", c.why->vacuous},
                      {"findings", c.why->findings},
                      {"explain_threshold_rho", c.explain_threshold},
                      {"explanations", ex}};
  }
  j["seconds"] = c.seconds;  // wall time: differs between identical runs
  if (c.shard) {
    j["shard"] = {{"index", c.shard->index},
                  {"count", c.shard->count},
                  {"options", c.shard->options},
                  {"partial", c.exit_code() == kExitPartial}};
  }
  if (!c.merged_from.empty()) {
    json from = json::array();
    for (const auto& m : c.merged_from) from.push_back({{"index", m.index}, {"sha256", m.sha256}});
    j["merged_from"] = from;
  }
  if (c.inputs_reverified) j["inputs_reverified"] = *c.inputs_reverified;
  if (!c.command.empty()) j["command"] = {{"args", c.command}, {"cwd", c.cwd}};
  if (!c.layers.empty()) {
    json layers = json::array();
    for (const layer_result& l : c.layers) {
      layers.push_back({{"index", l.index},
                        {"site", l.site},
                        {"type", l.type},
                        {"spec", l.spec},
                        {"rule", l.rule},
                        {"read", l.read},
                        {"checks", l.checks},
                        {"grade", to_string(l.result)},
                        {"max_rho", num(l.max_rho)},
                        {"named", l.named ? json(*l.named) : json(nullptr)},
                        {"findings", l.findings}});
    }
    j["model"] = {{"model_type", c.model}, {"layers", layers}};
  }
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
  if (c.replayed) {
    const check::recipe_replay& r = *c.replayed;
    const auto by_rung = [](const std::map<std::string, std::vector<double>>& m) {
      json o = json::object();
      for (const auto& [name, v] : m) o[name] = nums(v);
      return o;
    };
    json rr = json::object();
    for (const auto& [name, v] : r.rho) rr[name] = num(v);
    json nf = json::object();
    for (const auto& [name, v] : r.not_followed) nf[name] = v;
    j["recipe_replay"] = {{"rho", rr},
                          {"not_followed", nf},
                          {"frequencies", r.frequencies},
                          {"octave_bound", by_rung(r.octave_bound)},
                          {"octave_rho", by_rung(r.octave_rho)},
                          {"trig_at_least", num(r.trig_at_least)},
                          {"trig_at_least_ulp", num(r.trig_at_least_ulp)},
                          {"trig_slope_at_least", num(r.trig_slope_at_least)},
                          {"exact_at_least", num(r.exact_at_least)},
                          {"exact_at_least_ulp", num(r.exact_at_least_ulp)},
                          {"exact_slope_at_least", num(r.exact_slope_at_least)}};
  }
  if (c.state) j["figures_state"] = state_json(*c.state);
}

worst_case worst_from(const nlohmann::json& w) {
  worst_case k{field<std::int64_t>(w, "position"),
               field<std::int64_t>(w, "index"),
               field<std::string>(w, "component"),
               to_num(w.at("got")),
               to_num(w.at("exact")),
               to_num(w.at("bound")),
               to_num(w.at("rho")),
               field<std::string>(w, "got_hex"),
               field<std::string>(w, "exact_hex"),
               {},
               0};
  for (const auto& st : w.at("intermediates")) {
    k.intermediates.push_back({field<std::string>(st, "name"), field<std::string>(st, "got_hex"),
                               field<std::string>(st, "exact_hex")});
  }
  if (w.contains("ulp_error")) k.ulp_error = to_num(w.at("ulp_error"));
  return k;
}

figure_state::histogram histogram_from(const nlohmann::json& j) {
  figure_state::histogram h;
  h.count = count_of(j.at("count"));
  h.zeros = count_of(j.at("zeros"));
  for (const auto& b : j.at("bins")) {
    h.bins.emplace_back(b.at(0).get<std::uint32_t>(), count_of(b.at(1)));
  }
  return h;
}

figure_state state_from(const nlohmann::json& j) {
  figure_state s;
  s.max_position = field<std::int64_t>(j, "max_position");
  s.indices = field<std::int64_t>(j, "indices");
  s.bounds = field<std::vector<std::string>>(j, "bounds");
  for (const auto& o : j.at("octaves")) {
    s.octaves.push_back({count_of(o.at("positions")), count_of(o.at("values")),
                         to_num(o.at("max_abs")), to_num(o.at("max_bound")),
                         to_num(o.at("max_rho")), field<std::int64_t>(o, "argmax"),
                         to_nums(o.at("rho_by_index")), histogram_from(o.at("histogram"))});
  }
  s.max_pos = field<std::int64_t>(j, "max_pos");
  s.values = count_of(j.at("values"));
  s.correctly_rounded = count_of(j.at("correctly_rounded"));
  s.faithful = count_of(j.at("faithful"));
  s.non_finite = count_of(j.at("non_finite"));
  s.max_ulp_distance = count_of(j.at("max_ulp_distance"));
  s.max_abs = to_num(j.at("max_abs"));
  s.max_ulp_error = to_num(j.at("max_ulp_error"));
  s.max_rho = to_nums(j.at("max_rho"));
  s.max_bound = to_nums(j.at("max_bound"));
  s.ladder_rho = to_nums(j.at("ladder_rho"));
  s.vacuous = counts_of(j.at("vacuous"));
  s.first_vacuous = field<std::vector<std::int64_t>>(j, "first_vacuous");
  s.ulp_histogram = counts_of<kUlpBuckets>(j.at("ulp_histogram"));
  s.worst = worst_from(j.at("worst"));
  s.worst_ulp = to_num(j.at("worst_ulp"));
  if (j.contains("rows") && !j.at("rows").is_null()) {
    const auto& r = j.at("rows");
    s.rows = figure_state::rows_of{
        field<std::int64_t>(r, "first"), field<std::int64_t>(r, "end"),
        field<std::int64_t>(r, "total"), field<std::int64_t>(r, "width"),
        field<std::string>(r, "digest"), field<std::string>(r, "dump_digest")};
  }
  return s;
}

/// A double written by pev::hex ("0x1.8p+1", "-inf", "nan").
double from_hex(const std::string& text, const std::string& source) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    throw error(source + ": not a pev certificate: '" + text + "' is not a hexadecimal number");
  }
  return v;
}

grade grade_from(const std::string& name, const std::string& source) {
  if (const auto g = parse_grade(name)) return *g;
  throw error(source + ": not a pev certificate: unknown grade " + quoted_text(name));
}

std::optional<double> opt_num(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return to_num(j);
}

/// The fields certificate_check_fields writes.
void certificate_check_from(const nlohmann::json& c, check& k, const std::string& source) {
  k.source = field<std::string>(c, "source");
  k.correctly_rounded = count_of(c.at("correctly_rounded"));
  k.faithful = count_of(c.at("faithful"));
  k.non_finite = count_of(c.at("non_finite"));
  for (const auto& [name, v] : c.at("recipes").items()) k.recipe_rho[name] = to_num(v);
  for (const auto& [name, v] : c.at("ladder").items()) k.ladder_rho[name] = to_num(v);
  for (const auto& [name, v] : c.at("vacuous").items()) {
    k.vacuous[name] = {count_of(v.at("values")), field<std::int64_t>(v, "first_position")};
  }
  k.drift_free_bound = to_num(c.at("drift_free_bound"));
  if (!c.at("grade").is_null()) k.best = grade_from(field<std::string>(c, "grade"), source);
  if (!c.at("property").is_null()) k.property = field<std::string>(c, "property");
  if (k.property == "failed") {
    k.counterexample = field<std::string>(c, "counterexample");
    k.replay = field<std::string>(c, "replay");
  }
  k.worst.ulp_error = to_num(c.at("worst").at("ulp_error"));
  if (c.contains("recipe_replay")) {
    const nlohmann::json& rr = c.at("recipe_replay");
    check::recipe_replay r;
    for (const auto& [name, v] : rr.at("rho").items()) r.rho[name] = to_num(v);
    for (const auto& [name, v] : rr.at("not_followed").items()) {
      r.not_followed[name] = count_of(v);
    }
    r.frequencies = field<std::string>(rr, "frequencies");
    for (const auto& [name, v] : rr.at("octave_bound").items()) r.octave_bound[name] = to_nums(v);
    for (const auto& [name, v] : rr.at("octave_rho").items()) r.octave_rho[name] = to_nums(v);
    r.trig_at_least = to_num(rr.at("trig_at_least"));
    r.trig_at_least_ulp = to_num(rr.at("trig_at_least_ulp"));
    r.trig_slope_at_least = to_num(rr.at("trig_slope_at_least"));
    r.exact_at_least = to_num(rr.at("exact_at_least"));
    r.exact_at_least_ulp = to_num(rr.at("exact_at_least_ulp"));
    r.exact_slope_at_least = to_num(rr.at("exact_slope_at_least"));
    k.replayed = r;
  }
  if (c.contains("figures_state")) k.state = state_from(c.at("figures_state"));
}

// A recorded shard I of N, range-checked before it is narrowed to int: a count of 2^40 read as
// int was 0 ("1 of 0 shards given"). `where` names the keys ("shard.index", "shard.count").
std::pair<int, int> shard_from(const nlohmann::json& index, const nlohmann::json& count,
                               const std::pair<const char*, const char*>& where,
                               const std::string& source) {
  const auto n = count.get<std::int64_t>();
  const auto i = index.get<std::int64_t>();
  if (n < 1 || n > kMaxShards) {
    throw error(fmt::format("{}: {} = {} is not a shard count (1 ... 2^20 = {}, pev's limit)",
                            source, where.second, count.dump(), kMaxShards));
  }
  if (i < 0 || i >= n) {
    throw error(fmt::format("{}: {} = {} is not a shard of {} = {} (0 <= I < N)", source,
                            where.first, index.dump(), where.second, n));
  }
  return {static_cast<int>(i), static_cast<int>(n)};
}

/// The fields certification_fields writes.
certification certification_from(const nlohmann::json& j, const std::string& source) {
  certification c;
  c.spec = field<std::string>(j, "spec");
  c.held_to = field<std::string>(j, "held_to");
  c.what = field<std::string>(j, "what");
  for (const auto& l : j.at("layouts")) {
    c.layouts.push_back({field<std::string>(l, "role"), field<std::string>(l, "layout"),
                         field<std::string>(l, "tensors"), field<std::string>(l, "read_as"),
                         field<std::string>(l, "decided_by")});
  }
  for (const auto& f : j.at("inputs")) {
    c.inputs.push_back({field<std::string>(f, "path"), field<std::string>(f, "format"),
                        field<std::string>(f, "sha256")});
  }
  const auto& p = j.at("positions");
  c.positions = count_of(p.at("count"));
  c.min_position = field<std::int64_t>(p, "min");
  c.max_position = field<std::int64_t>(p, "max");
  c.exhaustive = field<bool>(p, "exhaustive");
  if (!j.at("claimed_recipe").is_null()) c.claimed_recipe = field<std::string>(j, "claimed_recipe");
  c.claim_holds = field<bool>(j, "claim_holds");
  c.libm_claimed = j.value("libm_claimed", false);
  if (j.contains("claim_unchecked") && !j.at("claim_unchecked").is_null()) {
    c.claim_unchecked = field<std::string>(j, "claim_unchecked");
  }
  c.live = field<bool>(j, "live");
  c.result = grade_from(field<std::string>(j, "grade"), source);
  const auto& lib = j.at("library");
  c.library.assumed = field<std::string>(lib, "assumed");
  c.library.max_trig_ulp = opt_num(lib.at("max_trig_ulp"));
  c.library.trig_ulp = opt_num(lib.at("trig_ulp"));
  c.library.trig_abs = opt_num(lib.at("trig_abs"));
  c.library.pow_ulp = opt_num(lib.at("pow_ulp"));
  c.library.trig_class = field<std::string>(lib, "trig_class");
  c.library.angles = field<std::string>(lib, "angles");
  c.library.note = field<std::string>(lib, "note");
  c.library.measured_on = lib.value("measured_on", std::string());
  for (const auto& [name, v] : {std::pair{"trig_ulp_at_least", &c.library.trig_ulp_at_least},
                                std::pair{"trig_abs_at_least", &c.library.trig_abs_at_least},
                                std::pair{"trig_slope_at_least", &c.library.trig_slope_at_least}}) {
    if (lib.contains(name)) *v = opt_num(lib.at(name));
  }
  c.library.outside_class = lib.value("outside_class", std::string());
  if (!j.at("diagnosis").is_null()) {
    const auto& d = j.at("diagnosis");
    diagnosis& why = c.why.emplace();
    for (const auto& m : d.at("first_mismatches")) {
      why.first.push_back({field<std::string>(m, "check"), field<std::int64_t>(m, "position"),
                           field<std::int64_t>(m, "index"),
                           from_hex(field<std::string>(m, "got"), source),
                           from_hex(field<std::string>(m, "want"), source), to_num(m.at("bound"))});
    }
    why.max_rho_without = to_num(d.at("max_rho_without_explanation"));
    if (!d.at("named").is_null()) why.named = field<std::string>(d, "named");
    why.indistinguishable = field<std::vector<std::string>>(d, "indistinguishable");
    why.findings = field<std::vector<std::string>>(d, "findings");
    why.replayed_on = d.value("replayed_on", std::string());
    why.vacuous = d.value("recipe_vacuous", std::string());
    c.explain_threshold = to_num(d.at("explain_threshold_rho"));
    for (const auto& x : d.at("explanations")) {
      why.explanations.push_back({field<std::string>(x, "mutant"),
                                  field<std::string>(x, "description"), to_num(x.at("max_rho")),
                                  to_num(x.at("rms_rho")), field<bool>(x, "explains"), 0});
    }
  }
  c.seconds = to_num(j.at("seconds"));
  if (j.contains("shard")) {
    const auto& sh = j.at("shard");
    const auto [index, count] =
        shard_from(sh.at("index"), sh.at("count"), {"shard.index", "shard.count"}, source);
    c.shard = certification::shard_of{index, count, field<std::string>(sh, "options")};
  }
  if (j.contains("merged_from")) {
    for (const auto& m : j.at("merged_from")) {
      c.merged_from.push_back({field<int>(m, "index"), field<std::string>(m, "sha256")});
    }
  }
  if (j.contains("inputs_reverified")) c.inputs_reverified = field<bool>(j, "inputs_reverified");
  if (j.contains("command")) {
    c.command = j.at("command").at("args").get<std::vector<std::string>>();
    c.cwd = j.at("command").at("cwd").get<std::string>();
  }
  if (j.contains("model")) {
    const auto& m = j.at("model");
    c.model = field<std::string>(m, "model_type");
    for (const auto& x : m.at("layers")) {
      layer_result l;
      l.index = field<std::int64_t>(x, "index");
      l.site = field<std::string>(x, "site");
      l.type = field<std::string>(x, "type");
      l.spec = field<std::string>(x, "spec");
      l.rule = field<std::string>(x, "rule");
      l.read = field<std::string>(x, "read");
      l.checks = field<std::vector<std::string>>(x, "checks");
      l.result = grade_from(field<std::string>(x, "grade"), source);
      l.max_rho = to_num(x.at("max_rho"));
      if (!x.at("named").is_null()) l.named = field<std::string>(x, "named");
      l.findings = field<std::vector<std::string>>(x, "findings");
      c.layers.push_back(std::move(l));
    }
  }
  return c;
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
                {"worst", worst_json(c.worst)},
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
  if (!r.plots_skipped.empty()) {
    json skipped = json::array();
    for (const auto& sp : r.plots_skipped)
      skipped.push_back({{"file", sp.file}, {"reason", sp.reason}});
    j["plots_skipped"] = skipped;
  }
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
    throw error(source + ": not JSON: " + json_error_text(e.what()));
  }
  results r;
  try {
    r.schema_version = field<int>(j, "schema_version");
    if (r.schema_version != kSchemaVersion) {
      throw error(source + ": schema_version " + std::to_string(r.schema_version) +
                  ", this pev reads " + std::to_string(kSchemaVersion));
    }
    // A certificate (certificate.json) carries its certification block at the top level.
    const bool certificate = j.contains("held_to");
    const json& p = j.at("provenance");
    provenance& v = r.prov;
    v.pev_version = field<std::string>(p, "pev_version");
    v.git_revision = field<std::string>(p, "git_revision");
    v.compiler = field<std::string>(p, "compiler");
    v.fp_flags = field<std::string>(p, "fp_flags");
    v.build_flags = field<std::string>(p, "build_flags");
    v.libc = field<std::string>(p, "libc");
    v.host = field<std::string>(p, "host");
    v.cpu = field<std::string>(p, "cpu");
    v.mpfr_precision_bits = field<unsigned>(p, "mpfr_precision_bits");
    v.reference = field<std::string>(p, "reference");
    v.reference_values = count_of(p.at("reference_values"));
    v.reference_fallbacks = count_of(p.at("reference_fallbacks"));
    v.seed = count_of(p.at("seed"));
    v.suite = field<std::string>(p, "suite");
    v.max_position = field<std::int64_t>(p, "max_position");
    v.exhaustive = field<bool>(p, "exhaustive");
    v.dense_below = field<std::int64_t>(p, "dense_below");
    v.samples_per_octave = field<int>(p, "samples_per_octave");
    v.search_radius = field<int>(p, "search_radius");
    std::tie(v.shard_index, v.shard_count) =
        shard_from(p.at("shard_index"), p.at("shard_count"),
                   {"provenance.shard_index", "provenance.shard_count"}, source);
    v.merged_shards = field<std::vector<int>>(p, "merged_shards");
    v.generated_at = field<std::string>(p, "generated_at");
    if (j.contains("specs")) {
      for (const json& s : j.at("specs")) {
        r.specs.push_back({field<std::string>(s, "name"), field<std::string>(s, "family"),
                           field<std::string>(s, "spec"), field<std::string>(s, "source")});
      }
    }
    for (const json& c : j.at("checks")) {
      check k;
      k.index = field<std::int64_t>(c, "index");
      k.id = field<std::string>(c, "id");
      k.spec_name = field<std::string>(c, "spec_name");
      k.spec = field<std::string>(c, "spec");
      k.family = field<std::string>(c, "family");
      k.strategy = field<std::string>(c, "strategy");
      k.dtype = field<std::string>(c, "dtype");
      k.bound_name = field<std::string>(c, "bound");
      k.note = field<std::string>(c, "note");
      k.pass = field<bool>(c, "pass");
      k.values = count_of(c.at("values"));
      k.positions = count_of(c.at("positions"));
      k.max_position = field<std::int64_t>(c, "max_position");
      k.max_abs = to_num(c.at("max_abs"));
      k.max_rho = to_num(c.at("max_rho"));
      k.max_ulp_error = to_num(c.at("max_ulp_error"));
      k.max_ulp_distance = count_of(c.at("max_ulp_distance"));
      k.pct_correctly_rounded = to_num(c.at("pct_correctly_rounded"));
      k.pct_faithful = to_num(c.at("pct_faithful"));
      k.ulp_histogram = counts_of<kUlpBuckets>(c.at("ulp_histogram"));
      k.worst = worst_from(c.at("worst"));
      for (const json& o : c.at("octaves")) {
        k.octaves.push_back({field<std::int64_t>(o, "lo"), field<std::int64_t>(o, "hi"),
                             count_of(o.at("positions")), count_of(o.at("values")),
                             to_num(o.at("max_abs")), to_num(o.at("p99_abs")),
                             to_num(o.at("max_bound")), to_num(o.at("max_rho")),
                             to_nums(o.at("rho_by_index"))});
      }
      if (certificate) certificate_check_from(c, k, source);
      r.checks.push_back(std::move(k));
    }
    for (const json& s : j.at("invariance")) {
      invariance_series v2;
      v2.index = field<std::int64_t>(s, "index");
      v2.spec_name = field<std::string>(s, "spec_name");
      v2.strategy = field<std::string>(s, "strategy");
      v2.dtype = field<std::string>(s, "dtype");
      v2.offset = field<std::int64_t>(s, "offset");
      v2.position = field<std::vector<std::int64_t>>(s, "position");
      v2.max_drift = to_nums(s.at("max_drift"));
      r.invariance.push_back(std::move(v2));
    }
    for (const json& s : j.at("wavelengths")) {
      wavelength_series w;
      w.index = field<std::int64_t>(s, "index");
      w.spec_name = field<std::string>(s, "spec_name");
      w.scaled = to_nums(s.at("scaled"));
      w.plain = to_nums(s.at("plain"));
      r.wavelengths.push_back(std::move(w));
    }
    r.notes = field<std::vector<std::string>>(j, "notes");
    if (j.contains("plots_skipped")) {
      for (const json& sp : j.at("plots_skipped")) {
        r.plots_skipped.push_back(
            {field<std::string>(sp, "file"), field<std::string>(sp, "reason")});
      }
    }
    if (certificate) r.certification = certification_from(j, source);
  } catch (const json::exception& e) {
    throw error(source + ": not a pev report: " + json_error_text(e.what()));
  } catch (const bad_field& e) {
    throw error(source + ": not a pev report: " + e.what());
  }
  return r;
}

}  // namespace pev::report

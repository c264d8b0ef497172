// The property suites (pev::prop) on a live implementation, as certificate checks: every property
// of the claimed family that applies to the claimed accuracy, with RapidCheck shrinking; a failing
// property's shrunk counterexample and the pev command line that replays it go into its check.
// Nothing is printed while they run: the certificate says everything.

#include "pev/app/properties.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <string>
#include <unordered_set>
#include <vector>

#include "pev/core/error.h"
#include "pev/prop/properties.h"
#include "pev/spec/spec.h"

namespace pev::app {
namespace {

std::string shell_word(const std::string& a) {
  const bool plain = !a.empty() && a.find_first_not_of(
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789_./:=,+-@%") == std::string::npos;
  if (plain) return a;
  std::string o = "'";
  for (char c : a) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

/// The command that replays this run's properties: this `pev certify` command as the user gave it
/// (named `pev`, not the path of the binary), with --seed and --property-cases set to what the
/// properties used.
std::string replay_command(std::uint64_t seed, int cases) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t a = 0; a < raw.size();) {
    const std::size_t b = raw.find('\0', a);
    args.push_back(raw.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  std::string cmd = "pev";
  if (args.size() < 2) {
    cmd += " certify …";
  } else {
    for (std::size_t k = 1; k < args.size(); ++k) {
      const std::string& a = args[k];
      if (a == "--seed" || a == "--property-cases") {
        ++k;  // and its value
        continue;
      }
      if (a.rfind("--seed=", 0) == 0 || a.rfind("--property-cases=", 0) == 0) continue;
      cmd += " " + shell_word(a);
    }
  }
  return cmd + fmt::format(" --seed {} --property-cases {}", seed, cases);
}

/// A failed property's description without what only a pev developer can use: RapidCheck's
/// "source/file.cpp:LINE:" and the assertion macro's text that follow it (a build path and code
/// the user does not have); what the property says about the values is kept.
std::string user_description(const std::string& d) {
  std::string rest = d;
  const std::size_t eol = rest.find('\n');
  const std::string first = rest.substr(0, eol);
  const std::size_t colon =
      first.size() >= 2 ? first.rfind(':', first.size() - 2) : std::string::npos;
  const bool location = eol != std::string::npos && !first.empty() && first.back() == ':' &&
                        colon != std::string::npos && colon + 1 < first.size() - 1 &&
                        first.find_first_not_of("0123456789", colon + 1) == first.size() - 1;
  if (location) {
    rest = rest.substr(eol + 1);
    const std::size_t macro = rest.find('\n');  // RC_FAIL(…), RC_ASSERT(…)
    rest = macro == std::string::npos ? std::string() : rest.substr(macro + 1);
  }
  const std::size_t start = rest.find_first_not_of('\n');
  if (start == std::string::npos) return d;  // nothing else to say: keep it all
  rest = rest.substr(start);
  while (!rest.empty() && rest.back() == '\n') rest.pop_back();
  return rest;
}

/// "  type: value" lines, without the indentation.
std::string trimmed_lines(const std::string& text) {
  std::string out;
  std::size_t a = 0;
  while (a < text.size()) {
    std::size_t b = text.find('\n', a);
    if (b == std::string::npos) b = text.size();
    const std::string line = text.substr(a, b - a);
    const std::size_t start = line.find_first_not_of(' ');
    if (start != std::string::npos) out += line.substr(start) + "\n";
    a = b + 1;
  }
  return out;
}

/// Whether `im` serves the generated spec `e`: asked for position 0 (a spec it refuses, or fails
/// for, is discarded by the property, not failed).
bool probe(const impl::live_implementation& im, const spec::encoding& e) {
  try {
    const auto x = im.rebind(e);
    const std::vector<std::int64_t> p0 = {0};
    if (const auto* r = std::get_if<spec::rope>(&e)) {
      if (x->supports(impl::output::rope_table, dtype::fp32)) {
        std::vector<float> c(static_cast<std::size_t>(r->pairs())), sn(c.size());
        x->rope_table(p0, r->stateful() ? std::optional<std::int64_t>(1) : std::nullopt, c, sn);
      }
      return true;
    }
    if (const auto* sp = std::get_if<spec::sinusoidal>(&e)) {
      std::vector<float> v(static_cast<std::size_t>(sp->d_model));
      x->sinusoidal_pe(p0, v);
      return true;
    }
    return false;
  } catch (const error&) {
    return false;
  }
}

}  // namespace

std::vector<certify::check> live_property_checks(const impl::live_implementation& im,
                                                 const certify::live_options& lo) {
  const std::string family = spec::family_name(im.claimed_spec());
  prop::subject s;
  s.name = im.name();
  s.libm = lo.libm;
  s.make = [&im](const spec::encoding& e) -> std::unique_ptr<impl::implementation> {
    return im.rebind(e);
  };
  // Generated specs the implementation serves: probed with one position (it may support only
  // some rope types or layouts; what it refuses is discarded, not failed). A spec it refused is
  // not probed again: every property draws from the same seed, so the same specs come back
  // (docs/python.md §4.2).
  std::unordered_set<std::string> refused;
  s.accepts = [&im, &refused](const spec::encoding& e) {
    std::string text = spec::to_spec_string(e);
    if (refused.count(text)) return false;
    if (probe(im, e)) return true;
    refused.insert(std::move(text));
    return false;
  };
  // --seed and --property-cases only (not PEV_SEED or RC_PARAMS), so that the replay line holds
  // everything the run depended on; quiet, so that nothing but the certificate reports.
  prop::run_config cfg;
  cfg.seed = lo.seed;
  cfg.max_success = lo.property_cases;
  cfg.quiet = true;
  std::vector<certify::check> out;
  for (const prop::property& p : prop::all_properties()) {
    if (family != p.family || !p.applies(im.claimed_accuracy())) continue;
    const dtype t = p.per_dtype ? lo.type : dtype::fp32;
    const prop::outcome r = prop::check(p, s, t, cfg, "pev-certify/" + im.name());
    certify::check c;
    c.id = std::string("property ") + p.id;
    c.spec_name = "certify";
    c.spec = spec::to_spec_string(im.claimed_spec());
    c.family = family;
    c.source = p.description;
    c.dtype = to_string(t);
    c.values = static_cast<std::uint64_t>(r.num_success);
    switch (r.result) {
      case prop::outcome::status::passed:
        c.best = certify::grade::correctly_rounded;  // a passed property does not lower the grade
        c.correctly_rounded = c.faithful = c.values;
        c.property = "passed";
        break;
      case prop::outcome::status::gave_up:
        c.best = certify::grade::correctly_rounded;
        c.correctly_rounded = c.faithful = c.values;
        c.property = "not applicable";
        c.note = fmt::format(
            "not applicable: gave up after {} cases (the implementation refused "
            "the specs this property generates)",
            r.num_success);
        break;
      case prop::outcome::status::failed:
        if (r.description.find(" is not supported") != std::string::npos) {
          // The property needs an output the implementation does not provide (e.g. the
          // attention factor, or a table for a rope type it does not serve): not applicable.
          c.best = certify::grade::correctly_rounded;
          c.property = "not applicable";
          c.note = "not applicable: " + r.description.substr(r.description.rfind('\n') + 1);
          break;
        }
        c.best = certify::grade::not_certified;
        c.property = "failed";
        c.note = user_description(r.description);
        c.counterexample = trimmed_lines(r.counterexample);
        c.replay = replay_command(cfg.seed, cfg.max_success);
        break;
    }
    c.bound_name = "property: " + c.property;
    c.pass = *c.best != certify::grade::not_certified;
    if (c.values > 0) {
      c.pct_correctly_rounded = c.pct_faithful =
          100.0 * static_cast<double>(c.correctly_rounded) / static_cast<double>(c.values);
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace pev::app

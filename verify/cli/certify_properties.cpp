// The property suites (pev::prop) on a live implementation, as certificate checks: every property
// of the claimed family that applies to the claimed accuracy, with RapidCheck shrinking; a failing
// property's shrunk counterexample and replay line go into its check's note.

#include "certify_properties.h"

#include <fmt/format.h>

#include "pev/core/error.h"
#include "pev/prop/properties.h"

namespace pev::cli {

std::vector<certify::check> live_property_checks(const impl::live_implementation& im,
                                                 const certify::live_options& lo) {
  const std::string family = spec::family_name(im.claimed_spec());
  prop::subject s;
  s.name = im.name();
  s.make = [&im](const spec::encoding& e) -> std::unique_ptr<impl::implementation> {
    return im.rebind(e);
  };
  // Generated specs the implementation serves: probed with one position (it may support only
  // some rope types or layouts; what it refuses is discarded, not failed).
  s.accepts = [&im](const spec::encoding& e) {
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
  };
  prop::run_config cfg = prop::default_config(lo.seed);
  cfg.max_success = lo.property_cases;
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
        c.note = fmt::format("FAILED: {}\n  counterexample: {}\n  replay: {}", r.description,
                             r.counterexample, r.replay);
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

}  // namespace pev::cli

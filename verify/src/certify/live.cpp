// Certification of live implementations (certify.h): pev computes the positions and inputs, asks
// the implementation, and certifies the answers as a dump; then the property suites.

#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "detail.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/core/normal.h"
#include "pev/core/sampling.h"
#include "pev/scalar/traits.h"

namespace pev::certify {
namespace {

// Every position below 4096, then octave samples up to max_position (included), or every
// position with `exhaustive` (pev/core/sampling.h: the same positions on every platform).
std::vector<std::int64_t> live_positions(const live_options& lo) {
  if (lo.max_position < 0) throw error("--max-position must be ≥ 0");
  if (lo.exhaustive && lo.max_position >= (std::int64_t{1} << 26)) {
    throw error("--exhaustive: --max-position must be below 2^26 for a live implementation");
  }
  const std::int64_t end = lo.max_position + 1;
  if (lo.exhaustive) return octave_positions({end, end, 0, lo.seed, true});
  return octave_positions({end, 4096, lo.samples, lo.seed, true});
}

// Asks the implementation for everything it supports and collects it as a dump.
template <class T>
void collect(const spec::encoding& e, const impl::live_implementation& im,
             const std::vector<std::int64_t>& pos, const live_options& lo, dump& d) {
  const auto P = static_cast<std::int64_t>(pos.size());
  const dtype t = dtype_of<T>();
  if (const auto* r = std::get_if<spec::rope>(&e)) {
    std::optional<std::int64_t> seq;
    if (r->stateful()) seq = *std::max_element(pos.begin(), pos.end()) + 1;
    if (im.supports(impl::output::rope_table, t)) {
      std::vector<T> c(static_cast<std::size_t>(P * r->pairs())), s(c.size());
      im.rope_table(pos, seq, std::span<T>(c), std::span<T>(s));
      d.tensors.emplace("cos", io::array::from_values<T>({P, r->pairs()}, c));
      d.tensors.emplace("sin", io::array::from_values<T>({P, r->pairs()}, s));
      d.tensors.emplace("positions", io::array::from_int64({P}, pos));
    }
    if (im.supports(impl::output::inv_freq, dtype::fp32)) {
      d.tensors.emplace("inv_freq", io::array::from_floats({r->pairs()}, im.inv_freq(seq)));
    }
    if (im.supports(impl::output::rope_rotate, t)) {
      // q: 2 heads of seeded standard-normal inputs at up to 512 of the positions, spread.
      std::vector<std::int64_t> qp;
      const std::size_t step = std::max<std::size_t>(1, pos.size() / 512);
      for (std::size_t k = 0; k < pos.size(); k += step) qp.push_back(pos[k]);
      const auto T_ = static_cast<std::int64_t>(qp.size());
      // Drawn from splitmix64 (pev/core/normal.h: the same inputs on every platform), rounded to
      // float and then to T.
      normal_draws normal(lo.seed + 1);
      std::vector<T> in(static_cast<std::size_t>(T_ * 2 * r->head_dim)), out(in.size());
      for (T& v : in) {
        const auto x = static_cast<float>(normal.next());
        if constexpr (std::is_same_v<T, float>) {
          v = x;
        } else {
          v = T(x);
        }
      }
      im.rope_rotate(qp, seq, kernel::heads_view<const T>{in, T_, 2, r->head_dim},
                     kernel::heads_view<T>{out, T_, 2, r->head_dim});
      d.tensors.emplace("q_in", io::array::from_values<T>({T_, 2, r->head_dim}, in));
      d.tensors.emplace("q_out", io::array::from_values<T>({T_, 2, r->head_dim}, out));
      d.tensors.emplace("qk_positions", io::array::from_int64({T_}, qp));
      if (!d.find("positions")) d.tensors.emplace("positions", io::array::from_int64({T_}, qp));
    }
  } else if (const auto* s = std::get_if<spec::sinusoidal>(&e)) {
    if (im.supports(impl::output::sinusoidal_pe, t)) {
      std::vector<T> v(static_cast<std::size_t>(P * s->d_model));
      im.sinusoidal_pe(pos, std::span<T>(v));
      d.tensors.emplace("pe", io::array::from_values<T>({P, s->d_model}, v));
      d.tensors.emplace("positions", io::array::from_int64({P}, pos));
    }
  } else {
    throw error(
        fmt::format("live implementations of the {} family are not supported yet (rope "
                    "and sinusoidal are)",
                    spec::family_name(e)));
  }
}

}  // namespace

certificate failed_certificate(const spec::encoding& e, const std::string& what,
                               std::vector<input_file> inputs,
                               const std::optional<std::string>& recipe, const std::string& source,
                               dtype t, const std::string& note) {
  options held;
  held.recipe = recipe;
  dump used;
  used.files = std::move(inputs);
  certificate cert = detail::certificate_frame(held, used, /*compared=*/false);
  report::certification& z = *cert.certification;
  z.spec = spec::to_spec_string(e);
  const auto* rope = std::get_if<spec::rope>(&e);
  z.held_to =
      detail::held_bound(held, rope != nullptr, !rope || rope->type != spec::rope_type::ggml);
  z.live = true;
  z.what = what;
  cert.checks.push_back(failed_check(e, recipe, source, t, note));
  detail::finish(cert);
  return cert;
}

check failed_check(const spec::encoding& e, const std::optional<std::string>& recipe,
                   const std::string& source, dtype t, const std::string& note) {
  check c;
  c.id = "live";
  c.spec_name = "certify";
  c.spec = spec::to_spec_string(e);
  c.family = spec::family_name(e);
  c.strategy = recipe ? "claims " + *recipe : "dump";
  c.source = source;
  c.dtype = to_string(t);
  c.note = note;
  c.best = grade::not_certified;
  c.bound_name = "the implementation failed";
  return c;
}

certificate certify_live(const spec::encoding& e, const impl::live_implementation& im,
                         const options& o, const live_options& lo) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::int64_t> pos = live_positions(lo);
  dump d;
  // Every file the implementation runs is hashed: a plugin's library (in-process or isolated),
  // and for a command its text and the files it names (its script).
  const std::vector<std::filesystem::path> files = im.files();
  const bool plugin = im.kind().rfind("plugin", 0) == 0;
  if (plugin && !files.empty()) {
    d.files.push_back({files.front().string(), im.kind(), sha256_file(files.front())});
  } else {
    d.files.push_back({im.source(), im.kind(), detail::sha256_text(im.source())});
    for (const auto& f : files) d.files.push_back({f.string(), "exec file", sha256_file(f)});
  }
  // A process that died, hung or broke the protocol already during the greeting is a failed
  // check like one that does so later.
  std::optional<std::string> failure = im.failure();
  if (!failure) {
    try {
      visit_output_float(
          lo.type, [&](auto tag) { collect<typename decltype(tag)::type>(e, im, pos, lo, d); });
    } catch (const error& ex) {
      // The implementation failed (hung, flooded, died, returned an error): a failed check.
      failure = ex.what();
    }
  }
  certificate cert;
  if (failure || d.tensors.empty()) {
    if (!failure) {
      throw error(fmt::format("{} supports none of the outputs certify asks for {} ({})", im.name(),
                              spec::to_spec_string(e), to_string(lo.type)));
    }
    cert = failed_certificate(e, "live implementation " + im.name(), d.files, o.recipe,
                              im.kind() + " " + im.source(), lo.type, *failure);
  } else {
    options o2 = o;
    o2.positions.clear();  // the dump holds its positions
    cert = certify_dump(e, d, o2);
    cert.certification->what = "live " + im.name() + ": " + cert.certification->what;
    cert.certification->live = true;
  }
  cert.prov.seed = lo.seed;
  if (o.shard_count > 1 && !cert.certification->shard) {  // a failure is a shard's too
    cert.prov.shard_index = o.shard_index;
    cert.prov.shard_count = o.shard_count;
    cert.certification->shard =
        report::certification::shard_of{o.shard_index, o.shard_count, run_options(o)};
  }
  // The properties run in shard 0 (docs/design.md §9.3).
  if (!failure && lo.properties && lo.property_checks && detail::whole_checks(o)) {
    live_options with_lib = lo;
    if (!with_lib.libm) with_lib.libm = &detail::contract_libm(o);
    for (check& c : lo.property_checks(im, with_lib)) cert.checks.push_back(std::move(c));
    // One that died or hung during the suites, where a failing call only makes a generated spec
    // "not applicable": a failed check, never a certificate of properties that did not run.
    if (const std::optional<std::string> f = im.failure()) {
      check c = failed_check(e, o.recipe, im.kind() + " " + im.source(), lo.type,
                             *f + " (during the property suites)");
      c.strategy = "properties";
      cert.checks.push_back(std::move(c));
    }
  }
  detail::finish(cert);
  cert.certification->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cert;
}

}  // namespace pev::certify

// certify_trace (trace.h, docs/certify.md §8): one read of the trace, one sub-dump per site (views
// of the trace's tensors under the site's prefix, with the trace's position_ids), each certified
// by certify_dump against the site's own encoding; identity sites (NoPE) compared bit for bit;
// the sites that fail diagnosed as the integration mistakes of docs/certify.md §8.3. Sites are
// certified in groups of bounded bytes and let go when done (docs/performance.md §4).

#include "pev/certify/trace.h"

#include <fmt/format.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/io/file.h"
#include "trace_sites.h"

namespace pev::certify {

namespace {

// The worst of two grades (grades are ordered best first).
grade worst(grade a, grade b) { return static_cast<int>(a) > static_cast<int>(b) ? a : b; }

// "layers 1, 2, 4" — the indices of a group of sites.
std::string site_list(const std::vector<const report::layer_result*>& ls) {
  std::string s;
  for (const auto* l : ls) {
    if (!s.empty()) s += ", ";
    s += l->index >= 0 ? std::to_string(l->index) : l->site;
    if (l->index >= 0 && !l->site.empty()) s += "." + l->site;
  }
  return (ls.size() == 1 && ls[0]->index >= 0 ? "layer " : ls[0]->index >= 0 ? "layers " : "") + s;
}

// The bytes of a site's tensors.
std::size_t site_bytes(const detail::trace_site& s) {
  std::size_t n = 0;
  for (const auto& [role, a] : s.data.tensors) n += a.data.size();
  return n;
}

// Sites certified at once hold their tensors' pages and the copies certify_dump makes of them (q/k
// in another order than (batch, token, head): the site's bytes again), so a trace is certified in
// groups of consecutive sites of at most a quarter of its bytes (or its largest site), one group
// after another, each group's sites in parallel (docs/performance.md §4: peak memory).
std::vector<std::pair<std::size_t, std::size_t>> site_groups(
    const std::vector<detail::trace_site>& sites) {
  std::vector<std::size_t> bytes(sites.size());
  std::size_t total = 0, largest = 0;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    bytes[i] = site_bytes(sites[i]);
    total += bytes[i];
    largest = std::max(largest, bytes[i]);
  }
  const std::size_t budget = std::max(largest, total / 4);
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  for (std::size_t i = 0, held = 0; i < sites.size(); ++i) {
    if (groups.empty() || held + bytes[i] > budget) {
      groups.push_back({i, i});
      held = 0;
    }
    held += bytes[i];
    groups.back().second = i + 1;
  }
  return groups;
}

// The trace's sites, each tensor then held by its site alone (the dump keeps the others:
// position_ids, attention_mask); more than `max_sites` refused.
std::vector<detail::trace_site> take_sites(const spec::model_spec& m, dump& d,
                                           const trace_options& to) {
  std::vector<detail::trace_site> sites = detail::trace_sites(m, d, to.layers);
  if (sites.size() > to.max_sites) {
    throw error(fmt::format(
        "the trace holds {} sites; pev certifies at most {} in one run (docs/certify.md §8.2): "
        "certify its layers in parts, a trace of each part given with --layers",
        sites.size(), to.max_sites));
  }
  for (const detail::trace_site& s : sites) {
    for (const auto& [role, a] : s.data.tensors) {
      (void)a;
      d.tensors.erase(s.layer.prefix() + "." + role);
    }
  }
  return sites;
}

// A site certified: its tensors let go, their mapped pages handed back (other holders of the
// trace, the caller's dump, read them from the file again if they ever do).
void let_go(detail::trace_site& s) {
  for (const auto& [role, a] : s.data.tensors) {
    (void)role;
    io::release_pages(a.data);
  }
  s.data.tensors.clear();
}

}  // namespace

bool is_trace(const dump& d) {
  for (const auto& [name, a] : d.tensors) {
    (void)a;
    if (detail::trace_like_name(name)) return true;
  }
  return false;
}

std::vector<std::int64_t> traced_layers(const dump& d) {
  std::set<std::int64_t> s;
  for (const auto& [name, a] : d.tensors) {
    (void)a;
    if (const auto site = detail::trace_site_of(name); site && site->index >= 0) {
      s.insert(site->index);
    }
  }
  return {s.begin(), s.end()};
}

certificate certify_trace(const spec::model_spec& m, dump d, const options& o,
                          const trace_options& to) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.shard_count > 1) {
    throw error("--shard: a model trace is certified whole (shard its layers' dumps instead)");
  }
  if (!o.positions.empty()) {
    // The rows' positions are the trace's position_ids (docs/certify.md §8.1): replacing them
    // would certify the layers at positions the model did not use.
    throw error(
        "--positions/--positions-file: a model trace holds its own position_ids, which every site "
        "is certified at (docs/certify.md §8.1); leave them out");
  }
  if (o.recipe) (void)detail::claim_grade(*o.recipe);
  // One read: every tensor becomes a shared view, so that the sites' sub-dumps copy nothing.
  for (auto& [name, a] : d.tensors) {
    (void)name;
    a.data = std::move(a.data).shared();
  }
  std::vector<detail::trace_site> sites = take_sites(m, d, to);
  // What a tracer recorded beside the tensors (its findings fail their layers): read before the
  // work, so that a malformed record is refused first.
  const detail::tracer_record recorded = detail::read_tracer_record(d);
  hash_inputs(d.files);

  certificate cert = detail::certificate_frame(o, d, /*compared=*/true);
  report::certification& z = *cert.certification;
  z.library.note = "measured per layer (each layer's table, where the trace holds one)";
  z.model = m.model_type;

  // Every site certified on its own, sites in parallel (each site's rows are compared on the
  // same arena: oneTBB nests them).
  std::vector<detail::site_outcome> out(sites.size());
  // The progress is the sites' (docs/certify.md §9.1): a site's own rows are not counted.
  options site_options = o;
  site_options.progress = nullptr;
  std::mutex progress;
  std::size_t done = 0;
  tbb::task_arena arena(detail::arena_threads(o));
  arena.execute([&] {
    for (const auto& [first, last] : site_groups(sites)) {
      tbb::parallel_for(first, last, [&](std::size_t i) {
        try {
          out[i] = detail::certify_site(sites[i], m, d, site_options);
          let_go(sites[i]);
          if (o.progress) {
            const std::lock_guard<std::mutex> lock(progress);
            o.progress("trace sites", ++done, sites.size());
          }
        } catch (const error& e) {
          // The site's tensors are named by their roles there: say which site.
          throw error(fmt::format("trace site {}: {}", sites[i].layer.prefix(), e.what()));
        }
      });
    }
  });

  detail::apply_tracer_record(recorded, sites, out, cert.notes);

  // The certificate: every site's checks under its prefix, its row, the model's grade.
  grade g = grade::correctly_rounded;
  bool claim = true;
  std::set<std::string> specs;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    detail::site_outcome& s = out[i];
    const std::string prefix = sites[i].layer.prefix();
    for (check& c : s.checks) {
      c.id = prefix + "/" + c.id;
      c.index = static_cast<std::int64_t>(cert.checks.size());
      s.row.checks.push_back(c.id);
      cert.checks.push_back(std::move(c));
    }
    g = worst(g, s.row.result);
    claim = claim && s.claim_holds;
    specs.insert(s.row.spec);
    // Every site runs with the same options: the bound they are held to is hf unless a site's
    // claim or form holds it to another (the ggml form, a claimed recipe).
    if (!s.held_to.empty() && s.held_to != "hf") z.held_to = s.held_to;
    z.layouts.insert(z.layouts.end(), s.layouts.begin(), s.layouts.end());
    cert.prov.reference_values += s.reference_values;
    cert.prov.reference_fallbacks += s.reference_fallbacks;
    z.layers.push_back(std::move(s.row));
  }
  z.result = g;
  z.claim_holds = claim && g != grade::not_certified;
  for (const std::string& s : specs) z.spec += (z.spec.empty() ? "" : " | ") + s;
  z.what = fmt::format(
      "model trace: {} site{} of {} ({} layer{})", sites.size(), sites.size() == 1 ? "" : "s",
      m.model_type.empty() ? "a model" : m.model_type, m.num_layers, m.num_layers == 1 ? "" : "s");
  const std::vector<std::int64_t> pos = detail::trace_positions(d);
  if (!pos.empty()) detail::record_positions(z, pos);
  cert.prov.max_position = z.max_position;

  // The model's diagnosis: each mistake with the sites it explains, in the config's order.
  if (g == grade::not_certified) {
    report::diagnosis& why = z.why.emplace();
    std::vector<std::string> order;
    std::map<std::string, std::vector<const report::layer_result*>> by;
    for (std::size_t i = 0; i < z.layers.size(); ++i) {
      const report::layer_result& l = z.layers[i];
      if (l.result != grade::not_certified) continue;
      const std::string key = l.named.value_or("(no known mistake)");
      if (!by.count(key)) order.push_back(key);
      by[key].push_back(&l);
      if (why.first.empty()) {
        why.first = out[i].mismatches;
        for (report::mismatch& x : why.first) x.check = sites[i].layer.prefix() + "/" + x.check;
      }
      why.max_rho_without = std::max(why.max_rho_without, l.max_rho);
    }
    // Each named mistake is an explanation of the sites it explains (an integration mistake is
    // named only where its certification holds: within the threshold, ρ 0 here).
    for (const std::string& key : order) {
      const auto& ls = by[key];
      std::string line = fmt::format("{}: {}", site_list(ls), key);
      for (std::size_t j = 0; j < ls[0]->findings.size(); ++j) {
        line += (j == 0 ? " — " : "; ") + ls[0]->findings[j];
      }
      why.findings.push_back(line);
      if (key != "(no known mistake)") {
        std::string what = site_list(ls);
        for (std::size_t j = 0; j < ls[0]->findings.size(); ++j) {
          what += (j == 0 ? ": " : "; ") + ls[0]->findings[j];
        }
        why.explanations.push_back({key, what, 0, 0, true, 0});
      }
    }
    // Named when every failing site is explained, by the mistake of the first.
    if (by.count("(no known mistake)") == 0) why.named = order[0];
  }
  z.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cert;
}

}  // namespace pev::certify

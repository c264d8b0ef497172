// The names of a model trace (docs/certify.md §8.1): which site each tensor belongs to, the sites
// of a config the trace holds, a site's tensors as a sub-dump, the trace's positions.

#include "trace_sites.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "detail.h"
#include "pev/core/error.h"

namespace pev::certify::detail {

namespace {

// The roles a site's tensors may have (docs/certify.md §8.1); anything else under a site's prefix
// is an error naming it, so that a misspelt name is never silently left unchecked.
const std::set<std::string>& layer_roles() {
  static const std::set<std::string> r{"q_in",  "q_out",         "k_in",      "k_out",
                                       "cos",   "sin",           "none",      "inv_freq",
                                       "table", "cos_sin_cache", "freqs_cis", "attention_factor"};
  return r;
}

std::optional<std::int64_t> parse_index(std::string_view s) {
  std::int64_t v = 0;
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string site_name(std::int64_t index, const std::string& site) {
  spec::layer_spec l;
  l.index = index;
  l.site = site;
  return l.prefix();
}

}  // namespace

std::optional<trace_name> trace_site_of(const std::string& name) {
  const std::string_view n = name;
  for (const char* model_site : {"embed", "encoder", "decoder"}) {
    const std::string p = std::string(model_site) + ".";
    if (n.substr(0, p.size()) == p) return trace_name{-1, model_site, name.substr(p.size())};
  }
  if (n.substr(0, 7) != "layers.") return std::nullopt;
  const std::string_view rest = n.substr(7);
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const auto index = parse_index(rest.substr(0, dot));
  if (!index) return std::nullopt;
  const std::string_view tail = rest.substr(dot + 1);
  const auto dot2 = tail.find('.');
  if (dot2 == std::string_view::npos) return trace_name{*index, "", std::string(tail)};
  return trace_name{*index, std::string(tail.substr(0, dot2)), std::string(tail.substr(dot2 + 1))};
}

std::vector<trace_site> trace_sites(const spec::model_spec& m, const dump& d,
                                    const std::vector<std::int64_t>& layers) {
  // Every trace tensor under its site.
  std::map<std::pair<std::int64_t, std::string>, site_data> held;
  bool any_layer = false;
  for (const auto& [name, a] : d.tensors) {
    const auto t = trace_site_of(name);
    if (!t) continue;
    any_layer = any_layer || t->index >= 0;
    site_data& s = held[{t->index, t->site}];
    if (t->role == "none") {
      s.none = true;
    } else {
      s.tensors.emplace(t->role, a);
    }
  }
  const std::set<std::int64_t> wanted(layers.begin(), layers.end());
  std::vector<trace_site> out;
  std::set<std::pair<std::int64_t, std::string>> of_config;
  for (const spec::layer_spec& l : m.layers) {
    of_config.insert({l.index, l.site});
    const auto it = held.find({l.index, l.site});
    if (it == held.end()) {
      // Left out: a layer not traced (--layers), a model-level site the trace does not record,
      // and the decoder layers of a config without RoPE in a trace of model-level sites only.
      if (l.index < 0 || (!wanted.empty() && !wanted.count(l.index))) continue;
      if (!any_layer && !l.encoding) continue;
      if (!l.site.empty()) continue;  // a second site (indexer) the trace does not record
      throw error(fmt::format(
          "the trace holds no tensor of layer {} ({}, {}: {}); the config has {} layers — give "
          "--layers to certify only the layers traced",
          l.index, l.type, l.encoding ? spec::to_spec_string(*l.encoding) : "NoPE", l.rule,
          m.num_layers));
    }
    if (!wanted.empty() && l.index >= 0 && !wanted.count(l.index)) continue;
    out.push_back({l, it->second});
  }
  for (const auto& [key, s] : held) {
    if (!wanted.empty() && key.first >= 0 && !wanted.count(key.first)) {
      // Data the run would not look at: never left out silently.
      throw error(
          fmt::format("the trace holds layer {}, which --layers leaves out (give every "
                      "layer the trace holds)",
                      key.first));
    }
    if (of_config.count(key)) {
      for (const auto& [role, a] : s.tensors) {
        (void)a;
        const bool known = key.first >= 0
                               ? layer_roles().count(role) > 0
                               : (role == "table" || role == "positions" || role == "buckets");
        if (!known) {
          throw error(
              fmt::format("tensor '{}.{}': '{}' is not a role of a trace site "
                          "(docs/certify.md §8.1)",
                          site_name(key.first, key.second), role, role));
        }
      }
      continue;
    }
    throw error(fmt::format(
        "the trace holds {} (tensor '{}.{}'), which the config does not have ({} layers{})",
        key.first >= 0
            ? fmt::format("layer {}{}", key.first, key.second.empty() ? "" : " site " + key.second)
            : "site " + key.second,
        site_name(key.first, key.second), s.none ? std::string("none") : s.tensors.begin()->first,
        m.num_layers, m.model_type.empty() ? "" : ", " + m.model_type));
  }
  if (out.empty()) {
    throw error(fmt::format("the trace holds no site of the config; it holds {}", tensor_list(d)));
  }
  return out;
}

dump site_dump(const site_data& s, const dump& trace, const std::vector<std::int64_t>* positions) {
  dump sub;
  sub.metadata = trace.metadata;
  sub.tensors = s.tensors;
  if (const io::array* p = trace.find("position_ids")) {
    io::array a = *p;
    if (positions) {
      io::array r = io::array::from_int64(p->shape, *positions);
      a = std::move(r);
    }
    sub.tensors.emplace("position_ids", std::move(a));
  }
  return sub;
}

std::vector<std::int64_t> trace_positions(const dump& d) {
  const io::array* p = d.find("position_ids");
  if (!p) return {};
  std::vector<std::int64_t> v = p->to_int64();
  const auto sh = squeezed(p->shape);
  if (sh.size() == 3 || (sh.size() == 2 && sh[0] == 3 && p->shape.size() == 3)) {
    v.resize(v.size() / static_cast<std::size_t>(p->shape[0]));  // the first stream
  }
  return v;
}

batch_positions trace_batch_positions(const dump& d) {
  batch_positions b;
  const io::array* p = d.find("position_ids");
  if (!p || p->shape.size() > 2 || p->shape.empty()) return b;
  b.ids = p->to_int64();
  b.batch = p->shape.size() == 2 ? p->shape[0] : 1;
  b.tokens = p->shape.back();
  return b;
}

}  // namespace pev::certify::detail

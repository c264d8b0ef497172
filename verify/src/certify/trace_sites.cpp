// The names of a model trace (docs/certify.md §8.1): which site each tensor belongs to, the sites
// of a config the trace holds, a site's tensors as a sub-dump, the trace's positions.

#include "trace_sites.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
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

// A layer index as docs/certify.md §8.1 writes it: decimal, no sign, no leading zero, within
// int64.
std::optional<std::int64_t> parse_index(std::string_view s) {
  std::int64_t v = 0;
  if (s.empty() || (s.size() > 1 && s[0] == '0') || s[0] < '0' || s[0] > '9') return std::nullopt;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// The tensors of a trace that belong to no site (docs/certify.md §8.1).
bool trace_level(const std::string& name) {
  return name == "position_ids" || name == "attention_mask";
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Why `name` is not a name of a trace (docs/certify.md §8.1), for the error that refuses it.
std::string why_not_a_trace_name(const std::string& name) {
  const std::string_view n = name;
  if (n.substr(0, 7) != "layers." && lower(n.substr(0, 7)) == "layers.") {
    return "names are case-sensitive: the prefix is 'layers.'";
  }
  if (n.substr(0, 7) == "layers.") {
    const std::string_view rest = n.substr(7);
    const std::string_view index = rest.substr(0, rest.find('.'));
    if (!parse_index(index)) {
      return fmt::format(
          "'{}' is not a layer index (decimal digits, no sign or leading zero, below 2^63)", index);
    }
    return "it names no role after the layer index (layers.{i}.q_in, …)";
  }
  return "a trace holds position_ids, attention_mask and the tensors of its sites "
         "(layers.{i}.ROLE, "
         "embed.ROLE, encoder.buckets, decoder.buckets)";
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

bool trace_like_name(const std::string& name) {
  return trace_site_of(name).has_value() || lower(std::string_view(name).substr(0, 7)) == "layers.";
}

namespace {

// A `none` marker is an int32 or int64 scalar (docs/certify.md §8.1): anything else is not what
// an exporter meant by it.
void check_marker(const std::string& name, const io::array& a) {
  if (is_float(a.type) || a.elements() != 1 || a.shape.size() > 1) {
    throw error(
        fmt::format("tensor '{}': a none marker is an int32 or int64 scalar "
                    "(docs/certify.md §8.1), got {} {}",
                    name, io::safetensors_name(a.type), io::shape_string(a.shape)));
  }
}

// attention_mask is [B, T] of 0 and 1 in an integer dtype, one per token of position_ids
// (docs/certify.md §8.1).
void check_attention_mask(const dump& d) {
  const io::array* mask = d.find("attention_mask");
  if (!mask) return;
  const std::string got =
      fmt::format("{} {}", io::safetensors_name(mask->type), io::shape_string(mask->shape));
  if (is_float(mask->type)) {
    throw error(fmt::format(
        "tensor 'attention_mask': expected integers 0 and 1 (int32 or int64), got {}", got));
  }
  if (const io::array* p = d.find("position_ids")) {
    // The tokens of position_ids: [B, T], [T], or MRoPE's [3, B, T] / [3, T] (one stream's).
    std::vector<std::int64_t> tokens = p->shape;
    if (tokens.size() == 3 || (tokens.size() == 2 && tokens[0] == 3 && mask->shape.size() < 2)) {
      tokens.erase(tokens.begin());
    }
    if (squeezed(mask->shape) != squeezed(tokens)) {
      throw error(fmt::format(
          "tensor 'attention_mask' has shape {}: expected one value per token of position_ids {} "
          "(docs/certify.md §8.1)",
          io::shape_string(mask->shape), io::shape_string(p->shape)));
    }
  }
  for (const std::int64_t v : mask->to_int64()) {
    if (v != 0 && v != 1) {
      throw error(fmt::format("tensor 'attention_mask' holds {}: expected 0 (padding) and 1", v));
    }
  }
}

// --layers names layers of the config only (docs/certify.md §8.2).
void check_wanted(const spec::model_spec& m, const std::set<std::int64_t>& wanted) {
  std::set<std::int64_t> of_config;
  for (const spec::layer_spec& l : m.layers) {
    if (l.index >= 0) of_config.insert(l.index);
  }
  std::vector<std::int64_t> beyond;
  for (const std::int64_t i : wanted) {
    if (!of_config.count(i)) beyond.push_back(i);
  }
  if (!beyond.empty()) {
    throw error(
        fmt::format("--layers names layer{} {}, which the config does not have ({} layer{}{})",
                    beyond.size() == 1 ? "" : "s", fmt::join(beyond, ", "), m.num_layers,
                    m.num_layers == 1 ? "" : "s",
                    m.num_layers > 0 ? fmt::format(": 0…{}", m.num_layers - 1) : ""));
  }
}

}  // namespace

std::vector<trace_site> trace_sites(const spec::model_spec& m, const dump& d,
                                    const std::vector<std::int64_t>& layers) {
  // Every trace tensor under its site; a name that is no site's is refused (docs/certify.md §8.2:
  // no tensor of a trace is left unchecked).
  std::map<std::pair<std::int64_t, std::string>, site_data> held;
  bool any_layer = false;
  for (const auto& [name, a] : d.tensors) {
    if (trace_level(name)) continue;
    const auto t = trace_site_of(name);
    if (!t) {
      throw error(
          fmt::format("tensor '{}' is not a name of a model trace: {} (docs/certify.md "
                      "§8.1)",
                      name, why_not_a_trace_name(name)));
    }
    any_layer = any_layer || t->index >= 0;
    site_data& s = held[{t->index, t->site}];
    if (t->role == "none") {
      check_marker(name, a);
      s.none = true;
    } else {
      s.tensors.emplace(t->role, a);
    }
  }
  check_attention_mask(d);
  const std::set<std::int64_t> wanted(layers.begin(), layers.end());
  check_wanted(m, wanted);
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
          "the trace holds no tensor of layer {} ({}, {}: {}); the config has {} layers — {}",
          l.index, l.type, l.encoding ? spec::to_spec_string(*l.encoding) : "NoPE", l.rule,
          m.num_layers,
          wanted.empty() ? "give --layers to certify only the layers traced"
                         : "--layers names it: give only the layers the trace holds"));
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

std::vector<std::size_t> sample_columns(const batch_positions& b,
                                        const std::vector<std::int64_t>* candidate) {
  const auto T = static_cast<std::size_t>(b.tokens);
  if (b.batch < 1 || T < 2 * (2 * kSampleLargest + kSampleEven)) return {};
  std::vector<std::size_t> out;
  // The columns of the largest positions (the largest over the batch rows), ties to the later.
  const auto largest = [&](const std::vector<std::int64_t>& ids) {
    std::vector<std::pair<std::int64_t, std::size_t>> top(T);
    for (std::size_t t = 0; t < T; ++t) {
      std::int64_t p = ids[t];
      for (std::size_t r = 1; r < static_cast<std::size_t>(b.batch); ++r)
        p = std::max(p, ids[r * T + t]);
      top[t] = {p, t};
    }
    std::partial_sort(top.begin(), top.begin() + kSampleLargest, top.end(), std::greater<>());
    for (std::size_t i = 0; i < kSampleLargest; ++i) out.push_back(top[i].second);
  };
  largest(b.ids);
  if (candidate) largest(*candidate);
  for (std::size_t i = 0; i < kSampleEven; ++i) out.push_back(i * (T - 1) / (kSampleEven - 1));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// `a` cut to `columns` of its axis `axis`.
io::array cut(const io::array& a, std::size_t axis, const std::vector<std::size_t>& columns) {
  std::size_t outer = 1, inner = size_of(a.type);
  for (std::size_t i = 0; i < axis; ++i) outer *= static_cast<std::size_t>(a.shape[i]);
  for (std::size_t i = axis + 1; i < a.shape.size(); ++i)
    inner *= static_cast<std::size_t>(a.shape[i]);
  const auto n = static_cast<std::size_t>(a.shape[axis]);
  std::vector<std::byte> bytes(outer * columns.size() * inner);
  std::byte* to = bytes.data();
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t c : columns) {
      to = std::copy_n(a.data.data() + (o * n + c) * inner, inner, to);
    }
  }
  io::array r;
  r.type = a.type;
  r.shape = a.shape;
  r.shape[axis] = static_cast<std::int64_t>(columns.size());
  r.data = io::byte_buffer(std::move(bytes));
  return r;
}

}  // namespace

std::optional<dump> sample_dump(const site_data& s, const dump& trace,
                                const std::vector<std::int64_t>* positions,
                                const std::vector<std::size_t>& columns,
                                const std::string& qk_layout) {
  const io::array* p = trace.find("position_ids");
  if (columns.empty() || !p || p->shape.empty() || p->shape.size() > 2) return std::nullopt;
  const std::int64_t T = p->shape.back();
  // The token axis of each q/k layout (pev/certify/certify.h), counted from the last.
  std::size_t from_end = 0;
  if (qk_layout == "bhtd" || qk_layout == "t(hd)") from_end = 2;
  if (qk_layout == "bthd" || qk_layout == "thd") from_end = 3;
  if (from_end == 0) return std::nullopt;
  dump d = site_dump(s, trace, positions);
  d.metadata["qk_layout"] = qk_layout;
  for (auto& [role, a] : d.tensors) {
    if (role == "none") continue;
    if (role == "position_ids") {
      a = cut(a, a.shape.size() - 1, columns);
      continue;
    }
    const bool qk = role == "q_in" || role == "q_out" || role == "k_in" || role == "k_out";
    if (!qk || a.complex || a.shape.size() < from_end || a.shape[a.shape.size() - from_end] != T) {
      return std::nullopt;
    }
    a = cut(a, a.shape.size() - from_end, columns);
  }
  return d;
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

// Finding a RoPE table and rotated q/k in a dump, and how they are laid out.

#include "layout.h"

#include <fmt/format.h>

#include <cstring>

#include "pev/core/error.h"

namespace pev::certify::detail {

namespace {

// Whether every value of `a` ([rows, 2·pairs] after squeezing) equals its duplicate: halves
// (j, j + pairs) or repeated (2i, 2i + 1). Compared as encodings.
bool duplicates_equal(const io::array& a, std::int64_t rows, std::int64_t pairs, bool halves) {
  const std::size_t es = size_of(a.type);
  const std::byte* base = a.data.data();
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < pairs; ++i) {
      const std::int64_t j0 = halves ? i : 2 * i, j1 = halves ? i + pairs : 2 * i + 1;
      const std::byte* x = base + static_cast<std::size_t>(r * 2 * pairs + j0) * es;
      const std::byte* y = base + static_cast<std::size_t>(r * 2 * pairs + j1) * es;
      if (std::memcmp(x, y, es) != 0) return false;
    }
  }
  return true;
}

}  // namespace

table_source find_rope_table(const dump& d, const spec::rope& s,
                             std::optional<table_layout> forced) {
  const std::int64_t pairs = s.pairs(), rot = s.rotary_dim;
  table_source t;
  std::string cos_name, sin_name, cache_name, pairs_name;
  const io::array* cos_t = find_any(d, {"cos", "cos_cached"}, &cos_name);
  const io::array* sin_t = find_any(d, {"sin", "sin_cached"}, &sin_name);
  const io::array* cache = find_any(d, {"cos_sin_cache"}, &cache_name);
  const io::array* pairs_t = find_any(d, {"table", "freqs_cis", "cos_sin"}, &pairs_name);
  if (!pairs_t && !(cos_t && sin_t) && !cache) {
    // A lone [P, pairs, 2] tensor (e.g. an npy file with another name).
    for (const auto& [name, a] : d.tensors) {
      const auto sh = squeezed(a.shape);
      if (sh.size() == 3 && sh[1] == pairs && sh[2] == 2 && name != "positions") {
        if (pairs_t) throw error("more than one [P, pairs, 2] tensor: name the table 'table'");
        pairs_t = &a;
        pairs_name = name;
      }
    }
  }
  table_layout l;
  if (forced) {
    l = *forced;
  } else if (cos_t && sin_t) {
    const auto sh = squeezed(cos_t->shape);
    l = sh.size() == 2 && sh[1] == rot && rot != pairs ? table_layout::halves
                                                       : table_layout::separate;
  } else if (cache) {
    l = table_layout::vllm;
  } else if (pairs_t) {
    l = table_layout::pairs;
  } else {
    throw error(fmt::format(
        "no RoPE cos/sin table in the dump (expected tensors 'cos' and 'sin', 'cos_sin_cache' or "
        "'table'/'freqs_cis' [P, pairs, 2], or rotated q_in/q_out, k_in/k_out [T, H, head_dim]); "
        "it holds {}",
        tensor_list(d)));
  }
  t.detected = !forced;
  auto need_2d = [&](const io::array* a, const std::string& name, std::int64_t width) {
    const auto sh = squeezed(a->shape);
    if (sh.size() != 2 || sh[1] != width) {
      throw error(
          fmt::format("tensor '{}' has shape {}, expected [P, {}] for the {} layout "
                      "(rotary_dim {}, {} pairs)",
                      name, io::shape_string(a->shape), width, to_string(l), rot, pairs));
    }
    return sh[0];
  };
  switch (l) {
    case table_layout::separate:
    case table_layout::halves:
    case table_layout::repeated: {
      if (!cos_t || !sin_t) {
        throw error(fmt::format("--layout {}: the dump needs tensors 'cos' and 'sin'; it holds {}",
                                to_string(l), tensor_list(d)));
      }
      if (cos_t->type != sin_t->type) {
        throw error(fmt::format("tensors '{}' ({}) and '{}' ({}) have different dtypes", cos_name,
                                io::safetensors_name(cos_t->type), sin_name,
                                io::safetensors_name(sin_t->type)));
      }
      const std::int64_t width = l == table_layout::separate ? pairs : rot;
      t.rows = need_2d(cos_t, cos_name, width);
      if (need_2d(sin_t, sin_name, width) != t.rows) {
        throw error(fmt::format("tensors '{}' {} and '{}' {} have different numbers of rows",
                                cos_name, io::shape_string(cos_t->shape), sin_name,
                                io::shape_string(sin_t->shape)));
      }
      if (l != table_layout::separate && !forced) {
        // transformers' halves or GPT-J's repeated pairs: decided by the data when only one holds,
        // by the spec's layout otherwise (then the duplicates that differ count as errors).
        const bool h = duplicates_equal(*cos_t, t.rows, pairs, true) &&
                       duplicates_equal(*sin_t, t.rows, pairs, true);
        const bool r = duplicates_equal(*cos_t, t.rows, pairs, false) &&
                       duplicates_equal(*sin_t, t.rows, pairs, false);
        if (h != r) {
          l = h ? table_layout::halves : table_layout::repeated;
        } else {
          l = s.layout == spec::rope_layout::neox ? table_layout::halves : table_layout::repeated;
        }
      }
      t.width = width;
      t.cos = {cos_t, width, 1, 0};
      t.sin = {sin_t, width, 1, 0};
      for (std::int64_t j = 0; j < width; ++j) {
        t.pair.push_back(l == table_layout::separate ? j
                         : l == table_layout::halves ? j % pairs
                                                     : j / 2);
      }
      t.source = fmt::format("tensors '{}' and '{}' {}", cos_name, sin_name,
                             io::shape_string(cos_t->shape));
      break;
    }
    case table_layout::vllm: {
      if (!cache)
        throw error(fmt::format("--layout vllm: no tensor 'cos_sin_cache'; the dump holds {}",
                                tensor_list(d)));
      t.rows = need_2d(cache, cache_name, rot);
      t.width = pairs;
      t.cos = {cache, rot, 1, 0};
      t.sin = {cache, rot, 1, pairs};
      for (std::int64_t j = 0; j < pairs; ++j) t.pair.push_back(j);
      t.source =
          fmt::format("tensor '{}' {} = [cos | sin]", cache_name, io::shape_string(cache->shape));
      break;
    }
    case table_layout::pairs: {
      if (!pairs_t)
        throw error(
            fmt::format("--layout pairs: no [P, pairs, 2] tensor ('table' or "
                        "'freqs_cis'); the dump holds {}",
                        tensor_list(d)));
      const auto sh = squeezed(pairs_t->shape);
      if (sh.size() != 3 || sh[1] != pairs || sh[2] != 2) {
        throw error(fmt::format("tensor '{}' has shape {}, expected [P, {}, 2]", pairs_name,
                                io::shape_string(pairs_t->shape), pairs));
      }
      t.rows = sh[0];
      t.width = pairs;
      t.cos = {pairs_t, 2 * pairs, 2, 0};
      t.sin = {pairs_t, 2 * pairs, 2, 1};
      for (std::int64_t j = 0; j < pairs; ++j) t.pair.push_back(j);
      t.source = fmt::format("tensor '{}' {} of (cos, sin) pairs", pairs_name,
                             io::shape_string(pairs_t->shape));
      break;
    }
  }
  t.layout = l;
  return t;
}

bool table_present(const dump& d, const spec::rope& s, const options& o) {
  if (o.layout) return true;
  for (const char* n : {"cos", "cos_cached", "cos_sin_cache", "table", "freqs_cis", "cos_sin"}) {
    if (d.find(n)) return true;
  }
  for (const auto& [name, a] : d.tensors) {
    const auto sh = squeezed(a.shape);
    if (sh.size() == 3 && sh[1] == s.pairs() && sh[2] == 2) return true;
  }
  return false;
}

std::vector<qk_source> find_qk(const dump& d, const spec::rope& s) {
  std::vector<qk_source> v;
  for (const char* n : {"q", "k"}) {
    const std::string in_name = std::string(n) + "_in", out_name = std::string(n) + "_out";
    const io::array* in = d.find(in_name);
    const io::array* out = d.find(out_name);
    if (!in && !out) continue;
    if (!in || !out) {
      throw error(fmt::format("tensor '{}' needs its pair '{}' (inputs and rotated outputs)",
                              in ? in_name : out_name, in ? out_name : in_name));
    }
    const auto a = squeezed(in->shape), b = squeezed(out->shape);
    if (a.size() != 3 || a != b || a[2] != s.head_dim || in->type != out->type) {
      throw error(fmt::format(
          "tensors '{}' {} and '{}' {} must both be [T, H, head_dim = {}] of the same dtype",
          in_name, io::shape_string(in->shape), out_name, io::shape_string(out->shape),
          s.head_dim));
    }
    v.push_back({n, in, out, a[0], a[1], a[2]});
  }
  return v;
}

}  // namespace pev::certify::detail

namespace pev::certify {

table_read read_rope_table(const dump& d, const spec::rope& s, std::optional<table_layout> layout) {
  const detail::table_source t = detail::find_rope_table(d, s, layout);
  const std::int64_t pairs = s.pairs();
  const dtype type = t.cos.a->type;
  const std::size_t es = size_of(type);
  table_read out;
  out.layout = t.layout;
  out.detected = t.detected;
  out.source = t.source;
  for (io::array* a : {&out.cos, &out.sin}) {
    a->type = type;
    a->shape = {t.rows, pairs};
    a->data.assign(static_cast<std::size_t>(t.rows * pairs) * es, std::byte{0});
  }
  // Each pair's first column is read; a later column of the same pair must hold the same bits.
  std::vector<std::int64_t> first(static_cast<std::size_t>(pairs), -1);
  for (std::int64_t j = 0; j < t.width; ++j) {
    auto& f = first[static_cast<std::size_t>(t.pair[static_cast<std::size_t>(j)])];
    if (f < 0) f = j;
  }
  for (std::int64_t r = 0; r < t.rows; ++r) {
    for (int which = 0; which < 2; ++which) {
      const detail::plane& pl = which == 0 ? t.cos : t.sin;
      std::byte* row =
          (which == 0 ? out.cos : out.sin).data.data() + static_cast<std::size_t>(r * pairs) * es;
      for (std::int64_t j = 0; j < t.width; ++j) {
        const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
        const std::byte* v = pl.a->data.data() + pl.at(r, j) * es;
        if (first[static_cast<std::size_t>(i)] == j) {
          std::memcpy(row + static_cast<std::size_t>(i) * es, v, es);
        } else if (std::memcmp(row + static_cast<std::size_t>(i) * es, v, es) != 0) {
          throw error(fmt::format(
              "{}: the {} layout repeats each value, but row {} column {} differs from column {} "
              "({} of pair {})",
              t.source, to_string(t.layout), r, j, first[static_cast<std::size_t>(i)],
              which == 0 ? "cos" : "sin", i));
        }
      }
    }
  }
  return out;
}

}  // namespace pev::certify

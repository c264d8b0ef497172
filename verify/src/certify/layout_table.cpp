// Finding a RoPE table in a dump and its layout (layout.h: find_rope_table, table_present,
// fold_identical_batches; certify.h's read_rope_table).

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "layout.h"
#include "layout_evidence.h"
#include "pev/core/error.h"

namespace pev::certify::detail {

namespace {

// Whether every value of `a` ([rows, 2·pairs]) equals its duplicate: halves (j, j + pairs) or
// repeated (2i, 2i + 1). Compared as encodings.
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

// Whether every batch of `a` (its bytes split into `batch` equal blocks) equals the first.
bool batches_equal(const io::array& a, std::int64_t batch) {
  if (batch <= 1) return true;
  const std::size_t block = a.data.size() / static_cast<std::size_t>(batch);
  for (std::int64_t b = 1; b < batch; ++b) {
    if (std::memcmp(a.data.data(), a.data.data() + static_cast<std::size_t>(b) * block, block) !=
        0) {
      return false;
    }
  }
  return true;
}

// A table read as (cos, sin) = (row[first(i)], row[second(i)]) for every pair i of every row.
template <class First, class Second>
agreement table_norms(const std::vector<double>& v, std::int64_t rows, std::int64_t width,
                      std::int64_t pairs, First first, Second second) {
  std::vector<double> r;
  r.reserve(static_cast<std::size_t>(rows * pairs));
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t i = 0; i < pairs; ++i) {
      const double c = v[static_cast<std::size_t>(row * width + first(i))];
      const double s = v[static_cast<std::size_t>(row * width + second(i))];
      r.push_back(c * c + s * s);
    }
  }
  return ratio_agreement(std::move(r));
}

// The tensors of a dump that may hold the table, and their names.
struct table_tensors {
  const io::array *cos = nullptr, *sin = nullptr, *cache = nullptr, *pairs = nullptr;
  const io::array* flat = nullptr;  // a lone [P, rot] tensor of another name
  std::string cos_name, sin_name, cache_name, pairs_name, flat_name;
  bool pairs_by_name = false;
};

// The tensors that may hold the table (docs/certify.md §4, "RoPE tables"): by name — cos and sin
// (or cos_cached, sin_cached), cos_sin_cache, table, freqs_cis or cos_sin — else a lone tensor of
// another name by its shape: [P, pairs, 2], or [P, rot] ([cos | sin] rows or flattened (cos, sin)
// pairs). pev::error when two lone tensors fit.
table_tensors table_candidates(const dump& d, const spec::rope& s) {
  const std::int64_t pairs = s.pairs(), rot = s.rotary_dim;
  table_tensors tt;
  tt.cos = find_any(d, {"cos", "cos_cached"}, &tt.cos_name);
  tt.sin = find_any(d, {"sin", "sin_cached"}, &tt.sin_name);
  tt.cache = find_any(d, {"cos_sin_cache"}, &tt.cache_name);
  tt.pairs = find_any(d, {"table", "freqs_cis", "cos_sin"}, &tt.pairs_name);
  tt.pairs_by_name = tt.pairs != nullptr;
  // A lone [P, rot] tensor of another name: [cos | sin] rows or flattened (cos, sin) pairs.
  if (!tt.pairs && !(tt.cos && tt.sin) && !tt.cache) {
    for (const auto& [name, a] : d.tensors) {
      if (is_role_name(name) || !is_float(a.type)) continue;
      const auto sh = drop_ones(a.shape, 3);
      if ((sh.size() == 3 || sh.size() == 4) && sh[sh.size() - 2] == pairs && sh.back() == 2) {
        if (tt.pairs) throw error("more than one [P, pairs, 2] tensor: name the table 'table'");
        tt.pairs = &a;
        tt.pairs_name = name;
      }
    }
    if (!tt.pairs) {
      for (const auto& [name, a] : d.tensors) {
        if (is_role_name(name) || !is_float(a.type)) continue;
        const auto sh = drop_ones(a.shape, 2);
        if ((sh.size() == 2 || sh.size() == 3) && sh.back() == rot) {
          if (tt.flat) {
            throw error(fmt::format(
                "tensors '{}' and '{}' are both [P, {}]: name the table ('cos_sin_cache' for "
                "[cos | sin] rows, 'table' for (cos, sin) pairs, or 'cos' and 'sin')",
                tt.flat_name, name, rot));
          }
          tt.flat = &a;
          tt.flat_name = name;
        }
      }
    }
  }
  return tt;
}

// The table's layout and what decided it (docs/certify.md §4, "RoPE tables"), in this order:
// --layout (a lone [P, rot] tensor is then the table it names); the names cos and sin and their
// width (halves or repeated are told apart later, by the data); the name cos_sin_cache; a
// [P, pairs, 2] tensor; for a lone [P, rot] tensor the data — only the data's reading gives every
// pair the same cos² + sin² (= m²) — which then holds the table. pev::error when there is no table,
// or both or neither readings of a lone tensor fit (naming --layout).
std::pair<table_layout, std::string> choose_table_layout(const dump& d, const spec::rope& s,
                                                         std::optional<table_layout> forced,
                                                         table_tensors& tt) {
  const std::int64_t pairs = s.pairs(), rot = s.rotary_dim;
  table_layout l = table_layout::separate;
  std::string by;  // what decided the layout
  if (forced) {
    l = *forced;
    by = "--layout";
    // A lone [P, rot] tensor is the table the option names.
    if (tt.flat && l == table_layout::vllm) tt.cache = tt.flat, tt.cache_name = tt.flat_name;
    if (tt.flat && l == table_layout::pairs) tt.pairs = tt.flat, tt.pairs_name = tt.flat_name;
  } else if (tt.cos && tt.sin) {
    const auto sh = drop_ones(tt.cos->shape, 2);
    l = !sh.empty() && sh.back() == rot && rot != pairs ? table_layout::halves
                                                        : table_layout::separate;
    by = fmt::format("the names '{}' and '{}' and their width", tt.cos_name, tt.sin_name);
  } else if (tt.cache) {
    l = table_layout::vllm;
    by = "the name 'cos_sin_cache'";
  } else if (tt.pairs) {
    l = table_layout::pairs;
    by = tt.pairs_by_name ? fmt::format("the name '{}'", tt.pairs_name)
                          : fmt::format("the shape of '{}' [P, {}, 2]", tt.pairs_name, pairs);
  } else if (tt.flat) {
    // [cos | sin] (vLLM's cache, ggml's NEOX order) or (cos, sin) interleaved (ggml's NORMAL
    // order): the reading whose pairs all have the same cos² + sin² (= m²) is the data's.
    const std::vector<double> v = tt.flat->to_doubles();
    const std::int64_t rows = static_cast<std::int64_t>(v.size()) / rot;
    const agreement as_vllm = table_norms(
        v, rows, rot, pairs, [](std::int64_t i) { return i; },
        [&](std::int64_t i) { return i + pairs; });
    const agreement as_pairs = table_norms(
        v, rows, rot, pairs, [](std::int64_t i) { return 2 * i; },
        [](std::int64_t i) { return 2 * i + 1; });
    if (pairs == 1 || (as_vllm.fits() && !as_pairs.fits())) {
      l = table_layout::vllm;
    } else if (as_pairs.fits() && !as_vllm.fits()) {
      l = table_layout::pairs;
    } else {
      throw error(fmt::format(
          "tensor '{}' {} is a [P, {}] table that can be read two ways, and the data {}: name "
          "the layout with --layout vllm ([cos | sin] per row: vLLM's cos_sin_cache, ggml's "
          "NEOX order) or --layout pairs ((cos, sin) pairs: ggml's NORMAL order and its cache)",
          tt.flat_name, io::shape_string(tt.flat->shape), rot,
          as_vllm.fits() ? "fits both (every pair has the same cos² + sin² either way)"
                         : "fits neither (cos² + sin² differs between pairs either way)"));
    }
    tt.pairs = tt.flat;
    tt.pairs_name = tt.flat_name;
    if (l == table_layout::vllm) tt.cache = tt.flat, tt.cache_name = tt.flat_name;
    by = pairs == 1 ? fmt::format("the shape of '{}' (one pair: both readings agree)", tt.flat_name)
                    : fmt::format(
                          "the data of '{}': only this reading gives every pair the same "
                          "cos² + sin²",
                          tt.flat_name);
  } else {
    throw error(fmt::format(
        "no RoPE cos/sin table in the dump (expected tensors 'cos' and 'sin', 'cos_sin_cache' or "
        "'table'/'freqs_cis' [P, pairs, 2], or rotated q_in/q_out, k_in/k_out [T, H, head_dim] "
        "(or [B, H, T, D], [B, T, H, D], [T, H·D])); it holds {}",
        tensor_list(d)));
  }
  return {l, by};
}

// Rows (every batch's together) of a [P, width] or [B, P, width] tensor, and its batch; pev::error
// naming layout `l` otherwise.
std::int64_t rows_of(const io::array* a, const std::string& name, std::int64_t width,
                     std::int64_t& batch, table_layout l, const spec::rope& s) {
  const auto sh = drop_ones(a->shape, 2);
  if (sh.size() == 2 && sh[1] == width) {
    batch = 1;
    return sh[0];
  }
  if (sh.size() == 3 && sh[2] == width) {
    batch = sh[0];
    return sh[0] * sh[1];
  }
  throw error(fmt::format(
      "tensor '{}' has shape {}, expected [P, {}] (or [B, P, {}] with a batch) for the {} "
      "layout (rotary_dim {}, {} pairs)",
      name, io::shape_string(a->shape), width, width, to_string(l), s.rotary_dim, s.pairs()));
}

// Reads cos and sin (docs/certify.md §4, "RoPE tables"): separate [P, pairs], or [P, rot] with
// duplicated halves (transformers) or repeated pairs (GPT-J) — unless --layout said which, decided
// by the data when only one duplicate pattern holds, by the spec's layout otherwise (then the
// duplicates that differ count as errors); `l` and `by` say which. Returns how it read them.
std::string read_cos_sin(const dump& d, const table_tensors& tt, const spec::rope& s, bool forced,
                         table_layout& l, std::string& by, table_source& t) {
  const std::int64_t pairs = s.pairs(), rot = s.rotary_dim;
  if (!tt.cos || !tt.sin) {
    throw error(fmt::format("--layout {}: the dump needs tensors 'cos' and 'sin'; it holds {}",
                            to_string(l), tensor_list(d)));
  }
  if (tt.cos->type != tt.sin->type) {
    throw error(fmt::format("tensors '{}' ({}) and '{}' ({}) have different dtypes", tt.cos_name,
                            io::safetensors_name(tt.cos->type), tt.sin_name,
                            io::safetensors_name(tt.sin->type)));
  }
  const std::int64_t width = l == table_layout::separate ? pairs : rot;
  std::int64_t sin_batch = 1;
  t.rows = rows_of(tt.cos, tt.cos_name, width, t.batch, l, s);
  if (rows_of(tt.sin, tt.sin_name, width, sin_batch, l, s) != t.rows || sin_batch != t.batch) {
    throw error(fmt::format("tensors '{}' {} and '{}' {} have different numbers of rows",
                            tt.cos_name, io::shape_string(tt.cos->shape), tt.sin_name,
                            io::shape_string(tt.sin->shape)));
  }
  if (l != table_layout::separate && !forced) {
    const bool h = duplicates_equal(*tt.cos, t.rows, pairs, true) &&
                   duplicates_equal(*tt.sin, t.rows, pairs, true);
    const bool r = duplicates_equal(*tt.cos, t.rows, pairs, false) &&
                   duplicates_equal(*tt.sin, t.rows, pairs, false);
    t.duplicates_shown = h || r;
    if (h != r) {
      l = h ? table_layout::halves : table_layout::repeated;
      by += h ? "; the data: its halves are equal" : "; the data: its pairs repeat";
    } else {
      l = s.layout == spec::rope_layout::neox ? table_layout::halves : table_layout::repeated;
      by += fmt::format("; the spec's {} layout (the data {} duplicate pattern)",
                        spec::to_string(s.layout), h ? "shows both" : "shows neither");
    }
  }
  t.width = width;
  t.cos = {tt.cos, width, 1, 0};
  t.sin = {tt.sin, width, 1, 0};
  for (std::int64_t j = 0; j < width; ++j) {
    t.pair.push_back(l == table_layout::separate ? j
                     : l == table_layout::halves ? j % pairs
                                                 : j / 2);
  }
  t.source = fmt::format("tensors '{}' and '{}' {}", tt.cos_name, tt.sin_name,
                         io::shape_string(tt.cos->shape));
  return l == table_layout::separate ? fmt::format("cos and sin [P, {}]", pairs)
         : l == table_layout::halves
             ? fmt::format("cos and sin [P, {}] with duplicated halves (transformers)", rot)
             : fmt::format("cos and sin [P, {}] with repeated pairs (GPT-J)", rot);
}

// Reads [P, rot] = [cos | sin] per row (vLLM's cos_sin_cache; ggml's NEOX order; docs/certify.md
// §4). Returns how it read it.
std::string read_vllm(const dump& d, const table_tensors& tt, const spec::rope& s,
                      table_source& t) {
  const std::int64_t pairs = s.pairs(), rot = s.rotary_dim;
  if (!tt.cache) {
    throw error(fmt::format(
        "--layout vllm: no tensor 'cos_sin_cache' nor a lone [P, {}] tensor; the dump holds {}",
        rot, tensor_list(d)));
  }
  t.rows = rows_of(tt.cache, tt.cache_name, rot, t.batch, table_layout::vllm, s);
  t.width = pairs;
  t.cos = {tt.cache, rot, 1, 0};
  t.sin = {tt.cache, rot, 1, pairs};
  for (std::int64_t j = 0; j < pairs; ++j) t.pair.push_back(j);
  t.source =
      fmt::format("tensor '{}' {} = [cos | sin]", tt.cache_name, io::shape_string(tt.cache->shape));
  return fmt::format("[P, {}] = [cos | sin] per row (vLLM's cos_sin_cache; ggml's NEOX order)",
                     rot);
}

// Reads (cos, sin) pairs (docs/certify.md §4): [P, pairs, 2], complex [P, pairs] = cos + i·sin
// (Meta's freqs_cis), or a lone [P, rot] of flattened pairs (ggml's NORMAL order and its cache).
// Returns how it read them.
std::string read_pairs(const dump& d, const table_tensors& tt, const spec::rope& s,
                       table_source& t) {
  const std::int64_t pairs = s.pairs(), rot = s.rotary_dim;
  if (!tt.pairs) {
    throw error(fmt::format(
        "--layout pairs: no [P, pairs, 2] tensor ('table' or 'freqs_cis') nor a lone [P, {}] "
        "tensor; the dump holds {}",
        rot, tensor_list(d)));
  }
  const auto sh = drop_ones(tt.pairs->shape, 3);
  const bool flattened = tt.pairs == tt.flat;
  if (flattened) {
    t.rows = rows_of(tt.pairs, tt.pairs_name, rot, t.batch, table_layout::pairs, s);
  } else if ((sh.size() == 3 || sh.size() == 4) && sh[sh.size() - 2] == pairs && sh.back() == 2) {
    t.batch = sh.size() == 4 ? sh[0] : 1;
    t.rows = t.batch * sh[sh.size() - 3];
  } else {
    throw error(fmt::format("tensor '{}' has shape {}, expected [P, {}, 2]{}", tt.pairs_name,
                            io::shape_string(tt.pairs->shape), pairs,
                            tt.pairs->complex ? fmt::format(" (complex [P, {}])", pairs) : ""));
  }
  t.width = pairs;
  t.cos = {tt.pairs, 2 * pairs, 2, 0};
  t.sin = {tt.pairs, 2 * pairs, 2, 1};
  for (std::int64_t j = 0; j < pairs; ++j) t.pair.push_back(j);
  if (tt.pairs->complex) {
    std::vector<std::int64_t> cs(tt.pairs->shape.begin(), tt.pairs->shape.end() - 1);
    t.source =
        fmt::format("tensor '{}' complex {} = cos + i·sin", tt.pairs_name, io::shape_string(cs));
    return fmt::format("complex [P, {}] = cos + i·sin (Meta's freqs_cis), as (real, imag) pairs",
                       pairs);
  }
  t.source = fmt::format("tensor '{}' {} of (cos, sin) pairs", tt.pairs_name,
                         io::shape_string(tt.pairs->shape));
  return flattened
             ? fmt::format("[P, {}] = (cos, sin) pairs per row (ggml's NORMAL order and its cache)",
                           rot)
             : fmt::format("[P, {}, 2] of (cos, sin) pairs", pairs);
}

}  // namespace

table_source find_rope_table(const dump& d, const spec::rope& s,
                             std::optional<table_layout> forced) {
  table_tensors tt = table_candidates(d, s);
  auto [l, by] = choose_table_layout(d, s, forced, tt);
  table_source t;
  t.detected = !forced;
  std::string read_as;
  switch (l) {
    case table_layout::separate:
    case table_layout::halves:
    case table_layout::repeated:
      read_as = read_cos_sin(d, tt, s, forced.has_value(), l, by, t);
      break;
    case table_layout::vllm:
      read_as = read_vllm(d, tt, s, t);
      break;
    case table_layout::pairs:
      read_as = read_pairs(d, tt, s, t);
      break;
  }
  t.layout = l;
  if (t.batch > 1) {
    t.batch_identical = batches_equal(*t.cos.a, t.batch) && batches_equal(*t.sin.a, t.batch);
    read_as +=
        fmt::format("; a batch of {}: {} rows of {} per batch", t.batch, t.rows / t.batch, t.width);
  }
  std::string tensors = t.source;
  t.reading = {"table", to_string(l), tensors, read_as, by};
  return t;
}

bool table_present(const dump& d, const spec::rope& s, const options& o) {
  if (o.layout) return true;
  for (const char* n : {"cos", "cos_cached", "cos_sin_cache", "table", "freqs_cis", "cos_sin"}) {
    if (d.find(n)) return true;
  }
  for (const auto& [name, a] : d.tensors) {
    if (is_role_name(name) || !is_float(a.type)) continue;
    const auto sh3 = drop_ones(a.shape, 3), sh2 = drop_ones(a.shape, 2);
    if ((sh3.size() == 3 || sh3.size() == 4) && sh3[sh3.size() - 2] == s.pairs() &&
        sh3.back() == 2) {
      return true;
    }
    if ((sh2.size() == 2 || sh2.size() == 3) && sh2.back() == s.rotary_dim) return true;
  }
  return false;
}

void fold_identical_batches(table_source& t, std::vector<std::int64_t>& pos) {
  if (t.batch <= 1) return;
  const auto per = static_cast<std::size_t>(t.rows / t.batch);
  bool same = t.batch_identical;
  for (std::size_t r = per; same && r < pos.size(); ++r) same = pos[r] == pos[r % per];
  if (same) {
    t.rows /= t.batch;
    pos.resize(per);
    t.reading.read_as += fmt::format(", all {} the same: the first read", t.batch);
  } else {
    t.reading.read_as += ", each with its own positions";
  }
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
      std::byte* row = (which == 0 ? out.cos : out.sin).data.mutable_data() +
                       static_cast<std::size_t>(r * pairs) * es;
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

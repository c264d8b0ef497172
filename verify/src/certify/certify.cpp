// Certification of dumped tables (certify.h). Every value of the dump is compared with the exact
// reference rounded to the dump's dtype (fast path, identical to MPFR) and with the analytic bounds
// of the recipes (pev/impl/contract.h); grades follow from the figures.

#include "pev/certify/certify.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/core/real.h"
#include "pev/impl/contract.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"
#include "pev/ref/fast.h"
#include "pev/ref/recipe.h"
#include "pev/ref/relative.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"
#include "pev/scalar/traits.h"

namespace pev::certify {
namespace {

using metric::format;
using metric::ulp_at;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kChunkRows = 2048;
constexpr std::size_t kFirstMismatches = 8;

template <class T>
constexpr format format_of() {
  if constexpr (std::is_same_v<T, double>) {
    return metric::kF64;
  } else if constexpr (std::is_same_v<T, float>) {
    return metric::kF32;
  } else if constexpr (std::is_same_v<T, half>) {
    return metric::kF16;
  } else {
    return metric::kBF16;
  }
}

template <class T>
constexpr const char* dtype_name() {
  if constexpr (std::is_same_v<T, double>) {
    return "fp64";
  } else if constexpr (std::is_same_v<T, float>) {
    return "fp32";
  } else if constexpr (std::is_same_v<T, half>) {
    return "fp16";
  } else {
    return "bf16";
  }
}

std::vector<std::int64_t> squeezed(const std::vector<std::int64_t>& shape) {
  std::size_t k = 0;
  while (k + 1 < shape.size() && shape[k] == 1) ++k;
  return {shape.begin() + static_cast<std::ptrdiff_t>(k), shape.end()};
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// Element k of `a` (whose dtype is T's), decoded exactly.
template <class T>
T element(const io::array& a, std::size_t k) {
  using tr = scalar_traits<T>;
  typename tr::bits_type b;
  std::memcpy(&b, a.data.data() + k * sizeof(b), sizeof(b));
  return tr::from_bits(b);
}

// Calls f(std::type_identity<T>{}) for the floating-point dtype of a tensor.
template <class F>
void with_float_type(const io::array& a, const std::string& what, F&& f) {
  switch (a.type) {
    case io::dtype::f64:
      return f(std::type_identity<double>{});
    case io::dtype::f32:
      return f(std::type_identity<float>{});
    case io::dtype::f16:
      return f(std::type_identity<half>{});
    case io::dtype::bf16:
      return f(std::type_identity<bfloat16>{});
    default:
      throw error(fmt::format("{} has dtype {}, expected F32, F16, BF16 or F64", what,
                              io::safetensors_name(a.type)));
  }
}

// ---- Figures of one check ---------------------------------------------------------------------

// Accumulates one check's figures value by value (the recipes' max ρ in plain members: this is
// the inner loop of every certification).
class tally {
 public:
  tally(std::string name, std::string source, const char* dtype, double drift_bound, bool ggml)
      : ggml_(ggml) {
    c_.name = std::move(name);
    c_.source = std::move(source);
    c_.dtype = dtype;
    c_.drift_free_bound = drift_bound;
  }

  /// One value: position p, index i, the data value (as double), RN_T(exact) equal or not, the
  /// exact value y (double), its ulp in T, and the recipes' bounds (hf, ggml; vllm's follow from
  /// hf's: the fp32 value stored in fp16 or bf16 first).
  /// `vllm`: the bounds with a 16-bit cache (fp16, bf16) when they are not the table's own (the
  /// value itself stored: hf's plus half an ulp at |y|), e.g. for rotated outputs.
  void add(std::int64_t p, std::int64_t i, double got, bool cr, double y, double ulp, double b_hf,
           double b_ggml, double drift = -1,
           std::optional<std::pair<double, double>> vllm = std::nullopt) {
    if (drift < 0) drift = c_.drift_free_bound;
    drift_max_ = std::max(drift_max_, drift);
    const double ay = std::fabs(y);
    ++c_.count;
    const bool finite = std::isfinite(got);
    const double abs = finite ? std::fabs(got - y) : kInf;
    const double ue = abs / ulp;
    c_.non_finite += !finite;
    c_.correctly_rounded += cr;
    c_.faithful += ue <= 1.0;
    c_.max_abs_error = std::max(c_.max_abs_error, abs);
    drift_rho_ = std::max(drift_rho_, abs == 0 ? 0.0 : abs / drift);
    rho_hf_ = std::max(rho_hf_, abs / b_hf);
    if (abs > b_hf) {  // the vllm bounds exceed hf's: only needed where hf's is exceeded
      const double v16 = vllm ? vllm->first : b_hf + metric::half_ulp(ay + b_hf, metric::kF16);
      const double vbf = vllm ? vllm->second : b_hf + metric::half_ulp(ay + b_hf, metric::kBF16);
      rho_v16_ = std::max(rho_v16_, abs / v16);
      rho_vbf_ = std::max(rho_vbf_, abs / vbf);
    }
    if (ggml_) rho_gg_ = std::max(rho_gg_, abs / b_ggml);
    if (ue > c_.max_ulp_error || c_.count == 1) {
      c_.max_ulp_error = std::max(c_.max_ulp_error, ue);
      c_.worst = {p, i, got, y, abs, ue};
    }
  }

  check finish() {
    check c = c_;
    c.drift_free_bound = std::max(c.drift_free_bound, drift_max_);
    // The vllm bounds are larger than hf's, so where hf's holds their ρ is below hf's (≤ 1); they
    // are measured where it does not. Reported: an upper bound when ≤ 1, exact above.
    c.max_rho["hf"] = rho_hf_;
    c.max_rho["vllm-fp16"] = std::max(rho_v16_, std::min(rho_hf_, 1.0));
    c.max_rho["vllm-bf16"] = std::max(rho_vbf_, std::min(rho_hf_, 1.0));
    if (ggml_) c.max_rho["ggml"] = rho_gg_;
    const double vllm = std::min(c.max_rho["vllm-fp16"], c.max_rho["vllm-bf16"]);
    if (c.non_finite > 0) {
      c.best = grade::not_certified;
    } else if (c.correctly_rounded == c.count) {
      c.best = grade::correctly_rounded;
    } else if (c.max_ulp_error <= 1.0) {
      c.best = grade::faithful;
    } else if (drift_rho_ <= 1.0) {
      c.best = grade::drift_free;
    } else if (rho_hf_ <= 1.0) {
      c.best = grade::recipe_hf;
    } else if (vllm <= 1.0) {
      c.best = grade::recipe_vllm;
    } else if (ggml_ && rho_gg_ <= 1.0) {
      c.best = grade::recipe_ggml;
    } else {
      c.best = grade::not_certified;
    }
    return c;
  }

 private:
  check c_;
  bool ggml_;
  double rho_hf_ = 0, rho_v16_ = 0, rho_vbf_ = 0, rho_gg_ = 0;
  double drift_rho_ = 0, drift_max_ = 0;
};

// Where the data leaves the claimed recipe's bound.
struct mismatch_log {
  std::vector<mismatch> first;
  void add(const char* check, std::int64_t p, std::int64_t i, double got, double y, double bound) {
    if (first.size() < kFirstMismatches) first.push_back({check, p, i, got, y, bound});
  }
};

// Which bound the claim (or, without one, hf) is held to: 0 hf, 1 ggml, 2 one ulp (exact).
int claim_kind(const options& o) {
  if (!o.recipe || *o.recipe == "hf" || *o.recipe == "vllm") return 0;
  if (*o.recipe == "ggml") return 1;
  return 2;
}

// ---- RoPE tables ------------------------------------------------------------------------------

// One plane (cos or sin) of a table in the dump: flat element = row·row_stride + col·col_stride +
// offset, and the pair each column holds.
struct plane {
  const io::array* a = nullptr;
  std::int64_t row_stride = 0, col_stride = 1, offset = 0;
  std::size_t at(std::int64_t r, std::int64_t c) const {
    return static_cast<std::size_t>(r * row_stride + c * col_stride + offset);
  }
};

struct table_source {
  plane cos, sin;
  std::int64_t rows = 0, width = 0;
  std::vector<std::int64_t> pair;  // pair of each column
  table_layout layout = table_layout::separate;
  bool detected = true;
  std::string source;
};

const io::array* find_any(const dump& d, std::initializer_list<const char*> names,
                          std::string* found) {
  for (const char* n : names) {
    if (const io::array* a = d.find(n)) {
      *found = n;
      return a;
    }
  }
  return nullptr;
}

std::string tensor_list(const dump& d) {
  std::string s;
  for (const auto& [name, a] : d.tensors) {
    s += (s.empty() ? "" : ", ") + fmt::format("'{}' {}", name, shape_text(a.shape));
  }
  return s.empty() ? "no tensors" : s;
}

// Whether every value of `a` ([rows, 2·pairs] after squeezing) equals its duplicate: halves
// (j, j + pairs) or repeated (2i, 2i + 1). Compared as encodings.
bool duplicates_equal(const io::array& a, std::int64_t rows, std::int64_t pairs, bool halves) {
  const std::size_t es = io::dtype_size(a.type);
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

table_source find_rope_table(const dump& d, const spec::rope& s,
                             std::optional<table_layout> forced) {
  const std::int64_t pairs = s.pairs(), rot = s.rotary_dim;
  table_source t;
  std::string cn, sn, vn, pn;
  const io::array* c = find_any(d, {"cos", "cos_cached"}, &cn);
  const io::array* sn_a = find_any(d, {"sin", "sin_cached"}, &sn);
  const io::array* v = find_any(d, {"cos_sin_cache"}, &vn);
  const io::array* pr = find_any(d, {"table", "freqs_cis", "cos_sin"}, &pn);
  if (!pr && !(c && sn_a) && !v) {
    // A lone [P, pairs, 2] tensor (e.g. an npy file with another name).
    for (const auto& [name, a] : d.tensors) {
      const auto sh = squeezed(a.shape);
      if (sh.size() == 3 && sh[1] == pairs && sh[2] == 2 && name != "positions") {
        if (pr) throw error("more than one [P, pairs, 2] tensor: name the table 'table'");
        pr = &a;
        pn = name;
      }
    }
  }
  table_layout l;
  if (forced) {
    l = *forced;
  } else if (c && sn_a) {
    const auto sh = squeezed(c->shape);
    l = sh.size() == 2 && sh[1] == rot && rot != pairs ? table_layout::halves
                                                       : table_layout::separate;
  } else if (v) {
    l = table_layout::vllm;
  } else if (pr) {
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
                      name, shape_text(a->shape), width, to_string(l), rot, pairs));
    }
    return sh[0];
  };
  switch (l) {
    case table_layout::separate:
    case table_layout::halves:
    case table_layout::repeated: {
      if (!c || !sn_a) {
        throw error(fmt::format("--layout {}: the dump needs tensors 'cos' and 'sin'; it holds {}",
                                to_string(l), tensor_list(d)));
      }
      if (c->type != sn_a->type) {
        throw error(fmt::format("tensors '{}' ({}) and '{}' ({}) have different dtypes", cn,
                                io::safetensors_name(c->type), sn,
                                io::safetensors_name(sn_a->type)));
      }
      const std::int64_t width = l == table_layout::separate ? pairs : rot;
      t.rows = need_2d(c, cn, width);
      if (need_2d(sn_a, sn, width) != t.rows) {
        throw error(fmt::format("tensors '{}' {} and '{}' {} have different numbers of rows", cn,
                                shape_text(c->shape), sn, shape_text(sn_a->shape)));
      }
      if (l != table_layout::separate && !forced) {
        // transformers' halves or GPT-J's repeated pairs: decided by the data when only one holds,
        // by the spec's layout otherwise (then the duplicates that differ count as errors).
        const bool h = duplicates_equal(*c, t.rows, pairs, true) &&
                       duplicates_equal(*sn_a, t.rows, pairs, true);
        const bool r = duplicates_equal(*c, t.rows, pairs, false) &&
                       duplicates_equal(*sn_a, t.rows, pairs, false);
        if (h != r) {
          l = h ? table_layout::halves : table_layout::repeated;
        } else {
          l = s.layout == spec::rope_layout::neox ? table_layout::halves : table_layout::repeated;
        }
      }
      t.width = width;
      t.cos = {c, width, 1, 0};
      t.sin = {sn_a, width, 1, 0};
      for (std::int64_t j = 0; j < width; ++j) {
        t.pair.push_back(l == table_layout::separate ? j
                         : l == table_layout::halves ? j % pairs
                                                     : j / 2);
      }
      t.source = fmt::format("tensors '{}' and '{}' {}", cn, sn, shape_text(c->shape));
      break;
    }
    case table_layout::vllm: {
      if (!v)
        throw error(fmt::format("--layout vllm: no tensor 'cos_sin_cache'; the dump holds {}",
                                tensor_list(d)));
      t.rows = need_2d(v, vn, rot);
      t.width = pairs;
      t.cos = {v, rot, 1, 0};
      t.sin = {v, rot, 1, pairs};
      for (std::int64_t j = 0; j < pairs; ++j) t.pair.push_back(j);
      t.source = fmt::format("tensor '{}' {} = [cos | sin]", vn, shape_text(v->shape));
      break;
    }
    case table_layout::pairs: {
      if (!pr)
        throw error(
            fmt::format("--layout pairs: no [P, pairs, 2] tensor ('table' or "
                        "'freqs_cis'); the dump holds {}",
                        tensor_list(d)));
      const auto sh = squeezed(pr->shape);
      if (sh.size() != 3 || sh[1] != pairs || sh[2] != 2) {
        throw error(fmt::format("tensor '{}' has shape {}, expected [P, {}, 2]", pn,
                                shape_text(pr->shape), pairs));
      }
      t.rows = sh[0];
      t.width = pairs;
      t.cos = {pr, 2 * pairs, 2, 0};
      t.sin = {pr, 2 * pairs, 2, 1};
      for (std::int64_t j = 0; j < pairs; ++j) t.pair.push_back(j);
      t.source = fmt::format("tensor '{}' {} of (cos, sin) pairs", pn, shape_text(pr->shape));
      break;
    }
  }
  t.layout = l;
  return t;
}

// Whether `pos` holds every position 0 … max; with `required`, pev::error naming the first one
// missing.
bool covers_every_position(const std::vector<std::int64_t>& pos, bool required) {
  std::vector<std::int64_t> sorted(pos);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    if (sorted[k] != static_cast<std::int64_t>(k)) {
      if (!required) return false;
      throw error(
          fmt::format("--exhaustive: the rows do not cover every position 0 … {}: {} is "
                      "missing",
                      sorted.back(), static_cast<std::int64_t>(k)));
    }
  }
  return true;
}

// Positions of `rows` rows: --positions, else the first of `names` in the dump (q/k dumps with a
// table of another length name theirs qk_positions), else 0 … rows − 1.
std::vector<std::int64_t> row_positions(const dump& d, const options& o, std::int64_t rows,
                                        std::initializer_list<const char*> names = {
                                            "positions", "position_ids"}) {
  std::vector<std::int64_t> pos = o.positions;
  if (pos.empty()) {
    std::string name;
    if (const io::array* a = find_any(d, names, &name)) {
      pos = a->to_int64();
    } else {
      pos.resize(static_cast<std::size_t>(rows));
      for (std::int64_t r = 0; r < rows; ++r) pos[static_cast<std::size_t>(r)] = r;
    }
  }
  if (static_cast<std::int64_t>(pos.size()) != rows) {
    throw error(fmt::format("the table has {} rows but {} positions are given", rows, pos.size()));
  }
  if (!pos.empty() && *std::min_element(pos.begin(), pos.end()) < 0) {
    throw error("negative positions cannot be certified");
  }
  covers_every_position(pos, o.exhaustive);
  return pos;
}

struct rope_context {
  const spec::rope& s;
  std::optional<std::int64_t> seq;
  const ref::fast_rope_reference& ref;
  double m = 1;
  impl::rope_model hf;
  impl::ggml_model gg;
};

double hf_bound(const rope_context& k, std::int64_t p, std::int64_t i, double y, format out) {
  y = std::fabs(y);
  return impl::path_bound(
      impl::trig_times_m(impl::hf_angle_error(p, k.hf.freq[std::size_t(i)]), k.hf.m, y / k.m), y,
      kernel::storage::output, out, metric::kF32);
}

// The reference values of a chunk of rows: RN_T of the exact values and the exact values as
// doubles, from the fast path (default) or, with --reference mpfr, from the MPFR path directly
// (the same rounded values, at MPFR's speed; counted as MPFR rows in the stats).
template <class T>
void reference_table(const rope_context& k, bool mpfr, std::span<const std::int64_t> chunk,
                     std::vector<T>& rc, std::vector<T>& rs, std::vector<double>& yc,
                     std::vector<double>& ys, ref::fast_stats& stats) {
  if (!mpfr) {
    k.ref.table_values<T>(chunk, rc, rs, yc, ys, &stats);
    return;
  }
  const std::size_t n = static_cast<std::size_t>(k.s.pairs());
  for (std::size_t r = 0; r < chunk.size(); ++r) {
    const auto row = k.ref.reference().row(chunk[r]);
    ++stats.mpfr_rows;
    for (std::size_t i = 0; i < n; ++i) {
      rc[r * n + i] = round_to<T>(row[i].cos);
      rs[r * n + i] = round_to<T>(row[i].sin);
      yc[r * n + i] = row[i].cos.convert_to<double>();
      ys[r * n + i] = row[i].sin.convert_to<double>();
    }
    stats.values += 2 * n;
  }
}

template <class T>
void rope_table_checks(const rope_context& k, const table_source& t,
                       const std::vector<std::int64_t>& pos, const options& o, certificate& cert,
                       mismatch_log& log, ref::fast_stats& stats) {
  constexpr format fmt_t = format_of<T>();
  const double drift = 2 * ulp_at(k.m, fmt_t);
  tally tc("cos", t.source, dtype_name<T>(), drift, true);
  tally ts("sin", t.source, dtype_name<T>(), drift, true);
  const std::int64_t pairs = k.s.pairs();
  const int claim = claim_kind(o);
  std::vector<T> rc, rs;
  std::vector<double> yc, ys;
  for (std::size_t r0 = 0; r0 < pos.size(); r0 += kChunkRows) {
    const std::size_t n = std::min(kChunkRows, pos.size() - r0);
    const std::span<const std::int64_t> chunk(pos.data() + r0, n);
    rc.resize(n * static_cast<std::size_t>(pairs));
    rs.resize(rc.size());
    yc.resize(rc.size());
    ys.resize(rc.size());
    reference_table<T>(k, o.mpfr_reference, chunk, rc, rs, yc, ys, stats);
    for (std::size_t rr = 0; rr < n; ++rr) {
      const auto r = static_cast<std::int64_t>(r0 + rr);
      const std::int64_t p = pos[r0 + rr];
      const std::vector<metric::tv> angles = k.gg.angles(p);
      for (std::int64_t j = 0; j < t.width; ++j) {
        const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
        const std::size_t e = rr * static_cast<std::size_t>(pairs) + static_cast<std::size_t>(i);
        for (int which = 0; which < 2; ++which) {
          const plane& pl = which == 0 ? t.cos : t.sin;
          const T got = element<T>(*pl.a, pl.at(r, j));
          const T rn = which == 0 ? rc[e] : rs[e];
          const double y = which == 0 ? yc[e] : ys[e];
          const double ay = std::fabs(y);
          const double b_hf = hf_bound(k, p, i, y, fmt_t);
          const double b_gg =
              impl::path_bound(impl::trig_times_m(angles[std::size_t(i)].e, k.gg.m, ay / k.m), ay,
                               kernel::storage::output, fmt_t, metric::kF32);
          const double g = scalar_traits<T>::to_double(got);
          const bool cr = metric::ulp_distance(got, rn) == 0;
          (which == 0 ? tc : ts).add(p, j, g, cr, y, ulp_at(ay, fmt_t), b_hf, b_gg);
          const double bound = claim == 0 ? b_hf : claim == 1 ? b_gg : ulp_at(ay, fmt_t);
          if (!(std::fabs(g - y) <= bound)) log.add(which == 0 ? "cos" : "sin", p, j, g, y, bound);
        }
      }
    }
  }
  // The worst values' exact values from MPFR, so that the certificate's worst case does not
  // depend on the reference path (the fast path's doubles are within 2^−49·m; counts, ρ and
  // grades never depended on it).
  for (int which = 0; which < 2; ++which) {
    check c = (which == 0 ? tc : ts).finish();
    if (c.count > 0) {
      const std::int64_t i = t.pair[static_cast<std::size_t>(c.worst.index)];
      const auto row = k.ref.reference().row(c.worst.position);
      const double y = (which == 0 ? row[std::size_t(i)].cos : row[std::size_t(i)].sin)
                           .template convert_to<double>();
      c.worst.want = y;
      c.worst.abs_error = std::fabs(c.worst.got - y);
      c.worst.ulp_error = c.worst.abs_error / ulp_at(std::fabs(y), fmt_t);
      c.max_ulp_error = c.worst.ulp_error;
    }
    cert.checks.push_back(c);
  }
}

// How well each mistake explains the data, accumulated over everything compared (table and
// rotated q/k): ρ = |data − mistaken value| / hf bound.
struct evidence {
  std::string description;
  double max_rho = 0, sum2 = 0;
  std::uint64_t count = 0;
  void add(double rho) {
    max_rho = std::max(max_rho, rho);
    sum2 += std::isfinite(rho) ? rho * rho : 1e300;
    ++count;
  }
};
using evidence_map = std::map<std::string, evidence>;

// ρ of a data value g against a mistaken value mv with bound b (non-finite: 0 when both are the
// same non-finite value, else infinite).
double rho_against(double g, double mv, double b) {
  if (std::isfinite(g) && std::isfinite(mv)) return std::fabs(g - mv) / b;
  return (std::isnan(g) && std::isnan(mv)) || g == mv ? 0.0 : kInf;
}

void to_explanations(const evidence_map& ev, diagnosis& dx) {
  for (const auto& [id, x] : ev) {
    const double rms = x.count ? std::sqrt(x.sum2 / static_cast<double>(x.count)) : 0;
    dx.explanations.push_back({id, x.description, x.max_rho, rms, x.max_rho <= kExplainRho});
  }
}

// Diagnosis for RoPE tables: each applicable mutant's table against the data, in hf bounds.
template <class T>
void rope_explanations(const rope_context& k, const spec::encoding& e, const table_source& t,
                       const std::vector<std::int64_t>& pos, evidence_map& ev) {
  if constexpr (std::is_same_v<T, double>) {
    return;  // mutants produce fp32/fp16/bf16 tables only
  } else {
    constexpr format fmt_t = format_of<T>();
    const std::int64_t pairs = k.s.pairs();
    std::vector<T> mc, ms;
    for (const impl::mutant_info& info : impl::mutant_catalogue()) {
      if (std::string_view(info.family) != "rope" || !info.applies(e)) continue;
      const auto m = impl::make_mutant(info.id, e);
      if (!m->supports(impl::output::rope_table, impl::dtype_of<T>())) continue;
      evidence& x = ev[info.id];
      x.description = info.description;
      for (std::size_t r0 = 0; r0 < pos.size(); r0 += kChunkRows) {
        const std::size_t n = std::min(kChunkRows, pos.size() - r0);
        const std::span<const std::int64_t> chunk(pos.data() + r0, n);
        mc.resize(n * static_cast<std::size_t>(pairs));
        ms.resize(mc.size());
        m->rope_table(chunk, k.seq, std::span<T>(mc), std::span<T>(ms));
        for (std::size_t rr = 0; rr < n; ++rr) {
          const auto r = static_cast<std::int64_t>(r0 + rr);
          for (std::int64_t j = 0; j < t.width; ++j) {
            const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
            const std::size_t el =
                rr * static_cast<std::size_t>(pairs) + static_cast<std::size_t>(i);
            for (int which = 0; which < 2; ++which) {
              const plane& pl = which == 0 ? t.cos : t.sin;
              const double g = scalar_traits<T>::to_double(element<T>(*pl.a, pl.at(r, j)));
              const double mv = scalar_traits<T>::to_double(which == 0 ? mc[el] : ms[el]);
              // The bound at the larger magnitude of the two values compared (no reference
              // needed: the bound depends on the exact value only through its magnitude).
              const double b =
                  hf_bound(k, pos[r0 + rr], i, std::max(std::fabs(g), std::fabs(mv)), fmt_t);
              x.add(rho_against(g, mv, b));
            }
          }
        }
      }
    }
  }
}

// ---- Rotated q/k ------------------------------------------------------------------------------

// A pair of input and rotated output tensors [T, H, D] in the dump (q_in/q_out or k_in/k_out).
struct qk_source {
  std::string name;  // "q" or "k"
  const io::array* in = nullptr;
  const io::array* out = nullptr;
  std::int64_t tokens = 0, heads = 0, dim = 0;
};

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
          in_name, shape_text(in->shape), out_name, shape_text(out->shape), s.head_dim));
    }
    v.push_back({n, in, out, a[0], a[1], a[2]});
  }
  return v;
}

// The two dims of pair i (neox: i, i + rot/2; interleaved: 2i, 2i + 1).
std::pair<std::int64_t, std::int64_t> pair_dims(const spec::rope& s, std::int64_t i) {
  if (s.layout == spec::rope_layout::neox) return {i, i + s.pairs()};
  return {2 * i, 2 * i + 1};
}

// Per element of a rotated head: the pair it belongs to (−1: pass-through).
std::vector<std::int64_t> pair_of_dims(const spec::rope& s) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(s.head_dim), -1);
  for (std::int64_t i = 0; i < s.pairs(); ++i) {
    const auto [a, b] = pair_dims(s, i);
    v[static_cast<std::size_t>(a)] = i;
    v[static_cast<std::size_t>(b)] = i;
  }
  return v;
}

// Bound of the hf recipe (fp32 table, fp32 rotation without FMA, rounded to T; apply.h's
// contract) on one rotated element with pair inputs x0, x1 and exact output y: the table's error
// (its bound at magnitude m) times |x0| + |x1|, plus the rotation's roundings. Pass-through dims
// are copies: bound 0.
double rotation_hf_bound(const rope_context& k, std::int64_t p, std::int64_t i, double x0,
                         double x1, double y, format out) {
  if (i < 0) return 0;
  const double ax = std::fabs(x0) + std::fabs(x1);
  return ax * hf_bound(k, p, i, k.m, metric::kF32) +
         impl::rotation_bound(ax * k.m, std::fabs(y), out);
}

template <class T>
void rotation_checks(const rope_context& k, const qk_source& q,
                     const std::vector<std::int64_t>& pos, const options& o, certificate& cert,
                     mismatch_log& log, ref::fast_stats& stats) {
  constexpr format fmt_t = format_of<T>();
  const std::int64_t D = q.dim;
  const auto pair = pair_of_dims(k.s);
  tally tl(q.name + "_out",
           fmt::format("tensors '{0}_in' and '{0}_out' {1}", q.name, shape_text(q.out->shape)),
           dtype_name<T>(), 0, true);
  const int claim = claim_kind(o);
  std::vector<double> x(static_cast<std::size_t>(D)), y(x.size());
  std::vector<T> rn(x.size());
  for (std::int64_t t = 0; t < q.tokens; ++t) {
    const std::int64_t p = pos[static_cast<std::size_t>(t)];
    const std::vector<metric::tv> angles = k.gg.angles(p);
    for (std::int64_t h = 0; h < q.heads; ++h) {
      const std::size_t base = static_cast<std::size_t>((t * q.heads + h) * D);
      for (std::int64_t j = 0; j < D; ++j) {
        x[std::size_t(j)] = scalar_traits<T>::to_double(element<T>(*q.in, base + std::size_t(j)));
      }
      if (o.mpfr_reference) {
        std::vector<real> xr(x.begin(), x.end());
        const std::vector<real> yr = k.ref.reference().rotate(p, xr);
        for (std::size_t u = 0; u < yr.size(); ++u) {
          rn[u] = round_to<T>(yr[u]);
          y[u] = yr[u].convert_to<double>();
        }
        stats.values += yr.size();
        ++stats.mpfr_rows;
      } else {
        k.ref.rotate<T>(p, x, rn, &stats);
        k.ref.rotate<double>(p, x, y, &stats);
      }
      for (std::int64_t j = 0; j < D; ++j) {
        const auto u = static_cast<std::size_t>(j);
        const std::int64_t i = pair[u];
        double x0 = 0, x1 = 0;
        if (i >= 0) {
          const auto [a, b] = pair_dims(k.s, i);
          x0 = x[std::size_t(a)];
          x1 = x[std::size_t(b)];
        }
        const T got = element<T>(*q.out, base + u);
        const double g = scalar_traits<T>::to_double(got);
        const double ay = std::fabs(y[u]);
        const double b_hf = rotation_hf_bound(k, p, i, x0, x1, y[u], fmt_t);
        const double ax = std::fabs(x0) + std::fabs(x1);
        const double b_gg =
            i < 0
                ? 0
                : ax * impl::path_bound(impl::trig_times_m(angles[std::size_t(i)].e, k.gg.m, 1.0),
                                        k.m, kernel::storage::output, metric::kF32, metric::kF32) +
                      impl::rotation_bound(ax * k.m, ay, fmt_t);
        // Drift-free for a rotated element: within 2 ulps of the pair's magnitude m·(|x0| + |x1|).
        const double drift = i < 0 ? 0 : 2 * ulp_at(k.m * ax, fmt_t);
        // A 16-bit cache (vllm): each table value off by up to half an ulp at m more.
        const double tiny = std::numeric_limits<double>::denorm_min();
        const std::pair<double, double> vllm{
            std::max(b_hf + ax * metric::half_ulp(k.m, metric::kF16), tiny),
            std::max(b_hf + ax * metric::half_ulp(k.m, metric::kBF16), tiny)};
        tl.add(p, h * D + j, g, metric::ulp_distance(got, rn[u]) == 0, y[u], ulp_at(ay, fmt_t),
               std::max(b_hf, tiny), std::max(b_gg, tiny), drift, vllm);
        const double bound = claim == 0 ? b_hf : claim == 1 ? b_gg : ulp_at(ay, fmt_t);
        if (!(std::fabs(g - y[u]) <= bound)) {
          log.add(q.name == "q" ? "q_out" : "k_out", p, h * D + j, g, y[u], bound);
        }
      }
    }
  }
  cert.checks.push_back(tl.finish());
}

template <class T>
void rotation_explanations(const rope_context& k, const spec::encoding& e, const qk_source& q,
                           const std::vector<std::int64_t>& pos, evidence_map& ev) {
  if constexpr (std::is_same_v<T, double>) {
    return;
  } else {
    constexpr format fmt_t = format_of<T>();
    const std::size_t n = static_cast<std::size_t>(q.tokens * q.heads * q.dim);
    std::vector<T> in(n), out(n);
    for (std::size_t u = 0; u < n; ++u) in[u] = element<T>(*q.in, u);
    const auto pair = pair_of_dims(k.s);
    std::vector<double> x(static_cast<std::size_t>(q.dim));
    for (const impl::mutant_info& info : impl::mutant_catalogue()) {
      if (std::string_view(info.family) != "rope" || !info.applies(e)) continue;
      const auto m = impl::make_mutant(info.id, e);
      if (!m->supports(impl::output::rope_rotate, impl::dtype_of<T>())) continue;
      m->rope_rotate(pos, k.seq, kernel::heads_view<const T>{in, q.tokens, q.heads, q.dim},
                     kernel::heads_view<T>{out, q.tokens, q.heads, q.dim});
      evidence& x_ev = ev[info.id];
      x_ev.description = info.description;
      for (std::int64_t t = 0; t < q.tokens; ++t) {
        const std::int64_t p = pos[static_cast<std::size_t>(t)];
        for (std::int64_t h = 0; h < q.heads; ++h) {
          const std::size_t base = static_cast<std::size_t>((t * q.heads + h) * q.dim);
          for (std::int64_t j = 0; j < q.dim; ++j) {
            x[std::size_t(j)] = scalar_traits<T>::to_double(in[base + std::size_t(j)]);
          }
          for (std::int64_t j = 0; j < q.dim; ++j) {
            const auto u = static_cast<std::size_t>(j);
            const std::int64_t i = pair[u];
            double x0 = 0, x1 = 0;
            if (i >= 0) {
              const auto [a, b] = pair_dims(k.s, i);
              x0 = x[std::size_t(a)];
              x1 = x[std::size_t(b)];
            }
            const double g = scalar_traits<T>::to_double(element<T>(*q.out, base + u));
            const double mv = scalar_traits<T>::to_double(out[base + u]);
            // Pass-through dims and pairs of the mistaken kernel: the bound of a rotated element
            // of this pair's magnitude (a mistaken pairing moves values between dims).
            const double b = rotation_hf_bound(k, p, std::max<std::int64_t>(i, 0), x0, x1,
                                               std::max(std::fabs(g), std::fabs(mv)), fmt_t);
            x_ev.add(b > 0 ? rho_against(g, mv, b) : (g == mv ? 0.0 : kInf));
          }
        }
      }
    }
  }
}

// ---- inv_freq and attention factor ------------------------------------------------------------

template <class T>
void inv_freq_check(const rope_context& k, const io::array& a, certificate& cert, mismatch_log& log,
                    const options& o) {
  constexpr format fmt_t = format_of<T>();
  const auto sh = squeezed(a.shape);
  const std::int64_t pairs = k.s.pairs();
  if (sh.size() != 1 || sh[0] != pairs) {
    throw error(fmt::format("tensor 'inv_freq' has shape {}, expected [{}] (one per pair)",
                            shape_text(a.shape), pairs));
  }
  const auto& rn = k.ref.inv_freq<T>();
  const auto& y = k.ref.inv_freq<double>();
  const double f_max = pairs > 0 ? *std::max_element(y.begin(), y.end()) : 1;
  tally tl("inv_freq", "tensor 'inv_freq'", dtype_name<T>(), 2 * ulp_at(f_max, fmt_t), false);
  for (std::int64_t i = 0; i < pairs; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const T got = element<T>(a, u);
    const double b = impl::path_bound(k.hf.freq[u].e, std::fabs(y[u]), kernel::storage::output,
                                      fmt_t, metric::kF32);
    const double g = scalar_traits<T>::to_double(got);
    tl.add(0, i, g, metric::ulp_distance(got, rn[u]) == 0, y[u], ulp_at(std::fabs(y[u]), fmt_t), b,
           kInf);
    const double bound = claim_kind(o) == 2 ? ulp_at(std::fabs(y[u]), fmt_t) : b;
    if (!(std::fabs(g - y[u]) <= bound)) log.add("inv_freq", 0, i, g, y[u], bound);
  }
  cert.checks.push_back(tl.finish());
}

template <class T>
void attention_factor_check(const rope_context& k, const io::array& a, const std::string& name,
                            certificate& cert) {
  constexpr format fmt_t = format_of<T>();
  if (a.elements() != 1) {
    throw error(
        fmt::format("tensor '{}' has shape {}, expected one value", name, shape_text(a.shape)));
  }
  const T rn = round_to<T>(k.ref.reference().attention_factor());
  tally tl(name, fmt::format("tensor '{}'", name), dtype_name<T>(), 2 * ulp_at(k.m, fmt_t), false);
  const T got = element<T>(a, 0);
  const double b = impl::path_bound(k.hf.m.e, k.m, kernel::storage::output, fmt_t, metric::kF32);
  tl.add(0, 0, scalar_traits<T>::to_double(got), metric::ulp_distance(got, rn) == 0, k.m,
         ulp_at(k.m, fmt_t), b, kInf);
  cert.checks.push_back(tl.finish());
}

// The dump's grade (the worst over its checks) and whether the claimed recipe holds.
void grade_and_claim(certificate& cert) {
  // The dump's grade: the worst over its checks.
  cert.result = grade::correctly_rounded;
  for (const check& c : cert.checks) cert.result = std::max(cert.result, c.best);
  // The claim holds when every check is within that recipe's bound or faithful (a correct
  // implementation more precise than its recipe); exact holds for a faithful dump.
  if (cert.claimed_recipe) {
    const std::string& r = *cert.claimed_recipe;
    cert.claim_holds = true;
    for (const check& c : cert.checks) {
      const auto within = [&](const char* key) {
        const auto it = c.max_rho.find(key);
        return it != c.max_rho.end() && it->second <= 1.0;
      };
      bool holds = c.best <= grade::faithful;
      if (r == "hf") holds = holds || within("hf");
      if (r == "vllm") holds = holds || within("hf") || within("vllm-fp16") || within("vllm-bf16");
      if (r == "ggml") holds = holds || within("ggml");
      cert.claim_holds = cert.claim_holds && holds;
    }
  }
}

// Whether the dump holds a cos/sin table (by the names and shapes find_rope_table reads).
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

void certify_rope(const spec::rope& s, const spec::encoding& e, const dump& d, const options& o,
                  certificate& cert) {
  const std::vector<qk_source> qk = find_qk(d, s);
  std::optional<table_source> t;
  if (table_present(d, s, o) || qk.empty()) t = find_rope_table(d, s, o.layout);
  std::vector<std::int64_t> pos, qk_pos;
  std::vector<std::string> what;
  if (t) {
    pos = row_positions(d, o, t->rows);
    if (pos.empty()) throw error("the table has no rows");
    what.push_back(fmt::format("rope table ({} layout{})", to_string(t->layout),
                               t->detected ? ", detected" : ""));
  }
  if (!qk.empty()) {
    // Every q/k pair has one row per token; their positions: qk_positions, else (without a table)
    // positions, else 0 … T − 1.
    for (const qk_source& q : qk) {
      if (q.tokens != qk.front().tokens) {
        throw error("tensors q_in and k_in have different numbers of tokens");
      }
    }
    qk_pos =
        t ? row_positions(d, {}, qk.front().tokens, {"qk_positions"})
          : row_positions(d, o, qk.front().tokens, {"qk_positions", "positions", "position_ids"});
    what.push_back(fmt::format("rotated {} ({} tokens × {} heads × {}, {} layout)",
                               qk.size() == 2 ? "q and k" : qk.front().name, qk.front().tokens,
                               qk.front().heads, qk.front().dim, spec::to_string(s.layout)));
  }
  const std::vector<std::int64_t>& main_pos = t ? pos : qk_pos;
  if (main_pos.empty()) throw error("the dump has no rows to certify");
  cert.what = fmt::format("{}", fmt::join(what, " and "));
  cert.exhaustive = covers_every_position(main_pos, false);
  cert.positions = main_pos.size();
  cert.min_position = *std::min_element(main_pos.begin(), main_pos.end());
  cert.max_position = *std::max_element(main_pos.begin(), main_pos.end());
  std::optional<std::int64_t> seq;
  if (s.stateful()) {
    std::int64_t top = cert.max_position;
    for (std::int64_t p : qk_pos) top = std::max(top, p);
    seq = o.seq_len.value_or(top + 1);
  }
  const ref::fast_rope_reference ref(s, seq);
  const double m = ref.reference().attention_factor().convert_to<double>();
  const rope_context k{s, seq, ref, m, impl::hf_model(s, seq, m), impl::make_ggml_model(s, seq)};
  ref::fast_stats stats;
  mismatch_log log;
  if (const io::array* f = d.find("inv_freq")) {
    with_float_type(*f, "tensor 'inv_freq'", [&](auto tag) {
      inv_freq_check<typename decltype(tag)::type>(k, *f, cert, log, o);
    });
  }
  std::string an;
  if (const io::array* a = find_any(d, {"attention_factor", "attention_scaling", "mscale"}, &an)) {
    with_float_type(*a, fmt::format("tensor '{}'", an), [&](auto tag) {
      attention_factor_check<typename decltype(tag)::type>(k, *a, an, cert);
    });
  }
  if (t) {
    with_float_type(*t->cos.a, t->source, [&](auto tag) {
      rope_table_checks<typename decltype(tag)::type>(k, *t, pos, o, cert, log, stats);
    });
  }
  for (const qk_source& q : qk) {
    with_float_type(*q.in, "tensor '" + q.name + "_in'", [&](auto tag) {
      rotation_checks<typename decltype(tag)::type>(k, q, qk_pos, o, cert, log, stats);
    });
  }
  cert.reference_values = stats.values;
  cert.reference_fallbacks = stats.fallbacks;
  diagnosis dx;
  dx.first = log.first;
  for (const check& c : cert.checks) {
    dx.max_rho_without = std::max(dx.max_rho_without, c.max_rho.at("hf"));
  }
  cert.why = dx;
  grade_and_claim(cert);
  if (!o.diagnose || cert.exit_code() == 0) return;  // certified: nothing to explain
  evidence_map ev;
  if (t) {
    with_float_type(*t->cos.a, t->source, [&](auto tag) {
      rope_explanations<typename decltype(tag)::type>(k, e, *t, pos, ev);
    });
  }
  for (const qk_source& q : qk) {
    with_float_type(*q.in, "tensor '" + q.name + "_in'", [&](auto tag) {
      rotation_explanations<typename decltype(tag)::type>(k, e, q, qk_pos, ev);
    });
  }
  to_explanations(ev, *cert.why);
}

// ---- Sinusoidal PE ----------------------------------------------------------------------------

template <class T>
void sinusoidal_checks(const spec::sinusoidal& s, const spec::encoding& e, const io::array& a,
                       const std::string& name, const std::vector<std::int64_t>& pos,
                       const options& o, certificate& cert) {
  constexpr format fmt_t = format_of<T>();
  const std::int64_t dm = s.d_model;
  const ref::fast_sinusoidal_reference ref(s);
  const impl::sinusoidal_contract hf(s, kernel::strategy::hf);
  tally tl("pe", fmt::format("tensor '{}' {}", name, shape_text(a.shape)), dtype_name<T>(),
           2 * ulp_at(1.0, fmt_t), false);
  ref::fast_stats stats;
  mismatch_log log;
  const bool exact_claim = claim_kind(o) == 2;
  std::vector<T> rn;
  std::vector<double> y;
  for (std::size_t r0 = 0; r0 < pos.size(); r0 += kChunkRows) {
    const std::size_t n = std::min(kChunkRows, pos.size() - r0);
    const std::span<const std::int64_t> chunk(pos.data() + r0, n);
    rn.resize(n * static_cast<std::size_t>(dm));
    y.resize(rn.size());
    if (o.mpfr_reference) {
      for (std::size_t rr = 0; rr < n; ++rr) {
        const std::vector<real> row = ref::sinusoidal_row(s, chunk[rr]);
        ++stats.mpfr_rows;
        for (std::size_t c = 0; c < row.size(); ++c) {
          rn[rr * row.size() + c] = round_to<T>(row[c]);
          y[rr * row.size() + c] = row[c].convert_to<double>();
        }
        stats.values += row.size();
      }
    } else {
      ref.pe<T>(chunk, rn, &stats);
      if constexpr (std::is_same_v<T, double>) {
        y = rn;
      } else {
        ref.pe<double>(chunk, y, &stats);
      }
    }
    for (std::size_t rr = 0; rr < n; ++rr) {
      const std::int64_t p = pos[r0 + rr];
      for (std::int64_t col = 0; col < dm; ++col) {
        const std::size_t el = rr * static_cast<std::size_t>(dm) + static_cast<std::size_t>(col);
        const T got = element<T>(a, (r0 * static_cast<std::size_t>(dm)) + el);
        const double ay = std::fabs(y[el]);
        const double b = hf.bound(p, col, ay, fmt_t);
        const double g = scalar_traits<T>::to_double(got);
        tl.add(p, col, g, metric::ulp_distance(got, rn[el]) == 0, y[el], ulp_at(ay, fmt_t), b,
               kInf);
        const double bound = exact_claim ? ulp_at(ay, fmt_t) : b;
        if (!(std::fabs(g - y[el]) <= bound)) log.add("pe", p, col, g, y[el], bound);
      }
    }
  }
  cert.checks.push_back(tl.finish());
  cert.reference_values = stats.values;
  cert.reference_fallbacks = stats.fallbacks;
  diagnosis dx;
  dx.first = log.first;
  dx.max_rho_without = cert.checks.back().max_rho.at("hf");
  grade_and_claim(cert);
  if constexpr (!std::is_same_v<T, double>) {
    if (o.diagnose && cert.exit_code() != 0) {
      std::vector<T> mv(static_cast<std::size_t>(dm) * pos.size());
      for (const impl::mutant_info& info : impl::mutant_catalogue()) {
        if (std::string_view(info.family) != "sinusoidal" || !info.applies(e)) continue;
        const auto m = impl::make_mutant(info.id, e);
        if (!m->supports(impl::output::sinusoidal_pe, impl::dtype_of<T>())) continue;
        m->sinusoidal_pe(pos, std::span<T>(mv));
        explanation x{info.id, info.description, 0, 0, false};
        double sum = 0;
        for (std::size_t k2 = 0; k2 < mv.size(); ++k2) {
          const double g = scalar_traits<T>::to_double(element<T>(a, k2));
          const double v = scalar_traits<T>::to_double(mv[k2]);
          const auto p = pos[k2 / static_cast<std::size_t>(dm)];
          const auto col = static_cast<std::int64_t>(k2 % static_cast<std::size_t>(dm));
          const double b = hf.bound(p, col, std::max(std::fabs(g), std::fabs(v)), fmt_t);
          const double rho = std::isfinite(g) ? std::fabs(g - v) / b : kInf;
          x.max_rho = std::max(x.max_rho, rho);
          sum += std::isfinite(rho) ? rho * rho : 1e300;
        }
        x.rms_rho = mv.empty() ? 0 : std::sqrt(sum / static_cast<double>(mv.size()));
        x.explains = x.max_rho <= kExplainRho;
        dx.explanations.push_back(x);
      }
    }
  }
  cert.why = dx;
}

void certify_sinusoidal(const spec::sinusoidal& s, const spec::encoding& e, const dump& d,
                        const options& o, certificate& cert) {
  std::string name;
  const io::array* a = find_any(d, {"pe", "PE", "pos_embedding", "weight"}, &name);
  if (!a && d.tensors.size() - (d.find("positions") ? 1 : 0) == 1) {
    for (const auto& [n, t] : d.tensors) {
      if (n != "positions") {
        a = &t;
        name = n;
      }
    }
  }
  if (!a) {
    throw error(
        fmt::format("no sinusoidal PE table in the dump (expected a tensor 'pe' [P, {}]); "
                    "it holds {}",
                    s.d_model, tensor_list(d)));
  }
  const auto sh = squeezed(a->shape);
  if (sh.size() != 2 || sh[1] != s.d_model) {
    throw error(fmt::format("tensor '{}' has shape {}, expected [P, {}] (d_model)", name,
                            shape_text(a->shape), s.d_model));
  }
  const std::vector<std::int64_t> pos = row_positions(d, o, sh[0]);
  if (pos.empty()) throw error("the table has no rows");
  cert.what = "sinusoidal pe";
  cert.exhaustive = covers_every_position(pos, false);
  cert.positions = pos.size();
  cert.min_position = *std::min_element(pos.begin(), pos.end());
  cert.max_position = *std::max_element(pos.begin(), pos.end());
  with_float_type(*a, fmt::format("tensor '{}'", name), [&](auto tag) {
    sinusoidal_checks<typename decltype(tag)::type>(s, e, *a, name, pos, o, cert);
  });
}

// ---- ALiBi --------------------------------------------------------------------------------------

std::vector<std::int64_t> index_positions(const dump& d, const char* name, std::int64_t n) {
  std::vector<std::int64_t> v;
  if (const io::array* a = d.find(name)) {
    v = a->to_int64();
    if (static_cast<std::int64_t>(v.size()) != n) {
      throw error(
          fmt::format("tensor '{}' holds {} positions, the bias has {}", name, v.size(), n));
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
  }
  return v;
}

template <class T>
void alibi_checks(const spec::alibi& s, const spec::encoding& e, const dump& d, const options& o,
                  certificate& cert) {
  constexpr format fmt_t = format_of<T>();
  const std::vector<real> slopes = ref::alibi_slopes(s);
  const impl::alibi_contract hf(s, kernel::strategy::hf);
  const std::int64_t H = s.num_heads;
  const double tiny = std::numeric_limits<double>::denorm_min();
  mismatch_log log;
  const bool exact_claim = claim_kind(o) == 2;
  evidence_map ev;
  const auto mutants = [&](auto&& compare) {
    for (const impl::mutant_info& info : impl::mutant_catalogue()) {
      if (std::string_view(info.family) != "alibi" || !info.applies(e)) continue;
      const auto m = impl::make_mutant(info.id, e);
      evidence& x = ev[info.id];
      x.description = info.description;
      compare(*m, x);
    }
  };
  std::vector<std::function<void()>> diagnose;
  if (const io::array* a = d.find("slopes")) {
    const auto sh = squeezed(a->shape);
    if (sh.size() != 1 || sh[0] != H) {
      throw error(fmt::format("tensor 'slopes' has shape {}, expected [{}] (num_heads)",
                              shape_text(a->shape), H));
    }
    tally tl("slopes", "tensor 'slopes'", dtype_name<T>(), 0, false);
    for (std::int64_t h = 0; h < H; ++h) {
      const auto u = static_cast<std::size_t>(h);
      const T got = element<T>(*a, u);
      const double y = slopes[u].convert_to<double>();
      const double g = scalar_traits<T>::to_double(got);
      const double b = hf.slope_bound(h, y, fmt_t);
      tl.add(0, h, g, metric::ulp_distance(got, round_to<T>(slopes[u])) == 0, y,
             ulp_at(std::fabs(y), fmt_t), std::max(b, tiny), kInf, 2 * ulp_at(std::fabs(y), fmt_t));
      const double bound = exact_claim ? ulp_at(std::fabs(y), fmt_t) : b;
      if (!(std::fabs(g - y) <= bound)) log.add("slopes", 0, h, g, y, bound);
    }
    cert.checks.push_back(tl.finish());
    diagnose.push_back([&, a] {
      if constexpr (!std::is_same_v<T, double>) {
        mutants([&](const impl::implementation& m, evidence& x) {
          std::vector<T> mv(static_cast<std::size_t>(H));
          m.alibi_slopes(std::span<T>(mv));
          for (std::int64_t h = 0; h < H; ++h) {
            const auto u = static_cast<std::size_t>(h);
            const double g = scalar_traits<T>::to_double(element<T>(*a, u));
            const double v = scalar_traits<T>::to_double(mv[u]);
            const double b = hf.slope_bound(h, std::max(std::fabs(g), std::fabs(v)), fmt_t);
            x.add(b > 0 ? rho_against(g, v, b) : (g == v ? 0.0 : kInf));
          }
        });
      }
    });
  }
  if (const io::array* a = d.find("bias")) {
    const auto sh = squeezed(a->shape);
    if (sh.size() != 3 || sh[0] != H) {
      throw error(
          fmt::format("tensor 'bias' has shape {}, expected [{}, Q, K] (heads, queries, keys)",
                      shape_text(a->shape), H));
    }
    const auto qs = index_positions(d, "queries", sh[1]);
    const auto ks = index_positions(d, "keys", sh[2]);
    tally tl("bias", fmt::format("tensor 'bias' {}", shape_text(a->shape)), dtype_name<T>(), 0,
             false);
    std::size_t k = 0;
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t qi : qs) {
        for (std::int64_t kj : ks) {
          const real exact = ref::alibi_bias(slopes[static_cast<std::size_t>(h)], qi, kj);
          const T got = element<T>(*a, k++);
          const double y = exact.convert_to<double>();
          const double g = scalar_traits<T>::to_double(got);
          const double b = hf.bias_bound(h, kj - qi, y, fmt_t);
          tl.add(qi, h, g, metric::ulp_distance(got, round_to<T>(exact)) == 0, y,
                 ulp_at(std::fabs(y), fmt_t), std::max(b, tiny), kInf,
                 2 * ulp_at(std::fabs(y), fmt_t));
          const double bound = exact_claim ? ulp_at(std::fabs(y), fmt_t) : b;
          if (!(std::fabs(g - y) <= bound)) log.add("bias", qi, kj, g, y, bound);
        }
      }
    }
    cert.checks.push_back(tl.finish());
    diagnose.push_back([&, a, qs, ks] {
      if constexpr (!std::is_same_v<T, double>) {
        mutants([&](const impl::implementation& m, evidence& x) {
          std::vector<T> mv(static_cast<std::size_t>(H) * qs.size() * ks.size());
          m.alibi_bias(qs, ks, std::span<T>(mv));
          std::size_t k2 = 0;
          for (std::int64_t h = 0; h < H; ++h) {
            for (std::int64_t qi : qs) {
              for (std::int64_t kj : ks) {
                const double g = scalar_traits<T>::to_double(element<T>(*a, k2));
                const double v = scalar_traits<T>::to_double(mv[k2++]);
                const double b =
                    hf.bias_bound(h, kj - qi, std::max(std::fabs(g), std::fabs(v)), fmt_t);
                x.add(b > 0 ? rho_against(g, v, b) : (g == v ? 0.0 : kInf));
              }
            }
          }
        });
      }
    });
  }
  cert.what = std::string("alibi ") + (d.find("bias") ? "bias" : "slopes");
  diagnosis dx;
  dx.first = log.first;
  for (const check& c : cert.checks) {
    dx.max_rho_without = std::max(dx.max_rho_without, c.max_rho.at("hf"));
  }
  cert.why = dx;
  grade_and_claim(cert);
  if (!o.diagnose || cert.exit_code() == 0) return;
  for (auto& f : diagnose) f();
  to_explanations(ev, *cert.why);
}

void certify_alibi(const spec::alibi& s, const spec::encoding& e, const dump& d, const options& o,
                   certificate& cert) {
  const io::array* a = d.find("slopes") ? d.find("slopes") : d.find("bias");
  if (!a) {
    throw error(
        fmt::format("no ALiBi tensor in the dump (expected 'slopes' [{}] and/or 'bias' [{}, Q, "
                    "K]); it holds {}",
                    s.num_heads, s.num_heads, tensor_list(d)));
  }
  if (d.find("slopes") && d.find("bias") && d.find("slopes")->type != d.find("bias")->type) {
    throw error("tensors 'slopes' and 'bias' have different dtypes");
  }
  with_float_type(*a, "the ALiBi tensors",
                  [&](auto tag) { alibi_checks<typename decltype(tag)::type>(s, e, d, o, cert); });
}

// ---- T5 buckets -------------------------------------------------------------------------------

void certify_t5(const spec::t5& s, const spec::encoding& e, const dump& d, const options& o,
                certificate& cert) {
  const io::array* b = d.find("buckets");
  std::string dn;
  const io::array* r = find_any(d, {"distances", "relative_position", "relative_positions"}, &dn);
  if (!b || !r) {
    throw error(
        fmt::format("a T5 dump needs tensors 'buckets' and 'distances' (relative positions "
                    "key − query, same shape); it holds {}",
                    tensor_list(d)));
  }
  if (b->type != io::dtype::i32 && b->type != io::dtype::i64) {
    throw error(fmt::format("tensor 'buckets' has dtype {}, expected I32 or I64",
                            io::safetensors_name(b->type)));
  }
  if (b->shape != r->shape) {
    throw error(fmt::format("tensors 'buckets' {} and '{}' {} must have the same shape",
                            shape_text(b->shape), dn, shape_text(r->shape)));
  }
  const auto got = b->to_int64();
  const auto dist = r->to_int64();
  cert.what = "t5 buckets";
  cert.positions = dist.size();
  if (!dist.empty()) {
    cert.min_position = *std::min_element(dist.begin(), dist.end());
    cert.max_position = *std::max_element(dist.begin(), dist.end());
  }
  // Integer outputs: correctly rounded = the exact bucket; recipe:hf = transformers' fp32-log
  // bucket (the two differ only next to integer boundaries of the log branch).
  check c;
  c.name = "buckets";
  c.source = fmt::format("tensors 'buckets' and '{}' {}", dn, shape_text(b->shape));
  c.dtype = b->type == io::dtype::i32 ? "int32" : "int64";
  std::uint64_t hf_equal = 0;
  mismatch_log log;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const std::int64_t want = ref::t5_bucket(s, dist[k]);
    const std::int64_t hfb = ref::t5_bucket(s, dist[k], ref::hf_recipe());
    ++c.count;
    c.correctly_rounded += got[k] == want;
    c.faithful += got[k] == want;
    hf_equal += got[k] == hfb;
    const double err = std::fabs(static_cast<double>(got[k] - want));
    if (err > c.max_abs_error || c.count == 1) {
      c.max_abs_error = std::max(c.max_abs_error, err);
      c.max_ulp_error = c.max_abs_error;
      c.worst = {dist[k], static_cast<std::int64_t>(k), double(got[k]), double(want), err, err};
    }
    if (got[k] != (claim_kind(o) == 2 ? want : hfb)) {
      log.add("buckets", dist[k], static_cast<std::int64_t>(k), double(got[k]), double(want), 0);
    }
  }
  c.max_rho["hf"] = hf_equal == c.count ? 0.0 : kInf;
  c.best = c.correctly_rounded == c.count ? grade::correctly_rounded
           : hf_equal == c.count          ? grade::recipe_hf
                                          : grade::not_certified;
  cert.checks.push_back(c);
  diagnosis dx;
  dx.first = log.first;
  dx.max_rho_without = c.max_rho["hf"];
  cert.why = dx;
  grade_and_claim(cert);
  if (!o.diagnose || cert.exit_code() == 0) return;
  evidence_map ev;
  for (const impl::mutant_info& info : impl::mutant_catalogue()) {
    if (std::string_view(info.family) != "t5" || !info.applies(e)) continue;
    const auto m = impl::make_mutant(info.id, e);
    std::vector<std::int64_t> mv(dist.size());
    m->t5_buckets(dist, mv);
    evidence& x = ev[info.id];
    x.description = info.description;
    // Integer ids: a mistake explains the data when every id agrees (ρ 0), else ρ = ∞.
    for (std::size_t k = 0; k < got.size(); ++k) x.add(got[k] == mv[k] ? 0.0 : kInf);
  }
  to_explanations(ev, *cert.why);
}

}  // namespace

certificate certify_dump(const spec::encoding& e, const dump& d, const options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.recipe && *o.recipe != "exact" && *o.recipe != "hf" && *o.recipe != "ggml" &&
      *o.recipe != "vllm") {
    throw error(fmt::format("--recipe: '{}' is not a recipe (expected exact, hf, ggml or vllm)",
                            *o.recipe));
  }
  certificate cert;
  cert.spec = spec::to_spec_string(e);
  cert.inputs = d.files;
  cert.claimed_recipe = o.recipe;
  cert.precision_bits = precision_bits();
  cert.reference_backend = o.mpfr_reference ? "mpfr" : "fast";
  if (const auto* s = std::get_if<spec::rope>(&e)) {
    certify_rope(*s, e, d, o, cert);
  } else if (const auto* s = std::get_if<spec::sinusoidal>(&e)) {
    certify_sinusoidal(*s, e, d, o, cert);
  } else if (const auto* s = std::get_if<spec::alibi>(&e)) {
    certify_alibi(*s, e, d, o, cert);
  } else if (const auto* s = std::get_if<spec::t5>(&e)) {
    certify_t5(*s, e, d, o, cert);
  } else {
    throw error(
        fmt::format("certify: the {} family is not supported yet (rope, sinusoidal, "
                    "alibi and t5 are)",
                    spec::family_name(e)));
  }
  detail::finish(cert);
  cert.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cert;
}

namespace detail {

void finish(certificate& cert) {
  grade_and_claim(cert);
  if (cert.why) {
    auto& x = cert.why->explanations;
    std::stable_sort(x.begin(), x.end(), [](const explanation& a, const explanation& b) {
      return a.max_rho != b.max_rho ? a.max_rho < b.max_rho : a.rms_rho < b.rms_rho;
    });
    cert.why->named.reset();
    if (cert.exit_code() == 0) {
      cert.why.reset();  // certified: nothing to explain
    } else if (!x.empty() && x.front().explains) {
      cert.why->named = x.front().mutant;
    }
  }
}

}  // namespace detail

}  // namespace pev::certify

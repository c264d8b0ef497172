// Precision-drift sweeps: kernels against the exact reference over the positions of sweep.h,
// compared by the one comparison engine (pev/compare/).

#include "pev/sweep/sweep.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <variant>

#include "pev/compare/bounds.h"
#include "pev/compare/figures.h"
#include "pev/compare/reference.h"
#include "pev/compare/rope.h"
#include "pev/core/error.h"
#include "pev/core/hex.h"
#include "pev/core/real.h"
#include "pev/core/sampling.h"
#include "pev/core/splitmix.h"
#include "pev/impl/contract.h"
#include "pev/impl/implementation.h"
#include "pev/kernel/absolute.h"
#include "pev/kernel/apply.h"
#include "pev/kernel/relative.h"
#include "pev/kernel/rope.h"
#include "pev/metric/ulp.h"
#include "pev/ref/rope.h"
#include "pev/scalar/dtype.h"
#include "pev/scalar/round.h"

namespace pev::sweep {
namespace {

using compare::figures;
using compare::rounded_values;
using kernel::strategy;
using metric::ulp_at;

constexpr std::size_t kChunk = 4096;  // positions per reference/kernel batch
constexpr dtype kDtypes[] = {dtype::fp32, dtype::fp16, dtype::bf16};

template <class T>
double to_double(T v) {
  return scalar_traits<T>::to_double(v);
}

/// The figures of one sweep cell: its one bound (the strategy's contract) gates it, the worst
/// case is its largest ρ.
std::unique_ptr<figures> cell_figures(const options& o, std::int64_t indices) {
  figures::options fo;
  fo.max_position = o.max_position + 1;  // the octave layout's end (excluded)
  fo.indices = indices;
  return std::make_unique<figures>(fo);
}

compare::reference_path path_of(const options& o) {
  return o.mpfr_reference ? compare::reference_path::mpfr : compare::reference_path::fast;
}

/// The sequence length of a stateful rope type (dynamic, longrope): max position + 1, as
/// transformers computes it from the positions it is given (docs/design.md §5.3).
std::optional<std::int64_t> stateful_seq(const spec::rope& s, const options& o) {
  return s.stateful() ? std::optional<std::int64_t>(o.max_position + 1) : std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// A sweep cell of one family F (one strategy × dtype of one spec). F names the family's types —
// spec_type, reference (exact values), exact (a batch's exact values), state (what a cell
// evaluates with: kernel, bounds, contract) — and what differs between families: how a batch's
// exact values are computed (fill), how a cell's kernel is compared on its rows (evaluate, per
// output type T where `typed`), which cells must run on the calling thread (serial), and what a
// finished check row adds (finish; count: the reference's evaluations).

/// Exact rows of a batch of positions.
template <class F>
struct exact_rows {
  std::vector<std::int64_t> pos;
  typename F::exact v;
};

/// The exact rows of batches of positions of one spec, on the calling thread.
template <class F>
class reference_source {
 public:
  reference_source(const typename F::spec_type& s, const options& o)
      : ref_(F::make_reference(s, o)) {}
  exact_rows<F> rows(std::vector<std::int64_t> pos) {
    exact_rows<F> r;
    r.pos = std::move(pos);
    F::fill(ref_, r.pos, r.v);
    return r;
  }
  typename F::reference& ref() { return ref_; }

 private:
  typename F::reference ref_;
};

/// One check of a sweep: its strategy and dtype, what it evaluates with, and its figures.
template <class F>
struct cell {
  report::check* out = nullptr;
  const typename F::spec_type* s = nullptr;
  strategy st = strategy::hf;
  dtype dt = dtype::fp32;
  typename F::state state;
  std::unique_ptr<figures> acc;

  bool serial() const { return F::serial(st); }
  /// The cell's kernel on rows `rows` of the batch r, compared into acc.
  void evaluate(const exact_rows<F>& r, const std::vector<std::size_t>& rows) {
    std::vector<std::int64_t> pos;
    for (std::size_t k : rows) pos.push_back(r.pos[k]);
    if constexpr (F::typed) {
      visit_output_float(dt, [&](auto tag) {
        F::template evaluate<typename decltype(tag)::type>(*this, r.v, rows, pos);
      });
    } else {
      F::evaluate(*this, r.v, rows, pos);
    }
  }
};

// The provenance count of a family whose reference counts its values and MPFR fallbacks (RoPE,
// sinusoidal); ALiBi's and T5's references count nothing.
struct counts_reference_stats {
  template <class Reference>
  static void count(const Reference& ref, report::provenance& p) {
    p.reference_values += ref.stats().values;
    p.reference_fallbacks += ref.stats().fallbacks;
  }
};

// ---------------------------------------------------------------------------------------------
// RoPE tables.

struct rope_family : counts_reference_stats {
  using spec_type = spec::rope;
  using reference = compare::rope_reference;
  /// m·cos and m·sin, [pos, pair], in every type.
  struct exact {
    rounded_values c, s;
  };
  struct state {
    std::unique_ptr<kernel::rope_kernel> kern;
    std::unique_ptr<compare::rope_bounds> bounds;  // the strategy's contract
  };
  static constexpr bool typed = true;
  static std::int64_t indices(const spec_type& s) { return s.pairs(); }
  static bool serial(strategy) { return false; }  // planned at construction, on the calling thread

  static reference make_reference(const spec_type& s, const options& o) {
    return reference(s, stateful_seq(s, o), path_of(o));
  }
  static void fill(reference& ref, const std::vector<std::int64_t>& pos, exact& v) {
    ref.table_all(pos, v.c, v.s);
  }
  static state make_state(const spec_type& s, strategy st, reference& ref, const options& o) {
    const std::optional<std::int64_t> seq = stateful_seq(s, o);
    return {std::make_unique<kernel::rope_kernel>(s, st, seq),
            std::make_unique<compare::rope_bounds>(
                s, seq, ref.attention_factor(),
                std::vector<compare::named_bound>{compare::named_bound::of("bound", st)})};
  }

  template <class T>
  static void evaluate(cell<rope_family>& c, const exact& v, const std::vector<std::size_t>& rows,
                       const std::vector<std::int64_t>& pos) {
    const auto P = static_cast<std::size_t>(c.s->pairs());
    std::vector<T> cs(pos.size() * P), sn(pos.size() * P);
    c.state.kern->table<T>(pos, cs, sn);
    const compare::table_rows<T> ref{v.c.get<T>(), v.s.get<T>(), v.c.f64, v.s.f64, c.s->pairs()};
    std::vector<std::int64_t> pair(P);
    for (std::size_t i = 0; i < P; ++i) pair[i] = static_cast<std::int64_t>(i);
    compare::compare_table<T>(
        pos, [&](std::size_t q) { return rows[q]; }, ref, pair,
        [&](std::size_t q, std::size_t i, bool is_sin) { return (is_sin ? sn : cs)[q * P + i]; },
        *c.state.bounds, *c.acc, *c.acc);
  }

  /// The worst case's intermediates (here, on the reference's thread): the frequency and the
  /// attention factor as the strategy uses them, and for the fp32 pipelines the angle
  /// fl(fl(p)·f̂), each next to its exact value (rounded to double).
  static void finish(cell<rope_family>& c, reference& ref, const options& o) {
    auto& w = c.out->worst;
    const auto i = static_cast<std::size_t>(w.index);
    const float f = c.state.kern->inv_freq()[i];
    w.intermediates.push_back({c.st == strategy::ggml ? "angle at p=1 (recurrence)" : "inv_freq",
                               hex(f), hex(ref.fast().inv_freq<double>()[i])});
    if (c.st == strategy::hf || c.st == strategy::table_fp16 || c.st == strategy::table_bf16) {
      const float angle = static_cast<float>(w.position) * f;
      w.intermediates.push_back(
          {"angle", hex(angle), hex(ref.fast().angle<double>(w.position, w.index))});
    }
    w.intermediates.push_back(
        {"attention_factor", hex(c.state.kern->attention_factor()), hex(ref.attention_factor())});
    if (const std::optional<std::int64_t> seq = stateful_seq(*c.s, o)) {
      c.out->note = "stateful rope_type: frequencies for sequence length " + std::to_string(*seq);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Sinusoidal PE tables.

struct pe_family : counts_reference_stats {
  using spec_type = spec::sinusoidal;
  using reference = compare::sinusoidal_reference;
  using exact = rounded_values;  // [pos, column]
  using state = std::unique_ptr<impl::sinusoidal_contract>;
  static constexpr bool typed = true;
  static std::int64_t indices(const spec_type& s) { return s.d_model; }
  // sinusoidal_table plans on every call, and the accurate plan reads the MPFR reference
  // (single-threaded).
  static bool serial(strategy st) { return st == strategy::accurate; }

  static reference make_reference(const spec_type& s, const options& o) {
    return reference(s, path_of(o));
  }
  static void fill(reference& ref, const std::vector<std::int64_t>& pos, exact& v) {
    ref.pe_all(pos, v);
  }
  static state make_state(const spec_type& s, strategy st, reference&, const options&) {
    return std::make_unique<impl::sinusoidal_contract>(s, st);
  }

  template <class T>
  static void evaluate(cell<pe_family>& c, const exact& v, const std::vector<std::size_t>& rows,
                       const std::vector<std::int64_t>& pos) {
    const auto d = static_cast<std::size_t>(c.s->d_model);
    std::vector<T> got(pos.size() * d);
    kernel::sinusoidal_table<T>(*c.s, c.st, pos, got);
    const auto& cr = v.get<T>();
    constexpr format f = format_of<T>();
    for (std::size_t q = 0; q < pos.size(); ++q) {
      c.acc->add_position(pos[q]);
      const std::size_t k = rows[q];
      for (std::size_t j = 0; j < d; ++j) {
        const double y = v.f64[k * d + j];
        const double B = c.state->bound(pos[q], static_cast<std::int64_t>(j), std::fabs(y), f);
        c.acc->add(compare::value_of<T>(pos[q], static_cast<std::int64_t>(j), got[q * d + j],
                                        cr[k * d + j], y),
                   "pe", {&B, 1});
      }
    }
  }

  static void finish(cell<pe_family>&, reference&, const options&) {}
};

// ---------------------------------------------------------------------------------------------
// ALiBi: the bias m_h·(p − 0) of a query at 0 and a key at p, per head.

struct alibi_family {
  using spec_type = spec::alibi;
  using reference = compare::alibi_reference;
  using exact = rounded_values;  // [pos, head]
  struct state {
    std::unique_ptr<impl::alibi_contract> contract;
    std::uint64_t out_of_range = 0;
  };
  static constexpr bool typed = true;
  static std::int64_t indices(const spec_type& s) { return s.num_heads; }
  // alibi_bias plans on every call; the accurate plan reads the MPFR reference.
  static bool serial(strategy st) { return st == strategy::accurate; }

  static reference make_reference(const spec_type& s, const options&) { return reference(s); }
  static void fill(reference& ref, const std::vector<std::int64_t>& pos, exact& v) {
    for (std::int64_t p : pos) {
      for (std::int64_t h = 0; h < ref.heads(); ++h) {
        const real b = ref.bias(h, 0, p);
        v.f64.push_back(round_to<double>(b));
        v.f32.push_back(round_to<float>(b));
        v.f16.push_back(round_to<half>(b));
        v.bf16.push_back(round_to<bfloat16>(b));
      }
    }
  }
  static state make_state(const spec_type& s, strategy st, reference&, const options&) {
    return {std::make_unique<impl::alibi_contract>(s, st)};
  }

  template <class T>
  static void evaluate(cell<alibi_family>& c, const exact& v, const std::vector<std::size_t>& rows,
                       const std::vector<std::int64_t>& pos) {
    const auto H = static_cast<std::size_t>(c.s->num_heads);
    const std::int64_t q0[1] = {0};
    std::vector<T> got(H * pos.size());  // [H, 1, keys]
    kernel::alibi_bias<T>(*c.s, c.st, q0, pos, got);
    const auto& cr = v.get<T>();
    constexpr format f = format_of<T>();
    const auto storage = kernel::storage_of(c.st);
    for (std::size_t q = 0; q < pos.size(); ++q) {
      c.acc->add_position(pos[q]);
      const std::size_t k = rows[q];
      for (std::size_t h = 0; h < H; ++h) {
        const T gv = got[h * pos.size() + q];
        // The exact bias rounded to the storage type (table-*) must fit the output type.
        const double stored = storage == dtype::fp16   ? to_double(v.f16[k * H + h])
                              : storage == dtype::bf16 ? to_double(v.bf16[k * H + h])
                                                       : v.f64[k * H + h];
        if (!std::isfinite(to_double(cr[k * H + h])) || !std::isfinite(stored) ||
            !std::isfinite(to_double(T(static_cast<float>(stored))))) {
          ++c.state.out_of_range;
          continue;
        }
        const double y = v.f64[k * H + h];
        // A query at 0 and a key at p: distance p (accurate: the exact bias rounded once).
        const double B =
            c.state.contract->bias_bound(static_cast<std::int64_t>(h), pos[q], std::fabs(y), f);
        c.acc->add(compare::value_of<T>(pos[q], static_cast<std::int64_t>(h), gv, cr[k * H + h], y),
                   "bias", {&B, 1});
      }
    }
  }

  static void finish(cell<alibi_family>& c, reference& ref, const options&) {
    // Intermediate of the worst case: the head's slope (fp32 as the strategy computes it).
    std::vector<float> slopes(static_cast<std::size_t>(c.s->num_heads));
    kernel::alibi_slopes<float>(*c.s, c.st, slopes);
    const auto h = static_cast<std::size_t>(c.out->worst.index);
    c.out->worst.intermediates.push_back(
        {"slope (as stored, in fp32)", hex(slopes[h]), hex(round_to<double>(ref.slopes()[h]))});
    c.out->note = "bias of a query at 0 and a key at p, per head";
    if (c.state.out_of_range) {
      c.out->note += "; " + std::to_string(c.state.out_of_range) +
                     " values whose exact bias, rounded to the storage type, overflows "
                     "the output type, left out (no contract there)";
    }
  }
  static void count(const reference&, report::provenance&) {}
};

// ---------------------------------------------------------------------------------------------
// T5 buckets of relative distances −p (index 0) and +p (index 1); integers, no dtype.

struct t5_family {
  using spec_type = spec::t5;
  using reference = spec::t5;  // the exact buckets are computed from the spec
  struct exact {
    std::vector<std::int64_t> want;        // [pos, 2]
    std::vector<std::uint8_t> may_differ;  // the fp32 log may be off by one there
  };
  struct state {};
  static constexpr bool typed = false;
  static std::int64_t indices(const spec_type&) { return 2; }
  static bool serial(strategy) { return false; }  // integer plans, no pev::real

  static reference make_reference(const spec_type& s, const options&) { return s; }
  static void fill(const reference& s, const std::vector<std::int64_t>& pos, exact& v) {
    for (std::int64_t p : pos) {
      for (std::int64_t d : {-p, p}) {
        v.want.push_back(impl::t5_exact_bucket(s, d));
        v.may_differ.push_back(impl::t5_fp32_may_differ(s, d) ? 1 : 0);
      }
    }
  }
  static state make_state(const spec_type&, strategy, reference&, const options&) { return {}; }

  static void evaluate(cell<t5_family>& c, const exact& v, const std::vector<std::size_t>& rows,
                       const std::vector<std::int64_t>& pos) {
    std::vector<std::int64_t> dist;
    for (std::int64_t p : pos) {
      dist.push_back(-p);
      dist.push_back(p);
    }
    std::vector<std::int64_t> got(dist.size());
    kernel::t5_buckets(*c.s, c.st, dist, got);
    for (std::size_t q = 0; q < rows.size(); ++q) {
      const std::size_t k = rows[q];
      c.acc->add_position(pos[q]);
      for (std::size_t j = 0; j < 2; ++j) {
        const auto g = static_cast<double>(got[2 * q + j]);
        const auto y = static_cast<double>(v.want[2 * k + j]);
        // Exact buckets for accurate; hf and table-* may be off by one only where the fp32
        // logarithm is within its error of a truncation boundary. Integers: one "ulp" is 1.
        const double B = c.st != strategy::accurate && v.may_differ[2 * k + j] ? 1.0 : 0.0;
        const double err = std::fabs(g - y);
        c.acc->add(
            {pos[q], static_cast<std::int64_t>(j), g, y, static_cast<std::uint64_t>(err), 1.0},
            "bucket", {&B, 1});
      }
    }
  }

  static void finish(cell<t5_family>& c, reference&, const options&) {
    // Buckets are integers: shown as such, not in hex.
    c.out->worst.got_hex = std::to_string(static_cast<std::int64_t>(c.out->worst.got));
    c.out->worst.exact_hex = std::to_string(static_cast<std::int64_t>(c.out->worst.exact));
    c.out->note = "buckets of relative distances -p (index 0) and +p (index 1)";
  }
  static void count(const reference&, report::provenance&) {}
};

std::string bound_name(strategy st, dtype dt) {
  switch (st) {
    case strategy::accurate:
      return "1 ulp";
    case strategy::ggml:
      return "ggml recurrence model";
    case strategy::hf:
      return "hf pipeline model";
    case strategy::table_fp16:
      return "hf pipeline model + fp16 store";
    case strategy::table_bf16:
      return "hf pipeline model + bf16 store";
  }
  (void)dt;
  return "";
}

}  // namespace

std::vector<std::int64_t> sample_positions(const options& o) {
  const std::int64_t end = o.max_position + 1;  // max_position is included
  if (o.exhaustive) return octave_positions({end, end, 0, o.seed, true});
  return octave_positions({end, o.dense_below, o.samples_per_octave, o.seed, true});
}

namespace {

/// The sweep of one spec's cells (sweep.h): sampled positions in batches, then the local
/// worst-case search. `Ref` gives exact rows of a batch of positions (on this thread); each cell
/// evaluates its kernel on rows of a batch (on the arena's workers) into its figures.
template <class Ref, class Cell>
void sweep_cells(Ref& ref, std::vector<Cell>& cells, const options& o, tbb::task_arena& arena) {
  auto run_cells = [&](const auto& r,
                       const std::function<std::vector<std::size_t>(std::size_t)>& rows_of) {
    arena.execute([&] {
      tbb::parallel_for(std::size_t{0}, cells.size(), [&](std::size_t c) {
        if (cells[c].serial()) return;
        const auto rows = rows_of(c);
        if (!rows.empty()) cells[c].evaluate(r, rows);
      });
    });
    // Cells whose kernel touches pev::real at evaluation time run here, on this thread.
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (!cells[c].serial()) continue;
      const auto rows = rows_of(c);
      if (!rows.empty()) cells[c].evaluate(r, rows);
    }
  };
  const std::vector<std::int64_t> pos = sample_positions(o);
  for (std::size_t b = 0; b < pos.size(); b += kChunk) {
    const std::size_t n = std::min(kChunk, pos.size() - b);
    const auto r = ref.rows(std::vector<std::int64_t>(pos.begin() + std::ptrdiff_t(b),
                                                      pos.begin() + std::ptrdiff_t(b + n)));
    std::vector<std::size_t> all(n);
    for (std::size_t k = 0; k < n; ++k) all[k] = k;
    run_cells(r, [&](std::size_t) { return all; });
  }
  if (o.exhaustive || o.search_radius <= 0) return;
  // Local worst-case search: every position within ±search_radius of each sampled octave's
  // largest-ρ position, per cell (so a cell's figures never depend on the other cells).
  std::vector<std::vector<std::int64_t>> windows(cells.size());
  std::set<std::int64_t> all;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    const figures& acc = *cells[c].acc;
    for (std::size_t k = 0; k < acc.octaves(); ++k) {
      const std::int64_t lo = k == 0 ? 0 : std::int64_t{1} << k;
      const std::int64_t hi = std::min(std::int64_t{1} << (k + 1), o.max_position + 1);
      if (hi <= o.dense_below) continue;  // every position already evaluated
      const std::int64_t a = acc.argmax(k);
      if (a < 0) continue;
      for (std::int64_t p = std::max(lo, a - o.search_radius);
           p <= std::min(hi - 1, a + o.search_radius); ++p) {
        if (!std::binary_search(pos.begin(), pos.end(), p)) windows[c].push_back(p);
      }
    }
    std::sort(windows[c].begin(), windows[c].end());
    windows[c].erase(std::unique(windows[c].begin(), windows[c].end()), windows[c].end());
    all.insert(windows[c].begin(), windows[c].end());
  }
  const std::vector<std::int64_t> extra(all.begin(), all.end());
  for (std::size_t b = 0; b < extra.size(); b += kChunk) {
    const std::size_t n = std::min(kChunk, extra.size() - b);
    const auto r = ref.rows(std::vector<std::int64_t>(extra.begin() + std::ptrdiff_t(b),
                                                      extra.begin() + std::ptrdiff_t(b + n)));
    run_cells(r, [&](std::size_t c) {
      std::vector<std::size_t> rows;
      for (std::size_t k = 0; k < n; ++k) {
        if (std::binary_search(windows[c].begin(), windows[c].end(), r.pos[k])) {
          rows.push_back(k);
        }
      }
      return rows;
    });
  }
}

/// A check of this shard: its row and the cell's strategy and dtype.
using cell_out = std::pair<report::check*, std::pair<strategy, dtype>>;

/// Sweeps the checks `outs` of one spec of family F.
template <class F>
void sweep_family(const typename F::spec_type& s, const std::vector<cell_out>& outs,
                  const options& o, tbb::task_arena& arena, report::results& res) {
  reference_source<F> ref(s, o);
  // Kernels and bounds are planned here: `accurate` kernels and the models read the MPFR
  // reference, which is single-threaded.
  std::vector<cell<F>> cells(outs.size());
  for (std::size_t c = 0; c < outs.size(); ++c) {
    cell<F>& cl = cells[c];
    cl.out = outs[c].first;
    cl.s = &s;
    cl.st = outs[c].second.first;
    cl.dt = outs[c].second.second;
    cl.state = F::make_state(s, cl.st, ref.ref(), o);
    cl.acc = cell_figures(o, F::indices(s));
  }
  sweep_cells(ref, cells, o, arena);
  for (cell<F>& cl : cells) {
    cl.acc->finish(*cl.out);
    F::finish(cl, ref.ref(), o);
  }
  F::count(ref.ref(), res.prov);
}

/// Relative-position invariance drift of one RoPE spec (plot d) for every strategy × dtype. Every
/// RoPE spec has it: with an attention factor m the exact score is ⟨R(0)q, R(offset)k⟩ = m²·⟨q,
/// R(offset)k⟩, and a stateful type's frequencies are those of the sweep's sequence length.
void invariance(const suite_entry& e, const spec::rope& s, const options& o, tbb::task_arena& arena,
                std::vector<report::invariance_series>& out) {
  constexpr std::int64_t kOffset = 16;
  constexpr int kVectors = 4;
  constexpr int kDrawsPerOctave = 3;
  const auto D = static_cast<std::size_t>(s.head_dim);
  const std::optional<std::int64_t> seq = stateful_seq(s, o);
  ref::fast_rope_reference ref(s, seq);
  // Positions m: 0, then each octave's first position and three draws (m + offset ≤ max), from
  // the stream that then draws the vectors.
  splitmix rng(o.seed ^ 0x5eedull);
  const std::int64_t end = o.max_position + 1 - kOffset;
  const std::vector<std::int64_t> ms =
      end > 0 ? octave_positions({end, 1, kDrawsPerOctave, 0, false}, &rng)
              : std::vector<std::int64_t>{};
  // Unit vectors q, k (exact in every dtype: entries are multiples of 2^-7 in [-1, 1], scaled).
  std::vector<std::vector<double>> qs, ks;
  for (int v = 0; v < 2 * kVectors; ++v) {
    std::vector<double> x(D);
    double n2 = 0;
    for (auto& xi : x) {
      xi = std::ldexp(std::round((2 * rng.unit() - 1) * 128), -7);
      n2 += xi * xi;
    }
    const double sc = std::ldexp(1.0, -static_cast<int>(std::ceil(0.5 * std::log2(n2))));
    for (auto& xi : x) xi *= sc;  // a power of two: still exact; ‖x‖ ≤ 1
    (v % 2 == 0 ? qs : ks).push_back(x);
  }
  // Exact ⟨R(0)q, R(offset)k⟩ from the exact rotations (each rounded to double; R(0) is m·I).
  std::vector<double> exact_score(kVectors);
  for (int v = 0; v < kVectors; ++v) {
    std::vector<double> rq(D), rk(D);
    ref.rotate<double>(0, qs[std::size_t(v)], rq);
    ref.rotate<double>(kOffset, ks[std::size_t(v)], rk);
    double sum = 0;
    for (std::size_t j = 0; j < D; ++j) sum += rq[j] * rk[j];
    exact_score[std::size_t(v)] = sum;
  }
  std::vector<std::pair<strategy, dtype>> cells;
  for (strategy st : kernel::all_strategies()) {
    for (dtype dt : kDtypes) cells.emplace_back(st, dt);
  }
  std::vector<std::unique_ptr<kernel::rope_kernel>> kerns;
  for (const auto& [st, dt] : cells) {
    kerns.push_back(std::make_unique<kernel::rope_kernel>(s, st, seq));
  }
  std::vector<report::invariance_series> series(cells.size());
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, cells.size(), [&](std::size_t c) {
      auto& ser = series[c];
      ser.spec_name = e.name;
      ser.strategy = kernel::to_string(cells[c].first);
      ser.dtype = to_string(cells[c].second);
      ser.offset = kOffset;
      visit_output_float(cells[c].second, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const auto P = static_cast<std::size_t>(s.pairs());
        for (std::int64_t m : ms) {
          const std::int64_t rows_pos[2] = {m, m + kOffset};
          std::vector<T> tc(2 * P), ts(2 * P);
          kerns[c]->table<T>(rows_pos, tc, ts);
          const kernel::rope_table_view<T> view{tc, ts, 2, static_cast<std::int64_t>(P)};
          double worst = 0;
          for (int v = 0; v < kVectors; ++v) {
            std::vector<T> qv(D), kv(D), qo(D), ko(D);
            for (std::size_t j = 0; j < D; ++j) {
              qv[j] = T(static_cast<float>(qs[std::size_t(v)][j]));
              kv[j] = T(static_cast<float>(ks[std::size_t(v)][j]));
            }
            const std::int64_t r0[1] = {0}, r1[1] = {1};
            const auto hd = static_cast<std::int64_t>(D);
            kernel::rope_apply<T, T>(s, view, r0, {qv, 1, 1, hd}, {qo, 1, 1, hd});
            kernel::rope_apply<T, T>(s, view, r1, {kv, 1, 1, hd}, {ko, 1, 1, hd});
            double sum = 0;
            for (std::size_t j = 0; j < D; ++j) sum += to_double(qo[j]) * to_double(ko[j]);
            worst = std::max(worst, std::fabs(sum - exact_score[std::size_t(v)]));
          }
          ser.position.push_back(m);
          ser.max_drift.push_back(worst);
        }
      });
    });
  });
  for (auto& ser : series) out.push_back(std::move(ser));
}

/// Effective wavelength per pair of a scaled RoPE spec and of plain RoPE (plot e).
report::wavelength_series wavelengths(const suite_entry& e, const spec::rope& s,
                                      std::optional<std::int64_t> seq) {
  const ref::rope_reference a(s, ref::exact_recipe(), seq);
  const ref::rope_reference b(impl::plain_rope(s));
  report::wavelength_series w;
  w.spec_name = e.name;
  const real two_pi = 2 * pi();
  for (const real& t : a.inv_freq())
    w.scaled.push_back(t > 0 ? real(two_pi / t).convert_to<double>() : 0.0);
  for (const real& t : b.inv_freq())
    w.plain.push_back(t > 0 ? real(two_pi / t).convert_to<double>() : 0.0);
  return w;
}

}  // namespace

report::results run(const std::vector<suite_entry>& suite, const options& o) {
  if (o.max_position < 1) throw error("--max-position must be at least 1");
  if (o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count) {
    throw error("--shard: expected I/N with 0 <= I < N");
  }
  for (const suite_entry& e : suite) {
    if (std::holds_alternative<spec::learned>(e.encoding) ||
        std::holds_alternative<spec::shaw>(e.encoding)) {
      throw error(std::string("report: ") + spec::family_name(e.encoding) + " (" + e.name +
                  ") has no sweep; the report covers rope, sinusoidal, alibi and t5");
    }
  }
  report::results res;
  res.prov = report::this_build();
  auto& pv = res.prov;
  pv.reference = o.mpfr_reference ? "mpfr" : "fast";
  pv.seed = o.seed;
  pv.suite = o.suite_name;
  pv.max_position = o.max_position;
  pv.exhaustive = o.exhaustive;
  pv.dense_below = o.exhaustive ? o.max_position + 1 : o.dense_below;
  pv.samples_per_octave = o.exhaustive ? 0 : o.samples_per_octave;
  pv.search_radius = o.exhaustive ? 0 : o.search_radius;
  pv.shard_index = o.shard_index;
  pv.shard_count = o.shard_count;

  const int threads = o.threads > 0
                          ? o.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  tbb::task_arena arena(threads);

  // Every item of the suite (checks, then the spec's plot series) in order; this shard takes
  // every shard_count-th. `index` is the item's place in the unsharded run (merge order).
  std::int64_t next = 0;
  auto take = [&]() -> std::optional<std::int64_t> {
    const std::int64_t i = next++;
    if (i % o.shard_count != o.shard_index) return std::nullopt;
    return i;
  };
  // Registers this shard's checks of a non-RoPE entry (no ggml pipeline there): every strategy ×
  // dtype, or every strategy once for integer outputs.
  using cell_key = std::pair<strategy, dtype>;
  auto add_checks = [&](const suite_entry& e, const char* family, bool ggml, bool typed) {
    std::vector<cell_key> keys;
    for (strategy st : kernel::all_strategies()) {
      if (st == strategy::ggml && !ggml) continue;
      if (typed) {
        for (dtype dt : kDtypes) keys.emplace_back(st, dt);
      } else {
        keys.emplace_back(st, dtype::fp32);
      }
    }
    std::vector<cell_out> outs;
    const std::size_t first = res.checks.size();
    std::vector<cell_key> mine;
    for (const auto& [st, dt] : keys) {
      const auto i = take();
      if (!i) continue;
      report::check c;
      c.index = *i;
      c.spec_name = e.name;
      c.spec = spec::to_spec_string(e.encoding);
      c.family = family;
      c.strategy = kernel::to_string(st);
      c.dtype = typed ? to_string(dt) : "int64";
      c.id = e.name + "/" + c.strategy + (typed ? "/" + c.dtype : "");
      c.bound_name = !typed ? (st == strategy::accurate ? "exact bucket" : "fp32 log near integer")
                     : st == strategy::accurate
                         ? (std::string(family) == "alibi" ? "rounded once" : "1 ulp")
                         : bound_name(st, dt);
      res.checks.push_back(std::move(c));
      mine.emplace_back(st, dt);
    }
    for (std::size_t k = first; k < res.checks.size(); ++k) {
      outs.emplace_back(&res.checks[k], mine[k - first]);
    }
    return outs;
  };
  for (const suite_entry& e : suite) {
    res.specs.push_back({e.name, spec::family_name(e.encoding), spec::to_spec_string(e.encoding),
                         e.source.empty() ? "built-in suite" : e.source});
  }
  std::size_t done = 0;
  for (const suite_entry& e : suite) {
    if (const auto* s = std::get_if<spec::rope>(&e.encoding)) {
      std::vector<std::pair<strategy, dtype>> cells;
      const std::size_t first = res.checks.size();
      // llama.cpp's YaRN always truncates the correction range (ggml_rope_yarn_corr_dims:
      // floor/ceil), so `truncate=false` specs are not expressible in the ggml recipe.
      const bool ggml_applies = !(s->type == spec::rope_type::yarn && !s->truncate);
      if (!ggml_applies) {
        res.notes.push_back(e.name +
                            ": strategy ggml left out: llama.cpp's YaRN always truncates the "
                            "correction range (floor/ceil), this spec has truncate=false");
      }
      // The ggml form (ggml_rope_ext's own parameters) has no transformers pipeline.
      const bool ggml_form = s->type == spec::rope_type::ggml;
      if (ggml_form) {
        res.notes.push_back(e.name +
                            ": strategies hf, table-fp16 and table-bf16 left out: the ggml form "
                            "has no transformers pipeline (docs/encodings.md §8.7)");
      }
      for (strategy st : kernel::all_strategies()) {
        if (st == strategy::ggml && !ggml_applies) continue;
        if (ggml_form && st != strategy::ggml && st != strategy::accurate) continue;
        for (dtype dt : kDtypes) {
          const auto i = take();
          if (!i) continue;
          cells.emplace_back(st, dt);
          report::check c;
          c.index = *i;
          c.spec_name = e.name;
          c.spec = spec::to_spec_string(e.encoding);
          c.family = "rope";
          c.strategy = kernel::to_string(st);
          c.dtype = to_string(dt);
          c.id = e.name + "/" + c.strategy + "/" + c.dtype;
          c.bound_name = bound_name(st, dt);
          res.checks.push_back(std::move(c));
        }
      }
      std::vector<cell_out> outs;
      for (std::size_t k = first; k < res.checks.size(); ++k) {
        outs.emplace_back(&res.checks[k], cells[k - first]);
      }
      if (!outs.empty()) sweep_family<rope_family>(*s, outs, o, arena, res);
      // Plots d and e for every RoPE spec: the invariance drift, and the wavelengths against
      // plain RoPE (for a spec without scaling, the two curves coincide).
      if (const auto i = take()) {
        const std::size_t before = res.invariance.size();
        invariance(e, *s, o, arena, res.invariance);
        for (std::size_t k = before; k < res.invariance.size(); ++k) res.invariance[k].index = *i;
        res.wavelengths.push_back(wavelengths(e, *s, stateful_seq(*s, o)));
        res.wavelengths.back().index = *i;
      }
    }
    if (const auto* s = std::get_if<spec::sinusoidal>(&e.encoding)) {
      const auto outs = add_checks(e, "sinusoidal", false, true);
      if (!outs.empty()) sweep_family<pe_family>(*s, outs, o, arena, res);
    }
    if (const auto* s = std::get_if<spec::alibi>(&e.encoding)) {
      const auto outs = add_checks(e, "alibi", false, true);
      if (!outs.empty()) sweep_family<alibi_family>(*s, outs, o, arena, res);
    }
    if (const auto* s = std::get_if<spec::t5>(&e.encoding)) {
      const auto outs = add_checks(e, "t5", false, false);
      if (!outs.empty()) sweep_family<t5_family>(*s, outs, o, arena, res);
    }
    if (o.progress) o.progress(++done, suite.size());
  }
  return res;
}

}  // namespace pev::sweep

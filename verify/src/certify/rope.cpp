// Certification of RoPE outputs: inv_freq, the attention factor, cos/sin tables in any layout
// and rotated q/k, each compared with the exact reference by the comparison engine against every
// recipe's bound (compare::rope_bounds: the strategies' contracts).

#include "pev/compare/rope.h"

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <optional>

#include "detail.h"
#include "diagnosis.h"
#include "layout.h"
#include "pev/compare/bounds.h"
#include "pev/core/error.h"
#include "pev/core/interrupt.h"
#include "pev/impl/contract.h"
#include "pev/impl/mutants.h"
#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"
#include "pev/scalar/round.h"
#include "qk_cache.h"
#include "recover.h"
#include "replay.h"
#include "rope_run.h"

namespace pev::certify::detail {

namespace {

constexpr std::size_t kChunkRows = 1024;
/// Values per chunk of rotation_checks (whole tokens of H·D values each, at least one).
constexpr std::size_t kChunkValues = 131072;
/// Positions the library measure reads (recover.h: fit_table): every one with --max-trig-ulp,
/// which gates the claim on the measure.
constexpr std::size_t kFitRows = kLibraryFitRows;
/// Rows (the largest positions) the replay chooses its frequencies and ratio on (replay.h).
constexpr std::size_t kReplayChoiceRows = 4096;

/// One copy of the reference per arena slot, for chunks whose reference values come from the
/// worker that compares them: on the fast path of a 1-D RoPE (on() false for MRoPE streams and the
/// MPFR path, which stay on the calling thread). The copies are made on the calling thread (the
/// fast reference's MPFR fallbacks take a process-wide lock, pev/ref/fast.h) and count their own
/// evaluations from zero.
class worker_references {
 public:
  worker_references(const compare::rope_reference& ref, int slots)
      : on_(ref.stream_of_pair().empty() && ref.path() == compare::reference_path::fast) {
    if (on_) {
      refs_.assign(static_cast<std::size_t>(slots), ref);
      for (compare::rope_reference& r : refs_) r.clear_stats();
    }
  }
  bool on() const { return on_; }
  /// The copy of the calling worker's arena slot.
  compare::rope_reference& here() {
    return refs_.at(static_cast<std::size_t>(tbb::this_task_arena::current_thread_index()));
  }
  /// Their evaluations, into the certificate's provenance.
  void count(context& k) const {
    for (const compare::rope_reference& r : refs_) k.count(r.stats());
  }

 private:
  bool on_;
  std::vector<compare::rope_reference> refs_;
};

/// Appends a chunk's mismatches to the certificate's while it holds fewer than `max`.
void append_mismatches(context& k, const std::vector<report::mismatch>& chunk, std::size_t max) {
  for (const report::mismatch& m : chunk) {
    if (k.mismatches.size() < max) k.mismatches.push_back(m);
  }
}

/// A check's chunks 0 … chunks − 1 in groups of `group` (Work: one chunk's data), two groups in
/// flight: prepare(c, w) of the next group's chunks on this thread while the arena's workers run
/// compare_chunk(w) on the current group's, then merge(w) of each chunk in chunk order — so what
/// merges does not depend on the number of threads.
template <class Work, class Prepare, class Compare, class Merge>
void in_groups(tbb::task_arena& arena, std::size_t chunks, std::size_t group, Prepare&& prepare,
               Compare&& compare_chunk, Merge&& merge) {
  std::vector<Work> work[2] = {std::vector<Work>(group), std::vector<Work>(group)};
  const auto size_of = [&](std::size_t c0) { return std::min(group, chunks - c0); };
  const auto prepare_group = [&](std::vector<Work>& w, std::size_t c0) {
    for (std::size_t c = 0; c < size_of(c0); ++c) prepare(c0 + c, w[c]);
  };
  if (chunks > 0) prepare_group(work[0], 0);
  for (std::size_t c0 = 0, b = 0; c0 < chunks; c0 += group, b ^= 1) {
    std::vector<Work>& cur = work[b];
    std::vector<Work>& next = work[b ^ 1];
    const std::size_t g = size_of(c0);
    arena.execute([&] {
      tbb::task_group tg;
      tg.run([&] {
        tbb::parallel_for(std::size_t{0}, g, [&](std::size_t c) { compare_chunk(cur[c]); });
      });
      try {
        if (c0 + group < chunks) prepare_group(next, c0 + group);  // meanwhile, on this thread
      } catch (...) {
        tg.cancel();
        tg.wait();
        throw;
      }
      tg.wait();
    });
    for (std::size_t c = 0; c < g; ++c) merge(cur[c]);
  }
}

/// The bounds of a RoPE value on the ladder (on_ladder: by name), for the library class the claim
/// assumes. transformers rotates q/k in the model dtype (each product and the sum rounded there,
/// the table cast to it first); vLLM (its cache in the model dtype) and ggml rotate in fp32 and
/// store once.
/// With `cache` (fp32 q/k, qk_cache.h), a vLLM rung whose cache the rotations did not apply
/// has the exact rung's bound (one ulp): on the ladder it then holds what a tighter rung holds.
std::vector<compare::named_bound> rope_recipes(const options& o, bool hf_pipeline,
                                               const cache_reading* cache = nullptr) {
  using compare::named_bound;
  using impl::rotation_arithmetic;
  using kernel::strategy;
  const metric::libm& lib = contract_libm(o);
  const auto vllm = [&](std::size_t c, strategy st) {
    const std::string name = kCacheRungs[c];
    if (cache && !cache->follows(c)) return named_bound{name, named_bound::kind::one_ulp};
    return named_bound::of(name, st, lib);
  };
  return on_ladder<named_bound>(
      true, hf_pipeline,
      {{"exact", named_bound::one_ulp()},
       {"drift-free", named_bound::drift_free()},
       {"hf", named_bound::of("hf", strategy::hf, lib, rotation_arithmetic::output)},
       {"ggml", named_bound::of("ggml", strategy::ggml, lib)},
       {"vllm-fp16", vllm(0, strategy::table_fp16)},
       {"vllm-bf16", vllm(1, strategy::table_bf16)}},
      "rope");
}

/// The bounds of a scalar RoPE value (inv_freq, the attention factor) by name, of its index and
/// exact magnitude: one ulp, drift-free `drift`, and a recipe's impl::path_bound of its error
/// before its storage and output roundings, error(c, i) of its pipeline's contract c (hf and
/// vllm: `hf`, the value stored in vllm's 16-bit cache first; ggml: `ggml`). A contract is read
/// only where the ladder has its recipe (on_ladder): `hf` may be null without an hf pipeline.
template <class T, class Error>
compare::bound_set<std::int64_t, double> scalar_bounds(bool ggml, bool hf_pipeline, double drift,
                                                       const impl::rope_contract* hf,
                                                       const impl::rope_contract* ggml_contract,
                                                       Error error) {
  const auto path = [error](const impl::rope_contract* c, std::optional<dtype> store) {
    return [c, store, error](std::int64_t i, double ay) {
      return impl::path_bound(error(*c, i), ay, store, format_of<T>(), metric::kF32);
    };
  };
  return ladder_bounds<std::int64_t, double>(
      ggml, hf_pipeline,
      {{"exact", [](std::int64_t, double ay) { return metric::ulp_at(ay, format_of<T>()); }},
       {"drift-free", [drift](std::int64_t, double) { return drift; }},
       {"hf", path(hf, std::nullopt)},
       {"ggml", path(ggml_contract, std::nullopt)},
       {"vllm-fp16", path(hf, dtype::fp16)},
       {"vllm-bf16", path(hf, dtype::bf16)}},
      "rope");
}

std::int64_t max_of(const std::vector<std::int64_t>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

// inv_freq and the attention factor take the hf contract's bounds (scalar_bounds); the ggml form
// has no transformers pipeline, so its inv_freq has the exact and drift-free bounds only and its
// attention factor the ggml contract's too (`hf` null, `ggml` its contract).
template <class T>
void inv_freq_check(context& k, compare::rope_reference& ref, const impl::rope_contract* hf,
                    const impl::rope_contract* ggml, const io::array& a) {
  constexpr format out = format_of<T>();
  const auto sh = squeezed(a.shape);
  const std::int64_t pairs = ref.pairs();
  if (sh.size() != 1 || sh[0] != pairs) {
    throw error(fmt::format("tensor 'inv_freq' has shape {}, expected [{}] (one per pair)",
                            io::shape_string(a.shape), pairs));
  }
  const auto& rn = ref.fast().inv_freq<T>();
  const auto& y = ref.fast().inv_freq<double>();
  const double f_max = pairs > 0 ? *std::max_element(y.begin(), y.end()) : 1;
  compare::figures f(figure_options(k.o, 2, pairs, false, &k.mismatches, hf != nullptr));
  const auto bounds = scalar_bounds<T>(
      false, hf != nullptr, 2 * metric::ulp_at(f_max, out), hf, ggml,
      [](const impl::rope_contract& c, std::int64_t i) { return *c.inv_freq_bound(i); });
  std::vector<double> b(bounds.size());
  for (std::int64_t i = 0; i < pairs; ++i) {
    const auto u = static_cast<std::size_t>(i);
    bounds.fill(b, i, std::fabs(y[u]));
    f.add(compare::value_of<T>(0, i, element<T>(a, u), rn[u], y[u]), "inv_freq", b);
  }
  k.cert.checks.push_back(make_check("inv_freq", "tensor 'inv_freq'", dtype_of<T>(), f, k.o));
}

template <class T>
void attention_factor_check(context& k, compare::rope_reference& ref, const impl::rope_contract* hf,
                            const impl::rope_contract* ggml, const io::array& a,
                            const std::string& name) {
  constexpr format out = format_of<T>();
  if (a.elements() != 1) {
    throw error(fmt::format("tensor '{}' has shape {}, expected one value", name,
                            io::shape_string(a.shape)));
  }
  const double m = ref.attention_factor();
  const T rn = round_to<T>(ref.fast().reference().attention_factor());
  compare::figures f(figure_options(k.o, 2, 1, hf == nullptr, &k.mismatches, hf != nullptr));
  const auto bounds = scalar_bounds<T>(
      hf == nullptr, hf != nullptr, 2 * metric::ulp_at(m, out), hf, ggml,
      [](const impl::rope_contract& c, std::int64_t) { return c.attention_factor_bound(); });
  std::vector<double> b(bounds.size());
  bounds.fill(b, 0, std::fabs(m));
  f.add(compare::value_of<T>(0, 0, element<T>(a, 0), rn, m), name.c_str(), b);
  k.cert.checks.push_back(
      make_check(name, fmt::format("tensor '{}'", name), dtype_of<T>(), f, k.o));
}

/// The number of position streams `pos` holds for `ref` (1 for plain RoPE).
std::size_t streams_of(const compare::rope_reference& ref) {
  return ref.stream_of_pair().empty() ? 1 : static_cast<std::size_t>(ref.spec().streams());
}

template <class T>
void table_library(context& k, compare::rope_reference& ref, const table_source& t,
                   const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq,
                   table_fit& fit);
template <class T>
std::optional<table_fit> library_fit(const context& k, const compare::rope_reference& ref,
                                     const table_source& t, const std::vector<std::int64_t>& pos,
                                     std::optional<std::int64_t> seq,
                                     const ref::fast_rope_reference& exact);
void record_library(context& k, const std::optional<table_fit>& found, table_fit& fit);

/// Fast-math under a tighter grade (docs/numerics.md §13.7): a 16-bit table may stay within two
/// ulps of the exact values (drift-free) at the positions given although its values are fast-math
/// trig's. When a table graded drift-free is, where it is not correctly rounded, the fast-math
/// model's bit for bit at least four times as often as not, the data's library is fast-math: the
/// claim (a conforming class unless --libm fast-math) does not hold. An accurate table that is not
/// correctly rounded is further from fast-math's values than from the exact ones, so it does not
/// meet the ratio. Unsharded runs only (the counts need every row of the table).
template <class T>
void fast_math_outside(context& k, const table_source& t, const std::vector<std::int64_t>& pos,
                       std::optional<std::int64_t> seq, const std::vector<float>& freq) {
  if (k.o.libm->fast_math || freq.empty() || k.o.shard_count > 1) return;
  const impl::mutant_info& info = impl::find_mutant("fast-math-trig");
  if (!info.applies(k.e)) return;
  std::uint64_t off_exact = 0;
  bool drift_free = false;
  for (const check& c : k.cert.checks) {
    if ((c.id != "cos" && c.id != "sin") || !c.best) continue;
    off_exact += c.values - c.correctly_rounded;
    drift_free = drift_free || *c.best == grade::drift_free;
  }
  if (!drift_free || off_exact < 32) return;
  // The model on pev's own frequencies and on the replay's (the diagnosis's two hf bases).
  std::uint64_t off_model = std::numeric_limits<std::uint64_t>::max();
  for (const std::vector<float>& f : {std::vector<float>{}, freq}) {
    const auto m = impl::make_mutant(info.id, k.e, {kernel::strategy::hf, false, f, std::nullopt});
    const std::size_t rows = pos.size(), P = freq.size();
    std::vector<T> mc(rows * P), ms(rows * P);
    m->rope_table(pos, seq, std::span<T>(mc), std::span<T>(ms));
    std::uint64_t off = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::int64_t j = 0; j < t.width; ++j) {
        const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
        if (i < 0) continue;
        const std::size_t e = r * P + static_cast<std::size_t>(i);
        const auto rr = static_cast<std::int64_t>(r);
        off += scalar_traits<T>::to_bits(element<T>(*t.cos.a, t.cos.at(rr, j))) !=
               scalar_traits<T>::to_bits(mc[e]);
        off += scalar_traits<T>::to_bits(element<T>(*t.sin.a, t.sin.at(rr, j))) !=
               scalar_traits<T>::to_bits(ms[e]);
      }
    }
    off_model = std::min(off_model, off);
  }
  if (4 * off_model > off_exact) return;
  k.c().library.outside_class = fmt::format(
      "the table is fast-math trig's (pev's model of __sinf/__cosf on the hf recipe's angles) "
      "bit for bit at all but {} values, against {} not correctly rounded: its library is "
      "outside the assumed class ({}); --libm fast-math accepts it",
      off_model, off_exact, k.o.libm->name);
}

/// A dump's table values for compare::compare_table: row q of a chunk starting at row r0.
template <class T>
struct dump_rows {
  const table_source& t;
  std::size_t r0;
  T operator()(std::size_t q, std::size_t j, bool is_sin) const {
    const plane& pl = is_sin ? t.sin : t.cos;
    return element<T>(*pl.a,
                      pl.at(static_cast<std::int64_t>(r0 + q), static_cast<std::int64_t>(j)));
  }
  /// Row q's encodings in the dump where its columns are contiguous (element()'s decoding is a
  /// copy of the encoding), read in place; nullptr otherwise.
  const std::byte* row_bytes(std::size_t q, bool is_sin) const {
    const plane& pl = is_sin ? t.sin : t.cos;
    if (pl.col_stride != 1) return nullptr;
    const std::size_t at = pl.at(static_cast<std::int64_t>(r0 + q), 0);
    return pl.a->data.data() + at * sizeof(T);
  }
};

/// The table's cos and sin checks from their merged figures, with their rows' digests.
template <class T>
void push_table_checks(context& k, const compare::rope_reference& ref, const table_source& t,
                       const compare::figures& cos, const compare::figures& sin,
                       std::size_t first_row, std::size_t end_row, std::size_t rows) {
  // The worst values' exact values from MPFR, so that the certificate's worst case does not
  // depend on the reference path (the fast path's doubles are within 2^−49·m; counts, ρ and
  // grades never depended on it).
  for (int which = 0; which < 2; ++which) {
    const compare::figures& f = which == 0 ? cos : sin;
    std::optional<double> exact;
    if (f.values() > 0) {
      const std::int64_t i = t.pair[static_cast<std::size_t>(f.worst().index)];
      exact = ref.exact_value(f.worst().position, i, which == 1);
    }
    check c = make_check(which == 0 ? "cos" : "sin", t.source, dtype_of<T>(), f, k.o, exact);
    const plane& pl = which == 1 ? t.sin : t.cos;
    record_rows(c, first_row, end_row, rows, t.pair.size(), arena_threads(k.o),
                [&pl](std::size_t r, std::span<std::uint64_t> bits) {
                  for (std::size_t j = 0; j < bits.size(); ++j) {
                    bits[j] = static_cast<std::uint64_t>(scalar_traits<T>::to_bits(element<T>(
                        *pl.a, pl.at(static_cast<std::int64_t>(r), static_cast<std::int64_t>(j)))));
                  }
                });
    k.cert.checks.push_back(std::move(c));
  }
}

template <class T>
void table_checks(context& k, compare::rope_reference& ref, compare::rope_bounds& bounds,
                  const table_source& t, const std::vector<std::int64_t>& pos,
                  std::optional<std::int64_t> seq, table_fit& fit, std::vector<float>& replayed) {
  const bool hf = ref.spec().type != spec::rope_type::ggml;
  const auto opts = figure_options(k.o, layout_end(max_of(pos)), t.width, true, &k.mismatches, hf);
  compare::figures cos(opts), sin(opts);
  // MRoPE rows hold [S, rows] positions (docs/encodings.md §4.6): each chunk takes its rows of
  // every stream.
  const std::vector<std::int64_t>& map = ref.stream_of_pair();
  const std::size_t S = streams_of(ref), rows = pos.size() / S;
  // Rows in fixed chunks of kChunkRows, each compared on the arena's workers into figures of its
  // own that merge in chunk order (compare::figures::merge) — the same figures, mismatches
  // included, for any number of threads. The reference values of a chunk come from the fast
  // reference on the worker that compares it (a copy per arena slot; MPFR fallbacks take a
  // process-wide lock, pev/ref/fast.h), or, for MRoPE streams and the MPFR reference path, from
  // this thread, a group of chunks at a time.
  struct chunk_work {
    std::size_t r0 = 0;
    std::vector<std::int64_t> positions;
    compare::typed_values<T> rc, rs;
    std::vector<report::mismatch> mismatches;
    std::optional<compare::figures> cos, sin;
    replay_acc rcos, rsin;
  };
  // The recipe replay (replay.h): its frequencies from the whole table, the same in every shard.
  const io::array* inv_freq = k.d.find("inv_freq");
  // Unsharded, the replay of every row below checks an fp32 table's choice on every row
  // (replay.h). A 16-bit table's choice on the top rows is often made again on every row (there
  // its values do not tell an fp32 frequency from its neighbours), which would replay its rows
  // twice: its check runs first. Either way the same choice (docs/numerics.md §13.9).
  const bool defer = k.o.shard_count == 1 && sizeof(T) >= sizeof(float);
  replay_plan plan = plan_replay<T>(
      ref.spec(), seq, hf ? bounds.contract(*bounds.find("hf")) : nullptr,
      *bounds.contract(*bounds.find("ggml")), ref.attention_factor(), ref.fast().inv_freq<double>(),
      t, pos, inv_freq, *k.o.libm, arena_threads(k.o), kReplayChoiceRows, defer);
  replay_acc rcos, rsin;
  tbb::task_arena arena(arena_threads(k.o));
  // Eight chunks per thread in a group: a thread that finishes its last chunk waits for the
  // others' at the group's end, which a group of many short chunks keeps short.
  const auto group = static_cast<std::size_t>(8 * arena.max_concurrency());
  tbb::enumerable_thread_specific<compare::rope_bounds> local_bounds(bounds);
  worker_references refs(ref, arena.max_concurrency());
  // The library fit reads the whole table (shard 0's; a failing shard fits for its diagnosis):
  // with threads to spare, on a thread of its own beside the comparison rather than after it
  // (a pure function of the dump and the spec: the same fit).
  // It reads the exact values of a copy of the reference (made here: the comparison uses `ref`),
  // declared before the future: an exception unwinding this frame joins the fit's thread (the
  // future's destructor) before the copy it reads is destroyed.
  std::optional<ref::fast_rope_reference> exact;
  std::future<std::optional<table_fit>> fitting;
  if (whole_checks(k.o) && arena.max_concurrency() > 1) {
    exact.emplace(ref.fast());
    fitting =
        std::async(std::launch::async, [&] { return library_fit<T>(k, ref, t, pos, seq, *exact); });
  }
  // --shard: this shard's rows (named variables: lambdas below capture them, which clang 14
  // refuses for structured bindings).
  const std::pair<std::size_t, std::size_t> shard = shard_rows(rows, k.o);
  const std::size_t first_row = shard.first, end_row = shard.second;
  const std::size_t chunks = (end_row - first_row + kChunkRows - 1) / kChunkRows;
  // A chunk's rows and, unless the worker computes them, its reference values (this thread).
  const auto prepare = [&](std::size_t c, chunk_work& w) {
    w.r0 = first_row + c * kChunkRows;
    const std::size_t n = std::min(kChunkRows, end_row - w.r0);
    w.positions.clear();
    for (std::size_t st = 0; st < S; ++st) {
      const auto from = pos.begin() + static_cast<std::ptrdiff_t>(st * rows + w.r0);
      w.positions.insert(w.positions.end(), from, from + static_cast<std::ptrdiff_t>(n));
    }
    if (refs.on()) {
      interruption_point();  // here: the workers do not call it (pev/core/interrupt.h)
    } else if (map.empty()) {
      ref.table<T>(w.positions, w.rc, w.rs, /*rounded_doubles=*/false);
    } else {
      ref.table_streams<T>(w.positions, w.rc, w.rs, /*rounded_doubles=*/false);
    }
  };
  // Its comparison (the arena's workers) into figures of its own.
  const auto compare_chunk = [&](chunk_work& w) {
    if (refs.on()) refs.here().table_on_worker<T>(w.positions, w.rc, w.rs, false);
    compare::figures::options o = opts;
    w.mismatches.clear();
    o.mismatches = &w.mismatches;
    w.cos.emplace(o);
    w.sin.emplace(o);
    // Screened with the figures of every group before (merged, unchanged while this group
    // runs): a chunk does not evaluate the ρ of every value of its first rows.
    w.cos->screen_with(&cos);
    w.sin->screen_with(&sin);
    const compare::table_rows<T> rows_ref{w.rc.rn, w.rs.rn, w.rc.exact, w.rs.exact, ref.pairs()};
    compare::compare_table<T>(
        w.positions, map, static_cast<std::int64_t>(S), [](std::size_t q) { return q; }, rows_ref,
        t.pair, dump_rows<T>{t, w.r0}, local_bounds.local(), *w.cos, *w.sin);
    w.rcos = {};
    w.rsin = {};
    if (plan.on) {
      replay_rows<T>(plan, t, w.r0, w.positions, w.rc.exact, w.rs.exact, ref.pairs(), w.rcos,
                     w.rsin);
    }
  };
  std::size_t compared = 0;  // rows, for options::progress
  in_groups<chunk_work>(arena, chunks, group, prepare, compare_chunk, [&](chunk_work& w) {
    cos.merge(*w.cos);
    sin.merge(*w.sin);
    rcos.merge(w.rcos);
    rsin.merge(w.rsin);
    append_mismatches(k, w.mismatches, opts.max_mismatches);
    if (k.o.progress) {  // docs/certify.md §9.1
      k.o.progress("table rows", compared += w.positions.size() / S, end_row - first_row);
    }
  });
  refs.count(k);
  finish_choice<T>(k, ref, t, pos, first_row, end_row, plan, rcos, rsin);
  replayed = plan.freq;
  push_table_checks<T>(k, ref, t, cos, sin, first_row, end_row, rows);
  if (fitting.valid()) {
    record_library(k, fitting.get(), fit);
  } else if (whole_checks(k.o)) {
    table_library<T>(k, ref, t, pos, seq, fit);
  }
  if (plan.on) record_table_replay(k, plan, rcos, rsin);
}

/// The math library the table shows (library_figures), from a fit of every row.
template <class T>
void table_library(context& k, compare::rope_reference& ref, const table_source& t,
                   const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq,
                   table_fit& fit) {
  record_library(k, library_fit<T>(k, ref, t, pos, seq, ref.fast()), fit);
}

/// The fit of the table's rows (recover.h: fit_table), measured against the angles they follow:
/// the exact ones (from `exact`, a reference no other thread uses), the hf recipe's or ggml's.
/// It reads 1-D rows: of an MRoPE table, its text tokens (every stream at one position); none
/// without any. Reads, never writes, k and ref (it may run on a thread of its own).
template <class T>
std::optional<table_fit> library_fit(const context& k, const compare::rope_reference& ref,
                                     const table_source& t, const std::vector<std::int64_t>& pos,
                                     std::optional<std::int64_t> seq,
                                     const ref::fast_rope_reference& exact) {
  const std::vector<std::int64_t>& map = ref.stream_of_pair();
  const std::size_t S = streams_of(ref), rows = pos.size() / S;
  std::vector<std::int64_t> text(pos.begin(), pos.begin() + static_cast<std::ptrdiff_t>(rows));
  for (std::size_t r = 0; r < rows && !map.empty(); ++r) {
    for (std::size_t st = 1; st < S; ++st) {
      if (pos[st * rows + r] != text[r]) text[r] = -1;
    }
  }
  if (std::all_of(text.begin(), text.end(), [](std::int64_t p) { return p < 0; })) {
    return std::nullopt;
  }
  return fit_table<T>(ref.spec(), seq, t, text, k.o.max_trig_ulp ? 0 : kFitRows, &exact);
}

/// The certificate's library figures from library_fit's result, kept in `fit` (unchanged when
/// there was nothing to fit).
void record_library(context& k, const std::optional<table_fit>& found, table_fit& fit) {
  report::library_figures& lib = k.c().library;
  if (!found) {
    lib.note = "no text token (every stream at one position) in the MRoPE table to fit";
    return;
  }
  fit = *found;
  lib.trig_ulp = fit.trig_ulp;
  lib.trig_abs = fit.trig_abs;
  lib.pow_ulp = fit.pow_ulp;
  lib.note = fit.note;
  if (fit.trig_ulp) lib.measured_on = fit.measured_on;
  lib.angles = fit.angles;
  if (fit.trig_ulp) lib.trig_class = metric::trig_class_name(*fit.trig_ulp, *fit.trig_abs);
}

template <class T>
void rotation_checks(context& k, compare::rope_reference& ref, compare::rope_bounds& bounds,
                     const qk_source& q, const std::vector<std::int64_t>& pos) {
  const std::int64_t D = q.dim;
  const auto Du = static_cast<std::size_t>(D), H = static_cast<std::size_t>(q.heads);
  const std::string name = q.name + "_out";
  const bool hf = ref.spec().type != spec::rope_type::ggml;
  const auto opts =
      figure_options(k.o, layout_end(max_of(pos)), q.heads * D, true, &k.mismatches, hf);
  compare::figures f(opts);
  const std::vector<std::int64_t> dim_pair = spec::dim_pairs(ref.spec());
  const std::vector<std::int64_t>& map = ref.stream_of_pair();
  const std::size_t S = streams_of(ref), tokens = static_cast<std::size_t>(q.tokens);
  // Tokens in fixed chunks of about kChunkValues values, as table_checks' rows, each compared on
  // the arena's workers into figures of its own that merge in chunk order — the same figures,
  // mismatches included, for any number of threads.
  struct chunk_work {
    std::size_t t0 = 0, n = 0;
    std::vector<std::int64_t> sp;  // [n, S]: each token's stream positions
    std::vector<double> x, y;      // [n, H, D]: inputs and the exact rotations (RN_double)
    std::vector<T> rn;             // [n, H, D]: RN_T of the exact rotations
    std::vector<report::mismatch> mismatches;
    std::optional<compare::figures> f;
  };
  const std::size_t chunk_tokens =
      std::max<std::size_t>(1, kChunkValues / std::max<std::size_t>(1, H * Du));
  tbb::task_arena arena(arena_threads(k.o));
  const auto group = static_cast<std::size_t>(2 * arena.max_concurrency());
  tbb::enumerable_thread_specific<compare::rope_bounds> local_bounds(bounds);
  worker_references refs(ref, arena.max_concurrency());
  // --shard: this shard's tokens (named variables, captured below: see table_checks).
  const std::pair<std::size_t, std::size_t> shard = shard_rows(tokens, k.o);
  const std::size_t first_token = shard.first, end_token = shard.second;
  const std::size_t chunks = (end_token - first_token + chunk_tokens - 1) / chunk_tokens;
  // A chunk's positions, inputs and reference rotations, from reference `r`: the worker's copy
  // (worker_references), or, for MRoPE streams and the MPFR path, `ref` on this thread.
  const auto fill = [&](chunk_work& w, compare::rope_reference& r) {
    w.sp.resize(w.n * S);
    w.x.resize(w.n * H * Du);
    w.y.resize(w.x.size());
    w.rn.resize(w.x.size());
    for (std::size_t u = 0; u < w.n; ++u) {
      const std::size_t t = w.t0 + u;
      const std::span<std::int64_t> sp(w.sp.data() + u * S, S);
      for (std::size_t st = 0; st < S; ++st) sp[st] = pos[st * tokens + t];
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t base = (t * H + h) * Du, at = (u * H + h) * Du;
        const std::span<double> x(w.x.data() + at, Du), y(w.y.data() + at, Du);
        const std::span<T> rn(w.rn.data() + at, Du);
        for (std::size_t j = 0; j < Du; ++j) {
          x[j] = element_value<T>(*q.in, base + j);
        }
        if (map.empty()) {
          r.rotate<T>(sp[0], x, rn, y);
        } else {
          r.rotate_streams<T>(sp, x, rn, y);
        }
      }
    }
  };
  // The calling thread's part of a chunk.
  const auto prepare = [&](std::size_t c, chunk_work& w) {
    w.t0 = first_token + c * chunk_tokens;
    w.n = std::min(chunk_tokens, end_token - w.t0);
    if (refs.on()) {
      interruption_point();  // here: the workers do not call it (pev/core/interrupt.h)
    } else {
      fill(w, ref);
    }
  };
  // The workers' part of one chunk: the comparison into its own figures and mismatches.
  const auto compare_chunk = [&](chunk_work& w) {
    if (refs.on()) fill(w, refs.here());
    compare::figures::options o = opts;
    w.mismatches.clear();
    o.mismatches = &w.mismatches;
    w.f.emplace(o);
    compare::rope_bounds& b = local_bounds.local();
    std::vector<T> got(Du);
    std::vector<std::int64_t> dim_pos;
    for (std::size_t u = 0; u < w.n; ++u) {
      const std::size_t t = w.t0 + u;
      const std::span<const std::int64_t> sp(w.sp.data() + u * S, S);
      for (std::size_t st = 0; st < S; ++st) {
        if (std::find(sp.begin(), sp.begin() + static_cast<std::ptrdiff_t>(st), sp[st]) ==
            sp.begin() + static_cast<std::ptrdiff_t>(st)) {
          w.f->add_position(sp[st]);
        }
      }
      const std::int64_t p = sp[0];
      if (map.empty()) {
        b.at_position(p);
      } else {
        // MRoPE: dim j at its pair's stream position (docs/encodings.md §4.6).
        b.at_positions(sp, map);
        dim_pos.resize(Du);
        for (std::size_t j = 0; j < Du; ++j) {
          const std::int64_t i = dim_pair[j];
          dim_pos[j] = sp[i >= 0 ? static_cast<std::size_t>(map[static_cast<std::size_t>(i)]) : 0];
        }
      }
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t base = (t * H + h) * Du, at = (u * H + h) * Du;
        for (std::size_t j = 0; j < Du; ++j) got[j] = element<T>(*q.out, base + j);
        compare::compare_rotation<T>(
            p, static_cast<std::int64_t>(h) * D, std::span<const double>(w.x.data() + at, Du),
            std::span<const T>(got), std::span<const T>(w.rn.data() + at, Du),
            std::span<const double>(w.y.data() + at, Du), dim_pair, ref.spec(), b, *w.f,
            name.c_str(), dim_pos);
      }
    }
  };
  std::size_t compared = 0;  // tokens, for options::progress
  in_groups<chunk_work>(arena, chunks, group, prepare, compare_chunk, [&](chunk_work& w) {
    f.merge(*w.f);
    append_mismatches(k, w.mismatches, opts.max_mismatches);
    if (k.o.progress) k.o.progress(name + " tokens", compared += w.n, end_token - first_token);
  });
  refs.count(k);
  check c = make_check(name, q.source, dtype_of<T>(), f, k.o);
  // A token's values, each with its input (the reference is the input's rotation).
  record_rows(c, first_token, end_token, tokens, H * Du, arena_threads(k.o),
              [&](std::size_t t, std::span<std::uint64_t> bits) {
                const auto bits_of = [](const io::array& a, std::size_t e) {
                  return static_cast<std::uint64_t>(scalar_traits<T>::to_bits(element<T>(a, e)));
                };
                for (std::size_t e = 0; e < bits.size(); ++e) {
                  const std::size_t at = t * bits.size() + e;
                  bits[e] = bits_of(*q.out, at) ^ (bits_of(*q.in, at) * 0x9e3779b97f4a7c15ull);
                }
              });
  k.cert.checks.push_back(std::move(c));
}

/// The table (`table` when already read) and rotated q/k of the dump, their positions (MRoPE:
/// [streams, rows], docs/encodings.md §4.6), and what the certificate says was read.
void read_rope_inputs(rope_run& r, context& k, const table_source* table) {
  const dump& d = k.d;
  const spec::rope& s = r.s;
  const bool with_table = table_present(d, s, k.o);
  // Every q/k pair has one row per token (after their layout is read: layout.h).
  qk_set qks = find_qk(d, s, k.o, with_table);
  r.qk = std::move(qks.qk);
  if (with_table || r.qk.empty()) {
    r.t = table ? *table : find_rope_table(d, s, k.o.layout);
  }
  r.qk_pos = std::move(qks.pos);
  std::vector<std::string> what;
  const std::int64_t S = s.streams();
  if (r.t) {
    table_source& t = *r.t;
    r.pos = S > 1 ? stream_row_positions(d, k.o, t.rows, S)
                  : row_positions(d, k.o, t.rows, {"positions", "position_ids"}, t.batch);
    if (r.pos.empty()) throw error("the table has no rows");
    fold_identical_batches(t, r.pos);
    what.push_back(
        fmt::format("rope table ({} layout, {}: {})", to_string(t.layout),
                    t.detected ? "detected from " + t.reading.decided_by : "forced by --layout",
                    t.reading.read_as));
    k.c().layouts.push_back(t.reading);
  }
  if (!r.qk.empty()) {
    what.push_back(qks.what);
    k.c().layouts.push_back(qks.reading);
    // MRoPE: the q/k rows' positions per stream (find_qk read them as text tokens to settle the
    // layout): qk_positions, else (without a table) positions, else 0 … T − 1.
    if (S > 1) {
      const std::int64_t T = r.qk.front().tokens;
      r.qk_pos =
          r.t ? stream_row_positions(d, {}, T, S, {"qk_positions"})
              : stream_row_positions(d, k.o, T, S, {"qk_positions", "positions", "position_ids"});
    }
  }
  const std::vector<std::int64_t>& main_pos = r.t ? r.pos : r.qk_pos;
  if (main_pos.empty()) throw error("the dump has no rows to certify");
  k.c().what = fmt::format("{}", fmt::join(what, " and "));
  if (S > 1) k.c().what += fmt::format(", MRoPE positions [{}, T]", S);
  record_positions(k.c(), main_pos);
  if (s.stateful()) {
    r.seq = k.o.seq_len.value_or(std::max(k.c().max_position, max_of(r.qk_pos)) + 1);
  }
}

/// Every check of the inputs read: inv_freq and the attention factor (shard 0), the table, each
/// rotated q/k; then whether a 16-bit table is fast-math trig's.
void compare_rope(rope_run& r, context& k) {
  const dump& d = k.d;
  const spec::rope& s = r.s;
  compare::rope_reference& ref = r.ref.emplace(s, r.seq, k.path());
  // The ggml form (ggml_rope_ext's own parameters) has no transformers pipeline: no hf or vllm
  // bounds, and its mistakes are replayed on ggml's pipeline.
  r.hf_pipeline = s.type != spec::rope_type::ggml;
  compare::rope_bounds& bounds =
      r.bounds.emplace(s, r.seq, ref.attention_factor(), rope_recipes(k.o, r.hf_pipeline));
  r.hf = r.hf_pipeline ? bounds.contract(*bounds.find("hf")) : nullptr;
  r.ggml = bounds.contract(*bounds.find("ggml"));
  // Checks without rows run in shard 0 (docs/design.md §9.3).
  const io::array* f = whole_checks(k.o) ? d.find("inv_freq") : nullptr;
  if (f) {
    visit_tensor(*f, "tensor 'inv_freq'", [&](auto tag) {
      inv_freq_check<typename decltype(tag)::type>(k, ref, r.hf, r.ggml, *f);
    });
  }
  std::string an;
  const io::array* a = whole_checks(k.o)
                           ? find_any(d, {"attention_factor", "attention_scaling", "mscale"}, &an)
                           : nullptr;
  if (a) {
    visit_tensor(*a, fmt::format("tensor '{}'", an), [&](auto tag) {
      attention_factor_check<typename decltype(tag)::type>(k, ref, r.hf, r.ggml, *a, an);
    });
  }
  if (r.t) {
    visit_tensor(*r.t->cos.a, r.t->source, [&](auto tag) {
      table_checks<typename decltype(tag)::type>(k, ref, bounds, *r.t, r.pos, r.seq, r.fit,
                                                 r.replayed);
    });
  }
  for (const qk_source& q : r.qk) {
    visit_tensor(*q.in, "tensor '" + q.name + "_in'", [&](auto tag) {
      using T = typename decltype(tag)::type;
      // fp32 q/k hold the vLLM rungs only where their rotations applied a 16-bit cache
      // (qk_cache.h); elsewhere those rungs' own bound is the exact rung's.
      std::string note;
      std::optional<compare::rope_bounds> own;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (r.hf_pipeline) {
          const cache_reading c =
              read_cache<T>(ref, contract_libm(k.o), r.seq, q, r.qk_pos, arena_threads(k.o));
          note = cache_note(c);
          if (!note.empty())
            own.emplace(s, r.seq, ref.attention_factor(), rope_recipes(k.o, true, &c));
        }
      }
      rotation_checks<T>(k, ref, own ? *own : bounds, q, r.qk_pos);
      if (!note.empty()) k.cert.checks.back().note = note;
    });
  }
  k.count(ref.stats());
  if (r.t && r.t->batch == 1) {
    visit_tensor(*r.t->cos.a, r.t->source, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, double>) {
        fast_math_outside<T>(k, *r.t, r.pos, r.seq, r.replayed);
      }
    });
  }
}

}  // namespace

void fit_whole_table(rope_run& r, context& k) {
  visit_tensor(*r.t->cos.a, r.t->source, [&](auto tag) {
    table_library<typename decltype(tag)::type>(k, *r.ref, *r.t, r.pos, r.seq, r.fit);
  });
}

void certify_rope(const spec::rope& s, context& k, const table_source* table) {
  // A partial-rotary spec's tables, each read once: one of the whole head's width is a finding
  // (whole_head.cpp).
  head_tables h;
  if (!table) {
    h = read_head_tables(k.d, s, k.o);
    if (h.whole_head) return certify_whole_head(s, k, *h.whole);
    table = h.own.get();
  }
  const auto r = std::make_shared<rope_run>(s);
  read_rope_inputs(*r, k, table);
  compare_rope(*r, k);
  grade_and_claim(k.cert);
  if (k.later) {
    // Kept for later (a trace site tries its integration mistakes first, docs/certify.md §8.3).
    *k.later = [r](context& kl) { diagnose_run(*r, kl); };
    return;
  }
  diagnose_run(*r, k);
}

}  // namespace pev::certify::detail

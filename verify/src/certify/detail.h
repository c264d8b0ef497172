#pragma once
// Internals shared by the certify sources, one concern per file:
// clang-format off
//   dump.cpp        reading dumps, hashing inputs, layout names
//   layout_*.cpp    finding a RoPE table and rotated q/k in a dump, and how they are laid out
//   positions.cpp   the positions of a dump's rows
//   checks.cpp      the check rows of a certificate: bounds, figures options, grading, the claim
//   diagnosis.cpp   which known mistake explains data that is not certified
//   rope.cpp, sinusoidal.cpp, learned.cpp, alibi.cpp, t5.cpp   one family's checks each
//   whole_head.cpp  a partial-rotary config's table of the whole head's width
//   certify.cpp     certify_dump: the certificate's frame and the family dispatch
//   live.cpp        certify_live: live implementations as dumps, plus the property suites
//   merge.cpp       merge_shards: the certificates of --shard I/N runs as one
// clang-format on

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/compare/bounds.h"
#include "pev/compare/figures.h"
#include "pev/compare/reference.h"
#include "pev/core/error.h"
#include "pev/ref/fast.h"
#include "pev/scalar/dtype.h"

namespace pev::certify::detail {

// ---- Inputs (dump.cpp, positions.cpp) ---------------------------------------------------------

/// SHA-256 of a byte string, lowercase hex.
std::string sha256_text(std::string_view bytes);

/// The shape without its leading dimensions of size 1 ([1, P, …] from a batch of one).
std::vector<std::int64_t> squeezed(const std::vector<std::int64_t>& shape);
/// "'cos' [4, 2], 'sin' [4, 2]" — what a dump holds, for messages.
std::string tensor_list(const dump& d);
/// The first of `names` the dump holds (its name in *found).
const io::array* find_any(const dump& d, std::initializer_list<const char*> names,
                          std::string* found);

/// Element k of `a` (whose dtype is T's), decoded exactly.
template <class T>
T element(const io::array& a, std::size_t k) {
  using tr = scalar_traits<T>;
  typename tr::bits_type b;
  std::memcpy(&b, a.data.data() + k * sizeof(b), sizeof(b));
  return tr::from_bits(b);
}

/// Element k of `a` (whose dtype is T's) as a double, exactly.
template <class T>
double element_value(const io::array& a, std::size_t k) {
  return scalar_traits<T>::to_double(element<T>(a, k));
}

/// Calls f(std::type_identity<T>{}) with the element type of a float tensor; pev::error naming the
/// tensor (`what`) and its safetensors dtype otherwise.
template <class F>
decltype(auto) visit_tensor(const io::array& a, std::string_view what, F&& f) {
  if (!is_float(a.type)) {
    throw error(std::string(what) + " has dtype " + std::string(io::safetensors_name(a.type)) +
                ", expected F32, F16, BF16 or F64");
  }
  return visit_float(a.type, std::forward<F>(f), what);
}

/// Whether `pos` holds every position 0 … max; with `required`, pev::error naming the first one
/// missing.
bool covers_every_position(const std::vector<std::int64_t>& pos, bool required);
/// Positions of `rows` table rows, `batch` sequences of rows/batch each: --positions, else the
/// first of `names` in the dump ([rows], or [batch, rows/batch] as position_ids), else 0 …
/// rows/batch − 1 in every sequence; positions of one sequence are shared by every sequence of the
/// batch (pev::error for a count that differs, or negative positions).
std::vector<std::int64_t> row_positions(const dump& d, const options& o, std::int64_t rows,
                                        std::initializer_list<const char*> names = {"positions",
                                                                                    "position_ids"},
                                        std::int64_t batch = 1);
/// MRoPE (docs/encodings.md §4.6): the rows' positions as [streams, rows] (stream-major), from
/// --positions, else the first tensor of `names`, holding streams·rows values (a [S, rows] or
/// [S, 1, rows] array) or rows values (text tokens: every stream equal), else 0 … rows − 1 in
/// every stream.
std::vector<std::int64_t> stream_row_positions(const dump& d, const options& o, std::int64_t rows,
                                               std::int64_t streams,
                                               std::initializer_list<const char*> names = {
                                                   "positions", "position_ids"});
/// Positions of an index axis of n entries: tensor `name`, else 0 … n − 1.
std::vector<std::int64_t> index_positions(const dump& d, const char* name, std::int64_t n);
/// The rows [first, second) of a row-wise check of `rows` rows that the shard of `o` compares:
/// [⌊I·R/N⌋, ⌊(I+1)·R/N⌋) (every row without --shard; docs/design.md §9.3).
std::pair<std::size_t, std::size_t> shard_rows(std::size_t rows, const options& o);
/// The key of a row or a column in value_digest: splitmix64's finalizer of it (offset, so that
/// row 0 and column 0 have keys of their own).
inline std::uint64_t digest_key(std::uint64_t v) {
  std::uint64_t z = v + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/// The digest of one value of a row-wise check (docs/certify.md §6), from its row's and column's
/// keys (digest_key) and its encoding: a bijection of the encoding for each (row, column), so that
/// changing one value always changes a check's digest — the sum (mod 2^64) of its values', so
/// that the digests of disjoint rows add up to the digest of those rows together. One multiply
/// per value: a pass over the dump costs little beside its comparison.
inline std::uint64_t value_digest(std::uint64_t row_key, std::uint64_t column_key,
                                  std::uint64_t bits) {
  const std::uint64_t h = ((bits + column_key) ^ row_key) * 0xd6e8feb86659fd93ull;
  return h ^ (h >> 32);
}
/// The encodings of row r's values of a check, into `bits` (its width).
using row_bits = std::function<void(std::size_t r, std::span<std::uint64_t> bits)>;
/// The digest of rows [first, end) of a check whose rows hold `width` values (docs/certify.md
/// §6): the sum of value_digest over them, on `threads` threads.
std::uint64_t rows_digest(std::size_t first, std::size_t end, std::size_t width, int threads,
                          const row_bits& bits);
/// A shard's row-wise check (docs/certify.md §6): records in its figures' state the rows [first,
/// end) of `total` that it compared, `width` values each, the digest of those rows and of every
/// row, so that `pev merge` can verify that the shards' rows partition the dump's. No-op for a
/// check without state (an unsharded run).
void record_rows(check& c, std::size_t first, std::size_t end, std::size_t total, std::size_t width,
                 int threads, const row_bits& bits);
/// The threads of certify's oneTBB arenas: --threads, at most the cores (more would only queue,
/// and oneTBB warns about it); 0: every core.
int arena_threads(const options& o);
/// The library class the contracts (the analytic bounds) are built for: --libm's, except that the
/// fast-math class, whose error grows with the angle, is only held by the replay of a table
/// (replay.h): the contracts keep any conforming library (docs/numerics.md §13.7).
inline const metric::libm& contract_libm(const options& o) {
  return o.libm->fast_math ? metric::kAnyConforming : *o.libm;
}
/// Whether checks without rows (and the library fit) run in this shard: shard 0.
inline bool whole_checks(const options& o) { return o.shard_index == 0; }
/// Records what the certificate covers: count, range, whether every position 0 … max is there.
void record_positions(report::certification& c, const std::vector<std::int64_t>& pos);

// ---- Check rows (checks.cpp) -------------------------------------------------------------------

/// How many of the first values beyond the held bound a certificate lists.
inline constexpr std::size_t kFirstMismatches = 8;

/// The bounds a certified value is measured against, by name, tightest first: one ulp
/// ("exact"), drift-free, every recipe (hf, ggml where the family has a ggml pipeline, vllm-fp16,
/// vllm-bf16). They are the rungs of the grade ladder. `hf` false: no transformers pipeline (the
/// ggml form), so neither hf nor vllm.
std::vector<std::string> bound_names(bool ggml, bool hf = true);
/// A family's entries in bound_names(ggml, hf)'s order (compare::by_name): each entry is the
/// family's own for the bound of its name; pev::error naming `family` for a rung without an entry
/// or an entry no rung is called. So a rung added to the ladder needs an entry only in the
/// families that have it (bound_names leaves it out of the others).
template <class V>
std::vector<V> on_ladder(bool ggml, bool hf, std::vector<std::pair<std::string, V>> entries,
                         std::string_view family) {
  return compare::by_name(bound_names(ggml, hf), bound_names(true, true), std::move(entries),
                          family);
}
/// The bound set of a family's values on the ladder: bound_names(ggml, hf), each bound filled by
/// the family's entry of that name (on_ladder's errors).
template <class... Args>
compare::bound_set<Args...> ladder_bounds(bool ggml, bool hf,
                                          typename compare::bound_set<Args...>::entries entries,
                                          std::string_view family) {
  return compare::bound_set<Args...>(bound_names(ggml, hf), bound_names(true, true),
                                     std::move(entries), family);
}
/// The grade a claimed recipe needs (exact: faithful; hf, ggml, vllm: their recipe grades);
/// pev::error for an unknown recipe.
grade claim_grade(std::string_view recipe);
/// Whether only a claim pev could not check fails (docs/numerics.md §13.4): the grade holds the
/// claim, and no measured figure (a library outside its class, a lower bound beyond
/// --max-trig-ulp) failed it. The values then leave no mistake to hunt (a correctly rounded bf16
/// table under --max-trig-ulp was "explained" by fast-math trig at ρ 2, as well as by nothing).
bool only_unchecked(const report::certification& z);
/// The bound a check is held to (report::certification::held_to): the claimed recipe's ("vllm":
/// vllm-bf16, its looser cache), else the gate — hf, or ggml where there is no hf pipeline (`hf`
/// false: the ggml form), else drift-free; the gate too for a claimed recipe the check has no
/// bound of.
std::string held_bound(const options& o, bool ggml, bool hf = true);
/// The end (excluded) of the octave layout of positions up to `top` (included): top + 1, or
/// INT64_MAX for position 2^63 − 1 (its octave, the last, then ends at INT64_MAX).
inline std::int64_t layout_end(std::int64_t top) { return top == INT64_MAX ? top : top + 1; }
/// Options of a certified check's figures: ρ per bound and on the ladder, worst case by ulp
/// error, zero floor; the gate (max ρ) and the mismatches (into `mismatches`) against
/// held_bound(o, ggml, hf).
compare::figures::options figure_options(const options& o, std::int64_t max_position,
                                         std::int64_t indices, bool ggml,
                                         std::vector<report::mismatch>* mismatches, bool hf = true);
/// The check row of certified figures: its names and source, figures, drift-free bound and grade.
check make_check(const std::string& name, const std::string& source, dtype t,
                 const compare::figures& f, const options& o,
                 std::optional<double> worst_exact = std::nullopt);
/// Settles a check from its figures (and its replay, check::replayed): the held rung's ρ, the
/// deciding ladder (replay.h: decide_ladder), the grade, its bound's name and pass.
void settle(check& c, const options& o);
/// Grades a check from its figures (certify.h's grade list).
grade grade_of(const check& c);
/// The certificate's grade (the worst over its checks) and whether the claimed recipe holds.
void grade_and_claim(certificate& cert);

// ---- Diagnosis (diagnosis.cpp) ------------------------------------------------------------------

/// How well a mistake explains the data, accumulated over everything compared: ρ = |data −
/// mistaken value| / the recipe bound.
struct evidence {
  std::string description;
  double max_rho = 0, sum2 = 0;
  std::uint64_t count = 0;
  std::uint64_t digest = 0xcbf29ce484222325ull;  // of the mistake's outputs (ties: equal data)
  void add(double rho);
};
using evidence_map = std::map<std::string, evidence>;

/// ρ of a data value g against a mistaken value mv with bound b: compare::rho_of(|g − mv|, b)
/// (with its slack; b = 0: 0 when equal, else infinite); non-finite values: 0 when both are the
/// same non-finite value, else infinite.
double rho_against(double g, double mv, double b);
/// The explanations of `ev`, into the certificate's diagnosis.
void add_explanations(const evidence_map& ev, certificate& cert);
/// The diagnosis's max ρ without an explanation: every check's max ρ in the bound the data is
/// held to (else hf, else ggml).
double max_rho_without(const certificate& cert);
/// Settles the certificate: grade and claim, then the diagnosis (explanations sorted, the named
/// mistake; none when certified).
void finish(certificate& cert);

// ---- Families ---------------------------------------------------------------------------------

/// What every family's certification needs.
struct context {
  const spec::encoding& e;
  const dump& d;
  const options& o;
  certificate& cert;
  compare::reference_path path() const {
    return o.mpfr_reference ? compare::reference_path::mpfr : compare::reference_path::fast;
  }
  report::certification& c() { return *cert.certification; }
  /// The first values beyond the claimed bound, over every check, in comparison order.
  std::vector<report::mismatch> mismatches;
  /// Adds reference statistics to the provenance.
  void count(const ref::fast_stats& s);
  /// Where set, a family that can keeps its diagnosis here instead of running it (RoPE:
  /// certify_rope), to run later on what it compared (diagnose_later; docs/certify.md §8.3).
  std::function<void(context&)>* later = nullptr;
};

/// Runs a diagnosis kept by context::later on the certificate `cert` it was kept for (certified
/// by certify_frame with dump `d` under `e`), then settles it again (finish): the certificate the
/// run would have given with the diagnosis in place (docs/certify.md §8.3).
void diagnose_later(const std::function<void(context&)>& later, const spec::encoding& e,
                    const dump& d, const options& o, certificate& cert);

struct table_source;  // layout.h
/// `table`: the dump's table for `s`, already read (find_rope_table), else read here.
void certify_rope(const spec::rope& s, context& k, const table_source* table = nullptr);
/// The tables of a partial-rotary spec's dump, each read once (whole_head.cpp): `own` under the
/// spec, `whole` under the whole head's (rotary_dim = head_dim) where a table of that width is
/// there; `whole_head` where the table reads only as the whole head's.
struct head_tables {
  bool whole_head = false;
  std::shared_ptr<const table_source> own, whole;
};
head_tables read_head_tables(const dump& d, const spec::rope& s, const options& o);
/// Certifies a whole head's table (`whole`, read by read_head_tables) as the whole head's
/// rotation: not certified for `s` (a rotary width check fails), the mistake partial-rotary-full
/// explaining it when it is that rotation.
void certify_whole_head(const spec::rope& s, context& k, const table_source& whole);
void certify_sinusoidal(const spec::sinusoidal& s, context& k);
void certify_learned(const spec::learned& s, context& k);
void certify_alibi(const spec::alibi& s, context& k);
void certify_t5(const spec::t5& s, context& k);

/// The frame every certificate of certify starts from (certify_dump's, certify_trace's,
/// failed_certificate's; certify.cpp): pev's build and the suite, `d`'s files as inputs and its
/// files not read as notes, the claimed recipe and the explain threshold; for a run that `compared`
/// values (not an implementation that failed before any), the reference path, the library class
/// and the claim's trig limit, and the shard.
certificate certificate_frame(const options& o, const dump& d, bool compared);
/// The certificate of `checks` run on dump `d` under encoding `e` (certify.cpp): its frame (spec,
/// inputs, provenance, shard), then the checks, then the held bound, grade, claim and diagnosis.
/// certify_dump is this with the family dispatch.
certificate certify_frame(const spec::encoding& e, const dump& d, const options& o,
                          const std::function<void(context&)>& checks);

// ---- Learned tables (learned.cpp; docs/certify.md §4) -------------------------------------------

/// The check of a learned table's rows: `rows` [R, d_model] (any float dtype; size-1 leading
/// dimensions and a [B, T, d_model] batch are read as R = B·T rows) produced at `positions` (R of
/// them, each ≥ 0 with position + offset inside the spec's table), against the exact rows of the
/// spec's table (docs/encodings.md §2.4), as check `name` of k's certificate (its source:
/// `source`); when it is not certified and k.o.diagnose, the diagnosis of the field's three
/// mistakes — another offset, the other align_corners, a truncated table — into k's certificate
/// (explanations `learned-offset`, `learned-align-corners`, `learned-truncated-clamped`,
/// `learned-truncated-zero`, and findings naming the parameter the rows imply). pev::error (exit
/// 2) for a shape, width, dtype or position that does not fit.
void learned_rows_check(const spec::learned& s, context& k, const io::array& rows,
                        std::span<const std::int64_t> positions, const std::string& name,
                        const std::string& source);
/// A whole certificate of explicit rows and positions (for a trace's `embed.positions`, which
/// the caller reads): learned_rows_check in certify_frame with no dump file, check "pe". `e` must
/// hold a spec::learned (pev::error otherwise).
certificate learned_check(const spec::encoding& e, const io::array& rows,
                          std::span<const std::int64_t> positions, const options& o);

}  // namespace pev::certify::detail

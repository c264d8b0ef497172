#pragma once
// The diagnosis of data that is not certified: every applicable mistake of the catalogue
// (pev/impl/mutants.h) is replayed on the same inputs, and compared with the data in units of the
// recipe's bound; a mistake explains the data when every value is within kExplainRho of it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detail.h"
#include "layout.h"
#include "pev/impl/contract.h"

namespace pev::certify::detail {

/// The rows the diagnosis replays, in row order (docs/certify.md §3): every row of a dump of at
/// most 4096; else the first row at each position of `first` (the first mismatches: where the
/// data leaves the bound), the 256 rows of the largest positions (where mistakes of position and
/// angle precision grow) and evenly spaced rows up to 4096. `pos` holds `streams` lists of `rows`
/// positions (MRoPE); a row's position is its largest.
std::vector<std::size_t> replay_rows(const std::vector<std::int64_t>& pos, std::size_t streams,
                                     const std::vector<report::mismatch>& first);
/// The positions of `rows` of `pos` (`streams` lists, MRoPE): `streams` lists of rows.size().
std::vector<std::int64_t> positions_of(const std::vector<std::int64_t>& pos, std::size_t streams,
                                       const std::vector<std::size_t>& rows);
/// "N of R what" when the diagnosis replays a sample, else empty.
std::string replayed_text(std::size_t n, std::size_t rows, const char* what);
/// Records in the certificate's diagnosis which rows were replayed (empty parts left out).
void record_replayed(context& k, const std::vector<std::string>& parts);

/// A pipeline RoPE mistakes are replayed on: the recipe under test (hf or ggml), its contract
/// (whose bounds judge the replay), and how it rotates q/k.
struct replay_base {
  kernel::strategy st;
  const impl::rope_contract* contract;
  bool rotate_in_output_type = false;
  /// hf: the fp32 frequencies the table follows (the replay's, replay.h), so that mistakes are
  /// replayed on them; empty: the hf kernel's own.
  std::vector<float> inv_freq = {};
  /// The base the table's frequencies imply (recover.h: implied_base), for the mistakes that
  /// replay the data's own base (rope-theta-wrong); none: their own guess.
  std::optional<double> rope_theta = {};
};

/// RoPE: the table (when t) and rotated q/k, every mistake replayed on every base; a mistake
/// that changes nothing the dump holds is no candidate; each keeps its best base.
void diagnose_rope(context& k, const spec::rope& s, std::optional<std::int64_t> seq,
                   const std::vector<replay_base>& bases, const table_source* t,
                   const std::vector<std::int64_t>& pos, const std::vector<qk_source>& qk,
                   const std::vector<std::int64_t>& qk_pos, evidence_map& ev);
/// The parameters the RoPE mistakes that explain the data (ρ ≤ kExplainRho) imply, where a table
/// fit does not state them (recover.h: parameter_findings) — rotated q/k show no frequencies to
/// fit: the width of the partial-rotary mistakes, the attention factor of those that change it.
std::vector<std::string> mistake_parameters(const context& k, const spec::rope& s,
                                            std::optional<std::int64_t> seq, const evidence_map& ev,
                                            bool table);
void diagnose_sinusoidal(context& k, const spec::sinusoidal& s, const io::array& a,
                         const std::vector<std::int64_t>& pos, evidence_map& ev);
/// ALiBi: the slopes and/or the bias of queries qs and keys ks (null tensors are skipped).
void diagnose_alibi(context& k, const spec::alibi& s, const io::array* slopes,
                    const io::array* bias, const std::vector<std::int64_t>& qs,
                    const std::vector<std::int64_t>& ks, evidence_map& ev);
/// T5: integer buckets explain the data only when every one agrees.
void diagnose_t5(context& k, const std::vector<std::int64_t>& got,
                 const std::vector<std::int64_t>& distances, evidence_map& ev);

}  // namespace pev::certify::detail

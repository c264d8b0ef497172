// The diagnosis of a RoPE certification (rope_run.h): the pipelines the mistakes are replayed
// on, the replay (diagnosis.h), the parameters the data imply; and a diagnosis kept for later
// (context::later, docs/certify.md §8.3) run on the certificate it was kept for.

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "detail.h"
#include "diagnosis.h"
#include "pev/kernel/rope.h"
#include "rope_run.h"

namespace pev::certify::detail {

namespace {

/// The pipelines the mistakes are replayed on, judged with their recipe's bounds: the claimed
/// recipe's; without a claim, the one whose angles the table follows (recover.h), else both.
std::vector<replay_base> replay_bases(const rope_run& r, const context& k) {
  std::vector<replay_base> bases;
  std::string pipeline = k.o.recipe.value_or(r.fit.angles);
  if (pipeline == "exact" || pipeline == "vllm") pipeline = "hf";
  if (!r.hf_pipeline) pipeline = "ggml";
  if (pipeline != "ggml") {
    bases.push_back({kernel::strategy::hf, r.hf, true});
    // The frequencies the table's replay follows, where they are not pev's own (a GPU's powf may
    // round an inv_freq differently, and the angles at 10^6 then differ by more than any bound):
    // a second hf base, each mistake keeping the better of the two.
    const kernel::rope_kernel own(r.s, kernel::strategy::hf, r.seq);
    const std::span<const float> f = own.inv_freq();
    if (!r.replayed.empty() &&
        !std::equal(f.begin(), f.end(), r.replayed.begin(), r.replayed.end())) {
      bases.push_back({kernel::strategy::hf, r.hf, true, r.replayed});
    }
  }
  if (pipeline != "hf") bases.push_back({kernel::strategy::ggml, r.ggml, false});
  return bases;
}

}  // namespace

/// The diagnosis of a certificate that is not certified (docs/certify.md §3): the mistakes
/// replayed (diagnosis.h), the parameters the data imply.
void diagnose_run(rope_run& r, context& k) {
  if (!k.o.diagnose || k.cert.exit_code() != 1) return;  // certified: nothing to explain
  if (only_unchecked(*k.cert.certification)) return;     // every value holds: nothing either
  const spec::rope& s = r.s;
  // A failing shard diagnoses the whole dump (docs/design.md §9.3): the fit of every row first.
  if (r.t && !whole_checks(k.o)) fit_whole_table(r, k);
  std::vector<replay_base> bases = replay_bases(r, k);
  // Without a table, the frequencies and attention factor of the rotation of the first q/k
  // (recover.h: fit_rotation), 1-D only.
  std::optional<table_fit> qk_fit;
  if (!r.t && s.streams() == 1)
    qk_fit = fit_rotation(s, r.seq, r.qk.front(), r.qk_pos, kLibraryFitRows);
  const table_fit* fitted = r.t ? &r.fit : qk_fit ? &*qk_fit : nullptr;
  // The base the frequencies imply, for the mistakes that replay it (rope-theta-wrong).
  if (fitted) {
    const std::optional<double> theta = implied_base(s, *fitted);
    for (replay_base& b : bases) b.rope_theta = theta;
  }
  evidence_map ev;
  diagnose_rope(k, s, r.seq, bases, r.t ? &*r.t : nullptr, r.pos, r.qk, r.qk_pos, ev);
  add_explanations(ev, k.cert);
  std::vector<std::string>& found = k.c().why->findings;
  if (fitted) {
    found = parameter_findings(s, r.seq, r.ref->fast().inv_freq<double>(),
                               r.ref->attention_factor(), *fitted);
  }
  for (std::string& line : mistake_parameters(k, s, r.seq, ev, fitted != nullptr)) {
    if (std::find(found.begin(), found.end(), line) == found.end()) found.push_back(line);
  }
}

void diagnose_later(const std::function<void(context&)>& later, const spec::encoding& e,
                    const dump& d, const options& o, certificate& cert) {
  report::certification& z = *cert.certification;
  context k{e, d, o, cert, z.why ? z.why->first : std::vector<report::mismatch>{}};
  later(k);
  finish(cert);
}

}  // namespace pev::certify::detail

// The check rows of a certificate: which bounds a certified value is measured against, how its
// figures are kept, how a check is graded on the recipe ladder, and whether a claim holds.

#include <fmt/format.h>

#include <algorithm>

#include "detail.h"
#include "pev/core/error.h"
#include "replay.h"

namespace pev::certify::detail {

namespace {

/// The recipe ladder, tightest first (docs/numerics.md §13.1): each rung's bound, and the grade a
/// check gets when its figures hold on that rung (and on no tighter one). A rung holds a value
/// within the largest bound of itself and every tighter rung, so the rungs are nested by
/// construction: a grade implies every claim it ranks above.
struct rung {
  const char* bound;
  grade g;
};
constexpr rung kLadder[] = {
    {"exact", grade::faithful},        {"drift-free", grade::drift_free},
    {"hf", grade::recipe_hf},          {"ggml", grade::recipe_ggml},
    {"vllm-fp16", grade::recipe_vllm}, {"vllm-bf16", grade::recipe_vllm},
};

/// The names of the ladder's rungs, tightest first.
std::vector<std::string> ladder_names() {
  std::vector<std::string> v;
  for (const rung& r : kLadder) v.push_back(r.bound);
  return v;
}

}  // namespace

grade claim_grade(std::string_view recipe) {
  if (recipe == "exact") return grade::faithful;
  if (recipe == "hf") return grade::recipe_hf;
  if (recipe == "ggml") return grade::recipe_ggml;
  if (recipe == "vllm") return grade::recipe_vllm;
  throw error(
      fmt::format("--recipe: '{}' is not a recipe (expected exact, hf, ggml or vllm)", recipe));
}

std::vector<std::string> bound_names(bool ggml, bool hf) {
  std::vector<std::string> v;
  for (const rung& r : kLadder) {
    const std::string_view b = r.bound;
    if (!ggml && b == "ggml") continue;
    if (!hf && (b == "hf" || b == "vllm-fp16" || b == "vllm-bf16")) continue;
    v.push_back(r.bound);
  }
  return v;
}

std::string held_bound(const options& o, bool ggml, bool hf) {
  const std::string gate = hf ? "hf" : (ggml ? "ggml" : "drift-free");
  std::string claimed = o.recipe.value_or(gate);
  if (claimed == "vllm") claimed = hf ? "vllm-bf16" : gate;
  if (claimed == "ggml" && !ggml) claimed = gate;
  if (claimed == "hf" && !hf) claimed = gate;
  return claimed;
}

compare::figures::options figure_options(const options& o, std::int64_t max_position,
                                         std::int64_t indices, bool ggml,
                                         std::vector<report::mismatch>* mismatches, bool hf) {
  compare::figures::options f;
  f.max_position = std::max<std::int64_t>(2, max_position);
  f.indices = std::max<std::int64_t>(1, indices);
  f.bounds = bound_names(ggml, hf);
  auto index = [&](std::string_view name) {
    return static_cast<std::size_t>(std::find(f.bounds.begin(), f.bounds.end(), name) -
                                    f.bounds.begin());
  };
  // The check's max_rho, octave bounds and the first mismatches: against the bound the data is
  // held to — the claimed recipe's own (a vllm claim: the looser of its caches), else the gate:
  // hf, or ggml for the ggml form (no transformers pipeline), else the drift-free bound.
  std::string held = held_bound(o, ggml, hf);
  if (index(held) == f.bounds.size()) held = hf ? "hf" : (ggml ? "ggml" : "drift-free");
  f.gate = index(held);
  f.per_bound_rho = true;
  for (std::size_t k = 0; k < f.bounds.size(); ++k) f.ladder.push_back(k);
  f.zero_floor = true;
  f.worst = compare::worst_by::ulp_error;
  f.mismatch_bound = f.gate;
  f.mismatches = mismatches;
  f.max_mismatches = kFirstMismatches;
  return f;
}

check make_check(const std::string& name, const std::string& source, dtype t,
                 const compare::figures& f, const options& o, std::optional<double> worst_exact) {
  check c;
  f.finish(c, worst_exact);
  c.id = name;
  c.spec_name = "certify";
  c.family = "";  // set by the caller's certificate (the spec's family)
  c.strategy = o.recipe ? "claims " + *o.recipe : "dump";
  c.dtype = to_string(t);
  c.source = source;
  const std::vector<std::string> names =
      bound_names(c.recipe_rho.count("ggml") > 0, c.recipe_rho.count("hf") > 0);
  const auto drift = std::find(names.begin(), names.end(), "drift-free") - names.begin();
  c.drift_free_bound = f.max_bound(static_cast<std::size_t>(drift));
  settle(c, o);
  if (o.shard_count > 1) {
    // A shard's figures for `pev merge`, with the worst value as reported (its exact value
    // recomputed when worst_exact is given).
    c.state = f.state();
    c.state->worst = c.worst;
  }
  return c;
}

void settle(check& c, const options& o) {
  // The bound of figure_options' gate (the check has a ρ for every bound it was held to).
  std::string held = held_bound(o, c.recipe_rho.count("ggml") > 0, c.recipe_rho.count("hf") > 0);
  if (c.recipe_rho.count(held) == 0) {
    held = c.recipe_rho.count("hf") > 0     ? "hf"
           : c.recipe_rho.count("ggml") > 0 ? "ggml"
                                            : "drift-free";
  }
  decide_ladder(c, held);
  c.best = grade_of(c);
  const bool replay = c.replayed && c.replayed->rho.count(held) > 0;
  c.bound_name = held +
                 (held == "drift-free" ? " bound"
                  : replay             ? " recipe replayed on the table's angles"
                                       : " recipe bound") +
                 " (rho); grade " + std::string(to_string(*c.best));
  c.pass = *c.best != grade::not_certified;
}

grade grade_of(const check& c) {
  if (c.non_finite > 0) return grade::not_certified;
  if (c.correctly_rounded == c.values) return grade::correctly_rounded;
  const std::vector<bool> holds = report::rungs_holding(c, ladder_names());
  for (std::size_t k = 0; k < std::size(kLadder); ++k) {
    if (holds[k]) return kLadder[k].g;
  }
  return grade::not_certified;
}

void grade_and_claim(certificate& cert) {
  report::certification& z = *cert.certification;
  // The dump's grade: the worst over its checks.
  z.result = grade::correctly_rounded;
  for (const check& c : cert.checks) {
    z.result = std::max(z.result, c.best.value_or(grade::not_certified));
  }
  // A claim holds when the grade ranks at or above the claimed recipe's rung (a correct
  // implementation more precise than its recipe satisfies it), and the measured library is
  // within the tightened limit, when one is set.
  z.claim_holds = true;
  if (z.claimed_recipe) z.claim_holds = z.result <= claim_grade(*z.claimed_recipe);
  // A claim on the library holds only where pev measured it (docs/numerics.md §13.4): the fit of
  // an fp32 table's angles, or the least error a replayed table's values imply.
  z.claim_unchecked.clear();
  const report::library_figures& lib = z.library;
  const bool replayed = std::any_of(cert.checks.begin(), cert.checks.end(),
                                    [](const check& c) { return c.replayed.has_value(); });
  // Around the angles the values follow (docs/numerics.md §13.7).
  const double least_ulp = least_trig_ulp(cert.checks);
  if (lib.max_trig_ulp) {
    if (lib.trig_ulp) {
      if (*lib.trig_ulp > *lib.max_trig_ulp) z.claim_holds = false;
    } else if (replayed && least_ulp > *lib.max_trig_ulp) {
      z.claim_holds = false;
    } else {
      z.claim_holds = false;
      z.claim_unchecked = fmt::format(
          "--max-trig-ulp {:.3g}: the library's trig error was not measured ({})",
          *lib.max_trig_ulp,
          replayed ? fmt::format("the output's rounding leaves only a lower bound, {:.3g} ulp",
                                 least_ulp)
          : lib.note.empty() ? std::string("no RoPE table whose angles pev replays")
                             : lib.note);
    }
  }
  if (!lib.outside_class.empty()) z.claim_holds = false;
  if (z.libm_claimed && !replayed) {
    z.claim_holds = false;
    z.claim_unchecked = fmt::format(
        "--libm: the library ({}) cannot be measured without a RoPE table whose angles pev "
        "replays",
        lib.assumed);
  }
}

bool only_unchecked(const report::certification& z) {
  if (z.claim_unchecked.empty() || !z.library.outside_class.empty()) return false;
  if (z.result == grade::not_certified) return false;
  return !z.claimed_recipe || z.result <= claim_grade(*z.claimed_recipe);
}

}  // namespace pev::certify::detail

#pragma once
// pev::prop — reusable RapidCheck properties over an implementation (docs/design.md §7.1), used by
// the tests (tests/properties) and by `pev certify` for live implementations.
//
// A property is checked on a *subject*: a way to obtain the implementation under test for any
// encoding (the properties generate specs, and several compare two specs of the same subject,
// e.g. linear(s) at s·t against plain at t). Every comparison that involves rounding is gated by
// the accuracy contract the implementation claims (pev/impl/contract.h, the analytic error
// models of docs/numerics.md §14.3–§14.5 evaluated at the generated positions, pairs and dtype):
// never a guessed constant. Exact identities (pass-through dims, input left intact, ALiBi shift
// invariance, T5 bucket rules) are checked bit for bit. Each property classifies its cases
// (RC_CLASSIFY / RC_TAG: position buckets, rope types, layouts).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/kernel/strategy.h"
#include "pev/metric/libm.h"
#include "pev/spec/spec.h"

namespace pev::prop {

/// What is under test: the implementation for any encoding it accepts.
struct subject {
  std::string name;
  std::function<std::unique_ptr<impl::implementation>(const spec::encoding&)> make;
  /// Encodings the properties should generate for it (a mutant: those its bug changes).
  std::function<bool(const spec::encoding&)> accepts;
  /// The math-library class its accuracy contract assumes (docs/numerics.md §5.4): none for pev's
  /// own kernels, which call glibc; a live implementation is held to the class its certificate's
  /// recipe bounds assume (certify's --libm, default any conforming library).
  const metric::libm* libm = nullptr;
};

/// A built-in strategy.
subject builtin_subject(kernel::strategy st);
/// A mutant: the mutant where its bug applies, the correct hf pipeline elsewhere (where the bug
/// changes nothing, the buggy engine computes what hf computes).
subject mutant_subject(const impl::mutant_info& m);
/// The mutants' bug-free machinery (impl::make_control) on every encoding.
subject control_subject();

struct property {
  const char* id;           // e.g. "rope.rotate_exact"
  const char* family;       // spec::family_name of the encodings it generates
  const char* description;  // the invariant, one line
  /// Whether it can be checked against a claimed accuracy (ggml has no per-pair inv_freq bound).
  bool (*applies)(kernel::strategy claimed);
  /// One RapidCheck case (generates with *gen, fails with RC_ASSERT / RC_FAIL).
  void (*run)(const subject& s, dtype t);
  /// Whether the outcome depends on the output dtype (false: frequencies, factors, T5 ids —
  /// checked once, as fp32).
  bool per_dtype;
};

/// Every property, in a fixed order.
std::span<const property> all_properties();
const property& find_property(const std::string& id);
/// KV-cache consistency of stateful encodings (dynamic, longrope): a known non-property, kept out
/// of all_properties() and reported (with its counterexample) instead of hidden.
const property& known_non_property_kv_cache();

/// RapidCheck parameters of a run. Defaults: a fixed seed (determinism), PEV_PROP_CASES cases
/// (default 100, RapidCheck's own default), max_size 100; PEV_SEED overrides the seed, and
/// RC_PARAMS overrides everything it names (seed, max_success, max_size, noshrink).
struct run_config {
  std::uint64_t seed = 0;
  int max_success = 100;
  int max_size = 100;
  bool shrink = true;
  /// Nothing through RapidCheck's own listeners: no "Using configuration" line, no "Some of your
  /// RapidCheck properties had failures … RC_PARAMS=reproduce" at exit (a property that does not
  /// apply is a failure to RapidCheck). The outcome holds everything; RC_PARAMS's reproduce key is
  /// not consulted. For `pev certify`, whose user replays with a pev command line.
  bool quiet = false;
};
run_config default_config(std::uint64_t default_seed);

/// The outcome of checking one property on one subject and dtype.
struct outcome {
  enum class status { passed, failed, gave_up } result = status::passed;
  int num_success = 0;
  std::string description;     // failure or give-up message (RC_FAIL text, expanded RC_ASSERT)
  std::string counterexample;  // shrunk, one "name: value" per line
  std::string message;         // RapidCheck's full result message
  std::string replay;          // how to replay (environment for the same seed and cases)
  std::map<std::vector<std::string>, int> distribution;  // RC_CLASSIFY/RC_TAG counts
};

/// Checks property `p` on `s` in dtype `t` with RapidCheck (shrinking on failure). Never throws
/// for a failing property; the caller decides what a failure means (a regression or a caught
/// mutant).
/// RapidCheck's reproduce key is "<test_id>/<property id>/<dtype>" (test_id: "Suite/Name"); the
/// replay line names `gtest_filter`.
outcome check(const property& p, const subject& s, dtype t, const run_config& cfg,
              const std::string& test_id, const std::string& gtest_filter = "");

}  // namespace pev::prop

#pragma once
// The mutant catalogue: deliberately wrong implementations, each modelled on a real bug class of
// the field (notes/encodings.md §9, DESIGN §5). They prove the power of the property suites (every
// mutant must be caught) and serve certification's diagnosis (which known mistake explains the
// data). Each mutant wraps pev's correct `hf` pipeline and perturbs exactly what its bug perturbs;
// it claims the hf accuracy contract, as the buggy engines claim to be transformers-faithful.
//
// Ids are stable: reports and certificates refer to them.

#include <memory>
#include <span>
#include <string_view>

#include "pev/impl/implementation.h"
#include "pev/spec/spec.h"

namespace pev::impl {

struct mutant_info {
  const char* id;           // stable, kebab-case
  const char* family;       // the encoding family it applies to (spec::family_name)
  const char* description;  // the real bug class, one line
  const char* reference;    // where it happened (issue/PR), for the reader
  /// Whether the bug changes anything for this encoding (e.g. the ALiBi power-of-two rule only
  /// differs for head counts that are not powers of two).
  bool (*applies)(const spec::encoding& e);
};

/// Every mutant, in a fixed order.
std::span<const mutant_info> mutant_catalogue();
/// The entry with this id; throws pev::error listing the ids otherwise.
const mutant_info& find_mutant(std::string_view id);

/// The mutant `id` for encoding `e` (which it must apply to; pev::error otherwise). Its name is
/// "mutant:<id>".
std::unique_ptr<implementation> make_mutant(std::string_view id, const spec::encoding& e);

/// The control: the mutants' machinery with no bug (RoPE tables from their own restatement of
/// the hf recipe — fp32 position × fp32 frequency, cosf/sinf, × m — everything else from the hf
/// kernel). It must pass every property; tests/properties checks that it does, so that a
/// mutant's failure is its bug's and not the machinery's. Its name is "mutant:control".
std::unique_ptr<implementation> make_control(const spec::encoding& e);

}  // namespace pev::impl

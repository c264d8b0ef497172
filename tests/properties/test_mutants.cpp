// The mutant catalogue proves the suites' power: every mutant must be caught by at least one
// property of its family in the default run. Every property of the family runs in fp32 (bf16 and
// fp16 only if none fails there); the test prints the rows
//   MUTANT | id | first property that failed (dtype) | shrunk counterexample | its message
//   MUTANT-ALL | id | every property that failed
// so the run's log is the table "mutant → property that caught it → counterexample". Failures are
// caught programmatically (pev::prop::check returns RapidCheck's FailureResult, shrunk).
//
// Without its bug a mutant is pev's hf pipeline (mutants.cpp). Control.PassesEveryProperty runs
// every property, in every dtype, on that bug-free machinery (impl::make_control) with the same
// seed: a mutant's failure is its bug's, not the harness's.

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common.h"
#include "pev/impl/mutants.h"
#include "pev/prop/properties.h"

namespace pev {
namespace {

class Mutants : public ::testing::TestWithParam<const impl::mutant_info*> {};

TEST_P(Mutants, Caught) {
  const impl::mutant_info& m = *GetParam();
  const auto cfg = prop::default_config(test::kPropertySeed);
  test::print_config(cfg, std::string("mutant ") + m.id);
  std::cout << "mutant " << m.id << ": " << m.description << " (" << m.reference << ")\n";
  const prop::subject sub = prop::mutant_subject(m);
  std::string caught_by, counterexample, message;
  std::vector<std::string> all_catchers;
  for (dtype t : {dtype::fp32, dtype::bf16, dtype::fp16}) {
    for (const prop::property& p : prop::all_properties()) {
      if (p.family != std::string(m.family) || !p.applies(kernel::strategy::hf)) continue;
      if (!p.per_dtype && t != dtype::fp32) continue;
      const auto o =
          prop::check(p, sub, t, cfg, test::current_test_id(), test::current_test_filter());
      std::cout << "  " << p.id << " (" << to_string(t) << "): "
                << (o.result == prop::outcome::status::failed    ? "FAILED (caught)"
                    : o.result == prop::outcome::status::gave_up ? "gave up (not applicable)"
                                                                 : "passed")
                << " after " << o.num_success << " cases\n";
      if (o.result != prop::outcome::status::failed) continue;
      all_catchers.push_back(p.id);
      if (caught_by.empty()) {
        caught_by = std::string(p.id) + " (" + to_string(t) + ")";
        counterexample = o.counterexample;
        // The failing check's own message: the last paragraph of RapidCheck's description.
        const auto cut = o.description.rfind("\n\n");
        message = cut == std::string::npos ? o.description : o.description.substr(cut + 2);
        std::cout << o.message << "\nreplay: " << o.replay << "\n";
      }
    }
    // Other dtypes only when no fp32 property sees the bug.
    if (!caught_by.empty()) break;
  }
  ASSERT_FALSE(caught_by.empty()) << "mutant " << m.id << " was not caught by any property";
  std::string one_line = counterexample;
  std::replace(one_line.begin(), one_line.end(), '\n', ';');
  std::cout << "MUTANT | " << m.id << " | " << caught_by << " | " << one_line << " | " << message
            << "\n";
  std::cout << "MUTANT-ALL | " << m.id << " | caught by " << all_catchers.size() << ":";
  for (const auto& id : all_catchers) std::cout << " " << id;
  std::cout << "\n";
}

INSTANTIATE_TEST_SUITE_P(Catalogue, Mutants, ::testing::ValuesIn([] {
                           std::vector<const impl::mutant_info*> v;
                           for (const auto& m : impl::mutant_catalogue()) v.push_back(&m);
                           return v;
                         }()),
                         [](const auto& info) {
                           std::string id = info.param->id;
                           std::replace(id.begin(), id.end(), '-', '_');
                           return id;
                         });

TEST(Control, PassesEveryProperty) {
  const auto cfg = prop::default_config(test::kPropertySeed);
  test::print_config(cfg, "mutant:control (no bug)");
  for (dtype t : {dtype::fp32, dtype::fp16, dtype::bf16}) {
    for (const prop::property& p : prop::all_properties()) {
      if (!p.per_dtype && t != dtype::fp32) continue;
      const auto o = prop::check(p, prop::control_subject(), t, cfg, test::current_test_id(),
                                 test::current_test_filter());
      EXPECT_EQ(o.result, prop::outcome::status::passed)
          << p.id << " (" << to_string(t) << ") on the control:\n"
          << o.message << "\nshrunk counterexample:\n"
          << o.counterexample;
    }
  }
}

TEST(MutantCatalogue, AtLeastTwentyWithStableIds) {
  const auto cat = impl::mutant_catalogue();
  EXPECT_GE(cat.size(), 20u);
  for (const auto& m : cat) {
    EXPECT_EQ(&impl::find_mutant(m.id), &m);
    EXPECT_GT(std::string(m.description).size(), 10u) << m.id;
  }
  EXPECT_THROW(impl::find_mutant("no-such-mutant"), error);
}

}  // namespace
}  // namespace pev

#pragma once
// Shared by the property test binaries: the fixed default seed and the printing of a run.

#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>

#include "pev/prop/properties.h"

namespace pev::test {

/// The suite's default seed (determinism by default; PEV_SEED or RC_PARAMS=seed=S override it).
inline constexpr std::uint64_t kPropertySeed = 20261122;

/// "Suite/Name" of the running GoogleTest test (RapidCheck's reproduce key).
inline std::string current_test_id() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "/" + info->name();
}

/// "Suite.Name" of the running test, for --gtest_filter.
inline std::string current_test_filter() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

/// Prints the configuration line of a run (the seed is always printed).
inline void print_config(const prop::run_config& c, const std::string& what) {
  std::cout << "Using configuration: seed=" << c.seed << " max_success=" << c.max_success
            << " max_size=" << c.max_size << (c.shrink ? "" : " noshrink") << "  [" << what
            << "; replay with PEV_SEED=" << c.seed << " or RC_PARAMS=\"seed=" << c.seed << "\"]\n";
}

/// One line per RC_TAG/RC_CLASSIFY class: the coverage of the run.
inline void print_distribution(const prop::outcome& o) {
  for (const auto& [tags, count] : o.distribution) {
    std::cout << "  " << count << "x";
    for (const auto& t : tags) std::cout << " " << t;
    std::cout << "\n";
  }
}

}  // namespace pev::test

// pev::name_table and pev::quoted_text (pev/core/names.h): one table gives an enum's names, its
// parser and the list of accepted names; user text in a parse error is escaped and clipped
// (docs/design.md §11.11). Every enum's table is walked in tests/certify/test_names.cpp.

#include <gtest/gtest.h>

#include <string>

#include "pev/core/names.h"

namespace pev {
namespace {

enum class colour { red, green, blue };
constexpr name_table<colour, 3> kColours(
    {{{colour::red, "red"}, {colour::green, "green", "(#0f0)"}, {colour::blue, "blue"}}});

TEST(NameTable, NamesFindsAndLists) {
  static_assert(kColours.find("green") == colour::green);
  EXPECT_STREQ(kColours.name(colour::blue), "blue");
  EXPECT_STREQ(kColours.name(static_cast<colour>(7)), "?");
  EXPECT_EQ(kColours.find("Green"), std::nullopt);
  EXPECT_EQ(kColours.find(""), std::nullopt);
  EXPECT_EQ(kColours.list(), "red, green (#0f0), blue");
  EXPECT_EQ(kColours.list(", ", " or "), "red, green (#0f0) or blue");
  EXPECT_EQ(kColours.list_if([](colour c) { return c != colour::green; }, ", ", " or "),
            "red or blue");
  EXPECT_EQ(kColours.list_if([](colour c) { return c == colour::red; }), "red");
  const auto v = kColours.values();
  EXPECT_EQ(v[0], colour::red);
  EXPECT_EQ(v[2], colour::blue);
}

TEST(Quoted, EscapesAndClipsUserText) {
  EXPECT_EQ(quoted_text("hf"), "'hf'");
  EXPECT_EQ(quoted_text("\x1b[31mred"), "'\\x1b[31mred'");
  EXPECT_EQ(quoted_text("ρ"), "'\\xcf\\x81'");  // printable ASCII only
  EXPECT_EQ(quoted_text(std::string(100, 'a'), 10), "'" + std::string(10, 'a') + "...'");
}

}  // namespace
}  // namespace pev

// pev::escaped and pev::utf8_error (pev/core/text.h): external text is printed with its control
// characters escaped, never raw.

#include <gtest/gtest.h>

#include <string>

#include "pev/core/text.h"

namespace pev {
namespace {

TEST(Escaped, ControlCharactersAreShownAsHex) {
  // ESC sequences that would recolour (CSI) or retitle (OSC ... BEL) a terminal.
  EXPECT_EQ(escaped("\x1b[31mRED\x1b[0m"), "\\x1b[31mRED\\x1b[0m");
  EXPECT_EQ(escaped("bad\x1b]0;pwned\x07"), "bad\\x1b]0;pwned\\x07");
  EXPECT_EQ(escaped(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escaped("del\x7f"), "del\\x7f");
  EXPECT_EQ(escaped("tab\tcr\r"), "tab\\x09cr\\x0d");
}

TEST(Escaped, NewlinesOnlyWhenAsked) {
  EXPECT_EQ(escaped("two\nlines"), "two\\x0alines");
  EXPECT_EQ(escaped("two\nlines\x1b", {.keep_newlines = true}), "two\nlines\\x1b");
}

TEST(Escaped, Utf8IsKeptButC1ControlsAndInvalidBytesAreNot) {
  EXPECT_EQ(escaped("ρ — é"), "ρ — é");
  // U+009B is CSI in the C1 range: a terminal treats it as ESC [.
  EXPECT_EQ(escaped("\xc2\x9b"
                    "31m"),
            "\\xc2\\x9b31m");
  EXPECT_EQ(escaped("\xc2\xa0"), "\xc2\xa0");  // U+00A0 (no-break space) is text
  EXPECT_EQ(escaped("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escaped("\xe2\x82"), "\\xe2\\x82");  // truncated sequence
  EXPECT_EQ(escaped("\xc0\xaf"), "\\xc0\\xaf");  // overlong '/'
}

TEST(Escaped, AsciiOnlyAndClipping) {
  EXPECT_EQ(escaped("é", {.ascii_only = true}), "\\xc3\\xa9");
  EXPECT_EQ(escaped("abcdef", {.max = 3}), "abc...");
  EXPECT_EQ(escaped("abc", {.max = 3}), "abc");
}

TEST(Utf8Error, FindsTheFirstBadByte) {
  EXPECT_FALSE(utf8_error("plain ρ text").has_value());
  EXPECT_EQ(utf8_error("ok\xffno"), 2u);
  EXPECT_EQ(utf8_error("\xed\xa0\x80"), 0u);      // a surrogate
  EXPECT_EQ(utf8_error("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
}

}  // namespace
}  // namespace pev

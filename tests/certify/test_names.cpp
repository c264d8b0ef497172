// Every enum's table of names (docs/design.md §11.11): each value's name parses back to the value,
// no two values share a name, and a parser quotes hostile text escaped (never an ESC sent to the
// terminal) and lists the accepted names.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/io/array.h"
#include "pev/kernel/strategy.h"
#include "pev/report/result.h"
#include "pev/scalar/dtype.h"
#include "pev/spec/spec.h"

namespace pev {
namespace {

// Every value of E from 0 to `last`, its name parsed back by `parse`; names distinct.
template <class E, class Parse>
void round_trips(E last, Parse parse) {
  std::set<std::string> seen;
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    const auto v = static_cast<E>(i);
    const std::string name = to_string(v);
    SCOPED_TRACE(name);
    EXPECT_NE(name, "?");
    EXPECT_TRUE(seen.insert(name).second) << "two values named " << name;
    EXPECT_EQ(parse(name), v);
  }
}

// The message `f` throws: it quotes the ESC of `hostile` as \x1b and names `expected`.
template <class F>
void refuses(F f, const std::string& expected) {
  try {
    f("\x1b[2Jevil");
    ADD_FAILURE() << "accepted a hostile name";
  } catch (const error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
    EXPECT_NE(m.find("'\\x1b[2Jevil'"), std::string::npos) << m;
    EXPECT_NE(m.find(expected), std::string::npos) << m;
  }
}

TEST(Names, EveryEnumRoundTrips) {
  round_trips(kernel::strategy::accurate, kernel::parse_strategy);
  round_trips(certify::table_layout::pairs, certify::parse_table_layout);
  round_trips(certify::qk_layout::t_hd, certify::parse_qk_layout);
  round_trips(certify::qk_order::half_split, certify::parse_qk_order);
  round_trips(report::grade::not_certified,
              [](const std::string& n) { return *report::parse_grade(n); });
  round_trips(spec::rope_type::proportional,
              [](const std::string& n) { return spec::parse_rope_type(n); });
  round_trips(dtype::bf16, [](const std::string& n) { return parse_float_dtype(n, true); });
  // safetensors' names: a second table of dtype (io's).
  std::set<std::string> st;
  for (int i = 0; i <= static_cast<int>(dtype::int64); ++i) {
    const auto t = static_cast<dtype>(i);
    EXPECT_EQ(io::parse_safetensors_dtype(io::safetensors_name(t)), t);
    EXPECT_TRUE(st.insert(std::string(io::safetensors_name(t))).second);
  }
  EXPECT_EQ(to_string(spec::rope_type::ggml), std::string("ggml"));
  EXPECT_EQ(to_string(spec::rope_layout::interleaved), std::string("interleaved"));
  EXPECT_EQ(to_string(spec::sinusoidal_layout::blocked), std::string("blocked"));
}

TEST(Names, ParsersQuoteHostileTextEscaped) {
  refuses([](std::string_view s) { kernel::parse_strategy(s); }, "hf, ggml, table-fp16");
  refuses([](std::string_view s) { certify::parse_table_layout(s); }, "vllm or pairs");
  refuses([](std::string_view s) { certify::parse_qk_layout(s); }, "t(hd) [T, H·D]");
  refuses([](std::string_view s) { certify::parse_qk_order(s); }, "half-split");
  refuses([](std::string_view s) { spec::parse_rope_type(s); }, "longrope or proportional");
  refuses([](std::string_view s) { parse_float_dtype(s); }, "fp32, fp16 or bf16");
  refuses([](std::string_view s) { io::parse_safetensors_dtype(s); }, "F64, F32");
}

}  // namespace
}  // namespace pev

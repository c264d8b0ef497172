// The --exec protocol's messages (pev/impl/exec_protocol.h): what is accepted, and that every
// malformed header is a pev::error (or a request `problem`) naming what is wrong, with declared
// sizes refused before anything is allocated.

#include <gtest/gtest.h>

#include <string>

#include "pev/core/error.h"
#include "pev/impl/exec_protocol.h"

namespace pev::impl::protocol {
namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ExecProtocol, RequestsRoundTrip) {
  request r;
  r.what = "rope_rotate";
  r.spec = "rope:head_dim=8";
  r.type = dtype::bf16;
  r.positions = 3;
  r.heads = 2;
  r.head_dim = 8;
  r.payload_bytes = request_payload_bytes(r);
  EXPECT_EQ(r.payload_bytes, 3 * 8 + 3 * 2 * 8 * 2);
  const parsed_request p = parse_request(request_line(r));
  EXPECT_EQ(p.problem, "");
  EXPECT_EQ(p.r, r);
}

TEST(ExecProtocol, BadRequestsAreProblemsWithTheirPayloadStillKnown) {
  const auto problem = [](const std::string& line) { return parse_request(line).problem; };
  EXPECT_NE(problem(R"({"pev": 1, "request": "rope_table", "spec": "s", "positions": 3,
                        "payload_bytes": 8})")
                .find("needs 24"),
            std::string::npos);
  EXPECT_NE(problem(R"({"pev": 2, "request": "hello", "payload_bytes": 0})").find("version 1"),
            std::string::npos);
  EXPECT_NE(problem(R"({"pev": 1, "request": "rope_table", "spec": "s", "positions": -3,
                        "payload_bytes": 0})")
                .find("negative"),
            std::string::npos);
  EXPECT_NE(problem(R"({"pev": 1, "request": "rope_rotate", "spec": "s", "positions": 3,
                        "heads": 1099511627776, "head_dim": 1099511627776, "payload_bytes": 0})")
                .find("exceeds the payload limit"),
            std::string::npos);
  EXPECT_NE(problem(R"({"pev": 1, "request": "rope_table", "spec": "s", "dtype": "fp8",
                        "payload_bytes": 0})")
                .find("unknown dtype 'fp8'"),
            std::string::npos);
  EXPECT_NE(problem(R"({"pev": 1, "request": 5, "payload_bytes": 0})").find("\"request\""),
            std::string::npos);
  // A problem keeps payload_bytes, so a server can skip the payload and stay in step.
  EXPECT_EQ(parse_request(R"({"pev": 2, "request": "x", "payload_bytes": 40})").r.payload_bytes,
            40u);
  // Without a readable payload_bytes the stream cannot be followed: an error.
  EXPECT_NE(
      error_of([] { parse_request(R"({"pev": 1, "request": "hello"})"); }).find("payload_bytes"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              parse_request(R"({"payload_bytes": 1099511627776})");
            }).find("outside [0, 2147483648]"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_request(R"({"payload_bytes": "12"})"); }).find("integer"),
            std::string::npos);
}

TEST(ExecProtocol, AnswersAreCheckedFieldByField) {
  const answer a = parse_answer(
      R"({"ok": true, "tensors": [{"name": "cos", "dtype": "fp32", "shape": [3, 4]},
                                  {"name": "sin", "dtype": "fp32", "shape": [3, 4]}]})");
  const std::vector<tensor> want = {{"cos", dtype::fp32, {3, 4}}, {"sin", dtype::fp32, {3, 4}}};
  EXPECT_EQ(expect_tensors(a, "rope_table", want), 96u);
  const std::vector<tensor> other = {{"cos", dtype::fp32, {3, 4}}, {"sin", dtype::bf16, {3, 4}}};
  EXPECT_NE(error_of([&] { expect_tensors(a, "rope_table", other); }).find("tensor 1 must be"),
            std::string::npos);
  const answer h = parse_answer(R"({"ok": true, "name": "x", "outputs": ["rope_table"]})");
  EXPECT_EQ(h.name, "x");
  EXPECT_EQ(h.outputs, std::vector<std::string>{"rope_table"});
  const answer e = parse_answer(R"({"ok": false, "error": "out of memory"})");
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.error, "out of memory");
  const answer back = parse_answer(answer_line(a));
  EXPECT_EQ(back.tensors, a.tensors);

  for (const auto& [line, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"ok": "yes"})", "\"ok\" must be true or false"},
           {R"({"name": "x"})", "no \"ok\""},
           {R"([true])", "not a JSON object"},
           {"{\"ok\": true, \"name\": \"\xff\"}", "not JSON"},
           {std::string(20, '[') + std::string(20, ']'), "nested more than 8 levels"},
           {R"({"ok": true, "outputs": ["a", 3]})", "array of strings"},
           {R"({"ok": true, "tensors": [{"name": "cos", "dtype": "fp32",
                                          "shape": [4611686018427387904, 4]}]})",
            "exceeds 2147483648 bytes"},
           {R"({"ok": true, "tensors": [{"name": "cos", "dtype": "fp32", "shape": [-1]}]})",
            "non-negative integers"},
           {R"({"ok": true, "tensors": [{"name": "cos", "dtype": "int8", "shape": [1]}]})",
            "unknown dtype"},
           {std::string(70000, ' '), "exceeds 65536 bytes"},
       }) {
    const std::string got = error_of([&] { parse_answer(line); });
    EXPECT_NE(got.find(message), std::string::npos) << line.substr(0, 80) << " → " << got;
  }
}

}  // namespace
}  // namespace pev::impl::protocol

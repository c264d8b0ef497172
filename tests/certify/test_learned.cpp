// Certification of learned positional tables (docs/certify.md §4): genuine lookups and
// interpolations (pev's hf kernel, PyTorch's fp32 pipeline, and its accurate kernel) certified in
// fp32, fp16 and bf16; the field's three mistakes — another offset (OPT's 2), the other
// align_corners, a truncated table — not certified and named with the parameter the rows imply;
// malformed input refused (pev::error, exit 2).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../../verify/src/certify/detail.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/kernel/absolute.h"
#include "pev/ref/sinusoidal.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

using certify::grade;
using kernel::strategy;

spec::learned learned_of(const std::string& text) {
  return std::get<spec::learned>(spec::parse_spec(text));
}

std::vector<std::int64_t> range(std::int64_t n, std::int64_t from = 0) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = from; i < from + n; ++i) p.push_back(i);
  return p;
}

/// Rows of `made` (the implementation's spec, which may differ from the one certified) at `pos`.
template <class T>
io::array rows_of(const spec::learned& made, strategy st, const std::vector<std::int64_t>& pos) {
  std::vector<T> v(pos.size() * static_cast<std::size_t>(made.d_model));
  kernel::learned_table<T>(made, st, pos, v);
  return io::array::from_values<T>({static_cast<std::int64_t>(pos.size()), made.d_model}, v);
}

certify::dump dump_of(io::array rows, const std::vector<std::int64_t>& pos,
                      const std::string& name = "pe") {
  certify::dump d;
  d.tensors[name] = std::move(rows);
  d.tensors["positions"] = io::array::from_int64({static_cast<std::int64_t>(pos.size())}, pos);
  return d;
}

certify::certificate run(const spec::learned& s, const certify::dump& d) {
  return certify::certify_dump(spec::encoding{s}, d, certify::options{});
}

grade grade_of(const certify::certificate& c) { return c.certification->result; }

std::string findings_of(const certify::certificate& c) {
  std::string f;
  if (c.certification->why) {
    for (const std::string& s : c.certification->why->findings) f += s + "\n";
  }
  return f;
}

std::string named_of(const certify::certificate& c) {
  const auto& why = c.certification->why;
  return why && why->named ? *why->named : "(none)";
}

void expect_named(const certify::certificate& c, const std::string& id, const std::string& finding);

// ---- Genuine tables ---------------------------------------------------------------------------

const char* const kLookup = "learned:num_positions=96,d_model=24,seed=5";
const char* const kCorners = "learned:num_positions=64,d_model=16,target_positions=200,seed=7";
const char* const kHalfPixel =
    "learned:num_positions=64,d_model=16,target_positions=150,align_corners=false,seed=9";

template <class T>
void expect_certified(const char* text, strategy st, grade at_worst) {
  const spec::learned s = learned_of(text);
  const auto pos = range(spec::learned_rows(s));
  const auto c = run(s, dump_of(rows_of<T>(s, st, pos), pos));
  EXPECT_EQ(c.exit_code(), 0) << text << " " << kernel::to_string(st) << " " << named_of(c);
  EXPECT_LE(grade_of(c), at_worst) << text << " " << kernel::to_string(st);
  EXPECT_EQ(c.checks.size(), 1u);
  EXPECT_EQ(c.checks[0].family, "learned");
}

TEST(CertifyLearned, GenuineLookupIsCorrectlyRounded) {
  for (strategy st : {strategy::hf, strategy::accurate}) {
    expect_certified<float>(kLookup, st, grade::correctly_rounded);
    expect_certified<half>(kLookup, st, grade::correctly_rounded);
    expect_certified<bfloat16>(kLookup, st, grade::correctly_rounded);
  }
}

TEST(CertifyLearned, GenuineInterpolationIsCertified) {
  for (const char* text : {kCorners, kHalfPixel}) {
    expect_certified<float>(text, strategy::accurate, grade::correctly_rounded);
    expect_certified<half>(text, strategy::accurate, grade::correctly_rounded);
    expect_certified<bfloat16>(text, strategy::accurate, grade::correctly_rounded);
    // PyTorch's fp32 interpolation: within the hf rung.
    expect_certified<float>(text, strategy::hf, grade::recipe_hf);
    expect_certified<half>(text, strategy::hf, grade::recipe_hf);
    expect_certified<bfloat16>(text, strategy::hf, grade::recipe_hf);
  }
}

TEST(CertifyLearned, Float64RowsAreCertifiedAndDiagnosed) {
  // numpy dumps in float64: the table's own values, and an interpolation in double.
  const spec::learned s = learned_of(kHalfPixel);
  const auto d = static_cast<std::size_t>(s.d_model);
  const auto pos = range(spec::learned_rows(s));
  std::vector<double> v;
  for (std::int64_t p : pos) {
    const ref::learned_source src = ref::learned_source_of(s, p);
    const double w = static_cast<double>(src.rem) / static_cast<double>(src.den);
    for (std::size_t c = 0; c < d; ++c) {
      v.push_back((1 - w) * s.table[static_cast<std::size_t>(src.i0) * d + c] +
                  w * s.table[static_cast<std::size_t>(src.i1) * d + c]);
    }
  }
  const auto n = static_cast<std::int64_t>(pos.size());
  const auto c = run(s, dump_of(io::array::from_values<double>({n, s.d_model}, v), pos));
  EXPECT_EQ(c.exit_code(), 0) << named_of(c);
  // Not faithful where the two terms cancel, but within 2 ulps of the rows' magnitude.
  EXPECT_EQ(grade_of(c), grade::drift_free);
  // A lookup read two rows on: the offset the rows imply, recovered from the table.
  const spec::learned l = learned_of(kLookup);
  const auto lp = range(90);
  std::vector<double> shifted;
  for (std::int64_t p : lp) {
    for (std::int64_t k = 0; k < l.d_model; ++k) {
      shifted.push_back(l.table[static_cast<std::size_t>((p + 5) * l.d_model + k)]);
    }
  }
  expect_named(run(l, dump_of(io::array::from_values<double>({90, l.d_model}, shifted), lp)),
               "learned-offset", "offset: the rows imply 5, the spec says 0");
}

TEST(CertifyLearned, OffsetRowsAndBatchedPositionIds) {
  // OPT: 66 rows, position p reads row p + 2; a batch of 2 × 32 tokens, each with its positions.
  const spec::learned s = learned_of("learned:num_positions=66,d_model=8,offset=2,seed=3");
  std::vector<std::int64_t> pos = range(32);
  const std::vector<std::int64_t> second = range(32, 20);
  pos.insert(pos.end(), second.begin(), second.end());
  io::array rows = rows_of<float>(s, strategy::hf, pos);
  rows.shape = {2, 32, 8};
  certify::dump d;
  d.tensors["embed.positions"] = rows;
  d.tensors["position_ids"] = io::array::from_int64({2, 32}, pos);
  const auto c = run(s, d);
  EXPECT_EQ(c.exit_code(), 0) << named_of(c);
  EXPECT_EQ(grade_of(c), grade::correctly_rounded);
  EXPECT_EQ(c.certification->positions, 64u);
  EXPECT_EQ(c.certification->max_position, 51);
}

TEST(CertifyLearned, ExplicitRowsForATrace) {
  const spec::learned s = learned_of(kCorners);
  const std::vector<std::int64_t> pos = {0, 5, 199, 17, 17, 100};
  const auto good = certify::detail::learned_check(spec::encoding{s},
                                                   rows_of<float>(s, strategy::hf, pos), pos, {});
  EXPECT_EQ(good.exit_code(), 0);
  EXPECT_EQ(good.checks.at(0).id, "pe");
  spec::learned wrong = s;
  wrong.align_corners = false;
  const auto bad = certify::detail::learned_check(
      spec::encoding{s}, rows_of<float>(wrong, strategy::hf, pos), pos, {});
  EXPECT_EQ(bad.exit_code(), 1);
  EXPECT_EQ(named_of(bad), "learned-align-corners");
  EXPECT_THROW(
      certify::detail::learned_check(spec::encoding{s}, rows_of<float>(s, strategy::hf, pos),
                                     std::vector<std::int64_t>{0, 1}, {}),
      error);
}

// ---- The field's mistakes, named with the parameter the rows imply ----------------------------

template <class T>
certify::certificate mistaken(const spec::learned& s, const spec::learned& made,
                              const std::vector<std::int64_t>& pos) {
  return run(s, dump_of(rows_of<T>(made, strategy::hf, pos), pos));
}

void expect_named(const certify::certificate& c, const std::string& id,
                  const std::string& finding) {
  EXPECT_EQ(c.exit_code(), 1);
  EXPECT_EQ(grade_of(c), grade::not_certified);
  EXPECT_EQ(named_of(c), id) << findings_of(c);
  EXPECT_NE(findings_of(c).find(finding), std::string::npos) << findings_of(c);
}

TEST(CertifyLearned, OptOffsetForgottenIsNamed) {
  const spec::learned s = learned_of("learned:num_positions=130,d_model=16,offset=2,seed=11");
  spec::learned made = s;
  made.offset = 0;
  const auto pos = range(128);
  expect_named(mistaken<float>(s, made, pos), "learned-offset",
               "offset: the rows imply 0, the spec says 2");
  expect_named(mistaken<bfloat16>(s, made, pos), "learned-offset",
               "offset: the rows imply 0, the spec says 2");
}

TEST(CertifyLearned, OffsetAppliedWhereThereIsNoneIsNamed) {
  const spec::learned s = learned_of("learned:num_positions=130,d_model=16,seed=12");
  spec::learned made = s;
  made.offset = 2;
  expect_named(mistaken<float>(s, made, range(100)), "learned-offset",
               "offset: the rows imply 2, the spec says 0");
  // An offset outside the usual ones, recovered from the rows themselves (a lookup).
  made.offset = 9;
  expect_named(mistaken<half>(s, made, range(100)), "learned-offset",
               "offset: the rows imply 9, the spec says 0");
  // In an interpolated table the offset indexes the interpolated rows.
  const spec::learned si =
      learned_of("learned:num_positions=40,d_model=8,target_positions=100,seed=13");
  spec::learned mi = si;
  mi.offset = 2;
  expect_named(mistaken<float>(si, mi, range(90)), "learned-offset",
               "offset: the rows imply 2, the spec says 0");
}

TEST(CertifyLearned, WrongCornerAlignmentIsNamed) {
  for (const char* text : {kCorners, kHalfPixel}) {
    const spec::learned s = learned_of(text);
    spec::learned made = s;
    made.align_corners = !s.align_corners;
    const std::string finding = std::string("align_corners: the rows imply ") +
                                (made.align_corners ? "true" : "false") + ", the spec says " +
                                (s.align_corners ? "true" : "false");
    const auto pos = range(spec::learned_rows(s));
    expect_named(mistaken<float>(s, made, pos), "learned-align-corners", finding);
    expect_named(mistaken<bfloat16>(s, made, pos), "learned-align-corners", finding);
  }
}

/// The rows of `s` at `pos` from a table truncated to `len` rows: past it, row len − 1 again
/// (clamped) or zero.
template <class T>
io::array truncated(const spec::learned& s, const std::vector<std::int64_t>& pos, std::int64_t len,
                    bool zero) {
  std::vector<std::int64_t> read;
  for (std::int64_t p : pos) read.push_back(std::min(p + s.offset, len - 1) - s.offset);
  io::array a = rows_of<T>(s, strategy::hf, read);
  if (zero) {
    std::vector<T> v(pos.size() * static_cast<std::size_t>(s.d_model));
    kernel::learned_table<T>(s, strategy::hf, read, v);
    for (std::size_t r = 0; r < pos.size(); ++r) {
      if (pos[r] + s.offset >= len) {
        std::fill_n(v.begin() + static_cast<std::ptrdiff_t>(r * s.d_model), s.d_model, T(0));
      }
    }
    a = io::array::from_values<T>({static_cast<std::int64_t>(pos.size()), s.d_model}, v);
  }
  return a;
}

TEST(CertifyLearned, TruncatedTableIsNamedWithItsLength) {
  const spec::learned s = learned_of("learned:num_positions=130,d_model=16,offset=2,seed=14");
  const auto pos = range(128);
  const auto clamped = run(s, dump_of(truncated<float>(s, pos, 100, false), pos));
  expect_named(clamped, "learned-truncated-clamped",
               "table length: the rows imply 100 rows, the spec's table has 130");
  const auto zero = run(s, dump_of(truncated<half>(s, pos, 64, true), pos));
  expect_named(zero, "learned-truncated-zero",
               "table length: the rows imply 64 rows, the spec's table has 130");
  // Interpolated: the interpolated table cut short.
  const spec::learned si = learned_of(kHalfPixel);
  const auto pi = range(150);
  expect_named(run(si, dump_of(truncated<float>(si, pi, 120, false), pi)),
               "learned-truncated-clamped",
               "table length: the rows imply 120 rows, the spec's table has 150");
}

TEST(CertifyLearned, GenuineRowsOfAnotherTableAreNotExplained) {
  // Another seed's table: not certified, and none of the three mistakes explains it.
  const spec::learned s = learned_of(kLookup);
  spec::learned other = learned_of("learned:num_positions=96,d_model=24,seed=6");
  const auto pos = range(96);
  const auto c = mistaken<float>(s, other, pos);
  EXPECT_EQ(c.exit_code(), 1);
  EXPECT_EQ(named_of(c), "(none)");
  EXPECT_EQ(findings_of(c), "");
}

// ---- Bad input: pev::error (exit 2) -----------------------------------------------------------

std::string error_of(const spec::learned& s, const certify::dump& d) {
  try {
    run(s, d);
  } catch (const error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CertifyLearned, BadInputIsRefusedWithAClearMessage) {
  const spec::learned s = learned_of(kLookup);
  const auto pos = range(96);
  const spec::learned narrow = learned_of("learned:num_positions=96,d_model=23,seed=5");
  EXPECT_NE(error_of(s, dump_of(rows_of<float>(narrow, strategy::hf, pos), pos))
                .find("has shape [96, 23], expected [P, 24] or [B, T, 24] (d_model)"),
            std::string::npos);
  certify::dump none;
  none.tensors["positions"] = io::array::from_int64({3}, {0, 1, 2});
  none.tensors["a"] = io::array::from_int64({3}, {0, 1, 2});
  none.tensors["b"] = io::array::from_int64({3}, {0, 1, 2});
  EXPECT_NE(error_of(s, none).find("no learned positional rows in the dump"), std::string::npos);
  // A position the spec's table does not have.
  const spec::learned longer = learned_of("learned:num_positions=100,d_model=24,seed=5");
  const auto far = range(100);
  EXPECT_NE(error_of(s, dump_of(rows_of<float>(longer, strategy::hf, far), far))
                .find("position 96 (row 96 of tensor 'pe') is outside the spec's table"),
            std::string::npos);
  // Rows and positions that disagree.
  certify::dump d = dump_of(rows_of<float>(s, strategy::hf, pos), range(90));
  EXPECT_NE(error_of(s, d).find("positions"), std::string::npos) << error_of(s, d);
  // Integer rows.
  EXPECT_NE(
      error_of(s, dump_of(io::array::from_int64({2, 24}, std::vector<std::int64_t>(48, 1)), {0, 1}))
          .find("expected F32, F16, BF16 or F64"),
      std::string::npos);
}

}  // namespace
}  // namespace pev

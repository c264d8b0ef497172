// safetensors writing and reading: the exact bytes written, round trips of every dtype and shape,
// files laid out as huggingface/safetensors writes them, and malformed headers refused with a
// message naming the tensor and field.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "pev/io/safetensors.h"

namespace pev::io {
namespace {

using namespace std::string_literals;
using test::cat;
using test::le64;
using test::read_bytes;
using test::safetensors_file;
using test::scratch_dir;
using test::write_bytes;

TEST(SafetensorsGolden, ExactBytes) {
  tensor_file t;
  t.metadata["format"] = "pt";
  t.add("a", array::from_floats({2}, {1.0f, 2.0f}));
  t.add("b", array::from_int64({}, {7}));
  // 138 bytes of JSON, padded with 6 spaces to 144 (a multiple of 8); tensors in insertion order,
  // fields in the reference writer's order, "__metadata__" first.
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}})";
  ASSERT_EQ(json.size(), 138u);
  const std::string expected =
      cat({le64(144), json, std::string(6, ' '), "\x00\x00\x80\x3f\x00\x00\x00\x40"s, le64(7)});
  EXPECT_EQ(safetensors_bytes(t), expected);
  const auto file = scratch_dir() / "g.safetensors";
  write_safetensors(file, t);
  EXPECT_EQ(read_bytes(file), expected);
}

TEST(SafetensorsGolden, NoMetadataNoTensors) {
  // "{}" padded to 8 bytes.
  EXPECT_EQ(safetensors_bytes(tensor_file{}), cat({le64(8), "{}      "}));
  const tensor_file t = parse_safetensors(cat({le64(8), "{}      "}), "empty");
  EXPECT_TRUE(t.names.empty());
  EXPECT_TRUE(t.metadata.empty());
}

array sample(dtype t, const std::vector<std::int64_t>& shape, int seed) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  array a;
  a.type = t;
  a.shape = shape;
  a.data.resize(static_cast<std::size_t>(n) * size_of(t));
  std::byte* p = a.data.mutable_data();
  for (std::size_t i = 0; i < a.data.size(); ++i)
    p[i] = static_cast<std::byte>((i * 37 + seed * 11) & 0xFF);
  return a;
}

TEST(Safetensors, RoundTripsEveryDtypeAndShapeInOneFile) {
  const std::vector<dtype> dtypes = {dtype::fp64, dtype::fp32,  dtype::fp16,
                                     dtype::bf16, dtype::int32, dtype::int64};
  const std::vector<std::vector<std::int64_t>> shapes = {{},     {0},       {1},      {5},
                                                         {2, 3}, {4, 0, 2}, {2, 1, 3}};
  tensor_file t;
  t.metadata = {{"variant", R"({"rope_theta": 500000})"}, {"layout", "neox"}, {"empty", ""}};
  int seed = 0;
  // Names deliberately not in sorted order: insertion order is file order.
  for (dtype d : dtypes) {
    for (const auto& shape : shapes) {
      t.add(cat({"t", std::to_string(99 - seed), "/", safetensors_name(d)}),
            sample(d, shape, seed));
      ++seed;
    }
  }
  const auto file = scratch_dir() / "all.safetensors";
  write_safetensors(file, t);
  const std::string bytes = read_bytes(file);
  const std::uint64_t header = static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[0])) |
                               static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[1]))
                                   << 8;
  EXPECT_EQ(header % 8, 0u);
  const tensor_file r = read_safetensors(file);
  EXPECT_EQ(r.names, t.names);
  EXPECT_EQ(r.metadata, t.metadata);
  for (const auto& name : t.names) {
    SCOPED_TRACE(name);
    EXPECT_EQ(r.at(name).type, t.at(name).type);
    EXPECT_EQ(r.at(name).shape, t.at(name).shape);
    EXPECT_EQ(r.at(name).data, t.at(name).data);
  }
  const tensor_file m = parse_safetensors(safetensors_bytes(t), "memory");
  EXPECT_EQ(m.names, t.names);
}

TEST(Safetensors, ValuesSurviveExactly) {
  tensor_file t;
  t.add("cos", array::from_doubles({2}, {0.1, -1e-310}));
  t.add("pos", array::from_int32({3}, {0, -1, 2147483647}));
  t.add("bf", array::from_bits16(dtype::bf16, {1}, {0x4049}));
  const tensor_file r = parse_safetensors(safetensors_bytes(t), "memory");
  EXPECT_EQ(r.at("cos").to_doubles(), (std::vector<double>{0.1, -1e-310}));
  EXPECT_EQ(r.at("pos").to_int64(), (std::vector<std::int64_t>{0, -1, 2147483647}));
  EXPECT_EQ(r.at("bf").to_doubles(), std::vector<double>{3.140625});
}

// As safetensors.torch.save_file writes: "__metadata__" first, tensors sorted by alignment then
// name, header padded with spaces.
TEST(Safetensors, ReadsTheReferenceLayout) {
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"weight":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
      R"("bias":{"dtype":"F16","shape":[2],"data_offsets":[8,12]}})";
  std::string header = json;
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string data = "\x80\x3f\x00\x40\x40\x40\x80\x40\x00\x3c\x00\xc0"s;
  const tensor_file t = parse_safetensors(safetensors_file(header, data), "hf");
  EXPECT_EQ(t.names, (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(t.at("weight").shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(t.at("weight").to_doubles(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(t.at("bias").to_doubles(), (std::vector<double>{1, -2}));
  EXPECT_EQ(t.metadata.at("format"), "pt");
  // An unpadded header (older writers) reads the same.
  EXPECT_EQ(parse_safetensors(safetensors_file(json, data), "unpadded").names, t.names);
}

TEST(Safetensors, NamesComeInDataOrder) {
  const std::string header = R"({"late":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},)"
                             R"("empty":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                             R"("early":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})";
  const tensor_file t =
      parse_safetensors(safetensors_file(header, "\x01\x00\x00\x00\x02\x00\x00\x00"s), "order");
  EXPECT_EQ(t.names, (std::vector<std::string>{"empty", "early", "late"}));
  EXPECT_EQ(t.at("late").to_int64(), std::vector<std::int64_t>{2});
}

TEST(Safetensors, AtNamesTheTensorsPresent) {
  tensor_file t;
  t.add("cos", array::from_floats({1}, {1.0f}));
  t.add("sin", array::from_floats({1}, {0.0f}));
  EXPECT_PEV_ERROR(t.at("positions"), "no tensor named 'positions' (the file holds 'cos', 'sin')");
  EXPECT_PEV_ERROR(t.add("cos", array::from_floats({1}, {1.0f})),
                   "tensor 'cos' is already present");
  EXPECT_PEV_ERROR(t.add("__metadata__", array::from_floats({1}, {1.0f})), "cannot name a tensor");
}

TEST(Safetensors, WriteRefusesInconsistentInput) {
  const auto file = scratch_dir() / "x.safetensors";
  tensor_file t;
  t.add("a", array::from_floats({1}, {1.0f}));
  t.tensors.at("a").shape = {2};
  EXPECT_PEV_ERROR(write_safetensors(file, t),
                   "tensor 'a': array of shape [2] and dtype F32 needs 8 bytes");
  tensor_file u;
  u.names = {"ghost"};
  EXPECT_PEV_ERROR(write_safetensors(file, u), "lists 1 names but holds 0 tensors");
  tensor_file v;
  v.add("bad\xff", array::from_floats({1}, {1.0f}));
  EXPECT_PEV_ERROR(write_safetensors(file, v), "not valid UTF-8");
  EXPECT_FALSE(std::filesystem::exists(file));
}

// ---- malformed files ----

struct bad_st {
  const char* name;
  std::string bytes;
  const char* message;
};

std::string one(std::string_view entry) { return cat({R"({"t":)", entry, "}"}); }

std::vector<bad_st> bad_st_cases() {
  const std::string f4x2 = "\x00\x00\x80\x3f\x00\x00\x00\x40"s;
  const std::string good = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  return {
      {"Empty", "", "file is 0 bytes, too short for the 8-byte header length"},
      {"ShorterThanLength", "\x02\x00\x00"s, "file is 3 bytes"},
      {"HeaderOver100MB", cat({le64(200'000'000), "{}"}),
       "header length 200000000 exceeds the limit"},
      {"HeaderLengthBeyondFile", cat({le64(100), "{}"}),
       "header length 100 runs past the end of the file (10 bytes)"},
      {"HeaderLengthHuge", cat({le64(0xFFFFFFFFFFFFFFFFull), "{}"}), "exceeds the limit"},
      {"InvalidUtf8", safetensors_file("{\"t\xff\":1}", ""), "header is not valid UTF-8 (byte 3"},
      {"OverlongUtf8", safetensors_file("{\"\xc0\xaf\":1}", ""), "not valid UTF-8"},
      {"InvalidJson", safetensors_file(R"({"t": {"dtype": "F32",)", f4x2),
       "header is not valid JSON"},
      {"ZeroLengthHeader", safetensors_file("", f4x2), "header is not valid JSON"},
      {"HeaderIsAnArray", safetensors_file("[1,2]", ""),
       "header is an array, expected a JSON object"},
      {"EntryNotAnObject", safetensors_file(one(R"("F32")"), f4x2), "tensor 't' is a string"},
      {"MissingDtype", safetensors_file(one(R"({"shape":[2],"data_offsets":[0,8]})"), f4x2),
       "tensor 't': missing field 'dtype'"},
      {"MissingDataOffsets", safetensors_file(one(R"({"dtype":"F32","shape":[2]})"), f4x2),
       "missing field 'data_offsets'"},
      {"ExtraField",
       safetensors_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"foo":1})"), f4x2),
       "tensor 't': unexpected field 'foo'"},
      {"DtypeNotAString",
       safetensors_file(one(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})"), f4x2),
       "field 'dtype' is a number (4)"},
      {"Float8Dtype",
       safetensors_file(one(R"({"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]})"), f4x2),
       "dtype 'F8_E4M3' is not supported (supported: F64, F32, F16, BF16, I32, I64)"},
      {"LowercaseDtype",
       safetensors_file(one(R"({"dtype":"f32","shape":[2],"data_offsets":[0,8]})"), f4x2),
       "dtype 'f32' is not supported"},
      {"ShapeNotAnArray",
       safetensors_file(one(R"({"dtype":"F32","shape":"2","data_offsets":[0,8]})"), f4x2),
       "field 'shape' is a string"},
      {"NegativeShape",
       safetensors_file(one(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), f4x2),
       "field 'shape' entry 0 is a negative integer (-2)"},
      {"FloatShape",
       safetensors_file(one(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})"), f4x2),
       "entry 0 is a non-integer number"},
      {"ShapeBeyondInt64",
       safetensors_file(
           one(R"({"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]})"), f4x2),
       "below 2^63"},
      {"OffsetsWrongLength",
       safetensors_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4,8]})"), f4x2),
       "field 'data_offsets' is [0,4,8], expected [begin, end]"},
      {"OffsetsNegative",
       safetensors_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})"), f4x2),
       "expected [begin, end], two non-negative integers"},
      {"OffsetsReversed",
       safetensors_file(one(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})"), f4x2),
       "[8, 0] ends before it begins"},
      {"OffsetsBeyondData",
       safetensors_file(one(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})"), f4x2),
       "[0, 16] runs past the end of the data section (8 bytes)"},
      {"SizeMismatch",
       safetensors_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})"), f4x2),
       "[0, 4] spans 4 bytes but shape [2] of F32 needs 8"},
      {"ShapeProductOverflows",
       safetensors_file(
           one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})"), f4x2),
       "has more elements than fit in 64 bits"},
      {"ByteCountOverflows",
       safetensors_file(
           one(R"({"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]})"), f4x2),
       "needs more than 2^64 bytes"},
      {"TerabytesClaimed",
       safetensors_file(
           one(R"({"dtype":"F64","shape":[1000000000000],"data_offsets":[0,8000000000000]})"),
           f4x2),
       "[0, 8000000000000] runs past the end of the data section (8 bytes)"},
      {"Overlap",
       safetensors_file(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           f4x2),
       "tensors 'a' (data_offsets [0, 8]) and 'b' ([4, 8]) overlap"},
      {"SameOffsets",
       safetensors_file(
           R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
           f4x2),
       "overlap"},
      {"Gap", safetensors_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f4x2),
       "4 bytes before tensor 'a' (data_offsets begin at 4) belong to no tensor"},
      {"TrailingBytes", safetensors_file(one(good), cat({f4x2, "xyz"})),
       "3 trailing bytes after the last tensor"},
      {"MetadataNotAString", safetensors_file(R"({"__metadata__":{"n":5}})", ""),
       "'__metadata__' value of 'n' is a number (5), expected a string"},
      {"MetadataNested", safetensors_file(R"({"__metadata__":{"cfg":{"a":1}}})", ""),
       "'__metadata__' value of 'cfg' is an object"},
      {"MetadataNotAnObject", safetensors_file(R"({"__metadata__":["a"]})", ""),
       "'__metadata__' is an array"},
      {"DuplicateTensor", safetensors_file(cat({R"({"t":)", good, R"(,"t":)", good, "}"}), f4x2),
       "duplicate key 't' in the header"},
      {"DuplicateField",
       safetensors_file(one(R"({"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]})"),
                        f4x2),
       "duplicate key 'dtype'"},
      {"NestingBomb", safetensors_file(cat({std::string(1000, '['), std::string(1000, ']')}), ""),
       "nested too deeply"},
  };
}

void PrintTo(const bad_st& c, std::ostream* os) { *os << c.name; }

class SafetensorsMalformed : public testing::TestWithParam<bad_st> {};

TEST_P(SafetensorsMalformed, IsRefusedWithAMessage) {
  const bad_st& c = GetParam();
  const auto file = scratch_dir() / "bad.safetensors";
  write_bytes(file, c.bytes);
  EXPECT_PEV_ERROR(read_safetensors(file), c.message);
  EXPECT_PEV_ERROR(read_safetensors(file), cat({"safetensors file '", file.string(), "'"}));
  EXPECT_PEV_ERROR(parse_safetensors(c.bytes, "in-memory"), c.message);
}

INSTANTIATE_TEST_SUITE_P(Cases, SafetensorsMalformed, testing::ValuesIn(bad_st_cases()),
                         [](const testing::TestParamInfo<bad_st>& info) {
                           return info.param.name;
                         });

// Damaged files are refused with pev::error or, where the damage left a valid file, read
// consistently; never another exception, a crash or an allocation beyond the file's size.
TEST(SafetensorsMutated, FilesOnlyThrowPevError) {
  const unsigned seed = 20240611;
  SCOPED_TRACE(cat({"seed ", std::to_string(seed)}));
  tensor_file t;
  t.metadata["format"] = "pt";
  t.add("cos", array::from_floats({2, 2}, {1, 2, 3, 4}));
  t.add("pos", array::from_int64({2}, {0, 1}));
  t.add("e", array::from_bits16(dtype::bf16, {0}, {}));
  const std::string original = safetensors_bytes(t);
  int refused = 0, read = 0;
  for (const std::string& m : test::mutations(original, 8 + 200, 6000, seed)) {
    test::allocation_watch watch;
    try {
      const tensor_file r = parse_safetensors(m, "mutant");
      for (const auto& name : r.names) r.at(name).check("mutant");
      ++read;
    } catch (const pev::error&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "unexpected exception " << e.what();
    }
    EXPECT_LE(watch.largest(), m.size() + 4096);
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(read, 0);
}

TEST(SafetensorsMalformedAllocation, TerabyteTensorIsRefusedWithoutAllocating) {
  const auto file = scratch_dir() / "huge.safetensors";
  write_bytes(
      file,
      safetensors_file(
          one(R"({"dtype":"F64","shape":[1000000,1000000],"data_offsets":[0,8000000000000]})"),
          std::string(64, '\0')));
  test::allocation_watch watch;
  EXPECT_PEV_ERROR(read_safetensors(file), "runs past the end of the data section");
  EXPECT_LT(watch.largest(), std::size_t{1} << 20);
}

TEST(SafetensorsMalformedAllocation, HugeHeaderLengthIsRefusedWithoutAllocating) {
  const auto file = scratch_dir() / "huge-header.safetensors";
  write_bytes(file, cat({le64(90'000'000), "{}"}));
  test::allocation_watch watch;
  EXPECT_PEV_ERROR(read_safetensors(file), "runs past the end of the file");
  EXPECT_LT(watch.largest(), std::size_t{1} << 20);
}

}  // namespace
}  // namespace pev::io

// .npy writing and reading: byte-exact headers against what numpy.save writes (numpy 1.24+/2.x:
// sorted keys, growth padding of the first axis, 64-byte alignment), round trips of every dtype and
// shape, the header syntax numpy and other writers produce, and malformed files refused with a
// message naming the field.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "pev/io/file.h"
#include "pev/io/npy.h"

namespace pev::io {
namespace {

using test::cat;
using test::le16;
using test::le32;
using test::npy_file;
using test::read_bytes;
using test::scratch_dir;
using test::write_bytes;

const std::string v1_magic("\x93NUMPY\x01\x00", 8);

// numpy.save(f, np.array([1, 2, 3], dtype='<f4')): the dict, 20 spaces of growth room for the first
// axis (21 − len("3")), 40 spaces of alignment padding and '\n' make a 128-byte prefix.
TEST(NpyGolden, Float32Vector) {
  const std::string expected =
      cat({v1_magic, le16(118), "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
           std::string(60, ' '), "\n",
           std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12)});
  const array a = array::from_floats({3}, {1.0f, 2.0f, 3.0f});
  EXPECT_EQ(npy_bytes(a), expected);
  const auto file = scratch_dir() / "a.npy";
  write_npy(file, a);
  EXPECT_EQ(read_bytes(file), expected);
}

// numpy.save(f, np.array(2.5)): a 0-d array has no growth room.
TEST(NpyGolden, Float64Scalar) {
  const std::string expected =
      cat({v1_magic, le16(118), "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
           std::string(62, ' '), "\n", std::string("\x00\x00\x00\x00\x00\x00\x04\x40", 8)});
  EXPECT_EQ(npy_bytes(array::from_doubles({}, {2.5})), expected);
}

// numpy.save(f, np.arange(6, dtype='<i8').reshape(2, 3)).
TEST(NpyGolden, Int64Matrix) {
  std::string data;
  for (std::uint64_t i = 0; i < 6; ++i) data += test::le64(i);
  const std::string expected =
      cat({v1_magic, le16(118), "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }",
           std::string(58, ' '), "\n", data});
  EXPECT_EQ(npy_bytes(array::from_int64({2, 3}, {0, 1, 2, 3, 4, 5})), expected);
}

// numpy.save(f, np.zeros((0,), dtype='<f2')): a header and no data.
TEST(NpyGolden, EmptyFloat16) {
  const std::string expected =
      cat({v1_magic, le16(118), "{'descr': '<f2', 'fortran_order': False, 'shape': (0,), }",
           std::string(60, ' '), "\n"});
  EXPECT_EQ(npy_bytes(array::from_bits16(dtype::fp16, {0}, {})), expected);
}

// numpy.save(f, np.zeros((0, 1, 1, 1, 1, 1, 1, 1, 10**17), dtype='<f4')): the header is already
// aligned before padding, and numpy then pads a full 64 bytes (padlen = 64 − len % 64).
TEST(NpyGolden, AlreadyAlignedHeaderGetsAFull64BytePad) {
  const std::string expected =
      cat({v1_magic, le16(182),
           "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1, 1, 1, 1, 1, 1, 1, "
           "100000000000000000), }",
           std::string(84, ' '), "\n"});
  array a;
  a.type = dtype::fp32;
  a.shape = {0, 1, 1, 1, 1, 1, 1, 1, 100000000000000000};
  EXPECT_EQ(npy_bytes(a), expected);
}

// bf16 has no numpy dtype: written as '<u2' holding the encodings.
TEST(NpyGolden, Bfloat16IsWrittenAsU2) {
  const std::string expected =
      cat({v1_magic, le16(118), "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }",
           std::string(60, ' '), "\n", std::string("\x80\x3f", 2)});
  EXPECT_EQ(npy_bytes(array::from_bits16(dtype::bf16, {1}, {0x3F80})), expected);
}

array sample(dtype t, const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  switch (t) {
    case dtype::fp64: {
      std::vector<double> v;
      for (std::int64_t i = 0; i < n; ++i)
        v.push_back(0.1 * static_cast<double>(i) - 1e300 * (i % 2));
      return array::from_doubles(shape, v);
    }
    case dtype::fp32: {
      std::vector<float> v;
      for (std::int64_t i = 0; i < n; ++i) v.push_back(0.3f * static_cast<float>(i) - 7.0f);
      return array::from_floats(shape, v);
    }
    case dtype::fp16:
    case dtype::bf16: {
      std::vector<std::uint16_t> v;
      for (std::int64_t i = 0; i < n; ++i)
        v.push_back(static_cast<std::uint16_t>(0x3C00 + 977 * i));
      return array::from_bits16(t, shape, v);
    }
    case dtype::int32: {
      std::vector<std::int32_t> v;
      for (std::int64_t i = 0; i < n; ++i) v.push_back(static_cast<std::int32_t>(-1000003 * i));
      return array::from_int32(shape, v);
    }
    case dtype::int64: {
      std::vector<std::int64_t> v;
      for (std::int64_t i = 0; i < n; ++i) v.push_back(-(std::int64_t{1} << 62) + 12345 * i);
      return array::from_int64(shape, v);
    }
  }
  return {};
}

const std::vector<std::vector<std::int64_t>> shapes = {{},     {0},       {1},         {7},
                                                       {2, 3}, {2, 0, 3}, {3, 1, 2, 2}};
const std::vector<dtype> dtypes = {dtype::fp64, dtype::fp32,  dtype::fp16,
                                   dtype::bf16, dtype::int32, dtype::int64};

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  const auto dir = scratch_dir();
  int count = 0;
  for (dtype t : dtypes) {
    for (const auto& shape : shapes) {
      const array a = sample(t, shape);
      const auto file = dir / cat({"a", std::to_string(count++), ".npy"});
      write_npy(file, a);
      const array b = read_npy(file, t == dtype::bf16);
      SCOPED_TRACE(cat({npy_descr(t), " ", shape_string(shape)}));
      EXPECT_EQ(b.type, t);
      EXPECT_EQ(b.shape, shape);
      EXPECT_EQ(b.data, a.data);
      // The data starts at a multiple of 64 bytes.
      EXPECT_EQ((read_bytes(file).size() - a.data.size()) % 64, 0u);
      // In memory, the same.
      const array c = parse_npy(npy_bytes(a), "memory", t == dtype::bf16);
      EXPECT_EQ(c.data, a.data);
    }
  }
}

TEST(Npy, Bfloat16IsReadOnlyWhenAsked) {
  const auto file = scratch_dir() / "b.npy";
  write_npy(file, array::from_bits16(dtype::bf16, {2}, {0x3F80, 0xC049}));
  EXPECT_PEV_ERROR(read_npy(file), "bf16 arrays are stored as '<u2'");
  EXPECT_PEV_ERROR(read_npy(file), "read_npy(file, /*u2_is_bf16=*/true)");
  const array b = read_npy(file, true);
  EXPECT_EQ(b.type, dtype::bf16);
  EXPECT_EQ(b.to_doubles(), (std::vector<double>{1.0, -3.140625}));
}

TEST(Npy, WritesVersion2WhenTheHeaderNeedsIt) {
  // 30,000 dimensions of 1 make a header longer than format 1.0's 65,535-byte limit.
  array a = array::from_floats({1}, {42.0f});
  a.shape.assign(30000, 1);
  const std::string bytes = npy_bytes(a);
  ASSERT_GT(bytes.size(), 70000u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x02\x00", 8));
  const std::uint32_t hlen = static_cast<unsigned char>(bytes[8]) |
                             static_cast<unsigned char>(bytes[9]) << 8 |
                             static_cast<unsigned char>(bytes[10]) << 16;
  EXPECT_EQ((12 + hlen) % 64, 0u);
  const array b = parse_npy(bytes, "v2");
  EXPECT_EQ(b.shape.size(), 30000u);
  EXPECT_EQ(b.to_doubles(), std::vector<double>{42.0});
}

TEST(Npy, ReadsVersions2And3) {
  const std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
  for (int major : {1, 2, 3}) {
    const array a = parse_npy(
        npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data, major),
        cat({"v", std::to_string(major)}));
    EXPECT_EQ(a.to_doubles(), (std::vector<double>{1.0, 2.0})) << major;
  }
  // Format 3.0 is UTF-8 (only structured dtypes' field names need it); messages escape it.
  EXPECT_PEV_ERROR(
      parse_npy(npy_file("{'descr': '\xc3\xa9', 'fortran_order': False, 'shape': (2,), }", data, 3),
                "v3"),
      "header field 'descr' is '\\xc3\\xa9', which is not supported");
}

// Header spellings numpy's ast.literal_eval accepts and writers produce.
TEST(Npy, ParsesHeaderVariants) {
  const std::string four_bytes("\x00\x00\x80\x3f", 4);
  struct variant {
    const char* dict;
    std::vector<std::int64_t> shape;
  };
  const variant variants[] = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", {1}},
      {"{'descr':'<f4','fortran_order':False,'shape':(1,)}", {1}},
      {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (1,)}", {1}},
      {"{'shape': (1, ), 'fortran_order': False, 'descr': '<f4'}", {1}},
      {"  {\t'descr' : '<f4' ,\n 'fortran_order' : False , 'shape' : ( 1 , 1 , ) , }", {1, 1}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1)}", {1, 1, 1}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1L,), }", {1}},  // Python 2, format 1.0
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ((1),), }", {1}},
  };
  for (const auto& v : variants) {
    const array a = parse_npy(npy_file(v.dict, four_bytes), "variant");
    EXPECT_EQ(a.shape, v.shape) << v.dict;
    EXPECT_EQ(a.to_doubles()[0], 1.0) << v.dict;
  }
  // No padding or final newline at all.
  const std::string bare = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}";
  const array b = parse_npy(
      cat({v1_magic, le16(static_cast<std::uint16_t>(bare.size())), bare, four_bytes}), "bare");
  EXPECT_EQ(b.elements(), 1u);
  // A 0-d array.
  EXPECT_EQ(parse_npy(npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': ()}",
                               std::string("\x07\x00\x00\x00", 4)),
                      "scalar")
                .to_int64(),
            std::vector<std::int64_t>{7});
}

// ---- malformed files ----

struct bad_npy {
  const char* name;
  std::string bytes;
  const char* message;
  bool u2_is_bf16 = false;
};

std::string header(std::string_view descr, std::string_view shape,
                   std::string_view fortran = "False") {
  return cat({"{'descr': ", descr, ", 'fortran_order': ", fortran, ", 'shape': ", shape, ", }"});
}

std::vector<bad_npy> bad_npy_cases() {
  const std::string f4x2("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
  std::string deep = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': ";
  deep.append(100, '[').append(100, ']').append("}");
  return {
      {"Empty", "", "not an npy file"},
      {"BadMagic", "\x93NUMPX\x01\x00\x00\x00",
       "not an npy file (it does not start with the magic"},
      {"PngMagic", "\x89PNG\r\n\x1a\n\x00\x00\x00\x00", "not an npy file"},
      {"TruncatedAfterMagic", "\x93NUMPY", "no version bytes"},
      {"Version4", cat({std::string("\x93NUMPY\x04\x00", 8), le32(0)}),
       "format version 4.0 is not supported"},
      {"Version1Minor1", cat({std::string("\x93NUMPY\x01\x01", 8), le16(0)}), "format version 1.1"},
      {"TruncatedLengthField", std::string("\x93NUMPY\x01\x00\x10", 9), "header length field"},
      {"HeaderLengthBeyondFile", cat({v1_magic, le16(1000), "{'descr': '<f4'}"}),
       "header length 1000 runs past the end of the file"},
      {"V2HeaderLengthBeyondFile",
       cat({std::string("\x93NUMPY\x02\x00", 8), le32(0xFFFFFFFF), "{}"}),
       "header length 4294967295 runs past the end of the file"},
      {"HeaderNotADict", npy_file("[1, 2]", ""), "header is a list"},
      {"HeaderIsAString", npy_file("'descr'", ""), "header is a string"},
      {"UnterminatedString", npy_file("{'descr: '<f4'}", ""), "not a valid Python dict literal"},
      {"UnbalancedBraces", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", f4x2),
       "expected ',' or '}'"},
      {"TextAfterTheDict", npy_file(cat({header("'<f4'", "(2,)"), " x"}), f4x2),
       "unexpected text after the dict"},
      {"FunctionCall",
       npy_file("{'descr': dtype('<f4'), 'fortran_order': False, 'shape': (2,)}", f4x2),
       "unexpected name 'dtype'"},
      {"MissingShape", npy_file("{'descr': '<f4', 'fortran_order': False}", f4x2),
       "header lacks the key 'shape'"},
      {"ExtraKey",
       npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", f4x2),
       "unexpected header key 'extra'"},
      {"DuplicateKey",
       npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", f4x2),
       "duplicate header key 'descr'"},
      {"NonStringKey", npy_file("{1: '<f4', 'fortran_order': False, 'shape': (2,)}", f4x2),
       "header key 1 is not a string"},
      {"FortranOrder", npy_file(header("'<f4'", "(2,)", "True"), f4x2), "'fortran_order' is True"},
      {"FortranOrderNotBool", npy_file(header("'<f4'", "(2,)", "0"), f4x2),
       "expected True or False"},
      {"BigEndian", npy_file(header("'>f4'", "(2,)"), f4x2), "'>f4', a big-endian dtype"},
      {"ObjectDtype", npy_file(header("'|O'", "(1,)"), "12345678"), "object arrays"},
      {"StructuredDtype", npy_file(header("[('a', '<f4'), ('b', '<f4')]", "(1,)"), f4x2),
       "structured dtype"},
      {"VoidDtype", npy_file(header("'|V8'", "(1,)"), f4x2),
       "void/structured dtypes are not supported"},
      {"ComplexDtype", npy_file(header("'<c8'", "(1,)"), f4x2), "'<c8', which is not supported"},
      {"UnsignedIsNotBf16ByDefault", npy_file(header("'<u2'", "(4,)"), f4x2), "'<u2' (uint16)"},
      {"Uint32EvenForBf16", npy_file(header("'<u4'", "(2,)"), f4x2),
       "'<u4', which is not supported", true},
      {"PipeOrderOnMultiByte", npy_file(header("'|f8'", "(1,)"), f4x2),
       "only valid for 1-byte dtypes"},
      {"DescrNotAString", npy_file(header("5", "(2,)"), f4x2),
       "expected a dtype string such as '<f4'"},
      {"ShapeIsAList", npy_file(header("'<f4'", "[2]"), f4x2), "'shape' is a list"},
      {"ShapeIsAnInteger", npy_file(header("'<f4'", "(2)"), f4x2), "'shape' is an integer"},
      {"NegativeDimension", npy_file(header("'<f4'", "(-2,)"), f4x2), "entry 0 (-2) is negative"},
      {"FloatDimension", npy_file(header("'<f4'", "(2, 2.5)"), f4x2), "entry 1 (2.5) is a float"},
      {"DimensionBeyondInt64", npy_file(header("'<f4'", "(99999999999999999999,)"), f4x2),
       "outside the int64 range"},
      {"ShapeProductOverflows", npy_file(header("'<f4'", "(4294967296, 4294967296)"), f4x2),
       "has more elements than fit in 64 bits"},
      {"ByteCountOverflows", npy_file(header("'<f8'", "(4611686018427387904,)"), f4x2),
       "needs more than 2^64 bytes"},
      {"TerabytesClaimed", npy_file(header("'<f8'", "(1000000000000,)"), f4x2),
       "needs 8000000000000 bytes of data but the file holds 8"},
      {"MissingBytes", npy_file(header("'<f4'", "(3,)"), f4x2),
       "needs 12 bytes of data but the file holds 8"},
      {"TrailingBytes", npy_file(header("'<f4'", "(1,)"), f4x2), "4 trailing bytes"},
      {"NestingBomb", npy_file(deep, f4x2), "nesting too deep"},
      {"InvalidUtf8InVersion3", npy_file(cat({header("'<f4'", "(2,)"), "\xff"}), f4x2, 3),
       "not valid UTF-8"},
  };
}

void PrintTo(const bad_npy& c, std::ostream* os) { *os << c.name; }

class NpyMalformed : public testing::TestWithParam<bad_npy> {};

TEST_P(NpyMalformed, IsRefusedWithAMessage) {
  const bad_npy& c = GetParam();
  const auto file = scratch_dir() / "bad.npy";
  write_bytes(file, c.bytes);
  EXPECT_PEV_ERROR(read_npy(file, c.u2_is_bf16), c.message);
  // The message names the file.
  EXPECT_PEV_ERROR(read_npy(file, c.u2_is_bf16), cat({"npy file '", file.string(), "'"}));
  EXPECT_PEV_ERROR(parse_npy(c.bytes, "in-memory", c.u2_is_bf16), c.message);
}

INSTANTIATE_TEST_SUITE_P(Cases, NpyMalformed, testing::ValuesIn(bad_npy_cases()),
                         [](const testing::TestParamInfo<bad_npy>& info) {
                           return info.param.name;
                         });

TEST(NpyMalformedAllocation, TerabyteShapeIsRefusedWithoutAllocating) {
  const auto file = scratch_dir() / "huge.npy";
  write_bytes(file, npy_file(header("'<f8'", "(1000000, 1000000)"), std::string(64, '\0')));
  test::allocation_watch watch;
  EXPECT_PEV_ERROR(read_npy(file), "needs 8000000000000 bytes");
  EXPECT_LT(watch.largest(), std::size_t{1} << 20);
}

TEST(NpyMalformedAllocation, HugeHeaderLengthIsRefusedWithoutAllocating) {
  const auto file = scratch_dir() / "huge-header.npy";
  write_bytes(file, cat({std::string("\x93NUMPY\x03\x00", 8), le32(0xFFFFFFF0), "{}"}));
  test::allocation_watch watch;
  EXPECT_PEV_ERROR(read_npy(file), "runs past the end of the file");
  EXPECT_LT(watch.largest(), std::size_t{1} << 20);
}

// Damaged files are refused with pev::error or, where the damage left a valid file, read
// consistently; never another exception, a crash or a huge allocation.
TEST(NpyMutated, FilesOnlyThrowPevError) {
  const unsigned seed = 20240611;
  SCOPED_TRACE(cat({"seed ", std::to_string(seed)}));
  std::vector<std::string> originals = {
      npy_bytes(array::from_floats({2, 3}, {1, 2, 3, 4, 5, 6})),
      npy_bytes(array::from_int64({}, {5})),
      npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\1'),
               3)};
  int refused = 0, read = 0;
  for (std::size_t k = 0; k < originals.size(); ++k) {
    for (const std::string& m :
         test::mutations(originals[k], 128, 3000, seed + static_cast<unsigned>(k))) {
      test::allocation_watch watch;
      try {
        const array a = parse_npy(m, "mutant", true);
        a.check("mutant");
        ++read;
      } catch (const pev::error&) {
        ++refused;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "unexpected exception " << e.what() << " for \"" << m << "\"";
      }
      EXPECT_LE(watch.largest(), m.size() + 4096);
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(read, 0);
}

TEST(Npy, WriteRefusesInconsistentArrays) {
  const auto file = scratch_dir() / "x.npy";
  array a = array::from_floats({2}, {1.0f, 2.0f});
  a.shape = {3};
  EXPECT_PEV_ERROR(write_npy(file, a), "needs 12 bytes but holds 8");
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(Npy, MissingFileNamesIt) {
  const auto file = scratch_dir() / "absent.npy";
  EXPECT_PEV_ERROR(read_npy(file),
                   cat({"cannot read '", file.string(), "': No such file or directory"}));
}

}  // namespace
}  // namespace pev::io

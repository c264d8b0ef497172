// Interoperability with the real numpy, when a python3 with numpy is installed (skipped otherwise):
// pev reads the files numpy writes (and refuses the ones it should), and numpy loads what pev
// writes and re-saves it byte for byte.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "pev/io/npy.h"

namespace pev::io {
namespace {

using test::scratch_dir;
using test::write_bytes;

TEST(NpyNumpy, ReadsWhatNumpyWrites) {
  const std::string python = test::python_with_numpy();
  if (python.empty()) GTEST_SKIP() << "no python3 with numpy";
  const auto dir = scratch_dir();
  std::string output;
  ASSERT_EQ(test::run_python(python, dir, R"(
import numpy as np
from numpy.lib import format as fmt
np.save('f8.npy', np.array([0.1, -2.5, 1e-310], dtype='<f8'))
np.save('f4.npy', np.arange(6, dtype='<f4').reshape(2, 3) / np.float32(3))
np.save('f2.npy', np.array([1, 65504, 6e-8, -0.0], dtype='<f2'))
np.save('i4.npy', np.array([[1, -2], [3, -2**31]], dtype='<i4'))
np.save('i8.npy', np.array(2**62 + 1, dtype='<i8'))
np.save('u2.npy', np.array([0x3f80, 0x4049], dtype='<u2'))
np.save('empty.npy', np.zeros((0, 3), dtype='<f4'))
for v in [(1, 0), (2, 0), (3, 0)]:
    with open('v%d.npy' % v[0], 'wb') as f:
        fmt.write_array(f, np.array([1.5, 2.5]), version=v)
np.save('fortran.npy', np.asfortranarray(np.arange(6.0).reshape(2, 3)))
np.save('big.npy', np.array([1, 2], dtype='>f4'))
np.save('bool.npy', np.array([True, False]))
np.save('obj.npy', np.array([1, 'a'], dtype=object), allow_pickle=True)
np.save('rec.npy', np.zeros(2, dtype=[('a', '<f4'), ('b', '<i4')]))
np.save('c8.npy', np.zeros(2, dtype='<c8'))
)",
                             output),
            0)
      << output;

  EXPECT_EQ(read_npy(dir / "f8.npy").to_doubles(), (std::vector<double>{0.1, -2.5, 1e-310}));
  const array f4 = read_npy(dir / "f4.npy");
  EXPECT_EQ(f4.shape, (std::vector<std::int64_t>{2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(f4.to_doubles()[i], static_cast<double>(static_cast<float>(i) / 3.0f));
  const auto f2 = read_npy(dir / "f2.npy").to_doubles();
  EXPECT_EQ(f2, (std::vector<double>{1.0, 65504.0, std::ldexp(1.0, -24), -0.0}));
  EXPECT_TRUE(std::signbit(f2[3]));
  EXPECT_EQ(read_npy(dir / "i4.npy").to_int64(),
            (std::vector<std::int64_t>{1, -2, 3, -2147483648LL}));
  const array i8 = read_npy(dir / "i8.npy");
  EXPECT_TRUE(i8.shape.empty());
  EXPECT_EQ(i8.to_int64(), std::vector<std::int64_t>{(std::int64_t{1} << 62) + 1});
  EXPECT_EQ(read_npy(dir / "u2.npy", true).to_doubles(), (std::vector<double>{1.0, 3.140625}));
  EXPECT_PEV_ERROR(read_npy(dir / "u2.npy"), "'<u2'");
  const array empty = read_npy(dir / "empty.npy");
  EXPECT_EQ(empty.shape, (std::vector<std::int64_t>{0, 3}));
  EXPECT_TRUE(empty.data.empty());
  for (const char* v : {"v1.npy", "v2.npy", "v3.npy"}) {
    EXPECT_EQ(read_npy(dir / v).to_doubles(), (std::vector<double>{1.5, 2.5})) << v;
  }
  EXPECT_PEV_ERROR(read_npy(dir / "fortran.npy"), "'fortran_order' is True");
  EXPECT_PEV_ERROR(read_npy(dir / "big.npy"), "big-endian");
  EXPECT_PEV_ERROR(read_npy(dir / "bool.npy"), "'|b1', which is not supported");
  EXPECT_PEV_ERROR(read_npy(dir / "obj.npy"), "object arrays");
  EXPECT_PEV_ERROR(read_npy(dir / "rec.npy"), "structured dtype");
  EXPECT_PEV_ERROR(read_npy(dir / "c8.npy"), "'<c8', which is not supported");
}

TEST(NpyNumpy, NumpyLoadsAndResavesWhatPevWritesByteForByte) {
  const std::string python = test::python_with_numpy();
  if (python.empty()) GTEST_SKIP() << "no python3 with numpy";
  const auto dir = scratch_dir();
  write_npy(dir / "f8.npy", array::from_doubles({2, 2}, {0.1, -0.0, 1e308, 5e-324}));
  write_npy(dir / "f4.npy", array::from_floats({3}, {1.0f, -2.5f, 1e-45f}));
  write_npy(dir / "f2.npy", array::from_bits16(dtype::fp16, {2, 1}, {0x3C00, 0x0001}));
  write_npy(dir / "bf16.npy", array::from_bits16(dtype::bf16, {2}, {0x3F80, 0x4049}));
  write_npy(dir / "i4.npy", array::from_int32({}, {-7}));
  write_npy(dir / "i8.npy", array::from_int64({1, 1, 3}, {1, -1, std::int64_t{1} << 62}));
  write_npy(dir / "empty.npy", array::from_floats({5, 0}, {}));
  array wide;
  wide.type = dtype::fp64;
  wide.shape = {0, 1, 1, 1, 1, 1, 1, 1, 100000000000000000};
  write_npy(dir / "aligned.npy", wide);
  std::string output;
  EXPECT_EQ(test::run_python(python, dir, R"(
import io, sys
import numpy as np
expected = {
    'f8.npy': np.array([[0.1, -0.0], [1e308, 5e-324]]),
    'f4.npy': np.array([1.0, -2.5, 1e-45], dtype='<f4'),
    'f2.npy': np.array([[1.0], [2.0**-24]], dtype='<f2'),
    'bf16.npy': np.array([0x3f80, 0x4049], dtype='<u2'),
    'i4.npy': np.array(-7, dtype='<i4'),
    'i8.npy': np.array([[[1, -1, 2**62]]], dtype='<i8'),
    'empty.npy': np.zeros((5, 0), dtype='<f4'),
    'aligned.npy': np.zeros((0, 1, 1, 1, 1, 1, 1, 1, 10**17), dtype='<f8'),
}
bad = 0
for name, want in expected.items():
    got = np.load(name)
    raw = open(name, 'rb').read()
    again = io.BytesIO()
    np.save(again, got)
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
        print(name, 'differs:', got.dtype, got.shape, got); bad += 1
    if again.getvalue() != raw:
        print(name, 'is not what np.save writes'); bad += 1
sys.exit(1 if bad else 0)
)",
                             output),
            0)
      << output;
}

}  // namespace
}  // namespace pev::io

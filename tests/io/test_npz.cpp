// .npz archives (pev/io/npz.h): what numpy.savez and savez_compressed write is read (stored,
// deflated, zip64 extra fields, complex members as (real, imag) pairs when asked), numpy loads
// what pev writes, and malformed archives are refused naming the file and the member.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "io_test_util.h"
#include "pev/io/npz.h"

namespace pev::io {
namespace {

using test::scratch_dir;

std::vector<npz_member> sample() {
  return {{"cos", array::from_floats({2, 3}, {1, 0.5f, -0.25f, 0, 1e-30f, 3})},
          {"positions", array::from_int64({2}, {0, 70000})},
          {"bits", array::from_bits16(dtype::bf16, {2}, {0x3F80, 0x4049})}};
}

TEST(Npz, RoundTripStoredAndDeflated) {
  for (const bool compress : {false, true}) {
    const std::string bytes = npz_bytes(sample(), compress);
    const auto back = parse_npz(bytes, "mem", npy_options{/*u2_is_bf16=*/true, false});
    ASSERT_EQ(back.size(), 3u);
    for (std::size_t i = 0; i < back.size(); ++i) {
      EXPECT_EQ(back[i].name, sample()[i].name);
      EXPECT_EQ(back[i].a.type, sample()[i].a.type);
      EXPECT_EQ(back[i].a.shape, sample()[i].a.shape);
      EXPECT_EQ(back[i].a.data, sample()[i].a.data);
    }
  }
  // Deflated members of repetitive data are smaller than stored ones.
  std::vector<npz_member> zeros = {{"z", array::from_floats({4096}, std::vector<float>(4096))}};
  EXPECT_LT(npz_bytes(zeros, true).size() * 10, npz_bytes(zeros, false).size());
}

TEST(Npz, MalformedArchivesAreRefused) {
  const std::string good = npz_bytes(sample(), true);
  EXPECT_PEV_ERROR(parse_npz("PK", "short.npz"), "short.npz");
  EXPECT_PEV_ERROR(parse_npz(good.substr(0, good.size() - 9), "cut.npz"), "not a zip archive");
  // A flipped byte in the first member's deflated data: corrupt deflate data or a CRC mismatch.
  std::string bad = good;
  bad[30 + 7 + 20] = static_cast<char>(bad[30 + 7 + 20] ^ 0x55);
  EXPECT_PEV_ERROR(parse_npz(bad, "flip.npz"), "member 'cos.npy'");
  // A deflated member declaring more than deflate can expand to (1032:1) is refused before its
  // buffer is allocated.
  {
    const std::string small = npz_bytes({{"z", array::from_floats({4}, {0, 0, 0, 0})}}, true);
    std::string claim = small;
    const std::size_t cd = claim.find(test::le32(0x02014b50));  // central directory record
    ASSERT_NE(cd, std::string::npos);
    const std::string big = test::le32(std::uint32_t{1} << 29);
    claim.replace(cd + 24, 4, big);  // uncompressed size: 512 MiB
    claim.replace(22, 4, big);       // and in the local header
    test::allocation_watch watch;
    EXPECT_PEV_ERROR(parse_npz(claim, "bomb.npz"), "more than deflate can produce");
    EXPECT_LT(watch.largest(), std::size_t{1} << 20);
  }
  // A member that is not an .npy file, and a key given twice.
  std::string renamed = npz_bytes({{"cos", array::from_floats({1}, {1})}});
  for (std::size_t at = renamed.find("cos.npy"); at != std::string::npos;
       at = renamed.find("cos.npy", at + 1)) {
    renamed.replace(at, 7, "cos.txt");
  }
  EXPECT_PEV_ERROR(parse_npz(renamed, "txt.npz"), "is not an .npy array");
  EXPECT_THROW(
      npz_bytes({{"a", array::from_floats({1}, {1})}, {"a", array::from_floats({1}, {2})}}),
      pev::error);
}

// CRC-32 (the zip polynomial, bit by bit): to forge a member whose CRC is right.
std::uint32_t crc32_of(std::string_view bytes) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (const char ch : bytes) {
    c ^= static_cast<unsigned char>(ch);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

TEST(Npz, AStoredMembersCrcIsCheckedBeforeItsNpyHeaderIsBlamed) {
  // A stored member is read in place and its CRC checked after (docs/design.md §6.1); the errors
  // stay those of a CRC checked first: a changed byte anywhere in the member is a CRC mismatch,
  // and only a member whose CRC matches its (malformed) npy header reports the header.
  const std::vector<npz_member> one = {{"cos", array::from_floats({2, 3}, {1, 2, 3, 4, 5, 6})}};
  const std::string good = npz_bytes(one, false);
  const std::size_t npy = good.find("\x93NUMPY");
  const std::size_t descr = good.find("<f4");
  ASSERT_NE(npy, std::string::npos);
  ASSERT_NE(descr, std::string::npos);
  std::string header = good, data = good;
  header[descr + 2] = '8';                      // '<f8': the shape no longer fits the data
  data[good.size() - 22 - 46 - 7 - 1] ^= 0x01;  // the last data byte (before the directory)
  EXPECT_PEV_ERROR(parse_npz(header, "h.npz"), "CRC-32");
  EXPECT_PEV_ERROR(parse_npz(data, "d.npz"), "CRC-32");
  // The same header change with the CRC made right, in the local header and the directory.
  const std::size_t member_size = good.size() - 22 - (46 + 7) - npy;
  const std::string crc = test::le32(crc32_of(std::string_view(header).substr(npy, member_size)));
  header.replace(14, 4, crc);
  header.replace(header.find(test::le32(0x02014b50)) + 16, 4, crc);
  EXPECT_PEV_ERROR(parse_npz(header, "h.npz"), "needs 48 bytes of data but the file holds 24");
}

TEST(NpzNumpy, ReadsWhatNumpyWritesAndNumpyLoadsWhatPevWrites) {
  const std::string python = test::python_with_numpy();
  if (python.empty()) GTEST_SKIP() << "no python3 with numpy";
  const auto dir = scratch_dir();
  write_npz(dir / "pev.npz", sample(), false);
  write_npz(dir / "pev_c.npz", sample(), true);
  std::string output;
  ASSERT_EQ(test::run_python(python, dir, R"(
import sys
import numpy as np
c = np.array([[1, 0.5, -0.25], [0, 1e-30, 3]], dtype='<f4')
np.savez('stored.npz', cos=c, positions=np.array([0, 70000]))
np.savez_compressed('deflated.npz', cos=c, positions=np.array([0, 70000]))
np.savez('complex.npz', freqs_cis=(c + 1j * c[::-1]).astype('<c8'))
bad = 0
for name in ['pev.npz', 'pev_c.npz']:
    z = np.load(name)
    if sorted(z.files) != ['bits', 'cos', 'positions'] or not np.array_equal(z['cos'], c) \
            or z['positions'].tolist() != [0, 70000] or z['bits'].tolist() != [0x3F80, 0x4049]:
        print(name, 'differs:', dict(z)); bad += 1
sys.exit(1 if bad else 0)
)",
                             output),
            0)
      << output;
  const std::vector<float> c = {1, 0.5f, -0.25f, 0, 1e-30f, 3};
  for (const char* f : {"stored.npz", "deflated.npz"}) {
    const auto m = read_npz(dir / f);
    ASSERT_EQ(m.size(), 2u) << f;
    EXPECT_EQ(m[0].name, "cos");
    EXPECT_EQ(m[0].a.shape, (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(m[0].a.data, array::from_floats({2, 3}, c).data) << f;
    EXPECT_EQ(m[1].a.to_int64(), (std::vector<std::int64_t>{0, 70000})) << f;
  }
  EXPECT_PEV_ERROR(read_npz(dir / "complex.npz"), "'<c8'");
  const auto z = read_npz(dir / "complex.npz", npy_options{false, /*complex_as_pairs=*/true});
  ASSERT_EQ(z.size(), 1u);
  EXPECT_TRUE(z[0].a.complex);
  EXPECT_EQ(z[0].a.shape, (std::vector<std::int64_t>{2, 3, 2}));
  const auto v = z[0].a.to_doubles();
  EXPECT_EQ(v[0], 1.0);                           // real of (0, 0)
  EXPECT_EQ(v[1], 0.0);                           // imag of (0, 0) = c[1][0]
  EXPECT_EQ(v[11], static_cast<double>(-0.25f));  // imag of (1, 2) = c[0][2]
}

}  // namespace
}  // namespace pev::io

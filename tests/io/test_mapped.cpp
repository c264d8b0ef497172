// Large tensors read as views of the mapped file (io::map_min_bytes, docs/design.md §6.1): the
// mapped path is taken (the data lies in a mapping of the file, per /proc/self/maps), reads the
// same arrays as the copying path (parse_* of the same bytes), gives the same errors for truncated
// files, falls back to a copy where a view cannot be (misaligned data), and a file that shrinks
// under a mapping ends the process with exit status 2 naming it. byte_buffer's value semantics:
// a view is never written, a copy of an array never shares writes.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "io_test_util.h"
#include "pev/io/byte_buffer.h"
#include "pev/io/file.h"
#include "pev/io/npy.h"
#include "pev/io/npz.h"
#include "pev/io/safetensors.h"

namespace pev::io {
namespace {

using test::read_bytes;
using test::scratch_dir;
using test::write_bytes;

// The file mapped at `p` in this process (/proc/self/maps), or "" when `p` is in no file mapping.
std::string mapped_file_at(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  while (std::getline(maps, line)) {
    unsigned long long begin = 0, end = 0, offset = 0, inode = 0;
    char perms[8] = {}, dev[16] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %15s %llu %n", &begin, &end, perms, &offset,
                    dev, &inode, &path_at) < 6) {
      continue;
    }
    if (at >= begin && at < end) return inode == 0 ? std::string() : line.substr(path_at);
  }
  return {};
}

bool mapped_from(const array& a, const std::filesystem::path& file) {
  return a.data.is_view() && mapped_file_at(a.data.data()) == file.string();
}

// n f32 values, all different: what a large read must give back.
std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f - 3.25f;
  return v;
}

// The number of f32 values of a tensor just above the mapping threshold.
constexpr std::size_t kLarge = map_min_bytes / 4 + 5;

TEST(MappedRead, SafetensorsLargeTensorIsAViewOfTheFileEqualToTheCopyingRead) {
  const auto file = scratch_dir() / "t.safetensors";
  tensor_file t;
  t.add("small", array::from_floats({3}, {1.0f, 2.0f, 3.0f}));
  t.add("big", array::from_floats({static_cast<std::int64_t>(kLarge)}, ramp(kLarge)));
  t.add("edge", array::from_floats({static_cast<std::int64_t>(map_min_bytes / 4)},
                                   ramp(map_min_bytes / 4)));
  t.add("below", array::from_floats({static_cast<std::int64_t>(map_min_bytes / 4 - 1)},
                                    ramp(map_min_bytes / 4 - 1)));
  write_safetensors(file, t);
  const tensor_file mapped = read_safetensors(file);
  const tensor_file copied = parse_safetensors(read_bytes(file), file.string());
  EXPECT_TRUE(mapped_from(mapped.at("big"), file));
  EXPECT_TRUE(mapped_from(mapped.at("edge"), file));  // exactly map_min_bytes
  EXPECT_FALSE(mapped.at("below").data.is_view());    // one value less: copied
  EXPECT_FALSE(mapped.at("small").data.is_view());
  for (const std::string& name : t.names) {
    EXPECT_EQ(mapped_file_at(copied.at(name).data.data()), "") << name;
    EXPECT_EQ(mapped.at(name).data, copied.at(name).data) << name;
    EXPECT_EQ(mapped.at(name).data, t.at(name).data) << name;
    EXPECT_EQ(mapped.at(name).shape, t.at(name).shape) << name;
  }
  EXPECT_EQ(mapped.names, t.names);
  EXPECT_EQ(mapped.at("big").to_doubles(), copied.at("big").to_doubles());
}

TEST(MappedRead, NpyLargeArrayIsAViewOfTheFileEqualToTheCopyingRead) {
  const auto dir = scratch_dir();
  for (const dtype type : {dtype::fp64, dtype::fp32, dtype::bf16}) {
    const auto file = dir / "a.npy";
    std::vector<std::uint16_t> bits(kLarge * 2);
    for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<std::uint16_t>(i * 7919);
    std::vector<double> values(kLarge - 4);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i) / 3;
    const array want =
        type == dtype::fp64
            ? array::from_doubles({static_cast<std::int64_t>(values.size() / 5), 5}, values)
        : type == dtype::fp32
            ? array::from_floats({static_cast<std::int64_t>(kLarge)}, ramp(kLarge))
            : array::from_bits16(dtype::bf16, {static_cast<std::int64_t>(bits.size())}, bits);
    write_npy(file, want);
    const array mapped = read_npy(file, /*u2_is_bf16=*/true);
    const array copied = parse_npy(read_bytes(file), file.string(), /*u2_is_bf16=*/true);
    EXPECT_TRUE(mapped_from(mapped, file)) << to_string(type);
    EXPECT_EQ(mapped_file_at(copied.data.data()), "");
    EXPECT_EQ(mapped.data, copied.data) << to_string(type);
    EXPECT_EQ(mapped.data, want.data) << to_string(type);
    EXPECT_EQ(mapped.shape, want.shape);
    EXPECT_EQ(mapped.type, want.type);
  }
}

// Where the data of the only member's npy array starts in an archive's bytes.
std::size_t npz_data_offset(const std::string& bytes) {
  const std::size_t npy = bytes.find("\x93NUMPY");
  const auto header =
      static_cast<unsigned char>(bytes[npy + 8]) + 256 * static_cast<unsigned char>(bytes[npy + 9]);
  return npy + 10 + header;
}

TEST(MappedRead, NpzLargeMembersAreTheMappedFileOrTheInflatedBytes) {
  const auto dir = scratch_dir();
  const array big = array::from_floats({static_cast<std::int64_t>(kLarge)}, ramp(kLarge));
  // Stored: the array is a view of the mapped file where its data is 4-aligned in the file (the
  // key's length decides it), else read into a block of its own (numpy's members are not aligned).
  // Deflated: a view of the inflated member. Never the member's bytes copied first.
  for (const std::string key : {"ab", "big"}) {
    for (const bool compress : {false, true}) {
      const auto file = dir / (key + (compress ? "_c.npz" : "_s.npz"));
      write_npz(file, {{key, big}}, compress);
      const auto mapped = read_npz(file);
      const auto copied = parse_npz(read_bytes(file), file.string());
      ASSERT_EQ(mapped.size(), 1u);
      ASSERT_EQ(copied.size(), 1u);
      EXPECT_EQ(mapped[0].name, key);
      EXPECT_EQ(mapped[0].a.data, big.data) << file;
      EXPECT_EQ(mapped[0].a.data, copied[0].a.data) << file;
      EXPECT_EQ(mapped[0].a.shape, big.shape);
      EXPECT_TRUE(mapped[0].a.data.is_view()) << file;
      if (compress) {
        EXPECT_EQ(mapped_file_at(mapped[0].a.data.data()), "") << file;
      } else {
        const bool aligned = npz_data_offset(read_bytes(file)) % 4 == 0;
        EXPECT_EQ(aligned, key == "ab") << "the test's two stored cases need one of each";
        EXPECT_EQ(mapped_from(mapped[0].a, file), aligned) << file;
      }
    }
  }
}

TEST(MappedRead, MisalignedLargeTensorIsCopiedWithTheSameValues) {
  // An F16 tensor of 3 values first: the F32 tensor after it starts 6 bytes into the data
  // section, not on a multiple of 4, so it is not viewed in place.
  const auto file = scratch_dir() / "m.safetensors";
  tensor_file t;
  t.add("odd", array::from_bits16(dtype::fp16, {3}, {0x3c00, 0x4000, 0x4200}));
  t.add("big", array::from_floats({static_cast<std::int64_t>(kLarge)}, ramp(kLarge)));
  write_safetensors(file, t);
  const tensor_file r = read_safetensors(file);
  EXPECT_EQ(mapped_file_at(r.at("big").data.data()), "");
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r.at("big").data.data()) % 4, 0u);
  EXPECT_EQ(r.at("big").data, t.at("big").data);
  EXPECT_EQ(r.at("odd").data, t.at("odd").data);
}

TEST(MappedRead, ALargeArrayFromAPipeSharesThePipesBytes) {
  const auto fifo = scratch_dir() / "fifo.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const array want = array::from_floats({static_cast<std::int64_t>(kLarge)}, ramp(kLarge));
  const std::string bytes = npy_bytes(want);
  std::thread writer([&] {
    std::ofstream out(fifo, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
  const array a = read_npy(fifo);
  writer.join();
  EXPECT_TRUE(a.data.is_view());
  EXPECT_EQ(mapped_file_at(a.data.data()), "");
  EXPECT_EQ(a.data, want.data);
}

TEST(MappedRead, TruncatedLargeFilesGiveTheCopyingReadsErrors) {
  const auto dir = scratch_dir();
  const array big = array::from_floats({static_cast<std::int64_t>(kLarge)}, ramp(kLarge));
  const auto message = [](auto&& read) {
    try {
      read();
    } catch (const pev::error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  {
    const auto file = dir / "t.npy";
    const std::string whole = npy_bytes(big);
    write_bytes(file, whole.substr(0, whole.size() - 4));
    const std::string from_file = message([&] { (void)read_npy(file); });
    EXPECT_EQ(from_file,
              message([&] { (void)parse_npy(whole.substr(0, whole.size() - 4), file.string()); }));
    EXPECT_NE(
        from_file.find(test::cat({"npy file '", file.string(), "': shape [", std::to_string(kLarge),
                                  "] of '<f4' needs ", std::to_string(kLarge * 4),
                                  " bytes of data but the file holds ",
                                  std::to_string(kLarge * 4 - 4), " after the header"})),
        std::string::npos)
        << from_file;
  }
  {
    const auto file = dir / "t.safetensors";
    tensor_file t;
    t.add("big", big);
    const std::string whole = safetensors_bytes(t);
    write_bytes(file, whole.substr(0, whole.size() - 4));
    const std::string from_file = message([&] { (void)read_safetensors(file); });
    EXPECT_EQ(from_file, message([&] {
                (void)parse_safetensors(whole.substr(0, whole.size() - 4), file.string());
              }));
    EXPECT_NE(from_file.find("runs past the end of the data section"), std::string::npos)
        << from_file;
  }
}

TEST(MappedRead, WritingAReadArrayCopiesItAndLeavesTheFileAndOtherCopiesAlone) {
  const auto file = scratch_dir() / "w.npy";
  const array want = array::from_floats({static_cast<std::int64_t>(kLarge)}, ramp(kLarge));
  write_npy(file, want);
  array a = read_npy(file);
  const array b = a;  // shares the view
  ASSERT_TRUE(mapped_from(a, file));
  EXPECT_EQ(b.data.data(), a.data.data());
  a.data.mutable_data()[0] = std::byte{0x55};
  EXPECT_FALSE(a.data.is_view());
  EXPECT_TRUE(mapped_from(b, file));
  EXPECT_EQ(b.data, want.data);
  EXPECT_EQ(std::to_integer<int>(a.data[0]), 0x55);
  EXPECT_EQ(read_bytes(file), npy_bytes(want));
}

TEST(MappedReadDeathTest, AFileThatShrinksUnderItsMappingEndsPevNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto file = scratch_dir() / "shrinks.npy";
  write_npy(file, array::from_floats({static_cast<std::int64_t>(kLarge)}, ramp(kLarge)));
  EXPECT_EXIT(
      {
        const array a = read_npy(file);
        if (!mapped_from(a, file)) std::_Exit(3);
        ::truncate(file.c_str(), 0);  // another program rewrites the dump in place
        volatile std::byte last = a.data[a.data.size() - 1];
        (void)last;
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(2),
      "pev: error: cannot read '[^']*shrinks\\.npy': the file shrank while being read");
}

TEST(ByteBuffer, OwnedAndViewReadAlikeAndWritesNeverReachAView) {
  const auto owner = std::make_shared<const std::vector<std::byte>>(
      std::vector<std::byte>{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}});
  const byte_buffer view(owner, std::span<const std::byte>(*owner).subspan(1, 2));
  const byte_buffer owned(std::vector<std::byte>{std::byte{2}, std::byte{3}});
  EXPECT_TRUE(view.is_view());
  EXPECT_FALSE(owned.is_view());
  EXPECT_EQ(view, owned);
  EXPECT_EQ(view.data(), owner->data() + 1);
  EXPECT_EQ(view.size(), 2u);

  byte_buffer copy = view;  // shares
  EXPECT_EQ(copy.data(), view.data());
  copy.resize(3);  // copies, then grows with a zero
  EXPECT_FALSE(copy.is_view());
  EXPECT_EQ(copy, byte_buffer(std::vector<std::byte>{std::byte{2}, std::byte{3}, std::byte{0}}));
  EXPECT_EQ(std::to_integer<int>((*owner)[1]), 2);  // the viewed bytes are unchanged

  byte_buffer moved = std::move(copy);
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(moved.size(), 3u);
  const byte_buffer owned_copy = moved;
  EXPECT_NE(owned_copy.data(), moved.data());  // owned bytes are copied, not shared
  EXPECT_EQ(owned_copy, moved);

  const byte_buffer shared = byte_buffer(owned).shared();
  EXPECT_TRUE(shared.is_view());
  const byte_buffer part = shared.slice(1, 1);
  EXPECT_TRUE(part.is_view());
  EXPECT_EQ(part.data(), shared.data() + 1);
  EXPECT_EQ(std::to_integer<int>(part[0]), 3);
  EXPECT_FALSE(owned.slice(0, 1).is_view());
}

}  // namespace
}  // namespace pev::io

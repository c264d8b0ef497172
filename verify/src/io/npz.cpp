#include "pev/io/npz.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/io/file.h"

// The format (PKWARE's APPNOTE.TXT, as Python's zipfile writes it for numpy.savez): each member is
// a local file header (signature 0x04034b50, 30 bytes + name + extra), then its data; after the
// last member, the central directory (one 46-byte record + name + extra + comment per member,
// signature 0x02014b50), then the end-of-central-directory record (0x06054b50, 22 bytes + comment).
// Sizes or offsets that do not fit 32 bits are 0xFFFFFFFF, with the real values in a zip64 extra
// field (id 1), and a zip64 end record (0x06064b50) found through its locator (0x07064b50) just
// before the end record. Python writes a zip64 extra field into every local header of numpy.savez's
// members (force_zip64), so that field is read there too. Compression: 0 stored, 8 deflate (raw,
// zlib windowBits −15).

namespace pev::io {

namespace {

using detail::fail;
using detail::load_le;

constexpr std::uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50,
                        kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr std::uint64_t kEndSize = 22, kLocator64Size = 20, kEnd64Size = 56, kCentralSize = 46,
                        kLocalSize = 30, kMaxComment = 0xFFFF;
// More members than any archive of arrays holds; bounds what the central directory can make us
// allocate (its records are read from a buffer of its declared size, itself within the file).
constexpr std::uint64_t kMaxMembers = std::uint64_t{1} << 20;
// The largest expansion of deflate (zlib's technical notes: 1032:1), with room for tiny streams.
constexpr std::uint64_t kMaxDeflateRatio = 1032, kDeflateSlack = 64;
constexpr std::uint32_t k32 = 0xFFFFFFFFu;

std::string where(std::string_view source) { return fmt::format("npz file '{}'", source); }

std::uint16_t u16(std::string_view s, std::size_t at) {
  return load_le<std::uint16_t>(reinterpret_cast<const std::byte*>(s.data()) + at);
}
std::uint32_t u32(std::string_view s, std::size_t at) {
  return load_le<std::uint32_t>(reinterpret_cast<const std::byte*>(s.data()) + at);
}
std::uint64_t u64(std::string_view s, std::size_t at) {
  return load_le<std::uint64_t>(reinterpret_cast<const std::byte*>(s.data()) + at);
}

struct member_record {
  std::string name;
  std::uint16_t flags = 0, method = 0;
  std::uint32_t crc = 0;
  std::uint64_t compressed = 0, size = 0, offset = 0;
};

// Reads the zip64 extra field (id 1) of `extra`: the 64-bit values of the fields whose 32-bit
// slots hold 0xFFFFFFFF, in the order uncompressed size, compressed size, local header offset.
void read_zip64_extra(std::string_view extra, member_record& m, bool size32, bool compressed32,
                      bool offset32, const std::string& what) {
  std::size_t at = 0;
  while (at + 4 <= extra.size()) {
    const std::uint16_t id = u16(extra, at), len = u16(extra, at + 2);
    if (at + 4 + len > extra.size()) fail("{}: an extra field runs past its record", what);
    if (id == 1) {
      std::string_view f = extra.substr(at + 4, len);
      std::size_t k = 0;
      auto next = [&](std::uint64_t& v) {
        if (k + 8 > f.size()) fail("{}: its zip64 extra field is too short", what);
        v = u64(f, k);
        k += 8;
      };
      if (size32) next(m.size);
      if (compressed32) next(m.compressed);
      if (offset32) next(m.offset);
      return;
    }
    at += 4 + len;
  }
  if (size32 || compressed32 || offset32) {
    fail("{}: a size or offset of 0xFFFFFFFF without a zip64 extra field", what);
  }
}

// Inflates a raw deflate stream into exactly `size` bytes (a buffer not zeroed first, shared by
// the arrays read from it); throws naming `what` for a stream that is corrupt, ends early, or holds
// more (a member whose data exceeds its declared size).
byte_buffer inflate_exact(std::span<const std::byte> in, std::uint64_t size,
                          const std::string& what) {
  const auto n = static_cast<std::size_t>(size);
  std::shared_ptr<std::byte[]> block = std::make_shared_for_overwrite<std::byte[]>(n);
  const std::span<std::byte> out(block.get(), n);
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail("{}: zlib could not start inflating", what);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&z, Z_FINISH);
  // A stream longer than the declared size stops with Z_BUF_ERROR (or Z_OK) and output left over:
  // probe with one more byte of room to tell "exactly size" from "more".
  std::string extra;
  if (rc != Z_STREAM_END && z.avail_out == 0) {
    char probe = 0;
    z.next_out = reinterpret_cast<Bytef*>(&probe);
    z.avail_out = 1;
    rc = inflate(&z, Z_FINISH);
    if (z.avail_out == 0) {
      inflateEnd(&z);
      fail("{}: its compressed data inflate to more than its declared size of {} bytes", what,
           size);
    }
  }
  const std::uint64_t produced = z.total_out, consumed = z.total_in;
  const char* msg = z.msg;
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    fail("{}: corrupt deflate data ({})", what,
         msg ? msg : (rc == Z_BUF_ERROR ? "the stream ends early" : "zlib error"));
  }
  if (produced != size) {
    fail("{}: inflates to {} bytes, its header declares {}", what, produced, size);
  }
  if (consumed != in.size()) {
    fail("{}: {} bytes of compressed data after the end of the deflate stream", what,
         in.size() - consumed);
  }
  return byte_buffer(std::shared_ptr<const void>(std::move(block)), out);
}

std::vector<npz_member> read(const detail::byte_source& src, std::string_view source,
                             const npy_options& o) {
  const std::string w = where(source);
  const std::uint64_t size = src.size();
  if (size < kEndSize) {
    fail("{}: {} bytes, too short for a zip archive (an .npz is what numpy.savez writes)", w, size);
  }
  // The end record: its signature, and a comment that reaches exactly the end of the file.
  const std::uint64_t tail_len = std::min(size, kEndSize + kMaxComment);
  const std::string tail = src.read_string(size - tail_len, static_cast<std::size_t>(tail_len));
  std::optional<std::size_t> found;
  for (std::size_t at = static_cast<std::size_t>(tail_len - kEndSize) + 1; at-- > 0;) {
    if (u32(tail, at) == kEndSig && at + kEndSize + u16(tail, at + 20) == tail_len) {
      found = at;
      break;
    }
  }
  if (!found) {
    fail(
        "{}: not a zip archive (no end-of-central-directory record; an .npz is what numpy.savez "
        "writes)",
        w);
  }
  const std::uint64_t end_at = size - tail_len + *found;
  const std::string_view end = std::string_view(tail).substr(*found, kEndSize);
  if (u16(end, 4) != 0 || u16(end, 6) != 0 || u16(end, 8) != u16(end, 10)) {
    fail("{}: the archive is split across several disks, which is not supported", w);
  }
  std::uint64_t count = u16(end, 10), cd_size = u32(end, 12), cd_at = u32(end, 16);
  std::uint64_t cd_limit = end_at;  // the central directory lies before the end record(s)
  if (count == 0xFFFF || cd_size == k32 || cd_at == k32) {
    if (end_at < kLocator64Size) fail("{}: zip64 sizes but no zip64 end-record locator", w);
    const std::string loc = src.read_string(end_at - kLocator64Size, kLocator64Size);
    if (u32(loc, 0) != kLocator64Sig) fail("{}: zip64 sizes but no zip64 end-record locator", w);
    const std::uint64_t at64 = u64(loc, 8);
    if (u32(loc, 4) != 0 || u32(loc, 16) != 1) {
      fail("{}: the archive is split across several disks, which is not supported", w);
    }
    if (at64 > end_at - kLocator64Size || end_at - kLocator64Size - at64 < kEnd64Size) {
      fail("{}: the zip64 end record at {} lies outside the archive", w, at64);
    }
    const std::string e64 = src.read_string(at64, kEnd64Size);
    if (u32(e64, 0) != kEnd64Sig) fail("{}: no zip64 end record at offset {}", w, at64);
    if (u32(e64, 16) != 0 || u32(e64, 20) != 0 || u64(e64, 24) != u64(e64, 32)) {
      fail("{}: the archive is split across several disks, which is not supported", w);
    }
    count = u64(e64, 32);
    cd_size = u64(e64, 40);
    cd_at = u64(e64, 48);
    cd_limit = at64;
  }
  if (cd_at > cd_limit || cd_size > cd_limit - cd_at) {
    fail("{}: the central directory ([{}, +{}]) runs past its end record at {}", w, cd_at, cd_size,
         cd_limit);
  }
  if (count > kMaxMembers || count * kCentralSize > cd_size) {
    fail("{}: {} members do not fit a central directory of {} bytes", w, count, cd_size);
  }
  const std::string cd = src.read_string(cd_at, static_cast<std::size_t>(cd_size));
  std::vector<member_record> members;
  members.reserve(static_cast<std::size_t>(count));
  std::size_t at = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::string rec = fmt::format("{}: central directory record {}", w, k);
    if (at + kCentralSize > cd.size()) fail("{} runs past the central directory", rec);
    if (u32(cd, at) != kCentralSig) fail("{} has no central-directory signature", rec);
    member_record m;
    m.flags = u16(cd, at + 8);
    m.method = u16(cd, at + 10);
    m.crc = u32(cd, at + 16);
    m.compressed = u32(cd, at + 20);
    m.size = u32(cd, at + 24);
    const std::size_t name_len = u16(cd, at + 28), extra_len = u16(cd, at + 30),
                      comment_len = u16(cd, at + 32);
    m.offset = u32(cd, at + 42);
    if (at + kCentralSize + name_len + extra_len + comment_len > cd.size()) {
      fail("{}: its name, extra field and comment run past the central directory", rec);
    }
    m.name = cd.substr(at + kCentralSize, name_len);
    const std::string what = fmt::format("{}: member '{}'", w, detail::printable(m.name, 80));
    read_zip64_extra(std::string_view(cd).substr(at + kCentralSize + name_len, extra_len), m,
                     m.size == k32, m.compressed == k32, m.offset == k32, what);
    at += kCentralSize + name_len + extra_len + comment_len;
    members.push_back(std::move(m));
  }
  if (at != cd.size()) {
    fail("{}: {} bytes after the last record of the central directory", w, cd.size() - at);
  }

  std::vector<npz_member> out;
  std::set<std::string> keys;
  std::uint64_t total = 0;
  for (const member_record& m : members) {
    const std::string what = fmt::format("{}: member '{}'", w, detail::printable(m.name, 80));
    if (m.flags & 0x41) fail("{} is encrypted, which is not supported", what);
    if (m.method != 0 && m.method != 8) {
      fail("{} uses compression method {}; only stored (0) and deflate (8) are supported", what,
           m.method);
    }
    if (m.name.size() <= 4 || m.name.compare(m.name.size() - 4, 4, ".npy") != 0) {
      fail(
          "{} is not an .npy array (an .npz holds one NAME.npy per array, as numpy.savez writes "
          "it)",
          what);
    }
    const std::string key = m.name.substr(0, m.name.size() - 4);
    if (!keys.insert(key).second) fail("{}: array '{}' is given twice", w, key);
    // Declared sizes are bounded before anything is allocated or read: a stored member's bytes
    // are the archive's own (its sizes must agree, and its data lie within the file, below), so
    // only what deflated members inflate to is held to max_stream_bytes (a trace of several GiB
    // is read from numpy.savez, not numpy.savez_compressed; docs/performance.md §4).
    if (m.method == 8 && (m.size > max_stream_bytes || max_stream_bytes - m.size < total)) {
      fail(
          "{} declares {} bytes; the deflated members of an archive inflate to at most {} bytes "
          "(save a larger one with numpy.savez, not savez_compressed)",
          what, m.size, max_stream_bytes);
    }
    if (m.method == 8) total += m.size;
    // Deflate expands at most 1032:1 (a 258-byte match per 2 bits, plus block headers): a member
    // declaring more than that of its compressed bytes is refused before its buffer is allocated,
    // so that a few bytes cannot claim a gigabyte.
    if (m.method == 8 && m.size > kMaxDeflateRatio * m.compressed + kDeflateSlack) {
      fail("{} declares {} bytes from {} compressed bytes, more than deflate can produce", what,
           m.size, m.compressed);
    }
    if (m.method == 0 && m.compressed != m.size) {
      fail("{} is stored (not compressed) but its sizes differ ({} and {} bytes)", what,
           m.compressed, m.size);
    }
    if (m.offset > cd_at || cd_at - m.offset < kLocalSize) {
      fail("{}: its local header at {} lies outside the members' area [0, {})", what, m.offset,
           cd_at);
    }
    const std::string local = src.read_string(m.offset, kLocalSize);
    if (u32(local, 0) != kLocalSig) fail("{}: no local header at offset {}", what, m.offset);
    if (u16(local, 8) != m.method) {
      fail("{}: its local header says compression method {}, the central directory {}", what,
           u16(local, 8), m.method);
    }
    const std::uint64_t local_name = u16(local, 26), local_extra = u16(local, 28);
    const std::uint64_t data_at = m.offset + kLocalSize + local_name + local_extra;
    if (data_at > cd_at || m.compressed > cd_at - data_at) {
      fail("{}: its data ({} bytes from offset {}) run into the central directory at {}", what,
           m.compressed, data_at, cd_at);
    }
    if (src.read_string(m.offset + kLocalSize, static_cast<std::size_t>(local_name)) != m.name) {
      fail("{}: its local header names another file", what);
    }
    const std::string member = fmt::format("{}:{}", source, m.name);
    const auto check_crc = [&](std::span<const std::byte> head, std::span<const std::byte> rest) {
      uLong crc = crc32(0L, Z_NULL, 0);
      for (const auto part : {head, rest}) {
        // (Not with an empty part: zlib's crc32 of a null buffer is its initial value, 0.)
        if (!part.empty()) {
          crc = crc32_z(crc, reinterpret_cast<const Bytef*>(part.data()), part.size());
        }
      }
      if (crc != m.crc) {
        fail("{}: CRC-32 {:08x} of its data differs from the {:08x} recorded (corrupt archive)",
             what, static_cast<std::uint32_t>(crc), m.crc);
      }
    };
    const auto as_bytes = [](const std::string& s) {
      return std::span<const std::byte>(reinterpret_cast<const std::byte*>(s.data()), s.size());
    };
    if (m.method == 0) {
      // Stored: the array is read from the archive in place (its data mapped when large and
      // aligned in the file, else read into its own block: never the member copied first), then
      // the CRC-32 of the member's bytes is checked: the npy header, then the array's data, which
      // ends the member. A member whose npy header is refused reports a CRC mismatch first, as
      // when the CRC was checked before the header was read.
      const auto in = detail::slice_source(src, data_at, m.compressed);
      array a;
      try {
        a = detail::read_npy_source(*in, member, o);
      } catch (const pev::error&) {
        check_crc(as_bytes(in->read_string(0, static_cast<std::size_t>(m.compressed))), {});
        throw;
      }
      const std::string head =
          in->read_string(0, static_cast<std::size_t>(m.compressed - a.data.size()));
      check_crc(as_bytes(head), a.data.span());
      // The CRC read every page of a mapped member: handed back, they are read again when used
      // (a trace's site at a time), not all held from here on (docs/performance.md §4).
      release_pages(a.data);
      out.push_back({key, std::move(a)});
    } else {
      // Deflated: inflated (from the mapped file when large) once, into a block the member's
      // array then shares.
      const byte_buffer data = src.buffer(data_at, static_cast<std::size_t>(m.compressed), 1);
      byte_buffer bytes = inflate_exact(data.span(), m.size, what);
      check_crc(bytes.span(), {});
      out.push_back(
          {key, detail::read_npy_source(*detail::buffer_source(std::move(bytes)), member, o)});
    }
  }
  return out;
}

void put16(std::string& s, std::uint32_t v) {
  s += static_cast<char>(v & 0xFF);
  s += static_cast<char>((v >> 8) & 0xFF);
}
void put32(std::string& s, std::uint32_t v) {
  put16(s, v & 0xFFFF);
  put16(s, v >> 16);
}

std::string deflate_raw(const std::string& in) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    fail("npz: zlib could not start deflating");
  }
  std::string out(deflateBound(&z, static_cast<uLong>(in.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) fail("npz: zlib could not deflate a member");
  return out;
}

}  // namespace

std::vector<npz_member> parse_npz(std::string_view bytes, std::string_view source,
                                  const npy_options& o) {
  return read(*detail::memory_source(bytes), source, o);
}

std::vector<npz_member> read_npz(const std::filesystem::path& file, const npy_options& o) {
  return read(*detail::file_source(file), file.string(), o);
}

std::string npz_bytes(const std::vector<npz_member>& members, bool compress) {
  std::string body, central;
  std::set<std::string> names;
  constexpr std::uint32_t kDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01, the DOS epoch
  for (const npz_member& m : members) {
    const std::string name = m.name + ".npy";
    if (m.name.empty() || !names.insert(m.name).second) {
      fail("npz: array name '{}' is empty or given twice", m.name);
    }
    const std::string data = npy_bytes(m.a);
    const std::string stored = compress ? deflate_raw(data) : data;
    if (data.size() >= k32 || stored.size() >= k32 || body.size() >= k32 || name.size() > 0xFFFF) {
      fail("npz: member '{}' is too large for a zip archive without zip64", name);
    }
    const auto crc = static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                                      reinterpret_cast<const Bytef*>(data.data()),
                                                      static_cast<uInt>(data.size())));
    const auto offset = static_cast<std::uint32_t>(body.size());
    auto common = [&](std::string& s) {
      put16(s, 20);  // version needed: 2.0
      put16(s, 0);   // flags
      put16(s, compress ? 8 : 0);
      put16(s, 0);  // time
      put16(s, kDate);
      put32(s, crc);
      put32(s, static_cast<std::uint32_t>(stored.size()));
      put32(s, static_cast<std::uint32_t>(data.size()));
      put16(s, static_cast<std::uint32_t>(name.size()));
      put16(s, 0);  // extra length
    };
    put32(body, kLocalSig);
    common(body);
    body += name;
    body += stored;
    put32(central, kCentralSig);
    put16(central, 20);  // made by: version 2.0
    common(central);
    put16(central, 0);  // comment length
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, offset);
    central += name;
  }
  if (members.size() >= 0xFFFF || body.size() >= k32 || central.size() >= k32) {
    fail("npz: too many or too large members for a zip archive without zip64");
  }
  std::string out = body + central;
  put32(out, kEndSig);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<std::uint32_t>(members.size()));
  put16(out, static_cast<std::uint32_t>(members.size()));
  put32(out, static_cast<std::uint32_t>(central.size()));
  put32(out, static_cast<std::uint32_t>(body.size()));
  put16(out, 0);  // comment length
  return out;
}

void write_npz(const std::filesystem::path& file, const std::vector<npz_member>& members,
               bool compress) {
  write_file_atomic(file, npz_bytes(members, compress));
}

}  // namespace pev::io

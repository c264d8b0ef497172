#pragma once
// Internals shared by the io readers and writers: little-endian loads and stores, overflow-checked
// sizes, a random-access byte source (a file or a buffer), the streaming atomic writer behind
// write_file_atomic, and text helpers for error messages.

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pev/core/error.h"
#include "pev/core/text.h"
#include "pev/io/array.h"
#include "pev/io/byte_buffer.h"
#include "pev/io/file.h"
#include "pev/io/npy.h"

namespace pev::io::detail {

/// Throws pev::error with the formatted message.
template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw pev::error(fmt::format(format, std::forward<Args>(args)...));
}

/// Reads an unsigned little-endian integer of sizeof(U) bytes.
template <class U>
U load_le(const std::byte* p) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    v |= static_cast<U>(static_cast<U>(std::to_integer<unsigned char>(p[i])) << (8 * i));
  }
  return v;
}

/// Writes `v` as sizeof(U) little-endian bytes.
template <class U>
void store_le(std::byte* p, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    p[i] = static_cast<std::byte>(static_cast<unsigned char>(v >> (8 * i)));
  }
}

/// a·b, or nothing when it does not fit in 64 bits.
std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b);

/// Product of non-negative dimensions, or nothing on overflow of 64 bits (dims must be ≥ 0).
std::optional<std::uint64_t> checked_product(const std::vector<std::int64_t>& shape);

/// "cannot read 'FILE': REASON".
inline std::string cannot(std::string_view verb, const std::filesystem::path& file,
                          std::string_view reason) {
  return fmt::format("cannot {} '{}': {}", verb, file.string(), reason);
}

using pev::utf8_error;

/// `s` quoted in a message: printable ASCII kept, everything else as \xNN, cut after `max`
/// characters.
inline std::string printable(std::string_view s, std::size_t max = 80) {
  return pev::escaped(s, {.max = max, .ascii_only = true});
}

/// Random-access bytes: a regular file (read with pread, never loaded whole) or a buffer.
class byte_source {
 public:
  virtual ~byte_source() = default;
  /// Total size in bytes.
  virtual std::uint64_t size() const = 0;
  /// Copies `n` bytes at `offset` into `out`; the range must lie within size(). Throws on I/O
  /// errors.
  virtual void read(std::uint64_t offset, std::byte* out, std::size_t n) const = 0;
  /// Reads `n` bytes at `offset` into a string.
  std::string read_string(std::uint64_t offset, std::size_t n) const;
  /// The `n` bytes at `offset` as an array's data: a read-only view sharing memory the source
  /// can share (a mapped region of a regular file, at least map_min_bytes; a buffer the source
  /// owns) when its start is a multiple of `align` bytes in memory, else a copy (read(); from
  /// map_min_bytes on into a block that is not zeroed first).
  virtual byte_buffer buffer(std::uint64_t offset, std::size_t n, std::size_t align) const;
};

/// A read-only private mapping of bytes [offset, offset + n) of the regular file open as `fd`
/// (named `file`), n > 0, as a byte_buffer view; the mapping lives as long as a view of it. A page
/// of it that disappears while mapped (the file truncated by another program, a storage error)
/// ends the process with exit status 2 and a message naming `file`, as an input error would,
/// instead of an unexplained SIGBUS. Returns an empty optional when the file cannot be mapped (the
/// caller reads it instead).
std::optional<byte_buffer> map_file_region(int fd, const std::filesystem::path& file,
                                           std::uint64_t offset, std::size_t n);

/// Bytes the source shares: views of `bytes` (what it owns or keeps alive), any size.
std::unique_ptr<byte_source> buffer_source(byte_buffer bytes);

/// Bytes [offset, offset + n) of `parent` (which must outlive it; the range within its size) as a
/// source of their own: reads and buffers are the parent's (mapped, shared or copied as it does).
std::unique_ptr<byte_source> slice_source(const byte_source& parent, std::uint64_t offset,
                                          std::uint64_t n);

/// Reads an npy array from `src` (npy.cpp's reader; npz members are read through it).
array read_npy_source(const byte_source& src, std::string_view source, const npy_options& o);

/// A buffer as a byte_source (the buffer must outlive it).
std::unique_ptr<byte_source> memory_source(std::string_view bytes);

/// A file as a byte_source; a non-regular file (a pipe) is read whole, within max_stream_bytes and
/// input_timeout() (file.h). Throws pev::error naming the file when it cannot be opened, is a
/// directory, or breaks those limits.
std::unique_ptr<byte_source> file_source(const std::filesystem::path& file);

/// Writes a file by streaming into a temporary file in the same directory, then commit() flushes it
/// to disk and renames it over the target. Destroyed without commit(), the temporary is removed.
/// Only a regular file (or a path where nothing is yet) is replaced that way: "-" is standard
/// output, a character device, FIFO or socket (/dev/null, /dev/stdout on a pipe) is written
/// directly, never replaced by a file; a symbolic link is followed, and the file it names is
/// replaced, not the link.
class atomic_writer {
 public:
  explicit atomic_writer(std::filesystem::path target);
  ~atomic_writer();
  atomic_writer(const atomic_writer&) = delete;
  atomic_writer& operator=(const atomic_writer&) = delete;

  /// Appends bytes; throws pev::error naming the target on failure.
  void write(const void* data, std::size_t n);
  /// Appends bytes.
  void write(std::string_view s) { write(s.data(), s.size()); }
  /// Whether write_at works: the output is a (temporary) regular file, not a device or a pipe.
  bool seekable() const { return !direct_; }
  /// Writes bytes at `offset` of a seekable output (pwrite; the append position is unchanged).
  void write_at(std::uint64_t offset, const void* data, std::size_t n);
  /// fsync, close, rename over the target (and fsync the directory, best effort); written
  /// directly: close.
  void commit();

 private:
  [[noreturn]] void fail(std::string_view what, int err);
  void discard() noexcept;
  void open_direct();

  std::filesystem::path target_;  // as given, for messages
  std::filesystem::path dest_;    // the regular file replaced: target_ through its symlinks
  std::filesystem::path temp_;
  int fd_ = -1;
  bool direct_ = false;    // writing target_ itself (a device, a pipe, stdout)
  bool borrowed_ = false;  // fd_ is standard output: not closed here
};

}  // namespace pev::io::detail

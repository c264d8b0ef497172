// Reading files within bounds (file.h): byte sources (a regular file read with pread or mapped,
// a buffer, a slice of either) and whole files, with a non-regular file (a pipe, a FIFO, a device)
// held to max_stream_bytes and input_timeout().

#include "pev/io/file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "detail.h"
#include "pev/core/error.h"

namespace pev::io {

namespace detail {

namespace {

class memory_byte_source final : public byte_source {
 public:
  explicit memory_byte_source(std::string_view bytes) : bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_.size(); }
  void read(std::uint64_t offset, std::byte* out, std::size_t n) const override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) {
      throw pev::error("internal: read past the end of a buffer");
    }
    if (n) std::memcpy(out, bytes_.data() + offset, n);
  }

 private:
  std::string_view bytes_;
};

// Bytes held in memory that views may share: a buffer the reader filled (what a non-regular file
// held, an npz member) or a view of a mapping.
class shared_byte_source final : public byte_source {
 public:
  explicit shared_byte_source(byte_buffer bytes) : bytes_(std::move(bytes).shared()) {}
  std::uint64_t size() const override { return bytes_.size(); }
  void read(std::uint64_t offset, std::byte* out, std::size_t n) const override {
    check(offset, n);
    if (n) std::memcpy(out, bytes_.data() + offset, n);
  }
  byte_buffer buffer(std::uint64_t offset, std::size_t n, std::size_t align) const override {
    check(offset, n);
    const auto at = reinterpret_cast<std::uintptr_t>(bytes_.data() + offset);
    if (n == 0 || at % align != 0) return byte_source::buffer(offset, n, align);
    return bytes_.slice(static_cast<std::size_t>(offset), n);
  }

 private:
  void check(std::uint64_t offset, std::size_t n) const {
    if (offset > bytes_.size() || n > bytes_.size() - offset) {
      throw pev::error("internal: read past the end of a buffer");
    }
  }
  byte_buffer bytes_;
};

// Part of another source.
class slice_byte_source final : public byte_source {
 public:
  slice_byte_source(const byte_source& parent, std::uint64_t offset, std::uint64_t size)
      : parent_(parent), offset_(offset), size_(size) {
    if (offset > parent.size() || size > parent.size() - offset) {
      throw pev::error("internal: a slice past the end of its source");
    }
  }
  std::uint64_t size() const override { return size_; }
  void read(std::uint64_t offset, std::byte* out, std::size_t n) const override {
    check(offset, n);
    parent_.read(offset_ + offset, out, n);
  }
  byte_buffer buffer(std::uint64_t offset, std::size_t n, std::size_t align) const override {
    check(offset, n);
    return parent_.buffer(offset_ + offset, n, align);
  }

 private:
  void check(std::uint64_t offset, std::size_t n) const {
    if (offset > size_ || n > size_ - offset) {
      throw pev::error("internal: read past the end of a slice");
    }
  }
  const byte_source& parent_;
  std::uint64_t offset_, size_;
};

// What a non-regular file held, as a buffer views may share.
byte_buffer owned_bytes(std::string bytes) {
  auto s = std::make_shared<const std::string>(std::move(bytes));
  const std::span<const std::byte> view(reinterpret_cast<const std::byte*>(s->data()), s->size());
  return byte_buffer(std::move(s), view);
}

class file_byte_source final : public byte_source {
 public:
  file_byte_source(std::filesystem::path file, int fd, std::uint64_t size)
      : file_(std::move(file)), fd_(fd), size_(size) {}
  ~file_byte_source() override { ::close(fd_); }
  file_byte_source(const file_byte_source&) = delete;
  file_byte_source& operator=(const file_byte_source&) = delete;

  std::uint64_t size() const override { return size_; }
  void read(std::uint64_t offset, std::byte* out, std::size_t n) const override {
    check(offset, n);
    std::size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, reinterpret_cast<char*>(out) + done, n - done,
                                static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        throw pev::error(cannot("read", file_, std::strerror(errno)));
      }
      if (r == 0) {
        throw pev::error(cannot("read", file_, "the file shrank while being read"));
      }
      done += static_cast<std::size_t>(r);
    }
  }
  // Large regions are mapped (a mapping starts on a page, so the data's alignment in memory is
  // its offset's in the file).
  byte_buffer buffer(std::uint64_t offset, std::size_t n, std::size_t align) const override {
    check(offset, n);
    if (n >= map_min_bytes && offset % align == 0) {
      if (auto view = map_file_region(fd_, file_, offset, n)) return std::move(*view);
    }
    return byte_source::buffer(offset, n, align);
  }

 private:
  void check(std::uint64_t offset, std::size_t n) const {
    if (offset > size_ || n > size_ - offset) {
      throw pev::error(fmt::format("internal: read past the end of '{}'", file_.string()));
    }
  }
  std::filesystem::path file_;
  int fd_;
  std::uint64_t size_;
};

// Opens `file` for reading; throws pev::error naming it. Directories are refused. O_NONBLOCK: a
// FIFO that no process writes to would otherwise block open() itself, forever.
int open_for_reading(const std::filesystem::path& file, struct stat& st) {
  int fd = -1;
  do {
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw pev::error(cannot("read", file, std::strerror(errno)));
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw pev::error(cannot("read", file, std::strerror(err)));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw pev::error(cannot("read", file, std::strerror(EISDIR)));
  }
  return fd;
}

// What kind of non-regular file `st` is, for messages.
const char* file_kind(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "a file";
  if (S_ISFIFO(st.st_mode)) return "a pipe";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

// Everything `fd` delivers until end of file, at most `max_bytes` (closes fd). A non-regular file
// (a pipe, a FIFO, a character device, a terminal) must also end within input_timeout(): it is
// polled, so that a writer that never writes, or never stops, is an error naming the file instead
// of a hang or an allocation until memory runs out.
std::string read_stream(const std::filesystem::path& file, int fd, const struct stat& st,
                        std::uint64_t max_bytes) {
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_on_exit{fd};
  const bool regular = S_ISREG(st.st_mode);
  const auto too_big = [&] {
    return pev::error(
        cannot("read", file,
               regular ? fmt::format("larger than {} bytes (the limit for this input)", max_bytes)
                       : fmt::format("{} delivering more than {} bytes (the limit for this input)",
                                     file_kind(st), max_bytes)));
  };
  if (regular && static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_big();
  const auto timeout = input_timeout();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out;
  char buffer[65536];
  for (;;) {
    if (!regular) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      pollfd p{fd, POLLIN, 0};
      const int rc =
          left > 0 ? ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) : 0;
      if (rc < 0 && errno != EINTR) throw pev::error(cannot("read", file, std::strerror(errno)));
      if (rc == 0 && left <= 0) {
        throw pev::error(
            cannot("read", file,
                   fmt::format("{} that did not reach its end within {} s (PEV_INPUT_TIMEOUT)",
                               file_kind(st), timeout.count() / 1000.0)));
      }
      if (rc <= 0) continue;
    }
    const ssize_t r = ::read(fd, buffer, sizeof buffer);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      throw pev::error(cannot("read", file, std::strerror(errno)));
    }
    if (r == 0) break;
    if (out.size() + static_cast<std::size_t>(r) > max_bytes) throw too_big();
    out.append(buffer, static_cast<std::size_t>(r));
  }
  return out;
}

}  // namespace

std::string byte_source::read_string(std::uint64_t offset, std::size_t n) const {
  std::string s(n, '\0');
  read(offset, reinterpret_cast<std::byte*>(s.data()), n);
  return s;
}

byte_buffer byte_source::buffer(std::uint64_t offset, std::size_t n, std::size_t) const {
  if (n < map_min_bytes) {
    std::vector<std::byte> bytes(n);
    read(offset, bytes.data(), n);
    return byte_buffer(std::move(bytes));
  }
  // Large: a block that is not zeroed first (it is overwritten at once), shared by the view.
  std::shared_ptr<std::byte[]> block = std::make_shared_for_overwrite<std::byte[]>(n);
  read(offset, block.get(), n);
  const std::span<const std::byte> bytes(block.get(), n);
  return byte_buffer(std::shared_ptr<const void>(std::move(block)), bytes);
}

std::unique_ptr<byte_source> memory_source(std::string_view bytes) {
  return std::make_unique<memory_byte_source>(bytes);
}

std::unique_ptr<byte_source> buffer_source(byte_buffer bytes) {
  return std::make_unique<shared_byte_source>(std::move(bytes));
}

std::unique_ptr<byte_source> slice_source(const byte_source& parent, std::uint64_t offset,
                                          std::uint64_t n) {
  return std::make_unique<slice_byte_source>(parent, offset, n);
}

std::unique_ptr<byte_source> file_source(const std::filesystem::path& file) {
  struct stat st {};
  const int fd = open_for_reading(file, st);
  if (!S_ISREG(st.st_mode)) {
    return buffer_source(owned_bytes(read_stream(file, fd, st, max_stream_bytes)));
  }
  return std::make_unique<file_byte_source>(file, fd, static_cast<std::uint64_t>(st.st_size));
}

}  // namespace detail

std::chrono::milliseconds input_timeout() {
  const char* text = std::getenv("PEV_INPUT_TIMEOUT");
  if (text == nullptr || *text == '\0') return std::chrono::milliseconds(60000);
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text, text + std::strlen(text), seconds);
  if (ec != std::errc() || *end != '\0' || !(seconds > 0) || seconds > 86400) {
    throw pev::error(fmt::format("PEV_INPUT_TIMEOUT: expected seconds in (0, 86400], got '{}'",
                                 detail::printable(text, 40)));
  }
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

std::string read_file(const std::filesystem::path& file, std::uint64_t max_bytes) {
  struct stat st {};
  const int fd = detail::open_for_reading(file, st);
  return detail::read_stream(file, fd, st, max_bytes);
}

}  // namespace pev::io

// Files written atomically (file.h's write_file_atomic, stream.h's stream_file): detail's
// atomic_writer streams into a temporary file beside the target and renames it over the target
// when complete.

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/io/file.h"
#include "pev/io/stream.h"

namespace pev::io {

namespace detail {

namespace {

// Where a path through a dangling symbolic link leads (the file that writing would create), without
// requiring it to exist; `p` itself when it is not a link. Gives up after 40 links (a loop).
std::filesystem::path follow_links(std::filesystem::path p) {
  for (int k = 0; k < 40; ++k) {
    std::error_code ec;
    if (!std::filesystem::is_symlink(std::filesystem::symlink_status(p, ec))) return p;
    const std::filesystem::path link = std::filesystem::read_symlink(p, ec);
    if (ec) return p;
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  return p;
}

}  // namespace

atomic_writer::atomic_writer(std::filesystem::path target)
    : target_(std::move(target)), dest_(target_) {
  if (target_ == "-") {
    fd_ = STDOUT_FILENO;
    direct_ = borrowed_ = true;
    return;
  }
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0) {  // through symbolic links
    if (S_ISDIR(st.st_mode)) throw pev::error(cannot("write", target_, std::strerror(EISDIR)));
    if (!S_ISREG(st.st_mode)) {
      open_direct();
      return;
    }
    // A regular file, maybe through links: the file is replaced, the links kept.
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(target_, ec);
    // No path names it (/proc/self/fd/N of a deleted file): write it in place.
    if (ec) {
      open_direct();
      return;
    }
    dest_ = real;
  } else {
    dest_ = follow_links(target_);
  }
  // The temporary lives next to the file it replaces so that rename() is atomic (same file
  // system). Its name is unique across processes (pid), threads (counter) and stale leftovers
  // (clock bits, O_EXCL).
  static std::atomic<unsigned long> counter{0};
  const std::filesystem::path dir = dest_.parent_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto ticks = static_cast<unsigned long long>(
        std::chrono::steady_clock::now().time_since_epoch().count());
    const std::string name = fmt::format(".{}.tmp-{}-{}-{:06x}", dest_.filename().string(),
                                         ::getpid(), counter++, ticks & 0xFFFFFFu);
    temp_ = dir.empty() ? std::filesystem::path(name) : dir / name;
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) return;
    if (errno != EEXIST && errno != EINTR) break;
  }
  const int err = errno;
  temp_.clear();
  throw pev::error(cannot("write", target_, std::strerror(err)));
}

void atomic_writer::open_direct() {
  direct_ = true;
  do {
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw pev::error(cannot("write", target_, std::strerror(errno)));
}

atomic_writer::~atomic_writer() { discard(); }

void atomic_writer::discard() noexcept {
  if (fd_ >= 0 && !borrowed_) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

void atomic_writer::fail(std::string_view what, int err) {
  discard();
  throw pev::error(what.empty()
                       ? cannot("write", target_, std::strerror(err))
                       : cannot("write", target_, fmt::format("{}: {}", what, std::strerror(err))));
}

void atomic_writer::write(const void* data, std::size_t n) {
  if (fd_ < 0) throw pev::error(cannot("write", target_, "the writer is closed"));
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t r = ::write(fd_, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail("", errno);
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

void atomic_writer::write_at(std::uint64_t offset, const void* data, std::size_t n) {
  if (fd_ < 0) throw pev::error(cannot("write", target_, "the writer is closed"));
  if (direct_) throw pev::error(cannot("write", target_, "internal: write_at on a stream"));
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t r = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail("", errno);
    }
    p += r;
    offset += static_cast<std::uint64_t>(r);
    n -= static_cast<std::size_t>(r);
  }
}

void atomic_writer::commit() {
  if (fd_ < 0) throw pev::error(cannot("write", target_, "the writer is closed"));
  if (direct_) {
    const int fd = fd_;
    fd_ = -1;
    if (!borrowed_ && ::close(fd) != 0) fail("close", errno);
    return;
  }
  // EINVAL: a file that does not support synchronization; nothing to flush.
  if (::fsync(fd_) != 0 && errno != EINVAL) fail("fsync", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close", errno);
  if (::rename(temp_.c_str(), dest_.c_str()) != 0) fail("rename", errno);
  temp_.clear();
  // Make the rename itself durable; a failure here leaves a complete file, so it is not an error.
  const std::filesystem::path dir = dest_.parent_path().empty() ? "." : dest_.parent_path();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace detail

stream_file::stream_file(const std::filesystem::path& file)
    : w_(std::make_unique<detail::atomic_writer>(file)) {}
stream_file::~stream_file() = default;
void stream_file::write(const void* data, std::size_t n) { w_->write(data, n); }
bool stream_file::seekable() const { return w_->seekable(); }
void stream_file::write_at(std::uint64_t offset, const void* data, std::size_t n) {
  w_->write_at(offset, data, n);
}
void stream_file::commit() { w_->commit(); }

void write_file_atomic(const std::filesystem::path& file, std::string_view bytes) {
  detail::atomic_writer w(file);
  w.write(bytes);
  w.commit();
}

}  // namespace pev::io

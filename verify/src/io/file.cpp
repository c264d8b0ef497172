#include "pev/io/file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/core/json_check.h"
#include "pev/io/npy.h"
#include "pev/io/safetensors.h"
#include "pev/io/stream.h"

namespace pev::io {

namespace detail {

namespace {

// "cannot read 'FILE': REASON".
std::string cannot(std::string_view verb, const std::filesystem::path& file,
                   std::string_view reason) {
  return fmt::format("cannot {} '{}': {}", verb, file.string(), reason);
}

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

// ---- atomic_writer ----

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

namespace {

// Atomically exchanges two paths (Linux renameat2 RENAME_EXCHANGE; glibc 2.28+ declares it, the
// syscall is used directly for older headers). Returns 0, or −1 with errno.
int exchange_paths(const std::filesystem::path& a, const std::filesystem::path& b) {
#ifdef SYS_renameat2
  constexpr unsigned exchange = 1U << 1;  // RENAME_EXCHANGE
  return static_cast<int>(
      ::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), exchange));
#else
  errno = ENOSYS;
  return -1;
#endif
}

void sync_directory(const std::filesystem::path& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

// Removes the staging directories (".NAME.pev-staging-PID[-old]") of runs that no longer exist.
// Only pev creates directories with these names, and they hold only what pev wrote.
void remove_stale_staging(const std::filesystem::path& parent, const std::string& name) {
  const std::string prefix = "." + name + ".pev-staging-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
    const std::string f = entry.path().filename().string();
    if (f.rfind(prefix, 0) != 0) continue;
    long pid = 0;
    const auto* first = f.data() + prefix.size();
    const auto [end, err] = std::from_chars(first, f.data() + f.size(), pid);
    if (err != std::errc() || pid <= 0) continue;
    if (pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      std::filesystem::remove_all(entry.path(), ignored);
    }
  }
}

std::string cannot_list(const std::filesystem::path& dir, const std::error_code& ec) {
  return fmt::format("'{}': cannot list the directory: {}", dir.string(), ec.message());
}

// ---- The manifest: what pev wrote into an output directory ----
//
// pev replaces an output directory as a whole, so it must never replace one it did not write (a
// git checkout that happens to hold a report.json, a thesis beside a certificate.json). Every
// output directory therefore carries kManifest, a JSON list of the directories and files pev wrote
// there; a non-empty directory is replaced only when it has a manifest and holds nothing else, and
// a previous output is removed entry by entry from its manifest, never recursively.

constexpr std::string_view kManifest = ".pev-manifest";
constexpr int kManifestVersion = 1;
// A report has a few hundred files; the manifest of anything pev writes is far below this.
constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{16} << 20;

struct manifest {
  std::set<std::string> directories, files;  // relative paths, '/'-separated
};

// A relative path inside the directory ("a/b.csv"): no root, no "." or ".." component.
bool is_inside_path(const std::string& p) {
  if (p.empty() || p.front() == '/') return false;
  std::size_t start = 0;
  while (start <= p.size()) {
    const std::size_t slash = std::min(p.find('/', start), p.size());
    const std::string_view part(p.data() + start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = slash + 1;
  }
  return true;
}

// The manifest of `dir`, or nothing when it has none or it is not a valid one (then `dir` is not
// known to be pev's).
std::optional<manifest> read_manifest(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / kManifest;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(file, ec))) {
    return std::nullopt;
  }
  try {
    const std::string text = read_file(file, kMaxManifestBytes);
    json_limits limits;
    limits.max_depth = 2;  // {"files": ["a", ...]}
    limits.too_deep = [](int) { throw pev::error("nested too deeply"); };
    check_json(text, limits);
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object() || j.value("pev_output_manifest", 0) != kManifestVersion) {
      return std::nullopt;
    }
    manifest m;
    for (const auto& [key, set] :
         {std::pair{"directories", &m.directories}, std::pair{"files", &m.files}}) {
      const auto it = j.find(key);
      if (it == j.end() || !it->is_array()) return std::nullopt;
      for (const auto& v : *it) {
        if (!v.is_string() || !is_inside_path(v.get<std::string>())) return std::nullopt;
        set->insert(v.get<std::string>());
      }
    }
    return m;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Lists what `dir` holds (pev's own writers make only directories and regular files) and writes
// it as `dir`'s manifest.
void write_manifest(const std::filesystem::path& dir) {
  nlohmann::json directories = nlohmann::json::array(), files = nlohmann::json::array();
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    const auto type = it->symlink_status(ec).type();
    if (type == std::filesystem::file_type::directory) {
      directories.push_back(rel);
    } else if (type == std::filesystem::file_type::regular) {
      files.push_back(rel);
    } else {
      throw pev::error(
          fmt::format("'{}': internal: an output holds '{}', neither a file nor a "
                      "directory",
                      dir.string(), detail::printable(rel)));
    }
  }
  if (ec) throw pev::error(cannot_list(dir, ec));
  const nlohmann::json j = {{"pev_output_manifest", kManifestVersion},
                            {"note",
                             "written by pev: the files and directories of this output, "
                             "which pev may replace as a whole"},
                            {"directories", directories},
                            {"files", files}};
  write_file_atomic(dir / kManifest,
                    j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

// Why `dir` (existing, a directory) may not be replaced, or nothing when it may: it is empty, or
// it has a manifest and holds nothing that the manifest does not list.
std::optional<std::string> not_owned(const std::filesystem::path& dir, const std::string& shown) {
  std::error_code ec;
  if (std::filesystem::is_empty(dir, ec) && !ec) return std::nullopt;
  const std::optional<manifest> m = read_manifest(dir);
  if (!m) {
    return fmt::format(
        "'{}' is a non-empty directory that pev did not write (it has no {}): pev replaces "
        "only its own output directories, so choose a new or empty directory",
        shown, kManifest);
  }
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    if (rel == kManifest) continue;
    const auto type = it->symlink_status(ec).type();
    const bool listed = type == std::filesystem::file_type::directory ? m->directories.count(rel)
                        : type == std::filesystem::file_type::regular ? m->files.count(rel)
                                                                      : false;
    if (!listed) {
      return fmt::format(
          "'{}' holds '{}', which pev did not write (its {} does not list it): pev replaces "
          "only what it wrote, so move it out or choose another directory",
          shown, detail::printable(rel), kManifest);
    }
  }
  if (ec) return cannot_list(dir, ec);
  return std::nullopt;
}

// Removes a previous output that was moved to `dir`: the files and directories its manifest lists,
// then `dir` itself. Anything else (a file that appeared after the ownership check) is kept: `dir`
// is then left under `kept` and a warning says so.
void remove_owned(const std::filesystem::path& dir, const std::filesystem::path& kept) {
  const std::optional<manifest> m = read_manifest(dir);
  std::error_code ec;
  if (m) {
    for (const auto& f : m->files) std::filesystem::remove(dir / f, ec);
    // Deepest first: a directory's entries go before it (longer paths sort after their parents).
    for (auto it = m->directories.rbegin(); it != m->directories.rend(); ++it) {
      std::filesystem::remove(dir / *it, ec);
    }
    std::filesystem::remove(dir / kManifest, ec);
  }
  if (std::filesystem::remove(dir, ec) || !std::filesystem::exists(dir, ec)) return;
  if (::rename(dir.c_str(), kept.c_str()) == 0) {
    pev::warn_to_stderr(fmt::format(
        "the previous output held files pev did not write; they are kept in '{}'", kept.string()));
  }
}

struct output_target {
  std::filesystem::path path, parent;
  std::string name;
  bool exists = false;
};

output_target check_output(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  output_target t;
  t.path = dir.filename().empty() ? dir.parent_path() : dir;  // "out/" → "out"
  std::error_code ec;
  // A symbolic link to the output directory: the directory it names is replaced, the link kept.
  if (fs::symlink_status(t.path, ec).type() == fs::file_type::symlink) {
    t.path = fs::canonical(t.path, ec);
    if (ec) throw pev::error(fmt::format("'{}': {}", dir.string(), ec.message()));
  }
  t.name = t.path.filename().string();
  if (t.name.empty() || t.name == "." || t.name == "..") {
    throw pev::error(
        fmt::format("'{}': the output must be a named directory (not '.' or '..')", dir.string()));
  }
  t.parent = t.path.parent_path().empty() ? fs::path(".") : t.path.parent_path();
  fs::create_directories(t.parent, ec);
  if (ec) {
    throw pev::error(
        fmt::format("'{}': cannot create the directory: {}", t.parent.string(), ec.message()));
  }
  // Can a directory be made there (the staging directory will be)? Tried, not guessed: access()
  // says yes to root on a read-only file system or /proc.
  const fs::path probe = t.parent / fmt::format(".{}.pev-probe-{}", t.name, ::getpid());
  if (::mkdir(probe.c_str(), 0700) != 0 && errno != EEXIST) {
    throw pev::error(
        fmt::format("'{}': cannot write the output there: {}", dir.string(), std::strerror(errno)));
  }
  ::rmdir(probe.c_str());
  // What is there now: nothing, an empty directory, or a previous output of pev's.
  const auto st = fs::symlink_status(t.path, ec);
  t.exists = !ec && st.type() != fs::file_type::not_found;
  if (t.exists) {
    if (st.type() != fs::file_type::directory) {
      throw pev::error(fmt::format("'{}' exists and is not a directory", t.path.string()));
    }
    if (const auto why = not_owned(t.path, t.path.string())) throw pev::error(*why);
  }
  return t;
}

}  // namespace

void check_output_directory(const std::filesystem::path& dir) { check_output(dir); }

void write_directory_atomic(const std::filesystem::path& dir,
                            const std::function<void(const std::filesystem::path&)>& write) {
  namespace fs = std::filesystem;
  const output_target t = check_output(dir);
  const fs::path& target = t.path;
  const fs::path& parent = t.parent;
  const std::string& name = t.name;
  std::error_code ec;
  remove_stale_staging(parent, name);
  const fs::path staging = parent / fmt::format(".{}.pev-staging-{}", name, ::getpid());
  fs::remove_all(staging, ec);
  if (!fs::create_directory(staging, ec) || ec) {
    throw pev::error(fmt::format("'{}': cannot create the directory: {}", staging.string(),
                                 ec ? ec.message() : "it exists"));
  }
  try {
    write(staging);
    write_manifest(staging);
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  sync_directory(staging);
  const auto fail = [&](const std::string& why) {
    fs::remove_all(staging, ec);
    throw pev::error(why);
  };
  const auto fail_errno = [&](const char* what) {
    const int err = errno;
    fail(fmt::format("'{}': cannot {}: {}", target.string(), what, std::strerror(err)));
  };
  const fs::path kept = parent / fmt::format("{}.pev-kept-{}", name, ::getpid());
  // The work took time: what is at `target` now is checked again, just before it is replaced.
  // Absent, the new output is moved there; if another run got there first (two runs writing the
  // same fresh --out), rename fails and that run's output is replaced like any previous output.
  if (::rename(staging.c_str(), target.c_str()) == 0) {
    sync_directory(parent);
    return;
  }
  if (errno != EEXIST && errno != ENOTEMPTY && errno != EISDIR) {
    fail_errno("move the new output into place");
  }
  const auto st = fs::symlink_status(target, ec);
  if (st.type() != fs::file_type::directory) {
    fail(
        fmt::format("'{}' appeared while pev was running and is not a directory", target.string()));
  }
  if (const auto why = not_owned(target, target.string())) fail(*why);
  if (exchange_paths(staging, target) == 0) {
    // `staging` now holds the previous output.
    remove_owned(staging, kept);
  } else {
    // No atomic exchange here (another file system, an old kernel): move the previous output
    // aside, then the new one into place. A kill between the two leaves no output, which is
    // allowed (never a torn one); the aside copy is removed as a stale staging directory.
    const fs::path old = parent / fmt::format(".{}.pev-staging-{}-old", name, ::getpid());
    fs::remove_all(old, ec);
    if (::rename(target.c_str(), old.c_str()) != 0) fail_errno("move the previous output aside");
    if (::rename(staging.c_str(), target.c_str()) != 0) {
      fail_errno("move the new output into place");
    }
    remove_owned(old, kept);
  }
  sync_directory(parent);
}

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

namespace {

bool ends_with_ci(const std::string& s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(),
                    s.end() - static_cast<std::ptrdiff_t>(suffix.size()), [](char a, char b) {
                      return std::tolower(static_cast<unsigned char>(a)) ==
                             std::tolower(static_cast<unsigned char>(b));
                    });
}

std::vector<std::int64_t> positions_from_array(const array& a, const std::filesystem::path& file,
                                               std::string_view what) {
  if (a.type != dtype::int32 && a.type != dtype::int64) {
    throw pev::error(
        fmt::format("positions file '{}': {} has dtype {}, expected integers (int32 or int64)",
                    file.string(), what, safetensors_name(a.type)));
  }
  return a.to_int64();
}

// One line of a positions text file: a decimal int64, optionally signed.
std::int64_t parse_position(std::string_view token, const std::filesystem::path& file,
                            std::size_t line) {
  const auto where = [&] {
    return fmt::format("positions file '{}', line {}: '{}'", file.string(), line,
                       detail::printable(token, 40));
  };
  std::string_view digits = token;
  const bool negative = !digits.empty() && digits.front() == '-';
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.remove_prefix(1);
  const bool all_digits = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  if (!all_digits) {
    double d = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), d);
    if (ec != std::errc::invalid_argument && end == token.data() + token.size()) {
      detail::fail("{} is not an integer (positions are integers)", where());
    }
    detail::fail("{} is not an integer (expected one integer per line)", where());
  }
  // The magnitude as uint64 covers −2^63, which has no positive int64 counterpart.
  std::uint64_t magnitude = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  constexpr std::uint64_t limit = std::uint64_t{1} << 63;
  if (ec != std::errc() || end != digits.data() + digits.size() || magnitude > limit ||
      (!negative && magnitude == limit)) {
    detail::fail("{} is outside the int64 range", where());
  }
  return negative ? static_cast<std::int64_t>(std::uint64_t{0} - magnitude)
                  : static_cast<std::int64_t>(magnitude);
}

}  // namespace

std::vector<std::int64_t> read_positions_file(const std::filesystem::path& file) {
  return parse_positions(read_file(file, max_positions_file_bytes), file);
}

std::vector<std::int64_t> parse_positions(std::string_view bytes,
                                          const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  std::vector<std::int64_t> positions;
  if (ends_with_ci(name, ".npy")) {
    positions = positions_from_array(parse_npy(bytes, file.string()), file, "the array");
  } else if (ends_with_ci(name, ".safetensors")) {
    const tensor_file t = parse_safetensors(bytes, file.string());
    std::string chosen;
    if (t.tensors.count("positions")) {
      chosen = "positions";
    } else if (t.names.size() == 1) {
      chosen = t.names.front();
    } else {
      std::string names;
      for (const auto& n : t.names) {
        names += fmt::format("{}'{}'", names.empty() ? "" : ", ", detail::printable(n, 60));
      }
      throw pev::error(fmt::format(
          "positions file '{}': expected a tensor named 'positions' or a single tensor, found {}",
          file.string(), names.empty() ? std::string("no tensors") : names));
    }
    positions = positions_from_array(t.at(chosen), file, fmt::format("tensor '{}'", chosen));
  } else {
    const std::string_view text = bytes;
    std::size_t line = 0;
    std::size_t begin = 0;
    while (begin < text.size()) {
      std::size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      ++line;
      std::string_view s(text.data() + begin, end - begin);
      begin = end + 1;
      if (auto hash = s.find('#'); hash != std::string_view::npos) s = s.substr(0, hash);
      const auto is_space = [](char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
      };
      while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
      while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
      if (s.empty()) continue;
      positions.push_back(parse_position(s, file, line));
    }
  }
  if (positions.empty())
    throw pev::error(fmt::format("positions file '{}' holds no positions", file.string()));
  return positions;
}

}  // namespace pev::io

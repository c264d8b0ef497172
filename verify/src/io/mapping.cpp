// Large tensors of a regular file are read by mapping the file (docs/design.md §6.1): the pages of
// the page cache are shared, read-only, instead of being copied into zeroed anonymous memory.

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "detail.h"
#include "pev/core/text.h"
#include "pev/io/file.h"

namespace pev::io::detail {

namespace {

// ---- The SIGBUS guard ----
//
// A page of a file mapping that no longer exists (the file was truncated by another program after
// pev mapped it; an I/O error reading it in) is reported by the kernel as SIGBUS at the faulting
// access, which may come long after the mapping was made, on any thread. The guard turns that into
// what a read error is everywhere else: a message naming the file and exit status 2. Live mappings
// are kept in fixed slots of atomics, which the handler may read at any moment (it may use only
// async-signal-safe calls: write, _exit, sigaction, raise); the message is built when the mapping
// is made.

constexpr int kSlots = 256;

struct slot {
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<const std::string*> message{nullptr};
};

slot slots[kSlots];
struct sigaction previous_action;

extern "C" void on_sigbus(int sig, siginfo_t* info, void* context) {
  if (info != nullptr && info->si_code > 0) {  // a fault, not a signal sent by a process
    const auto at = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (const slot& s : slots) {
      const std::uintptr_t b = s.begin.load(std::memory_order_acquire);
      if (b == 0 || at < b || at >= s.end.load(std::memory_order_acquire)) continue;
      if (const std::string* m = s.message.load(std::memory_order_acquire)) {
        for (std::size_t done = 0; done < m->size();) {
          const ssize_t r = ::write(STDERR_FILENO, m->data() + done, m->size() - done);
          if (r <= 0) break;
          done += static_cast<std::size_t>(r);
        }
      }
      ::_exit(2);
    }
  }
  // Not a mapping of ours: what was there before decides (the fault recurs on return; a signal
  // sent by a process is raised again).
  ::sigaction(SIGBUS, &previous_action, nullptr);
  if (info == nullptr || info->si_code <= 0) ::raise(sig);
  (void)context;
}

void install_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction a {};
    a.sa_sigaction = on_sigbus;
    ::sigemptyset(&a.sa_mask);
    a.sa_flags = SA_SIGINFO;
    ::sigaction(SIGBUS, &a, &previous_action);
  });
}

// Claims a slot for [begin, end); -1 when every slot is taken.
int claim(std::uintptr_t begin, std::uintptr_t end, const std::string* message) {
  for (int k = 0; k < kSlots; ++k) {
    std::uintptr_t free = 0;
    // Claimed through `end` (never 0 in use), published to the handler through `begin`.
    if (slots[k].end.compare_exchange_strong(free, end, std::memory_order_acq_rel)) {
      slots[k].message.store(message, std::memory_order_release);
      slots[k].begin.store(begin, std::memory_order_release);
      return k;
    }
  }
  return -1;
}

void release(int k) {
  slots[k].begin.store(0, std::memory_order_release);
  slots[k].message.store(nullptr, std::memory_order_release);
  slots[k].end.store(0, std::memory_order_release);
}

// One mapping, unmapped when the last view of it goes.
struct mapping {
  void* base = nullptr;
  std::size_t length = 0;
  int slot = -1;
  std::string message;
  mapping() = default;
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  ~mapping() {
    if (slot >= 0) release(slot);
    if (base) ::munmap(base, length);
  }
};

std::size_t page_size() {
  static const std::size_t size = [] {
    const long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::size_t>(p) : std::size_t{4096};
  }();
  return size;
}

}  // namespace

std::optional<byte_buffer> map_file_region(int fd, const std::filesystem::path& file,
                                           std::uint64_t offset, std::size_t n) {
  if (n == 0) return std::nullopt;
  const std::size_t page = page_size();
  const std::uint64_t start = offset / page * page;
  const std::size_t lead = static_cast<std::size_t>(offset - start);
  const std::size_t length = lead + n;
  // No MAP_POPULATE: the pages are mapped by faults on first access, on the threads that read
  // them (certify's workers), not all at once on this thread before any work starts (0.1 s of a
  // 537 MB dump's 2-thread certification, serial; docs/performance.md §4).
  void* base = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(start));
  if (base == MAP_FAILED) return std::nullopt;
  auto m = std::make_shared<mapping>();
  m->base = base;
  m->length = length;
  m->message = "pev: error: " +
               pev::escaped("cannot read '" + file.string() +
                            "': the file shrank while being read (another program truncated or "
                            "rewrote it), or a read error") +
               "\n";
  install_guard();
  const auto begin = reinterpret_cast<std::uintptr_t>(base);
  m->slot = claim(begin, begin + length, &m->message);
  if (m->slot < 0) return std::nullopt;  // no slot to guard it: read it instead
  const auto* p = static_cast<const std::byte*>(base) + lead;
  return byte_buffer(std::shared_ptr<const void>(m, p), std::span<const std::byte>(p, n));
}

}  // namespace pev::io::detail

namespace pev::io {

void release_pages(const byte_buffer& bytes) {
  if (!bytes.is_view() || bytes.empty()) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
  const std::uintptr_t end = begin + bytes.size();
  // Only a live mapping of ours (a slot holds it while `bytes` keeps it alive): MADV_DONTNEED on a
  // read-only private file mapping drops the pages, which a later access reads from the file
  // again; on anonymous memory it would zero the bytes, so nothing else is ever advised.
  for (const detail::slot& s : detail::slots) {
    const std::uintptr_t b = s.begin.load(std::memory_order_acquire);
    const std::uintptr_t e = s.end.load(std::memory_order_acquire);
    if (b == 0 || begin < b || end > e) continue;
    const std::size_t page = detail::page_size();
    const std::uintptr_t from = begin / page * page,
                         to = std::min(e, (end + page - 1) / page * page);
    ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
    return;
  }
}

}  // namespace pev::io

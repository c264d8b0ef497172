#include "io_test_util.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <random>
#include <sstream>
#include <system_error>

namespace {

std::atomic<bool> watching{false};
std::atomic<std::size_t> largest_request{0};

}  // namespace

namespace {

void* allocate(std::size_t n) noexcept {
  if (watching.load(std::memory_order_relaxed)) {
    std::size_t seen = largest_request.load(std::memory_order_relaxed);
    while (n > seen && !largest_request.compare_exchange_weak(seen, n)) {
    }
  }
  return std::malloc(n ? n : 1);
}

void* allocate_or_throw(std::size_t n) {
  if (void* p = allocate(n)) return p;
  throw std::bad_alloc();
}

}  // namespace

// Replaced global allocation functions (every non-aligned form, so that none is left to a
// sanitizer's own allocator): malloc and free, recording the largest request while an
// allocation_watch is alive.
void* operator new(std::size_t n) { return allocate_or_throw(n); }
void* operator new[](std::size_t n) { return allocate_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace pev::io::test {

allocation_watch::allocation_watch() {
  largest_request = 0;
  watching = true;
}
allocation_watch::~allocation_watch() { watching = false; }
std::size_t allocation_watch::largest() const { return largest_request.load(); }

namespace {

// Every test process works under its own directory (ctest runs tests in parallel, and several build
// trees may run the same tests at once), removed when the process's tests end.
std::filesystem::path process_dir() {
  return std::filesystem::path(testing::TempDir()) /
         cat({"pev_io_test_", std::to_string(::getpid())});
}

class remove_process_dir : public testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(process_dir(), ignored);
  }
};

[[maybe_unused]] testing::Environment* const cleanup =
    testing::AddGlobalTestEnvironment(new remove_process_dir);

}  // namespace

std::filesystem::path scratch_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::string name = cat({info->test_suite_name(), "_", info->name()});
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  const std::filesystem::path dir = process_dir() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write_bytes(const std::filesystem::path& file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error(cat({"test: cannot write ", file.string()}));
}

std::string read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string cat(std::initializer_list<std::string_view> parts) {
  std::size_t size = 0;
  for (std::string_view p : parts) size += p.size();
  std::string out;
  out.reserve(size);
  for (std::string_view p : parts) out.append(p);
  return out;
}

std::string le16(std::uint16_t v) {
  return {static_cast<char>(v & 0xFF), static_cast<char>(v >> 8)};
}
std::string le32(std::uint32_t v) {
  return cat({le16(v & 0xFFFF), le16(static_cast<std::uint16_t>(v >> 16))});
}
std::string le64(std::uint64_t v) {
  return cat({le32(static_cast<std::uint32_t>(v)), le32(static_cast<std::uint32_t>(v >> 32))});
}

std::string npy_file(std::string_view dict, std::string_view data, int major) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header(dict);
  header.append(64 - (prefix + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  out += major == 1 ? le16(static_cast<std::uint16_t>(header.size()))
                    : le32(static_cast<std::uint32_t>(header.size()));
  return cat({out, header, data});
}

std::string safetensors_file(std::string_view header, std::string_view data) {
  return cat({le64(header.size()), header, data});
}

int run_python(const std::string& python, const std::filesystem::path& dir,
               const std::string& script, std::string& output) {
  const auto file = dir / "script.py";
  write_bytes(file, script);
  const std::string command =
      cat({"cd '", dir.string(), "' && ", python, " '", file.string(), "' 2>&1"});
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return -1;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  return ::pclose(pipe);
}

std::string python_with_numpy() {
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    const std::string command = cat({python, " -c 'import numpy' >/dev/null 2>&1"});
    if (std::system(command.c_str()) == 0) return python;
  }
  return {};
}

std::vector<std::string> mutations(const std::string& bytes, std::size_t hot, int count,
                                   unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  const char interesting[] = {'\0', '\xff', '\x7f', '\x80', ' ', ',', '(', ')', '[', ']',  '{', '}',
                              '\'', '"',    ':',    '-',    '0', '9', 'L', '.', 'e', '\\', '\n'};
  for (int i = 0; i < count; ++i) {
    std::string m = bytes;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !m.empty(); ++e) {
      const std::size_t limit = (rng() % 4 == 0) ? m.size() : std::min(hot, m.size());
      const std::size_t at = rng() % limit;
      switch (rng() % 5) {
        case 0:
          m[at] = static_cast<char>(rng());
          break;
        case 1:
          m[at] = interesting[rng() % sizeof interesting];
          break;
        case 2:
          m.resize(at);
          break;
        case 3:
          m.insert(at, 1, interesting[rng() % sizeof interesting]);
          break;
        default:
          m.erase(at, 1 + rng() % 4);
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace pev::io::test

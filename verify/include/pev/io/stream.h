#pragma once
// A file written piece by piece (docs/design.md §5.4: `pev reference` and `pev compute` stream
// their tables): replaced atomically when complete, as write_file_atomic does (io/file.h); a run
// that fails or is killed leaves the previous file, never a partial one. Devices and pipes
// (/dev/null, "-" for standard output) are written directly.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

namespace pev::io {

namespace detail {
class atomic_writer;
}

class stream_file {
 public:
  /// Starts writing `file` ("-": standard output). Throws pev::error naming it.
  explicit stream_file(const std::filesystem::path& file);
  /// Without commit(): the partial output is discarded.
  ~stream_file();
  stream_file(const stream_file&) = delete;
  stream_file& operator=(const stream_file&) = delete;

  /// Appends bytes.
  void write(const void* data, std::size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  /// Whether write_at works (a regular file; not a device or a pipe).
  bool seekable() const;
  /// Writes bytes at `offset` (seekable files only); the append position is unchanged.
  void write_at(std::uint64_t offset, const void* data, std::size_t n);
  /// Completes the file (renamed over its target).
  void commit();

 private:
  std::unique_ptr<detail::atomic_writer> w_;
};

}  // namespace pev::io

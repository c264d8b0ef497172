// Output directories written as one unit, and only over what pev wrote (file.h's
// write_directory_atomic and check_output_directory): a staging directory, a manifest, and an
// atomic exchange.

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/core/json_check.h"
#include "pev/io/file.h"

namespace pev::io {

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
// known to be pev's); `invalid`, when given, receives why a .pev-manifest that is there is not
// one (left empty when there is none).
std::optional<manifest> read_manifest(const std::filesystem::path& dir,
                                      std::string* invalid = nullptr) {
  const std::filesystem::path file = dir / kManifest;
  auto bad = [&](std::string why) -> std::optional<manifest> {
    if (invalid) *invalid = std::move(why);
    return std::nullopt;
  };
  std::error_code ec;
  const auto type = std::filesystem::symlink_status(file, ec).type();
  if (type == std::filesystem::file_type::not_found || type == std::filesystem::file_type::none) {
    return std::nullopt;
  }
  if (type != std::filesystem::file_type::regular) return bad("it is not a regular file");
  try {
    const std::string text = read_file(file, kMaxManifestBytes);
    json_limits limits;
    limits.max_depth = 2;  // {"files": ["a", ...]}
    limits.too_deep = [](int) { throw pev::error("nested too deeply"); };
    check_json(text, limits);
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return bad("it is not JSON");
    const auto version = j.is_object() ? j.find("pev_output_manifest") : j.end();
    if (!j.is_object() || version == j.end() || *version != kManifestVersion) {
      return bad(fmt::format("it lacks \"pev_output_manifest\": {}", kManifestVersion));
    }
    manifest m;
    for (const auto& [key, set] :
         {std::pair{"directories", &m.directories}, std::pair{"files", &m.files}}) {
      const auto it = j.find(key);
      if (it == j.end() || !it->is_array()) {
        return bad(fmt::format("its \"{}\" is not a list", key));
      }
      for (const auto& v : *it) {
        if (!v.is_string() || !is_inside_path(v.get<std::string>())) {
          return bad(fmt::format(
              "its \"{}\" lists {}, not a path inside the directory", key,
              detail::printable(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))));
        }
        set->insert(v.get<std::string>());
      }
    }
    return m;
  } catch (const std::exception& e) {
    return bad(detail::printable(e.what()));
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
  std::string invalid;
  const std::optional<manifest> m = read_manifest(dir, &invalid);
  if (!m && !invalid.empty()) {
    return fmt::format(
        "'{}' is a non-empty directory whose {} is not a valid pev manifest ({}): pev replaces "
        "only its own output directories, so choose a new or empty directory",
        shown, kManifest, invalid);
  }
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
  // A link that names nothing (dangling) or cannot be followed (a loop) is refused by name: pev
  // writes through a link, never replaces it, and does not guess a directory to create.
  if (fs::symlink_status(t.path, ec).type() == fs::file_type::symlink) {
    const fs::path link = t.path;
    t.path = fs::canonical(link, ec);
    if (ec == std::errc::no_such_file_or_directory) {
      std::error_code ec_link;
      const fs::path to = fs::read_symlink(link, ec_link);
      throw pev::error(fmt::format(
          "'{}' is a symbolic link to '{}', which does not exist: pev writes into the directory "
          "a link names and keeps the link, so create that directory or remove the link",
          dir.string(), detail::printable(to.string(), 200)));
    }
    if (ec) {
      throw pev::error(fmt::format("'{}' is a symbolic link that cannot be followed: {}",
                                   dir.string(), ec.message()));
    }
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

}  // namespace pev::io

// `pev verify CERT_DIR` (docs/certify.md §7): audits a certificate — re-hashes the inputs it names
// and re-runs the `pev certify` command it records, then compares the re-run's certificate with
// it field by field.

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/core/names.h"
#include "pev/core/text.h"
#include "pev/io/file.h"
#include "pev/report/difference.h"
#include "pev/report/json.h"

extern char** environ;

namespace pev::cli {

namespace {

namespace fs = std::filesystem;

/// A directory of its own under the system's temporary directory, removed with this object.
class temp_directory {
 public:
  temp_directory() {
    // TMPDIR (else /tmp) must be a directory pev can write: say which, not the library's text.
    const char* env = std::getenv("TMPDIR");
    const std::string where = env && *env ? fmt::format("TMPDIR={}", env) : "/tmp";
    std::error_code ec;
    const fs::path base = fs::temp_directory_path(ec);
    if (ec) {
      throw error(
          fmt::format("verify: {} is not a usable directory ({}): set TMPDIR to a "
                      "writable directory",
                      where, ec.message()));
    }
    std::string pattern = (base / "pev-verify-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw error(
          fmt::format("verify: cannot create a temporary directory in {} ({}): set TMPDIR "
                      "to a writable directory",
                      where, std::strerror(errno)));
    }
    path_ = pattern;
  }
  ~temp_directory() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  temp_directory(const temp_directory&) = delete;
  temp_directory& operator=(const temp_directory&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// The recorded `pev certify` arguments with --out replaced by `out` (appended when absent).
std::vector<std::string> rerun_arguments(const std::vector<std::string>& recorded,
                                         const fs::path& out) {
  std::vector<std::string> args;
  bool replaced = false;
  for (std::size_t k = 0; k < recorded.size(); ++k) {
    if (recorded[k] == "--out" && k + 1 < recorded.size()) {
      ++k;
    } else if (recorded[k].rfind("--out=", 0) == 0) {
    } else {
      args.push_back(recorded[k]);
      continue;
    }
    args.push_back("--out");
    args.push_back(out.string());
    replaced = true;
  }
  if (!replaced) {
    args.push_back("--out");
    args.push_back(out.string());
  }
  return args;
}

/// Runs this pev executable with `args` (stdout discarded, stderr into `log`); its exit status
/// (128 + the signal for a child killed by one).
int run_pev(const std::vector<std::string>& args, const fs::path& log) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(self.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw error(std::string("verify: cannot run pev: ") + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw error(std::string("verify: waitpid: ") + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// The recorded inputs that are not what they were: missing, or another SHA-256 now. Commands
/// (--exec) are left to the re-run.
std::vector<std::string> changed_inputs(const report::certification& c, std::size_t& hashed) {
  std::vector<std::string> changed;
  for (const auto& f : c.inputs) {
    const std::optional<std::string> now = certify::sha256_now(f);
    if (!now) {
      if (f.format != "exec") {
        changed.push_back("input " + f.path + " (" + f.format + "): not found as a file here");
      }
      continue;
    }
    hashed++;
    if (*now != f.sha256) {
      changed.push_back("input " + f.path + " (" + f.format + "): SHA-256 " + f.sha256 +
                        " recorded, " + *now + " now");
    }
  }
  return changed;
}

}  // namespace

command add_verify(CLI::App& app) {
  struct state {
    std::string dir;
    std::size_t max_differences = 20;
    bool allow_live = false;
  };
  auto st = std::make_shared<state>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Audit a certificate (docs/certify.md §7): re-hash every input it names and re-run the "
      "`pev certify` command it records (in the current directory, into a temporary directory; "
      "a merged certificate re-runs unsharded), then compare the re-run's certificate.json with "
      "it field by field: the verdict, the grade and every figure (not the wall time, the "
      "provenance or the merge's bookkeeping). Run it where the certificate's input paths "
      "resolve (the directory `pev certify` ran in is recorded as command.cwd).\nExit codes: 0 "
      "the re-run gives this certificate, 1 it does not (an input changed, or a field differs: "
      "each is named), 2 bad usage or input (no certificate, none recorded command, or the re-run "
      "itself failed).");
  cmd->add_option("dir", st->dir,
                  "The certificate's directory (with certificate.json), or its certificate.json")
      ->required();
  cmd->add_option("--max-differences", st->max_differences,
                  "How many differing fields to name at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--allow-live", st->allow_live,
                "Re-run a live implementation's certificate: its recorded --exec command or "
                "--plugin library runs again (a certificate is a file anyone can edit: read its "
                "command first; without this flag such a certificate is refused, exit 2)");
  return {cmd, [st]() -> int {
            // The directory, or its certificate.json given itself.
            std::error_code ec;
            const fs::path file = fs::is_directory(st->dir, ec) || !fs::exists(st->dir, ec)
                                      ? fs::path(st->dir) / "certificate.json"
                                      : fs::path(st->dir);
            if (!fs::exists(file, ec)) {
              throw error("verify: " + file.string() + " does not exist");
            }
            const std::string recorded_text = io::read_file(file, report::max_certificate_bytes);
            const report::results recorded = report::from_json(recorded_text, file.string());
            if (!recorded.certification) {
              throw error("verify: " + file.string() + " is a report, not a certificate");
            }
            const report::certification& c = *recorded.certification;
            if (c.command.empty()) {
              throw error("verify: " + file.string() +
                          " records no `pev certify` command (a certificate of pev's Python "
                          "module, or of an older pev): re-run the "
                          "certification and compare");
            }
            // The command is data from the certificate: only `pev certify` is run, and an
            // implementation it would start (a shell command, a library) only when allowed.
            if (c.command.front() != "certify") {
              throw error("verify: " + file.string() + " records the command 'pev " +
                          c.command.front() + " …', not a `pev certify`");
            }
            for (const std::string& a : c.command) {
              const bool live = a == "--exec" || a == "--plugin" || a.rfind("--exec=", 0) == 0 ||
                                a.rfind("--plugin=", 0) == 0;
              if (live && !st->allow_live) {
                std::string cmd;
                for (const std::string& x : c.command) cmd += " " + quoted_text(x);
                throw error("verify: " + file.string() +
                            " certifies a live implementation: re-running it runs its " + a +
                            " again (the command recorded: pev" + cmd +
                            "); check it and pass --allow-live");
              }
            }
            std::size_t hashed = 0;
            const std::vector<std::string> changed = changed_inputs(c, hashed);
            if (!changed.empty()) {
              std::cout << "NOT VERIFIED: " << escaped(file.string())
                        << ": its inputs are not the ones certified\n";
              for (const std::string& d : changed) std::cout << "  " << escaped(d) << "\n";
              return 1;
            }
            const temp_directory tmp;
            const fs::path out = tmp.path() / "certificate";
            const fs::path log = tmp.path() / "stderr.txt";
            const std::vector<std::string> args = rerun_arguments(c.command, out);
            std::cerr << "pev: verify: re-running pev " << escaped(args.front()) << " ("
                      << args.size() << " arguments) on " << hashed << " re-hashed input(s)\n";
            const int code = run_pev(args, log);
            const fs::path rerun = out / "certificate.json";
            if (code == 2 || code > 3 || !fs::exists(rerun)) {
              std::string why = io::read_file(log, 1 << 20);
              while (!why.empty() && why.back() == '\n') why.pop_back();
              throw error("verify: the re-run of " + file.string() + " ended with exit status " +
                          std::to_string(code) + " and no certificate" +
                          (why.empty() ? std::string() : ": " + why));
            }
            const std::string now_text = io::read_file(rerun, report::max_certificate_bytes);
            const std::vector<std::string> d =
                report::differences(recorded_text, now_text, report::run_specific_fields(),
                                    st->max_differences, file.string());
            const report::results now = report::from_json(now_text, rerun.string());
            if (!d.empty()) {
              std::cout << "NOT VERIFIED: " << escaped(file.string())
                        << " differs from its re-run (recorded grade " << to_string(c.result)
                        << ", exit " << recorded.exit_code() << "; re-run grade "
                        << to_string(now.certification->result) << ", exit " << now.exit_code()
                        << "):\n";
              for (const std::string& x : d) std::cout << "  " << escaped(x) << "\n";
              return 1;
            }
            if (recorded.prov.git_revision != now.prov.git_revision) {
              std::cerr << "pev: verify: note: made by pev " << escaped(recorded.prov.pev_version)
                        << " (" << escaped(recorded.prov.git_revision) << "), re-run by "
                        << escaped(now.prov.pev_version) << " (" << escaped(now.prov.git_revision)
                        << ")\n";
            }
            std::cout << "VERIFIED: " << escaped(file.string()) << ": " << hashed
                      << " input(s) re-hashed, its re-run gives the same certificate (grade "
                      << to_string(c.result) << ", exit " << recorded.exit_code() << ", "
                      << recorded.checks.size() << " checks)\n";
            return 0;
          }};
}

}  // namespace pev::cli

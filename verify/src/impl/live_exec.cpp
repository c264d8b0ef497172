// A subprocess (live.h): a command speaking pev's stdin/stdout protocol (docs/exec-protocol.md),
// killed with its process group when it hangs, breaks the protocol, or pev ends.

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "live_backends.h"
#include "pev/core/error.h"
#include "pev/core/text.h"
#include "pev/impl/exec_protocol.h"
#include "pev/impl/live.h"
#include "pev/impl/live_backend.h"

namespace pev::impl {

namespace {

using detail::call_result;
using detail::live_request;

using clock_type = std::chrono::steady_clock;

// The most of a child's stderr that pev passes on (escaped); the rest is read and dropped, so
// that a child that floods stderr neither blocks nor floods pev's.
constexpr std::size_t kMaxChildStderr = std::size_t{1} << 20;

// The process groups of running children, for the signal handler below: a SIGINT or SIGTERM that
// ends pev must not leave the child's own children (the shell's, a server's workers) running.
// PR_SET_PDEATHSIG reaches only the direct child. Fixed slots of atomics: the handler may run at
// any moment and may only use async-signal-safe calls.
constexpr int kGroupSlots = 64;
std::atomic<pid_t> running_groups[kGroupSlots];
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction previous_actions[std::size(kForwardedSignals)];

extern "C" void kill_groups_and_reraise(int sig) {
  for (auto& g : running_groups) {
    const pid_t pg = g.load();
    if (pg > 0) ::kill(-pg, SIGKILL);
  }
  for (std::size_t k = 0; k < std::size(kForwardedSignals); ++k) {
    if (kForwardedSignals[k] == sig) ::sigaction(sig, &previous_actions[k], nullptr);
  }
  ::raise(sig);
}

void install_signal_forwarding() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (std::size_t k = 0; k < std::size(kForwardedSignals); ++k) {
      struct sigaction a {};
      ::sigaction(kForwardedSignals[k], nullptr, &previous_actions[k]);
      if (previous_actions[k].sa_handler == SIG_IGN) continue;  // ignored (nohup): keep it so
      a.sa_handler = kill_groups_and_reraise;
      ::sigemptyset(&a.sa_mask);
      a.sa_flags = SA_RESETHAND;
      ::sigaction(kForwardedSignals[k], &a, nullptr);
    }
  });
}

void register_group(pid_t pg) {
  install_signal_forwarding();
  for (auto& g : running_groups) {
    pid_t empty = 0;
    if (g.compare_exchange_strong(empty, pg)) return;
  }
}

void unregister_group(pid_t pg) {
  for (auto& g : running_groups) {
    pid_t mine = pg;
    if (g.compare_exchange_strong(mine, 0)) return;
  }
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

class exec_backend final : public detail::live_backend {
 public:
  // `argv` empty: `command` is run by /bin/sh -c; otherwise argv is executed directly (no shell
  // in between, so that a crash shows as the process's own signal). `label` names it in messages.
  // `files`: what it runs, for certificates (the plugin library; an --exec command's files).
  exec_backend(std::string command, std::vector<std::string> argv, std::string kind,
               std::string label, std::vector<std::filesystem::path> files, exec_options o)
      : command_(std::move(command)),
        kind_(std::move(kind)),
        label_(std::move(label)),
        files_(std::move(files)),
        o_(o) {
    // Three channels: requests to its stdin and answers from its stdout on two socket pairs (so
    // that a closed stdout is an end of file at once, not something noticed at the timeout), and
    // its stderr on a pipe, passed on escaped and capped. Sockets rather than pipes for stdin:
    // send(MSG_NOSIGNAL) turns a dead peer into EPIPE instead of a SIGPIPE that would kill pev.
    int in[2], out[2], err[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
      throw error(fmt::format("{}: socketpair failed: {}", label_, std::strerror(errno)));
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) != 0) {
      const int e = errno;
      close(in[0]);
      close(in[1]);
      throw error(fmt::format("{}: socketpair failed: {}", label_, std::strerror(e)));
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
      const int e = errno;
      for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
      throw error(fmt::format("{}: pipe failed: {}", label_, std::strerror(e)));
    }
    // The child's ends are only used by the child; ours are half-duplex.
    shutdown(in[0], SHUT_RD);
    shutdown(out[0], SHUT_WR);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) {
      const int e = errno;
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
      throw error(fmt::format("{}: fork failed: {}", label_, std::strerror(e)));
    }
    if (pid_ == 0) {
      // Its own process group: the shell and whatever it starts are killed together.
      setpgid(0, 0);
      // And it dies with pev: a pev that is killed (even with SIGKILL) leaves no child running.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // pev died before prctl
      dup2(in[1], 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      // pev's handlers do not belong in the child (exec resets them, but not before it).
      for (int sig : kForwardedSignals) signal(sig, SIG_DFL);
      if (argv.empty()) {
        execl("/bin/sh", "sh", "-c", command_.c_str(), static_cast<char*>(nullptr));
      } else {
        execv(args[0], args.data());
      }
      _exit(127);
    }
    setpgid(pid_, pid_);  // also here: whichever of parent and child runs first
    register_group(pid_);
    close(in[1]);
    close(out[1]);
    close(err[1]);
    to_ = in[0];
    from_ = out[0];
    err_ = err[0];
    for (int fd : {to_, from_, err_}) set_nonblocking(fd);
    // Greeting: name and the outputs it serves. A process that dies, hangs or breaks the
    // protocol here is a failed check (failure()), like one that does so later; one that answers
    // with an error declines to serve: bad input.
    name_ = escaped(command_, {.max = 200});  // until it names itself
    protocol::request greeting;
    greeting.what = "hello";
    protocol::answer hello;
    try {
      hello = exchange(greeting, {});
    } catch (const error& e) {
      if (not_found_) throw error(fmt::format("{}: {}", label_, failure_));
      return;  // failure_ says what happened
    }
    if (!hello.ok) {
      throw error(fmt::format("{}: the greeting was refused: {}", label_,
                              hello.error.empty() ? "no message" : escaped(hello.error)));
    }
    // Shown in summaries and certificates: escaped, and short.
    name_ = escaped(hello.name.empty() ? command_ : hello.name, {.max = 200});
    outputs_ = hello.outputs;
  }

  ~exec_backend() override {
    if (to_ >= 0) close(to_);  // EOF on its stdin: the protocol's "done"
    if (from_ >= 0) close(from_);
    if (pid_ > 0) {
      // Up to 2 s to exit by itself (its stderr still passed on), then SIGKILL.
      bool exited = false;
      for (int k = 0; k < 200 && !exited; ++k) {
        exited = waitpid(pid_, nullptr, WNOHANG) == pid_;
        if (!exited) drain_stderr(10);
      }
      kill(-pid_, SIGKILL);  // the group: anything it left running
      if (!exited) waitpid(pid_, nullptr, 0);
      unregister_group(pid_);
    }
    drain_stderr(0);
    if (err_ >= 0) close(err_);
    if (dropped_ > 0) {
      std::fprintf(stderr,
                   "pev: %s: %zu more bytes of its stderr were dropped (at most %zu pass)\n",
                   escaped(label_).c_str(), dropped_, kMaxChildStderr);
    }
  }

  std::string kind() const override { return kind_; }
  std::string source() const override { return command_; }
  std::string name() const override { return name_; }
  std::vector<std::filesystem::path> files() const override { return files_; }
  std::optional<std::string> failure() const override {
    if (from_ >= 0) return std::nullopt;
    return fmt::format("{}: {}", label_, failure_);
  }
  bool has(output what) const override {
    const char* n = to_string(what);
    return std::find(outputs_.begin(), outputs_.end(), n) != outputs_.end();
  }

  call_result rope_table(const live_request& r, std::int64_t pairs, void* cos, void* sin) override {
    const auto n = static_cast<std::int64_t>(r.positions.size());
    return call(header(r, "rope_table"), bytes_of(r.positions),
                {{"cos", r.type, {n, pairs}}, {"sin", r.type, {n, pairs}}}, {cos, sin});
  }
  call_result inv_freq(const live_request& r, std::int64_t pairs, float* out) override {
    live_request fp32{r.spec, dtype::fp32, r.seq_len, {}};
    return call(header(fp32, "inv_freq"), {}, {{"inv_freq", dtype::fp32, {pairs}}}, {out});
  }
  call_result rope_rotate(const live_request& r, std::int64_t heads, std::int64_t dim,
                          const void* in, void* out) override {
    const auto n = static_cast<std::int64_t>(r.positions.size());
    std::string payload = bytes_of(r.positions);
    const auto* x = static_cast<const char*>(in);
    payload.append(x, static_cast<std::size_t>(n * heads * dim) * protocol::element_bytes(r.type));
    protocol::request h = header(r, "rope_rotate");
    h.heads = heads;
    h.head_dim = dim;
    return call(h, payload, {{"out", r.type, {n, heads, dim}}}, {out});
  }
  call_result sinusoidal_pe(const live_request& r, std::int64_t d_model, void* out) override {
    const auto n = static_cast<std::int64_t>(r.positions.size());
    return call(header(r, "sinusoidal_pe"), bytes_of(r.positions), {{"pe", r.type, {n, d_model}}},
                {out});
  }

 private:
  static protocol::request header(const live_request& r, const char* what) {
    protocol::request h;
    h.what = what;
    h.spec = r.spec;
    h.type = r.type;
    h.seq_len = r.seq_len;
    h.positions = static_cast<std::int64_t>(r.positions.size());
    return h;
  }

  static std::string bytes_of(std::span<const std::int64_t> v) {
    return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(std::int64_t)};
  }

  // Passes on what the child wrote to stderr (escaped: it reaches a terminal), up to
  // kMaxChildStderr bytes in all, dropping the rest; waits up to `ms` for some (sleeps `ms` when
  // its stderr is closed already: callers use it as their pause while polling the process).
  void drain_stderr(int ms) {
    if (err_ < 0) {
      if (ms > 0) usleep(static_cast<useconds_t>(ms) * 1000);
      return;
    }
    pollfd p{err_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return;
    char buffer[65536];
    for (;;) {
      const ssize_t k = read(err_, buffer, sizeof buffer);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        if (k == 0) {  // every writer closed it
          close(err_);
          err_ = -1;
        }
        return;
      }
      const std::size_t n = static_cast<std::size_t>(k);
      const std::size_t pass = std::min(n, kMaxChildStderr - std::min(kMaxChildStderr, passed_));
      if (pass > 0) {
        const std::string text = escaped(std::string_view(buffer, pass), {.keep_newlines = true});
        std::fwrite(text.data(), 1, text.size(), stderr);
        std::fflush(stderr);
      }
      passed_ += pass;
      dropped_ += n - pass;
    }
  }

  // The process broke the protocol or did not answer in time: it is not trusted any more. Kills
  // it (its whole process group), and throws saying what happened, and how it ended when it had
  // ended by itself (a crash shows as its signal). `alive_what`, when given, replaces `what` if the
  // process had not ended (it closed its stdout but kept running).
  [[noreturn]] void fail(const std::string& what, const std::string& alive_what = {}) {
    for (int* fd : {&to_, &from_}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
    std::string ended;
    bool exited = false;
    if (pid_ > 0) {
      int status = 0;
      bool already = waitpid(pid_, &status, WNOHANG) == pid_;
      // Its end of the socket closed: it is exiting; give it 200 ms to be reaped by itself, so
      // that a crash is reported with its signal.
      for (int k = 0; k < 100 && !already && peer_closed_; ++k) {
        drain_stderr(2);
        already = waitpid(pid_, &status, WNOHANG) == pid_;
      }
      kill(-pid_, SIGKILL);  // the whole process group (the shell and what it started)
      if (!already) waitpid(pid_, &status, 0);
      unregister_group(pid_);
      drain_stderr(0);
      if (already && WIFSIGNALED(status)) {
        ended = fmt::format(" (it was killed by signal {}: {})", WTERMSIG(status),
                            strsignal(WTERMSIG(status)));
        exited = true;
      } else if (already && WIFEXITED(status)) {
        ended = fmt::format(" (it exited with status {})", WEXITSTATUS(status));
        exited = true;
        // The shell's "command not found" (127) and "cannot execute" (126) before any answer:
        // the command line is wrong, not the implementation.
        not_found_ =
            !greeted_ && argv_shell() && (WEXITSTATUS(status) == 127 || WEXITSTATUS(status) == 126);
      }
      pid_ = -1;
    }
    failure_ = (!exited && !alive_what.empty() ? alive_what : what) + ended;
    if (not_found_) failure_ += ": the command was not found or cannot be executed";
    throw error(fmt::format("{}: {}", label_, failure_));
  }

  bool argv_shell() const { return kind_ == "exec"; }

  // A process killed by an earlier failure answers nothing more.
  void check_alive() const {
    if (from_ < 0) {
      throw error(fmt::format("{}: not asked: the process was killed after an earlier failure: {}",
                              label_, failure_));
    }
  }

  clock_type::time_point deadline() const { return clock_type::now() + o_.timeout; }

  // Waits for `events` on `fd` until `until`, passing stderr on meanwhile; fails with a timeout
  // message otherwise. Returns false when, waiting to send, the process closed its stdout (it
  // will not answer what is being sent: the caller stops sending and reads what it said).
  bool wait(int fd, short events, clock_type::time_point until, const char* doing) {
    while (true) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now()).count();
      if (left <= 0) {
        fail(fmt::format("no progress {} within {} ms; the process was killed", doing,
                         o_.timeout.count()));
      }
      pollfd p[3] = {{fd, events, 0}, {err_, POLLIN, 0}, {from_, POLLRDHUP, 0}};
      const nfds_t n = fd == to_ ? 3 : 2;
      const int rc = poll(p, n, static_cast<int>(std::min<long long>(left, 1000)));
      if (rc < 0 && errno != EINTR) fail(fmt::format("poll failed: {}", std::strerror(errno)));
      if (rc <= 0) continue;
      if (p[1].revents) drain_stderr(0);
      if (n == 3 && (p[2].revents & (POLLRDHUP | POLLHUP | POLLERR))) return false;
      if (p[0].revents) return true;
    }
  }

  void send_all(const std::string& bytes, clock_type::time_point until) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t k = ::send(to_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (k > 0) {
        done += static_cast<std::size_t>(k);
      } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (!wait(to_, POLLOUT, until, "reading the request")) return;
      } else {
        // It stopped reading (EPIPE): it may still have answered (an answer that does not wait
        // for the whole request, or an error). Stop sending; the answer, if any, is read next.
        peer_closed_ = true;
        return;
      }
    }
  }

  // Reads exactly n bytes into out.
  void recv_exact(char* out, std::size_t n, clock_type::time_point until) {
    std::size_t done = 0;
    while (done < n) {
      const ssize_t k = ::recv(from_, out + done, n - done, 0);
      if (k > 0) {
        done += static_cast<std::size_t>(k);
      } else if (k == 0 || errno == ECONNRESET) {
        peer_closed_ = true;
        fail(fmt::format("the process exited after {} of {} response bytes", done, n),
             fmt::format("the process closed its stdout after {} of {} response bytes (it was "
                         "still running, and was killed)",
                         done, n));
      } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        wait(from_, POLLIN, until, "on the response");
      } else {
        fail(fmt::format("read failed: {}", std::strerror(errno)));
      }
    }
  }

  std::string recv_line(clock_type::time_point until) {
    std::string line;
    while (true) {
      char c;
      const ssize_t k = ::recv(from_, &c, 1, 0);
      if (k == 1) {
        if (c == '\n') return line;
        line.push_back(c);
        if (line.size() > protocol::max_header_bytes) {
          fail(
              fmt::format("the response header exceeds {} bytes without a newline (flooding); "
                          "the process was killed",
                          protocol::max_header_bytes));
        }
      } else if (k == 0 || errno == ECONNRESET) {
        peer_closed_ = true;
        fail(line.empty() ? "the process exited without answering"
                          : "the process exited in the middle of a response header",
             line.empty() ? "the process closed its stdout without answering (it was still "
                            "running, and was killed)"
                          : "the process closed its stdout in the middle of a response header (it "
                            "was still running, and was killed)");
      } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        wait(from_, POLLIN, until, "on the response");
      } else {
        fail(fmt::format("read failed: {}", std::strerror(errno)));
      }
    }
  }

  protocol::answer exchange(protocol::request r, const std::string& payload) {
    check_alive();
    const auto until = deadline();
    r.payload_bytes = payload.size();
    send_all(protocol::request_line(r) + "\n" + payload, until);
    const std::string line = recv_line(until);
    try {
      protocol::answer a = protocol::parse_answer(line);
      greeted_ = true;
      return a;
    } catch (const error& e) {
      fail(e.what());
    } catch (const std::exception& e) {
      // Anything the JSON library throws is the other side's fault too, never pev's exit 2.
      fail(fmt::format("the response header could not be read: {}", e.what()));
    }
  }

  // One computing request; the answer's tensors (`want`, checked exactly) are read into `out`.
  call_result call(const protocol::request& r, const std::string& payload,
                   const std::vector<protocol::tensor>& want, const std::vector<void*>& out) {
    const auto until = deadline();
    const protocol::answer a = exchange(r, payload);
    if (!a.ok) {
      if (a.unsupported) return call_result::unsupported;
      // An error answer keeps to the protocol (no payload follows): the process stays.
      throw error(fmt::format("{}: {} failed: {}", label_, r.what,
                              a.error.empty() ? "no message" : escaped(a.error, {.max = 1000})));
    }
    try {
      protocol::expect_tensors(a, r.what, want);
    } catch (const error& e) {
      fail(e.what());
    }
    for (std::size_t k = 0; k < want.size(); ++k) {
      recv_exact(static_cast<char*>(out[k]), want[k].bytes(), until);
    }
    return call_result::ok;
  }

  std::string command_, kind_, label_;
  std::vector<std::filesystem::path> files_;
  exec_options o_;
  std::string failure_;
  bool peer_closed_ = false;
  bool greeted_ = false;
  bool not_found_ = false;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1, err_ = -1;
  std::size_t passed_ = 0, dropped_ = 0;
  std::string name_;
  std::vector<std::string> outputs_;
};

}  // namespace

std::shared_ptr<detail::live_backend> detail::exec_backend_for(
    std::string command, std::vector<std::string> argv, std::string kind, std::string label,
    std::vector<std::filesystem::path> files, exec_options o) {
  return std::make_shared<exec_backend>(std::move(command), std::move(argv), std::move(kind),
                                        std::move(label), std::move(files), o);
}

std::vector<std::filesystem::path> command_files(const std::string& command) {
  // Words as a shell splits them, roughly: blanks separate, quotes group (and are removed), a
  // backslash escapes the next character. Nothing is expanded: this names files, it runs nothing.
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < command.size()) {
        word += command[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' ||
               c == '>' || c == '(' || c == ')') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  std::vector<std::filesystem::path> files;
  const auto add = [&](const std::string& w) {
    std::error_code ec;
    if (w.empty() || !std::filesystem::is_regular_file(w, ec)) return;
    const std::filesystem::path p(w);
    if (std::find(files.begin(), files.end(), p) == files.end()) files.push_back(p);
  };
  for (const auto& w : words) {
    add(w);
    if (const auto eq = w.find('='); eq != std::string::npos) add(w.substr(eq + 1));
  }
  return files;
}

std::unique_ptr<live_implementation> start_exec(const std::string& command,
                                                const spec::encoding& claimed,
                                                kernel::strategy accuracy, const exec_options& o) {
  return std::make_unique<live_implementation>(
      detail::exec_backend_for(command, std::vector<std::string>{}, "exec",
                               fmt::format("--exec '{}'", command), command_files(command), o),
      claimed, accuracy);
}

}  // namespace pev::impl

// `pev serve --strategy NAME`: a built-in strategy as a live implementation speaking pev's
// stdin/stdout protocol (docs/exec-protocol.md), so that `pev certify --exec 'pev serve ...'`
// certifies pev's own kernels through the same path as third-party code (and the protocol has a
// reference server).

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "pev/core/error.h"
#include "pev/impl/exec_protocol.h"
#include "pev/impl/implementation.h"
#include "pev/impl/live.h"
#include "pev/kernel/strategy.h"
#include "pev/spec/parse.h"

namespace pev::cli {
namespace {

namespace protocol = impl::protocol;

// The protocol channel: pev's stdin and stdout as they were at start-up, moved to descriptors of
// their own. File descriptors 0 and 1 then become /dev/null and stderr, so that whatever the served
// code reads from stdin or prints to stdout (a plugin's debug printf) cannot corrupt the protocol.
struct channel {
  int in = -1;
  FILE* out = nullptr;
  std::string buffer;  // read but not yet consumed
  std::size_t at = 0;
  bool eof = false;

  // Reads more input; false at its end.
  bool fill() {
    if (eof) return false;
    if (at == buffer.size()) {
      buffer.clear();
      at = 0;
    }
    char chunk[65536];
    for (;;) {
      const ssize_t k = ::read(in, chunk, sizeof chunk);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        eof = true;
        return false;
      }
      buffer.append(chunk, static_cast<std::size_t>(k));
      return true;
    }
  }
  // One line without its '\n'; false at the end of the input. Throws pev::error for a line
  // longer than the protocol allows.
  bool line(std::string& out_line) {
    for (;;) {
      const auto nl = buffer.find('\n', at);
      if (nl != std::string::npos) {
        out_line.assign(buffer, at, nl - at);
        at = nl + 1;
        return true;
      }
      if (buffer.size() - at > protocol::max_header_bytes) {
        throw error(fmt::format("a request header exceeds {} bytes", protocol::max_header_bytes));
      }
      if (!fill()) return false;
    }
  }
  // The next n bytes into `bytes` (nullptr: skipped); false when the input ends first.
  bool take(std::size_t n, std::string* bytes) {
    if (bytes) bytes->clear();
    while (n > 0) {
      if (at == buffer.size() && !fill()) return false;
      const std::size_t k = std::min(n, buffer.size() - at);
      if (bytes) bytes->append(buffer, at, k);
      at += k;
      n -= k;
    }
    return true;
  }
};

channel proto;

void take_over_stdio() {
  proto.in = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  const int out = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (proto.in < 0 || out < 0) throw error("serve: cannot duplicate stdin/stdout");
  proto.out = ::fdopen(out, "w");
  if (proto.out == nullptr) throw error("serve: cannot open the protocol channel");
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, 0);
    ::close(null);
  }
  std::fflush(stdout);
  ::dup2(2, 1);
}

void reply(const protocol::answer& a, const std::vector<std::string>& payloads = {}) {
  const std::string line = protocol::answer_line(a) + "\n";
  std::fwrite(line.data(), 1, line.size(), proto.out);
  for (const auto& p : payloads) std::fwrite(p.data(), 1, p.size(), proto.out);
  std::fflush(proto.out);
}

protocol::answer ok_answer(std::vector<protocol::tensor> tensors) {
  protocol::answer a;
  a.ok = true;
  a.tensors = std::move(tensors);
  return a;
}

void reply_error(const std::string& message) {
  protocol::answer a;
  a.error = message;
  reply(a);
}

void reply_unsupported() {
  protocol::answer a;
  a.unsupported = true;
  reply(a);
}

template <class T>
std::string bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

template <class T>
protocol::tensor tensor(const char* name, std::vector<std::int64_t> shape) {
  return {name, dtype_of<T>(), std::move(shape)};
}

// One well-formed request (its payload checked against it by the protocol parser); returns false
// when the implementation does not serve it.
template <class T>
bool serve_one(const impl::implementation& im, const protocol::request& req,
               const std::string& payload) {
  const std::int64_t n = req.positions;
  const auto* p = reinterpret_cast<const std::int64_t*>(payload.data());
  const std::vector<std::int64_t> pos(p, p + n);
  const std::optional<std::int64_t> seq =
      req.seq_len < 0 ? std::nullopt : std::optional(req.seq_len);
  const dtype t = dtype_of<T>();
  const auto& what = req.what;
  // The answer's size is checked (tensor::bytes) before anything is computed.
  const auto answer = [](std::vector<protocol::tensor> ts) {
    for (const auto& x : ts) x.bytes();
    return ok_answer(std::move(ts));
  };
  if (what == "rope_table" && im.supports(impl::output::rope_table, t)) {
    const auto pairs = std::get<spec::rope>(im.claimed_spec()).pairs();
    const auto a = answer({tensor<T>("cos", {n, pairs}), tensor<T>("sin", {n, pairs})});
    std::vector<T> c(pos.size() * static_cast<std::size_t>(pairs)), s(c.size());
    im.rope_table(pos, seq, std::span<T>(c), std::span<T>(s));
    reply(a, {bytes(c), bytes(s)});
    return true;
  }
  if (what == "inv_freq" && im.supports(impl::output::inv_freq, dtype::fp32)) {
    const std::vector<float> f = im.inv_freq(seq);
    reply(answer({tensor<float>("inv_freq", {static_cast<std::int64_t>(f.size())})}), {bytes(f)});
    return true;
  }
  if (what == "rope_rotate" && im.supports(impl::output::rope_rotate, t)) {
    const std::int64_t heads = req.heads, dim = req.head_dim;
    const auto a = answer({tensor<T>("out", {n, heads, dim})});
    const auto* x = reinterpret_cast<const T*>(payload.data() + n * 8);
    std::vector<T> in(x, x + n * heads * dim), out(in.size());
    im.rope_rotate(pos, seq, kernel::heads_view<const T>{in, n, heads, dim},
                   kernel::heads_view<T>{out, n, heads, dim});
    reply(a, {bytes(out)});
    return true;
  }
  if (what == "sinusoidal_pe" && im.supports(impl::output::sinusoidal_pe, t)) {
    const auto d = std::get<spec::sinusoidal>(im.claimed_spec()).d_model;
    const auto a = answer({tensor<T>("pe", {n, d})});
    std::vector<T> v(pos.size() * static_cast<std::size_t>(d));
    im.sinusoidal_pe(pos, std::span<T>(v));
    reply(a, {bytes(v)});
    return true;
  }
  return false;
}

// What is served: a built-in strategy, or a plugin (loaded here, in this process: `pev certify
// --plugin LIB --isolate` runs `pev serve --plugin LIB` as its child).
struct served {
  kernel::strategy strategy = kernel::strategy::accurate;
  std::unique_ptr<impl::live_implementation> plugin;  // set: serve the plugin

  std::string name() const {
    // live_implementation::name() is "plugin:NAME"; the client adds its own kind.
    return plugin ? plugin->name().substr(plugin->kind().size() + 1)
                  : std::string("pev-") + kernel::to_string(strategy);
  }
  // The implementation of `e`, or null when it is not served.
  std::unique_ptr<impl::implementation> bind(const spec::encoding& e) const {
    if (plugin) return plugin->rebind(e);
    if (!impl::builtin_supports(e, strategy)) return nullptr;
    return impl::make_builtin(e, strategy);
  }
};

void serve_request(const served& s, const protocol::request& req, const std::string& payload) {
  if (req.what == "hello") {
    protocol::answer a = ok_answer({});
    a.name = s.name();
    a.outputs = {"rope_table", "inv_freq", "rope_rotate", "sinusoidal_pe"};
    reply(a);
    return;
  }
  const auto im = s.bind(spec::parse_spec(req.spec));
  bool ok = false;
  if (im) {
    // The protocol parser admits fp32, fp16 and bf16 only.
    ok = visit_output_float(req.type, [&](auto tag) {
      return serve_one<typename decltype(tag)::type>(*im, req, payload);
    });
  }
  if (!ok) reply_unsupported();
}

}  // namespace

command add_serve(CLI::App& app) {
  struct settings {
    std::string strategy = "accurate";
    std::string plugin;
  };
  auto st = std::make_shared<settings>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve a built-in strategy (or a plugin) over pev's stdin/stdout protocol "
      "(docs/exec-protocol.md): `pev certify --exec 'pev serve --strategy hf'` certifies it as "
      "third-party code is. Reads requests until its input ends.");
  auto* strategy_opt =
      cmd->add_option("--strategy", st->strategy, "hf, ggml, table-fp16, table-bf16 or accurate")
          ->capture_default_str();
  cmd->add_option("--plugin", st->plugin,
                  "Serve this pev_plugin.h library instead (what `pev certify --plugin LIB "
                  "--isolate` runs in its child process)")
      ->excludes(strategy_opt);
  return {cmd, [st]() -> int {
            take_over_stdio();
            served s;
            std::string load_error;
            if (st->plugin.empty()) {
              s.strategy = kernel::parse_strategy(st->strategy);
            } else {
              try {
                s.plugin = impl::load_plugin(st->plugin, spec::encoding{}, kernel::strategy::hf);
              } catch (const error& e) {
                load_error = e.what();  // answered to the greeting (and to every request)
              }
            }
            std::string line;
            for (;;) {
              try {
                if (!proto.line(line)) break;
              } catch (const error& e) {
                reply_error(e.what());
                return 2;
              }
              protocol::parsed_request p;
              try {
                p = protocol::parse_request(line);
              } catch (const error& e) {
                // Without payload_bytes the stream cannot be followed: answer and stop.
                reply_error(e.what());
                return 2;
              }
              std::string payload;
              if (!p.problem.empty() || !load_error.empty()) {
                proto.take(p.r.payload_bytes, nullptr);
                reply_error(load_error.empty() ? p.problem : load_error);
                continue;
              }
              if (!proto.take(p.r.payload_bytes, &payload)) {
                reply_error("the input ended inside a request's payload");
                return 2;
              }
              try {
                serve_request(s, p.r, payload);
              } catch (const std::exception& ex) {
                reply_error(ex.what());
              }
            }
            return 0;
          }};
}

}  // namespace pev::cli

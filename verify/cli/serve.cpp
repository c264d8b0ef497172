// `pev serve --strategy NAME`: a built-in strategy as a live implementation speaking pev's
// stdin/stdout protocol (docs/exec-protocol.md), so that `pev certify --exec 'pev serve ...'`
// certifies pev's own kernels through the same path as third-party code (and the protocol has a
// reference server).

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "pev/core/error.h"
#include "pev/impl/implementation.h"
#include "pev/kernel/strategy.h"
#include "pev/spec/parse.h"

namespace pev::cli {
namespace {

using json = nlohmann::json;

void reply(const json& header, const std::vector<std::string>& payloads = {}) {
  const std::string line = header.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  for (const auto& p : payloads) std::fwrite(p.data(), 1, p.size(), stdout);
  std::fflush(stdout);
}

template <class T>
std::string bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

impl::dtype parse_dtype(const std::string& s) {
  if (s == "fp32") return impl::dtype::fp32;
  if (s == "fp16") return impl::dtype::fp16;
  if (s == "bf16") return impl::dtype::bf16;
  throw error("unknown dtype '" + s + "'");
}

template <class T>
json tensor(const char* name, std::vector<std::int64_t> shape) {
  return {{"name", name}, {"dtype", impl::to_string(impl::dtype_of<T>())}, {"shape", shape}};
}

// One request; returns false when the implementation does not serve it.
template <class T>
bool serve_one(const impl::implementation& im, const json& req, const std::string& payload) {
  const std::string what = req.at("request");
  const auto n = req.value("positions", std::int64_t{0});
  const auto* p = reinterpret_cast<const std::int64_t*>(payload.data());
  const std::vector<std::int64_t> pos(p, p + n);
  const std::int64_t seq_raw = req.value("seq_len", std::int64_t{-1});
  const std::optional<std::int64_t> seq = seq_raw < 0 ? std::nullopt : std::optional(seq_raw);
  const impl::dtype t = impl::dtype_of<T>();
  if (what == "rope_table" && im.supports(impl::output::rope_table, t)) {
    const auto pairs = std::get<spec::rope>(im.claimed_spec()).pairs();
    std::vector<T> c(pos.size() * static_cast<std::size_t>(pairs)), s(c.size());
    im.rope_table(pos, seq, std::span<T>(c), std::span<T>(s));
    reply({{"ok", true}, {"tensors", {tensor<T>("cos", {n, pairs}), tensor<T>("sin", {n, pairs})}}},
          {bytes(c), bytes(s)});
    return true;
  }
  if (what == "inv_freq" && im.supports(impl::output::inv_freq, impl::dtype::fp32)) {
    const std::vector<float> f = im.inv_freq(seq);
    reply({{"ok", true},
           {"tensors", {tensor<float>("inv_freq", {static_cast<std::int64_t>(f.size())})}}},
          {bytes(f)});
    return true;
  }
  if (what == "rope_rotate" && im.supports(impl::output::rope_rotate, t)) {
    const std::int64_t heads = req.at("heads"), dim = req.at("head_dim");
    const auto* x = reinterpret_cast<const T*>(payload.data() + n * 8);
    std::vector<T> in(x, x + n * heads * dim), out(in.size());
    im.rope_rotate(pos, seq, kernel::heads_view<const T>{in, n, heads, dim},
                   kernel::heads_view<T>{out, n, heads, dim});
    reply({{"ok", true}, {"tensors", {tensor<T>("out", {n, heads, dim})}}}, {bytes(out)});
    return true;
  }
  if (what == "sinusoidal_pe" && im.supports(impl::output::sinusoidal_pe, t)) {
    const auto d = std::get<spec::sinusoidal>(im.claimed_spec()).d_model;
    std::vector<T> v(pos.size() * static_cast<std::size_t>(d));
    im.sinusoidal_pe(pos, std::span<T>(v));
    reply({{"ok", true}, {"tensors", {tensor<T>("pe", {n, d})}}}, {bytes(v)});
    return true;
  }
  return false;
}

}  // namespace

command add_serve(CLI::App& app) {
  auto strategy = std::make_shared<std::string>("accurate");
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve a built-in strategy over pev's stdin/stdout protocol (docs/exec-protocol.md): "
      "`pev certify --exec 'pev serve --strategy hf'` certifies it as third-party code is.");
  cmd->add_option("--strategy", *strategy, "hf, ggml, table-fp16, table-bf16 or accurate")
      ->capture_default_str();
  return {cmd, [strategy]() -> int {
            const kernel::strategy st = kernel::parse_strategy(*strategy);
            std::string line;
            while (std::getline(std::cin, line)) {
              json req;
              std::string payload;
              try {
                req = json::parse(line);
                payload.resize(req.value("payload_bytes", std::size_t{0}));
                std::cin.read(payload.data(), static_cast<std::streamsize>(payload.size()));
                if (req.at("request") == "hello") {
                  reply({{"ok", true},
                         {"name", std::string("pev-") + kernel::to_string(st)},
                         {"outputs", {"rope_table", "inv_freq", "rope_rotate", "sinusoidal_pe"}}});
                  continue;
                }
                const spec::encoding e = spec::parse_spec(req.at("spec").get<std::string>());
                if (!impl::builtin_supports(e, st)) {
                  reply({{"ok", false}, {"unsupported", true}});
                  continue;
                }
                const auto im = impl::make_builtin(e, st);
                bool ok = false;
                switch (parse_dtype(req.value("dtype", std::string("fp32")))) {
                  case impl::dtype::fp32:
                    ok = serve_one<float>(*im, req, payload);
                    break;
                  case impl::dtype::fp16:
                    ok = serve_one<half>(*im, req, payload);
                    break;
                  case impl::dtype::bf16:
                    ok = serve_one<bfloat16>(*im, req, payload);
                    break;
                }
                if (!ok) reply({{"ok", false}, {"unsupported", true}});
              } catch (const std::exception& ex) {
                reply({{"ok", false}, {"error", ex.what()}});
              }
            }
            return 0;
          }};
}

}  // namespace pev::cli

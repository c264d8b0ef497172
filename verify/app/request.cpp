// One certify request (pev/app/request.h; docs/certify.md §9): checked, its inputs read and
// hashed, its spec resolved, then certified as a model trace, a dump or a live implementation.

#include "pev/app/request.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <utility>

#include "pev/app/certify.h"
#include "pev/app/encoding.h"
#include "pev/app/inputs.h"
#include "pev/app/limits.h"
#include "pev/app/positions.h"
#include "pev/app/progress.h"
#include "pev/app/properties.h"
#include "pev/certify/trace.h"
#include "pev/core/error.h"
#include "pev/core/text.h"
#include "pev/io/file.h"
#include "pev/io/positions.h"
#include "pev/spec/config.h"
#include "pev/spec/model.h"
#include "pev/spec/parse.h"

namespace pev::app {

namespace {

using certify::input_file;

// ---- Checks -------------------------------------------------------------------------------------

// The live numbers in range (a dump's run checks them too: before any work).
void check_live_ranges(const certify_request& r) {
  require_range(flag_name(r, "--max-position").c_str(), r.max_position, 0, kMaxPositionLimit);
  require_range(flag_name(r, "--samples").c_str(), r.samples, 0, kMaxSamples);
  require_range(flag_name(r, "--property-cases").c_str(), r.property_cases, 1, 1000000);
}

// The implementation named, the numbers in range, before any work.
void check_request(const certify_request& r) {
  const bool live = !r.plugin.empty() || !r.exec.empty() || r.live;
  // pev.certify names its implementation (impl=) before it asks: an empty dict of tensors is the
  // engine's to refuse, naming the tensors it looked for.
  if (r.front == front_end::cli && r.files.empty() && !live) {
    throw error("one of --impl FILE, --plugin LIB.so or --exec 'CMD' is required");
  }
  // NaN and 1e308 too: the timeout becomes milliseconds in a 64-bit integer.
  if (r.front == front_end::cli) require_range("--timeout", r.timeout, 0.001, 86400);
  check_live_ranges(r);
  require_range(flag_name(r, "--threads").c_str(), r.threads, 0, kMaxThreads);
  if (r.seq_len) require_range(flag_name(r, "--seq-len").c_str(), *r.seq_len, 1, INT64_MAX);
  if (!r.plugin.empty() && !std::filesystem::is_regular_file(r.plugin)) {
    // dlopen, or hashing it, would wait forever on a FIFO.
    throw error("--plugin " + r.plugin + ": not a regular file");
  }
}

// --out is replaced as a whole: an input inside it would be deleted.
void refuse_inputs_inside_out(const certify_request& r) {
  if (r.out.empty()) return;
  std::vector<input_path> inputs = {
      {"--config", r.config_file}, {"--positions-file", r.positions_file}, {"--plugin", r.plugin}};
  for (const auto& f : r.files) inputs.push_back({"--impl", f});
  for (const auto& f : impl::command_files(r.exec)) inputs.push_back({"--exec", f});
  app::refuse_inputs_inside_out(r.out, inputs);
  io::check_output_directory(r.out);  // before the work, not after it
}

// ---- Inputs -------------------------------------------------------------------------------------

// The dump: its files read (hashed beside the comparison, certify_dump), or the tensors given,
// each hashed as its row-major little-endian bytes (hashlib.sha256 of numpy's tobytes()).
certify::dump read_implementation(certify_request& r) {
  if (!r.files.empty()) return certify::read_dump(r.files, /*hash=*/false);
  certify::dump d;
  d.tensors = std::move(r.tensors);
  for (const auto& [name, a] : d.tensors) {
    d.files.push_back(
        {"tensor '" + name + "' " + to_string(a.type) + " " + io::shape_string(a.shape), "python",
         certify::sha256_bytes(
             std::string_view(reinterpret_cast<const char*>(a.data.data()), a.data.size()))});
  }
  return d;
}

// What the certificate is held to: one encoding, or a model's (a trace against its config).
struct resolved_spec {
  spec::encoding e;
  std::optional<spec::model_spec> model;
};

// --config | --spec | the encoding given | the dump's metadata. Every file read is hashed in the
// certificate (`used`): the config's bytes are read once, both parsed and hashed.
resolved_spec resolve_spec(const certify_request& r, const certify::dump& d, bool trace,
                           std::vector<input_file>& used) {
  resolved_spec s;
  used.insert(used.end(), r.encoding_inputs.begin(), r.encoding_inputs.end());
  if (!r.config_file.empty()) {
    spec::config_options co;
    co.layer_type = r.layer_type;
    const std::string text = io::read_file(r.config_file, spec::max_config_bytes);
    if (trace) {
      s.model = spec::parse_config_model_text(text, r.config_file);
    } else {
      s.e = spec::parse_config_encoding_text(text, r.config_file, co);
    }
    used.push_back({r.config_file, "config", certify::sha256_bytes(text)});
  } else if (r.encoding) {
    s.e = *r.encoding;
  } else if (!r.spec_text.empty()) {
    // A learned table's table=FILE is read, refused inside --out, and hashed.
    s.e = parse_encoding(r.spec_text);
    for (const input_path& f : encoding_files(s.e)) {
      app::refuse_inputs_inside_out(r.out, {f});
      used.push_back({f.path.string(), f.flag, certify::sha256_file(f.path)});
    }
  } else if (const auto it = d.metadata.find("spec"); it != d.metadata.end()) {
    s.e = spec::parse_spec(it->second);
    if (r.note) r.note("spec from the dump's metadata: " + escaped(it->second));
  } else if (r.front == front_end::python) {
    throw error("spec: required (the dump's metadata names no spec)");
  } else {
    throw error(
        "one of --spec SPEC or --config config.json is required (the dump's metadata names no "
        "spec)");
  }
  return s;
}

// How the dump is read and held (certify::options); a positions file read and hashed (`used`).
certify::options dump_options(const certify_request& r, std::vector<input_file>& used) {
  certify::options o;
  o.threads = static_cast<int>(r.threads);
  if (!r.recipe.empty()) o.recipe = r.recipe;
  if (!r.layout.empty()) o.layout = certify::parse_table_layout(r.layout);
  if (!r.qk_layout.empty()) o.qk_layout = certify::parse_qk_layout(r.qk_layout);
  if (!r.qk_order.empty()) o.qk_order = certify::parse_qk_order(r.qk_order);
  if (!r.positions.empty()) o.positions = parse_position_range(r.positions, false);
  if (r.positions_given) o.positions = *r.positions_given;
  if (!r.positions_file.empty()) {
    const std::string bytes = io::read_file(r.positions_file, io::max_positions_file_bytes);
    o.positions = io::parse_positions(bytes, r.positions_file);
    used.push_back({r.positions_file, "positions", certify::sha256_bytes(bytes)});
  }
  o.seq_len = r.seq_len;
  o.diagnose = r.diagnose;
  set_certify_options(o, r.reference, r.libm, r.max_trig_ulp);
  o.exhaustive = r.exhaustive;
  const std::pair<int, int> shard = r.shard.empty() ? std::pair{0, 1} : parse_shard(r.shard);
  o.shard_index = shard.first;
  o.shard_count = shard.second;
  // Progress on a terminal (docs/certify.md §9.1).
  if (r.progress) o.progress = certify_progress("certify");
  return o;
}

// ---- Certification ------------------------------------------------------------------------------

// --layers: indices and half-open ranges A:B, separated by commas; empty: none given.
std::vector<std::int64_t> parse_layers(const certify_request& r) {
  std::vector<std::int64_t> out;
  const std::string& text = r.layers;
  const std::string flag = flag_name(r, "--layers");
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const auto v = parse_position_range(text.substr(start, comma - start), false, flag);
    out.insert(out.end(), v.begin(), v.end());
    start = comma + 1;
  }
  return out;
}

// A trace certified against one --spec: every layer and model-level site it holds under that
// encoding.
spec::model_spec uniform_model(const spec::encoding& e, const certify::dump& d) {
  spec::model_spec m;
  const std::vector<std::int64_t> layers = certify::traced_layers(d);
  m.num_layers = layers.empty() ? 0 : layers.back() + 1;
  for (const char* site : {"decoder", "embed", "encoder"}) {
    const std::string prefix = std::string(site) + ".";
    const bool held = std::any_of(d.tensors.begin(), d.tensors.end(), [&](const auto& t) {
      return t.first.compare(0, prefix.size(), prefix) == 0;
    });
    if (held) m.layers.push_back({-1, site, site, e, "--spec"});
  }
  for (const std::int64_t i : layers) {
    spec::layer_spec l;
    l.index = i;
    l.type = "full_attention";
    l.encoding = e;
    l.rule = "--spec";
    m.layers.push_back(std::move(l));
  }
  return m;
}

// A model trace (docs/certify.md §8): every layer against the encoding its config (or the one
// spec) gives it; the trace moved in, its blocks let go site by site (docs/certify.md §8.2).
certify::certificate certify_model(const certify_request& r, resolved_spec& s, certify::dump d,
                                   const certify::options& o) {
  if (!r.layer_type.empty()) {
    throw error(flag_name(r, "--layer-type") +
                ": a model trace is certified layer by layer, each layer under its own type's "
                "encoding (docs/certify.md §8); leave " +
                flag_name(r, "--layer-type") + " out");
  }
  certify::trace_options to;
  to.layers = parse_layers(r);
  if (!s.model) s.model = uniform_model(s.e, d);
  return certify::certify_trace(*s.model, std::move(d), o, to);
}

// The certificate of an in-process plugin that ended pev's process with exit(): not certified,
// saying what it was running.
certify::certificate plugin_exit_certificate(const certify_request& r, const spec::encoding& e,
                                             const std::string& sha256, dtype type, int status) {
  const char* during = impl::plugin_call_in_progress();
  certify::certificate c = certify::failed_certificate(
      e, "live implementation plugin:" + r.plugin, {{r.plugin, "plugin", sha256}},
      r.recipe.empty() ? std::nullopt : std::optional<std::string>(r.recipe), "plugin " + r.plugin,
      type,
      fmt::format("--plugin {}: the plugin ended the process with exit({}) while pev was {}; no "
                  "verdict was reached, so it is not certified",
                  r.plugin, status, during ? fmt::format("running {}", during) : "running"));
  c.prov.seed = r.seed;
  return c;
}

void record_inputs(const certify_request& r, certify::certificate& c,
                   const std::vector<input_file>& used);

// A live implementation: a plugin (isolated, or in this process under the front end's exit
// guard), a command, or the front end's own; asked, then certified as a dump, then its properties.
certify::certificate certify_implementation(const certify_request& r, const spec::encoding& e,
                                            certify::options o,
                                            const std::vector<input_file>& used) {
  certify::live_options lo = live_options(r);
  lo.property_checks = live_property_checks;
  const kernel::strategy acc = kernel::parse_strategy(r.accuracy);
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(r.timeout * 1000));
  std::unique_ptr<impl::live_implementation> im;
  std::shared_ptr<void> guard;
  if (r.live) {
    im = r.live(e, acc, lo);
  } else if (!r.plugin.empty()) {
    impl::plugin_options po;
    po.isolate = !r.in_process;
    po.timeout = timeout;
    // The child is this very executable, running `serve --plugin`.
    if (po.isolate) po.server = std::filesystem::read_symlink("/proc/self/exe");
    if (!po.isolate && r.guard_exit) {
      // In this process, a plugin's exit() would end pev with the plugin's status. Hashed before
      // the guard is armed: OpenSSL registers its own exit cleanup when first used, and must not
      // have run it when the guard needs it.
      const std::string sha256 = certify::sha256_file(r.plugin);
      guard = r.guard_exit([&r, &e, &used, sha256, type = lo.type](int status) {
        certify::certificate c = plugin_exit_certificate(r, e, sha256, type, status);
        record_inputs(r, c, used);
        if (r.publish) r.publish(c);
      });
    }
    im = impl::load_plugin(r.plugin, e, acc, po);
  } else {
    im = impl::start_exec(r.exec, e, acc, impl::exec_options{timeout});
  }
  o.exhaustive = false;  // live: --exhaustive chooses the positions (live_options)
  certify::certificate c = certify::certify_live(e, *im, o, lo);
  im.reset();  // a plugin's destructors run here, still guarded
  return c;
}

// The files the request read (config, positions, a learned table), after the engine's inputs,
// and what `pev verify` re-runs (docs/certify.md §7).
void record_inputs(const certify_request& r, certify::certificate& c,
                   const std::vector<input_file>& used) {
  auto& in = c.certification->inputs;
  in.insert(in.end(), used.begin(), used.end());
  if (!r.command) return;
  c.certification->command = *r.command;
  std::error_code ec;
  c.certification->cwd = std::filesystem::current_path(ec).string();
}

}  // namespace

std::string flag_name(const certify_request& r, const std::string& flag) {
  if (r.front == front_end::cli) return flag;
  std::string name = flag.substr(flag.rfind('-', 1) == 1 ? 2 : 0);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

certify::live_options live_options(const certify_request& r) {
  check_live_ranges(r);
  certify::live_options lo;
  lo.max_position = r.max_position;
  lo.samples = static_cast<int>(r.samples);
  lo.exhaustive = r.exhaustive;
  lo.seed = r.seed;
  if (r.dtype) {
    try {
      lo.type = parse_float_dtype(*r.dtype);
    } catch (const error& e) {
      throw error(flag_name(r, "--dtype") + ": " + e.what());
    }
  }
  lo.properties = r.properties;
  lo.property_cases = static_cast<int>(r.property_cases);
  return lo;
}

certify::certificate certify(certify_request r) {
  check_request(r);
  refuse_inputs_inside_out(r);
  certify::dump d = read_implementation(r);
  const bool trace = !r.files.empty() && certify::is_trace(d);
  std::vector<input_file> used;
  resolved_spec s = resolve_spec(r, d, trace, used);
  const certify::options o = dump_options(r, used);
  certify::certificate c;
  if (trace) {
    c = certify_model(r, s, std::move(d), o);
  } else if (!r.layers.empty()) {
    throw error(flag_name(r, "--layers") +
                ": only for a model trace (docs/certify.md §8), and the dump holds no "
                "layers.{i}.* tensor");
  } else if (!r.files.empty() || !d.tensors.empty()) {
    c = certify::certify_dump(s.e, d, o);
  } else {
    c = certify_implementation(r, s.e, o, used);
  }
  record_inputs(r, c, used);
  return c;
}

}  // namespace pev::app

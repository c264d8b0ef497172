// The subprocess protocol's messages (exec_protocol.h, docs/exec-protocol.md).

#include "pev/impl/exec_protocol.h"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "pev/core/error.h"
#include "pev/core/json_check.h"
#include "pev/core/text.h"

namespace pev::impl::protocol {
namespace {

using json = nlohmann::json;

// Headers are flat objects with arrays of scalars or of flat objects: 8 levels is plenty, and
// bounds what a hostile line can make the parser build.
constexpr int max_depth = 8;

// Text from the other side quoted in a message: at most 200 bytes, control characters and bytes
// that are not UTF-8 escaped (the message reaches a terminal, and certificate.json, which must be
// valid UTF-8).
std::string clip(std::string_view s) { return escaped(s, {.max = 200}); }

json parse_header(std::string_view line, const char* what) {
  if (line.size() > max_header_bytes) {
    throw error(fmt::format("{} header exceeds {} bytes", what, max_header_bytes));
  }
  json_limits limits;
  limits.max_depth = max_depth;
  limits.too_deep = [&](int) {
    throw error(fmt::format("{} header is nested more than {} levels deep", what, max_depth));
  };
  check_json(line, limits);  // linear, before anything is built
  json j;
  try {
    j = json::parse(line.begin(), line.end());
  } catch (const json::exception& e) {
    throw error(fmt::format("{} header is not JSON ({}): '{}'", what,
                            clip(json_error_text(e.what())), clip(line)));
  }
  if (!j.is_object()) throw error(fmt::format("{} header is not a JSON object", what));
  return j;
}

// Typed field access: absent → nullopt; present with another type → pev::error naming the key.
std::optional<std::int64_t> get_int(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_unsigned()) {
    const auto u = it->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw error(fmt::format("\"{}\" is {}, beyond int64", key, u));
    }
    return static_cast<std::int64_t>(u);
  }
  throw error(fmt::format("\"{}\" must be an integer, got {}", key, clip(it->dump())));
}

std::optional<std::string> get_string(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (!it->is_string()) {
    throw error(fmt::format("\"{}\" must be a string, got {}", key, clip(it->dump())));
  }
  return it->get<std::string>();
}

std::optional<bool> get_bool(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (!it->is_boolean()) {
    throw error(fmt::format("\"{}\" must be true or false, got {}", key, clip(it->dump())));
  }
  return it->get<bool>();
}

// a·b, or nullopt when it exceeds `limit` (all operands ≥ 0).
std::optional<std::size_t> product(std::initializer_list<std::int64_t> factors, std::size_t limit) {
  std::size_t p = 1;
  for (const std::int64_t f : factors) {
    if (f < 0) return std::nullopt;
    const auto u = static_cast<std::size_t>(f);
    if (u != 0 && p > limit / u) return std::nullopt;
    p *= u;
  }
  return p <= limit ? std::optional(p) : std::nullopt;
}

}  // namespace

std::size_t element_bytes(dtype t) { return size_of(t); }

std::size_t tensor::bytes() const {
  std::size_t n = element_bytes(type);
  for (const std::int64_t d : shape) {
    const auto p = product({static_cast<std::int64_t>(n), d}, max_payload_bytes);
    if (!p) {
      throw error(fmt::format("tensor '{}' of shape {} exceeds {} bytes", clip(name),
                              json(shape).dump(), max_payload_bytes));
    }
    n = *p;
  }
  return n;
}

bool request::computes() const { return what != "hello"; }

std::string request_line(const request& r) {
  json h = {{"pev", 1}, {"request", r.what}};
  if (r.computes()) {
    h["spec"] = r.spec;
    h["dtype"] = to_string(r.type);
    h["seq_len"] = r.seq_len;
    h["positions"] = r.positions;
  }
  if (r.what == "rope_rotate") {
    h["heads"] = r.heads;
    h["head_dim"] = r.head_dim;
  }
  h["payload_bytes"] = r.payload_bytes;
  return h.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::size_t request_payload_bytes(const request& r) {
  if (r.what == "hello" || r.what == "inv_freq") return 0;
  const auto pos = product({r.positions, 8}, max_payload_bytes);
  if (!pos) throw error(fmt::format("{} positions exceed the payload limit", r.positions));
  if (r.what != "rope_rotate") return *pos;
  const auto in =
      product({r.positions, r.heads, r.head_dim, static_cast<std::int64_t>(element_bytes(r.type))},
              max_payload_bytes - *pos);
  if (!in) {
    throw error(fmt::format("rope_rotate input [{}, {}, {}] exceeds the payload limit", r.positions,
                            r.heads, r.head_dim));
  }
  return *pos + *in;
}

parsed_request parse_request(std::string_view line) {
  const json j = parse_header(line, "the request");
  parsed_request out;
  const auto bytes = get_int(j, "payload_bytes");
  if (!bytes) throw error("the request has no \"payload_bytes\"");
  if (*bytes < 0 || static_cast<std::uint64_t>(*bytes) > max_payload_bytes) {
    throw error(fmt::format("\"payload_bytes\" {} is outside [0, {}]", *bytes, max_payload_bytes));
  }
  request& r = out.r;
  r.payload_bytes = static_cast<std::size_t>(*bytes);
  try {
    if (get_int(j, "pev") != 1) throw error("\"pev\" must be 1 (protocol version 1)");
    const auto what = get_string(j, "request");
    if (!what) throw error("the request has no \"request\"");
    r.what = *what;
    if (r.computes()) {
      const auto spec = get_string(j, "spec");
      if (!spec) throw error(fmt::format("{} has no \"spec\"", clip(r.what)));
      r.spec = *spec;
      r.type = parse_float_dtype(get_string(j, "dtype").value_or("fp32"));
      r.seq_len = get_int(j, "seq_len").value_or(-1);
      if (r.seq_len < -1) throw error(fmt::format("\"seq_len\" {} is below -1", r.seq_len));
      r.positions = get_int(j, "positions").value_or(0);
      if (r.positions < 0) throw error(fmt::format("\"positions\" {} is negative", r.positions));
    }
    if (r.what == "rope_rotate") {
      r.heads = get_int(j, "heads").value_or(0);
      r.head_dim = get_int(j, "head_dim").value_or(0);
      if (r.heads <= 0 || r.head_dim <= 0) {
        throw error(fmt::format("rope_rotate needs positive \"heads\" and \"head_dim\", got {}, {}",
                                r.heads, r.head_dim));
      }
    }
    const std::size_t need = request_payload_bytes(r);
    if (need != r.payload_bytes) {
      throw error(fmt::format("{} carries {} payload bytes where it needs {}", clip(r.what),
                              r.payload_bytes, need));
    }
  } catch (const error& e) {
    out.problem = e.what();
  }
  return out;
}

answer parse_answer(std::string_view line) {
  const json j = parse_header(line, "the response");
  answer a;
  const auto ok = get_bool(j, "ok");
  if (!ok) throw error("the response has no \"ok\"");
  a.ok = *ok;
  a.unsupported = get_bool(j, "unsupported").value_or(false);
  if (const auto it = j.find("error"); it != j.end()) {
    a.error = it->is_string() ? it->get<std::string>() : clip(it->dump());
  }
  a.name = get_string(j, "name").value_or("");
  if (const auto it = j.find("outputs"); it != j.end()) {
    if (!it->is_array()) throw error("\"outputs\" must be an array of strings");
    for (const auto& v : *it) {
      if (!v.is_string()) throw error("\"outputs\" must be an array of strings");
      a.outputs.push_back(v.get<std::string>());
    }
  }
  if (const auto it = j.find("tensors"); it != j.end()) {
    if (!it->is_array()) throw error("\"tensors\" must be an array");
    for (const auto& t : *it) {
      if (!t.is_object()) {
        throw error(fmt::format("a tensor must be an object, got {}", clip(t.dump())));
      }
      tensor x;
      x.name = get_string(t, "name").value_or("");
      x.type = parse_float_dtype(get_string(t, "dtype").value_or(""));
      const auto s = t.find("shape");
      if (s == t.end() || !s->is_array()) {
        throw error(fmt::format("tensor '{}' has no \"shape\" array", clip(x.name)));
      }
      for (const auto& d : *s) {
        if (!d.is_number_integer() || d.get<std::int64_t>() < 0) {
          throw error(fmt::format("tensor '{}': shape {} is not a list of non-negative integers",
                                  clip(x.name), clip(s->dump())));
        }
        x.shape.push_back(d.get<std::int64_t>());
      }
      x.bytes();  // refuses sizes beyond the limit
      a.tensors.push_back(std::move(x));
    }
  }
  return a;
}

std::size_t expect_tensors(const answer& a, std::string_view what, std::span<const tensor> want) {
  if (a.tensors.size() != want.size()) {
    throw error(fmt::format("{}: expected {} tensor(s) in the response, got {}", what, want.size(),
                            a.tensors.size()));
  }
  std::size_t bytes = 0;
  for (std::size_t k = 0; k < want.size(); ++k) {
    const tensor& t = a.tensors[k];
    const tensor& w = want[k];
    if (!(t == w)) {
      throw error(fmt::format(
          "{}: tensor {} must be {{\"name\": \"{}\", \"dtype\": \"{}\", \"shape\": {}}}, got "
          "{{\"name\": \"{}\", \"dtype\": \"{}\", \"shape\": {}}}",
          what, k, w.name, to_string(w.type), json(w.shape).dump(), clip(t.name), to_string(t.type),
          clip(json(t.shape).dump())));
    }
    bytes += w.bytes();
    if (bytes > max_payload_bytes) {
      throw error(fmt::format("{}: the answer exceeds {} bytes", what, max_payload_bytes));
    }
  }
  return bytes;
}

std::string answer_line(const answer& a) {
  json h = {{"ok", a.ok}};
  if (a.unsupported) h["unsupported"] = true;
  if (!a.error.empty()) h["error"] = a.error;
  if (!a.name.empty()) h["name"] = a.name;
  if (!a.outputs.empty()) h["outputs"] = a.outputs;
  if (!a.tensors.empty()) {
    h["tensors"] = json::array();
    for (const auto& t : a.tensors) {
      h["tensors"].push_back({{"name", t.name}, {"dtype", to_string(t.type)}, {"shape", t.shape}});
    }
  }
  return h.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace pev::impl::protocol

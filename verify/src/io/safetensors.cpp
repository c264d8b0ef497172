#include "pev/io/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/core/json_check.h"
#include "pev/core/text.h"

// The format (huggingface/safetensors, safetensors/src/tensor.rs): a u64 little-endian header
// length N; N bytes of UTF-8 JSON mapping each tensor name to {"dtype": "F32", "shape": [2, 3],
// "data_offsets": [begin, end]}, plus an optional "__metadata__" string map; then the data section,
// which the offsets index from its start. The reference reader refuses headers above 100 MB,
// offsets that do not tile the data section contiguously from 0 to the end of the file, and sizes
// that differ from shape × dtype; pev refuses the same files.

namespace pev::io {

namespace {

// nlohmann::json (std::map objects), not ordered_json: ordered_json's objects are vectors searched
// linearly on every insertion, which made a header of n tensors cost O(n²) (10^5 tensors: 10 s).
// The order of the tensors in the header is kept separately, by check_json.
using json = nlohmann::json;

constexpr int max_json_depth = 16;

std::string where(std::string_view source) { return fmt::format("safetensors file '{}'", source); }

using detail::fail;

std::string json_text(const json& j) {
  return detail::printable(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 60);
}

const char* json_kind(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a bool";
  if (j.is_null()) return "null";
  if (j.is_number_float()) return "a non-integer number";
  if (j.is_number_integer() && !j.is_number_unsigned()) return "a negative integer";
  return "a number";
}

// The header JSON and its top-level keys in header order.
struct header_json {
  json root;
  std::vector<std::string> order;
};

// Parses the header JSON, refusing duplicate keys (the JSON grammar allows them; a tensor or field
// given twice is ambiguous) and nesting deeper than any valid header needs, and records the order
// of the top-level keys. Linear in the header's size (pev/core/json_check.h).
header_json parse_header_json(const std::string& text, const std::string& w) {
  header_json out;
  json_limits limits;
  limits.max_depth = max_json_depth;
  limits.reject_duplicate_keys = true;
  limits.too_deep = [&](int) { fail("{}: header JSON is nested too deeply", w); };
  limits.duplicate_key = [&](const std::string& key) {
    fail("{}: duplicate key '{}' in the header", w, detail::printable(key, 60));
  };
  out.order = check_json(text, limits);
  try {
    out.root = json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: header is not valid JSON ({})", w, json_error_text(e.what()));
  }
  return out;
}

struct entry {
  std::string name;
  dtype type = dtype::fp64;
  bool complex = false;  // C64: each element two F32 (real, imag)
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

entry parse_entry(const std::string& name, const json& j, const std::string& w,
                  std::uint64_t data_size, const safetensors_options& o) {
  const std::string t = fmt::format("{}: tensor '{}'", w, detail::printable(name, 60));
  if (!j.is_object()) {
    fail("{} is {}, expected an object with 'dtype', 'shape' and 'data_offsets'", t, json_kind(j));
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail("{}: unexpected field '{}'; expected exactly 'dtype', 'shape' and 'data_offsets'", t,
           detail::printable(key, 40));
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!j.contains(key)) {
      fail("{}: missing field '{}'; expected exactly 'dtype', 'shape' and 'data_offsets'", t, key);
    }
  }
  entry e;
  e.name = name;

  const json& dt = j["dtype"];
  if (!dt.is_string()) {
    fail("{}: field 'dtype' is {} ({}), expected a string such as \"F32\"", t, json_kind(dt),
         json_text(dt));
  }
  if (dt.get_ref<const std::string&>() == "C64") {
    if (!o.complex_as_pairs) {
      fail(
          "{}: field 'dtype': dtype 'C64' (complex64) is not supported here; complex tensors are "
          "read only where pev expects them, as (real, imag) pairs (pev certify: a complex "
          "freqs_cis)",
          t);
    }
    e.type = dtype::fp32;
    e.complex = true;
  } else {
    try {
      e.type = parse_safetensors_dtype(dt.get_ref<const std::string&>());
    } catch (const pev::error& err) {
      fail("{}: field 'dtype': {}", t, err.what());
    }
  }

  const json& shape = j["shape"];
  if (!shape.is_array()) {
    fail("{}: field 'shape' is {} ({}), expected an array of non-negative integers", t,
         json_kind(shape), json_text(shape));
  }
  constexpr auto int64_max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const json& d = shape[i];
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > int64_max) {
      fail("{}: field 'shape' entry {} is {} ({}), expected a non-negative integer below 2^63", t,
           i, json_kind(d), json_text(d));
    }
    e.shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
  }

  const json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    fail("{}: field 'data_offsets' is {}, expected [begin, end], two non-negative integers", t,
         json_text(offsets));
  }
  e.begin = offsets[0].get<std::uint64_t>();
  e.end = offsets[1].get<std::uint64_t>();
  const std::string range = fmt::format("[{}, {}]", e.begin, e.end);
  if (e.begin > e.end) fail("{}: field 'data_offsets' {} ends before it begins", t, range);

  // Overflow-checked before anything is allocated: shape × dtype must be exactly end − begin.
  const auto elements = detail::checked_product(e.shape);
  if (!elements) {
    fail("{}: field 'shape' {} has more elements than fit in 64 bits", t, shape_string(e.shape));
  }
  const std::string what = fmt::format("shape {} of {}", shape_string(e.shape),
                                       e.complex ? "C64" : safetensors_name(e.type));
  const auto bytes = detail::checked_mul(*elements, size_of(e.type) * (e.complex ? 2 : 1));
  if (!bytes) fail("{}: {} needs more than 2^64 bytes", t, what);
  if (*bytes != e.end - e.begin) {
    fail("{}: field 'data_offsets' {} spans {} bytes but {} needs {}", t, range, e.end - e.begin,
         what, *bytes);
  }
  if (e.end > data_size) {
    fail("{}: field 'data_offsets' {} runs past the end of the data section ({} bytes)", t, range,
         data_size);
  }
  return e;
}

tensor_file read(const detail::byte_source& src, std::string_view source,
                 const safetensors_options& o) {
  const std::string w = where(source);
  const std::uint64_t size = src.size();
  if (size < 8) {
    fail("{}: file is {} bytes, too short for the 8-byte header length", w, size);
  }
  std::byte prefix[8];
  src.read(0, prefix, 8);
  const std::uint64_t n = detail::load_le<std::uint64_t>(prefix);
  if (n > max_safetensors_header) {
    fail("{}: header length {} exceeds the limit of {} bytes (100 MB)", w, n,
         max_safetensors_header);
  }
  if (n > size - 8) {
    fail("{}: header length {} runs past the end of the file ({} bytes)", w, n, size);
  }
  const std::string header = src.read_string(8, static_cast<std::size_t>(n));
  if (auto bad = detail::utf8_error(header)) {
    fail("{}: header is not valid UTF-8 (byte {} of the header)", w, *bad);
  }
  const header_json parsed = parse_header_json(header, w);
  const json& root = parsed.root;
  if (!root.is_object()) {
    fail(
        "{}: header is {}, expected a JSON object mapping tensor names to {{dtype, shape, "
        "data_offsets}}",
        w, json_kind(root));
  }

  const std::uint64_t data_start = 8 + n;
  const std::uint64_t data_size = size - data_start;
  tensor_file out;
  std::vector<entry> entries;
  entries.reserve(parsed.order.size());
  for (const std::string& key : parsed.order) {
    const json& value = root.at(key);
    if (key == "__metadata__") {
      if (!value.is_object()) {
        fail("{}: '__metadata__' is {}, expected an object mapping strings to strings", w,
             json_kind(value));
      }
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          fail(
              "{}: '__metadata__' value of '{}' is {} ({}), expected a string (metadata is a "
              "string-to-string map)",
              w, detail::printable(mk, 60), json_kind(mv), json_text(mv));
        }
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(key, value, w, data_size, o));
  }

  // File order is data order (ties, i.e. empty tensors, in header order); the data must tile
  // [0, data_size) without overlaps or gaps.
  std::stable_sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t cursor = 0;
  const entry* previous = nullptr;
  for (const entry& e : entries) {
    if (e.begin < cursor) {
      fail("{}: tensors '{}' (data_offsets [{}, {}]) and '{}' ([{}, {}]) overlap", w,
           detail::printable(previous->name, 60), previous->begin, previous->end,
           detail::printable(e.name, 60), e.begin, e.end);
    }
    if (e.begin > cursor) {
      fail(
          "{}: {} bytes before tensor '{}' (data_offsets begin at {}) belong to no tensor; the "
          "data must be contiguous",
          w, e.begin - cursor, detail::printable(e.name, 60), e.begin);
    }
    cursor = e.end;
    previous = &e;
  }
  if (cursor != data_size) {
    fail(
        "{}: {} trailing bytes after the last tensor (data section of {} bytes, tensors end at "
        "{})",
        w, data_size - cursor, data_size, cursor);
  }

  for (entry& e : entries) {
    array a;
    a.type = e.type;
    a.shape = std::move(e.shape);
    if (e.complex) a.shape.push_back(2);  // (real, imag), as torch.view_as_real
    a.complex = e.complex;
    a.data = src.buffer(data_start + e.begin, static_cast<std::size_t>(e.end - e.begin),
                        size_of(e.type));
    out.names.push_back(e.name);
    out.tensors.emplace(e.name, std::move(a));
  }
  return out;
}

// The header JSON, padded with spaces so that the data starts at a multiple of 8 bytes.
// The header of tensors laid out in this order, with this metadata ("__metadata__" first when
// not empty): the one writer of safetensors headers, for whole files and streamed ones.
std::string header_of(const std::vector<tensor_layout>& tensors,
                      const std::map<std::string, std::string>& metadata, const std::string& w) {
  // Written piece by piece, in the order given (a JSON object built whole would either lose that
  // order or, as ordered_json, cost O(n²) for n tensors).
  const auto dump = [&](const auto& j) {
    try {
      return j.dump();
    } catch (const json::exception& e) {
      fail("{}: a tensor name or metadata string is not valid UTF-8 ({})", w,
           json_error_text(e.what()));
    }
  };
  std::string text = "{";
  if (!metadata.empty()) {
    json meta = json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    text += "\"__metadata__\":" + dump(meta);
  }
  std::uint64_t offset = 0;
  std::set<std::string> seen;
  for (const tensor_layout& a : tensors) {
    if (a.name == "__metadata__") fail("{}: '__metadata__' cannot name a tensor", w);
    if (!seen.insert(a.name).second) fail("{}: tensor '{}' is listed twice", w, a.name);
    // Three keys in the reference writer's order (an ordered_json this small costs nothing).
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = std::string(safetensors_name(a.type));
    entry["shape"] = a.shape;
    entry["data_offsets"] = {offset, offset + a.bytes()};
    offset += a.bytes();
    if (text.size() > 1) text += ',';
    text += dump(json(a.name)) + ":" + dump(entry);
  }
  text += "}";
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  detail::store_le(reinterpret_cast<std::byte*>(out.data()),
                   static_cast<std::uint64_t>(text.size()));
  return out + text;
}

std::string header_bytes(const tensor_file& t, const std::string& w) {
  if (t.names.size() != t.tensors.size()) {
    fail("{}: tensor_file lists {} names but holds {} tensors", w, t.names.size(),
         t.tensors.size());
  }
  std::vector<tensor_layout> layout;
  layout.reserve(t.names.size());
  for (const std::string& name : t.names) {
    if (name == "__metadata__") fail("{}: '__metadata__' cannot name a tensor", w);
    const auto it = t.tensors.find(name);
    if (it == t.tensors.end()) fail("{}: tensor '{}' is listed but missing", w, name);
    const array& a = it->second;
    a.check(fmt::format("{}: tensor '{}'", w, name));
    layout.push_back({name, a.type, a.shape});
  }
  return header_of(layout, t.metadata, w);
}

}  // namespace

std::uint64_t tensor_layout::bytes() const {
  std::uint64_t n = size_of(type);
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

std::string safetensors_header(const std::vector<tensor_layout>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  return header_of(tensors, metadata, "safetensors");
}

void tensor_file::add(const std::string& name, array a) {
  if (name == "__metadata__") fail("'__metadata__' cannot name a tensor");
  if (tensors.count(name)) fail("tensor '{}' is already present", name);
  names.push_back(name);
  tensors.emplace(name, std::move(a));
}

const array& tensor_file::at(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it != tensors.end()) return it->second;
  std::string list;
  for (const auto& n : names) list += fmt::format("{}'{}'", list.empty() ? "" : ", ", n);
  fail("no tensor named '{}' (the file holds {})", name, list.empty() ? "no tensors" : list);
}

std::string safetensors_bytes(const tensor_file& t) {
  std::string out = header_bytes(t, "safetensors");
  for (const std::string& name : t.names) {
    const array& a = t.tensors.at(name);
    out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  }
  return out;
}

void write_safetensors(const std::filesystem::path& file, const tensor_file& t) {
  const std::string header = header_bytes(t, where(file.string()));
  detail::atomic_writer w(file);
  w.write(header);
  for (const std::string& name : t.names) {
    const array& a = t.tensors.at(name);
    w.write(a.data.data(), a.data.size());
  }
  w.commit();
}

tensor_file parse_safetensors(std::string_view bytes, std::string_view source) {
  return parse_safetensors(bytes, source, {});
}

tensor_file parse_safetensors(std::string_view bytes, std::string_view source,
                              const safetensors_options& o) {
  return read(*detail::memory_source(bytes), source, o);
}

tensor_file read_safetensors(const std::filesystem::path& file) {
  return read_safetensors(file, {});
}

tensor_file read_safetensors(const std::filesystem::path& file, const safetensors_options& o) {
  return read(*detail::file_source(file), file.string(), o);
}

}  // namespace pev::io

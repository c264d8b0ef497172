#include "pev/io/npy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "detail.h"
#include "pev/core/error.h"

// The format (numpy/lib/format.py, NEP 1): the magic "\x93NUMPY", a major and a minor version
// byte, a little-endian header length (uint16 in 1.0, uint32 in 2.0 and 3.0), then the header: the
// repr of a Python dict {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces
// and a final '\n' so that the data starts at a multiple of 64 bytes. 1.0 and 2.0 headers are
// latin-1, 3.0 headers UTF-8.

namespace pev::io {

namespace {

constexpr std::string_view magic = "\x93NUMPY";
// Headers numpy writes are well under 1 KiB for the dtypes pev reads; numpy's reader refuses
// headers above 10,000 characters by default. The cap bounds what a header can make us allocate.
constexpr std::uint64_t max_header_bytes = 1 << 20;
constexpr int max_nesting = 32;

std::string where(std::string_view source) { return fmt::format("npy file '{}'", source); }

using detail::fail;

// ---- A Python literal, as much of it as npy headers use ----

struct py_value {
  enum class kind { string, integer, big_integer, floating, boolean, none, tuple, list, dict };
  kind k = kind::none;
  std::string text;  // the source text, for messages
  std::string str;   // string value
  std::int64_t integer = 0;
  bool boolean = false;
  std::vector<py_value> items;  // tuple, list
  // dict, in source order: keys[k] maps to values[k]. (Two vectors of the type being defined, not
  // a vector of pair<py_value, py_value>: the pair would need the type complete.)
  std::vector<py_value> keys, values;
};

const char* kind_name(py_value::kind k) {
  switch (k) {
    case py_value::kind::string:
      return "a string";
    case py_value::kind::integer:
    case py_value::kind::big_integer:
      return "an integer";
    case py_value::kind::floating:
      return "a float";
    case py_value::kind::boolean:
      return "a bool";
    case py_value::kind::none:
      return "None";
    case py_value::kind::tuple:
      return "a tuple";
    case py_value::kind::list:
      return "a list";
    case py_value::kind::dict:
      return "a dict";
  }
  return "?";
}

// Recursive descent over the subset of Python literal syntax that ast.literal_eval accepts and npy
// writers produce: strings, integers (with Python 2's 'L' suffix in 1.0/2.0 files), floats (parsed
// only to be refused), True/False/None, tuples, lists and dicts, with arbitrary whitespace and
// trailing commas. Nesting is capped so that a hostile header cannot exhaust the stack.
class literal_parser {
 public:
  literal_parser(std::string_view text, std::string_view source, bool allow_long_suffix)
      : text_(text), source_(source), allow_long_(allow_long_suffix) {}

  py_value parse_document() {
    skip_space();
    py_value v = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the dict");
    return v;
  }

 private:
  [[noreturn]] void error(std::string_view what) const {
    fail("{}: header is not a valid Python dict literal ({} at offset {}): \"{}\"", where(source_),
         what, pos_, detail::printable(text_, 160));
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else {
        break;
      }
    }
  }

  void expect(char c) {
    skip_space();
    if (peek() != c) error(fmt::format("expected '{}'", c));
    ++pos_;
  }

  py_value parse_value(int depth) {
    if (depth > max_nesting) error("nesting too deep");
    skip_space();
    if (at_end()) error("unexpected end of header");
    const std::size_t start = pos_;
    py_value v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.k = py_value::kind::string;
      v.str = parse_string();
    } else if (c == '(') {
      ++pos_;
      bool comma = false;
      auto items = parse_sequence(')', depth, comma);
      if (items.size() == 1 && !comma) {
        // "(5)" is the integer 5 in Python, not a tuple.
        v = std::move(items.front());
      } else {
        v.k = py_value::kind::tuple;
        v.items = std::move(items);
      }
    } else if (c == '[') {
      ++pos_;
      bool comma = false;
      v.k = py_value::kind::list;
      v.items = parse_sequence(']', depth, comma);
    } else if (c == '{') {
      ++pos_;
      v.k = py_value::kind::dict;
      parse_dict_body(v, depth);
    } else if (c == '-' || c == '+' || (c >= '0' && c <= '9') || c == '.') {
      parse_number(v);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t end = pos_;
      while (end < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) {
        ++end;
      }
      const std::string_view word = text_.substr(pos_, end - pos_);
      if (word == "True" || word == "False") {
        v.k = py_value::kind::boolean;
        v.boolean = word == "True";
      } else if (word == "None") {
        v.k = py_value::kind::none;
      } else {
        error(fmt::format("unexpected name '{}'", detail::printable(word, 40)));
      }
      pos_ = end;
    } else {
      error(fmt::format("unexpected character '{}'", detail::printable(text_.substr(pos_, 1))));
    }
    v.text = std::string(text_.substr(start, pos_ - start));
    return v;
  }

  std::vector<py_value> parse_sequence(char close, int depth, bool& comma) {
    std::vector<py_value> items;
    for (;;) {
      skip_space();
      if (peek() == close) {
        ++pos_;
        return items;
      }
      items.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        comma = true;
      } else if (peek() == close) {
        ++pos_;
        return items;
      } else {
        error(fmt::format("expected ',' or '{}'", close));
      }
    }
  }

  void parse_dict_body(py_value& v, int depth) {
    for (;;) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        return;
      }
      py_value key = parse_value(depth + 1);
      expect(':');
      py_value value = parse_value(depth + 1);
      v.keys.push_back(std::move(key));
      v.values.push_back(std::move(value));
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() == '}') {
        ++pos_;
        return;
      } else {
        error("expected ',' or '}'");
      }
    }
  }

  std::string parse_string() {
    const char quote = text_[pos_++];
    std::string out;
    for (;;) {
      if (at_end()) error("unterminated string");
      const char c = text_[pos_++];
      if (c == quote) return out;
      if (c == '\n') error("newline in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) error("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '\\':
        case '\'':
        case '"':
          out += e;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        default:
          // Other escapes never occur in dtype strings; keep them verbatim (they cannot match).
          out += '\\';
          out += e;
      }
    }
  }

  void parse_number(py_value& v) {
    const std::size_t start = pos_;
    bool negative = false;
    if (peek() == '-' || peek() == '+') {
      negative = peek() == '-';
      ++pos_;
      skip_space();  // Python allows "- 5"
    }
    const std::size_t digits_start = pos_;
    while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    std::string_view digits = text_.substr(digits_start, pos_ - digits_start);
    const char next = peek();
    if (next == '.' || next == 'e' || next == 'E' || next == 'j' || next == 'J') {
      // A float (or complex): consume it so the message can show it, then let the caller refuse it.
      while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '.' ||
                           ((peek() == '+' || peek() == '-') &&
                            (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E')))) {
        ++pos_;
      }
      v.k = py_value::kind::floating;
      return;
    }
    if (digits.empty()) {
      pos_ = start;
      error("expected a number");
    }
    if (allow_long_ && (next == 'L' || next == 'l')) ++pos_;  // Python 2 long, as numpy filters
    if (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_') {
      error("malformed number");
    }
    // Magnitude as uint64 so that −2^63 parses; anything beyond int64 is a big integer.
    std::uint64_t magnitude = 0;
    bool big = false;
    for (char d : digits) {
      auto m = detail::checked_mul(magnitude, 10);
      if (!m || *m > std::numeric_limits<std::uint64_t>::max() - static_cast<unsigned>(d - '0')) {
        big = true;
        break;
      }
      magnitude = *m + static_cast<unsigned>(d - '0');
    }
    constexpr std::uint64_t limit = std::uint64_t{1} << 63;
    if (big || magnitude > limit || (!negative && magnitude == limit)) {
      v.k = py_value::kind::big_integer;
      return;
    }
    v.k = py_value::kind::integer;
    v.integer = negative ? static_cast<std::int64_t>(std::uint64_t{0} - magnitude)
                         : static_cast<std::int64_t>(magnitude);
  }

  std::string_view text_;
  std::string_view source_;
  bool allow_long_;
  std::size_t pos_ = 0;
};

// ---- dtype descriptors ----

constexpr std::string_view supported_descrs = "'<f8', '<f4', '<f2', '<i4', '<i8'";

std::string bf16_hint() {
  return "bf16 arrays are stored as '<u2' holding the bfloat16 encodings; read them with "
         "read_npy(file, /*u2_is_bf16=*/true)";
}

struct npy_type {
  dtype type = dtype::fp64;
  bool complex = false;  // each element is two of `type`: (real, imag)
};

npy_type parse_descr(const std::string& d, std::string_view source, const npy_options& o) {
  if (d == "<f8") return {dtype::fp64};
  if (d == "<f4") return {dtype::fp32};
  if (d == "<f2") return {dtype::fp16};
  if (d == "<i4") return {dtype::int32};
  if (d == "<i8") return {dtype::int64};
  if (d == "<u2") {
    if (o.u2_is_bf16) return {dtype::bf16};
    fail("{}: header field 'descr' is '<u2' (uint16), which pev reads only as bf16 when asked: {}",
         where(source), bf16_hint());
  }
  if (d == "<c8" || d == "<c16") {
    if (o.complex_as_pairs) return {d == "<c8" ? dtype::fp32 : dtype::fp64, true};
    fail(
        "{}: header field 'descr' is '{}', which is not supported here; complex arrays are read "
        "only where pev expects them, as (real, imag) pairs (pev certify: a complex freqs_cis)",
        where(source), d);
  }
  const std::string head =
      fmt::format("{}: header field 'descr' is '{}'", where(source), detail::printable(d, 40));
  if (!d.empty() && d[0] == '>') {
    fail(
        "{}, a big-endian dtype; only little-endian ('<') data is supported "
        "(save a.astype(a.dtype.newbyteorder('<')))",
        head);
  }
  const std::string type =
      (!d.empty() && (d[0] == '<' || d[0] == '|' || d[0] == '=')) ? d.substr(1) : d;
  if (!type.empty() && type[0] == 'O') {
    fail("{}: object arrays (pickled Python objects) are not supported; expected {}", head,
         supported_descrs);
  }
  if (!type.empty() && type[0] == 'V') {
    fail("{}: void/structured dtypes are not supported; expected {}", head, supported_descrs);
  }
  if (d.size() > 1 && d[0] == '|' && type != "u1" && type != "i1" && type != "b1") {
    fail("{}: '|' (no byte order) is only valid for 1-byte dtypes; expected {}", head,
         supported_descrs);
  }
  fail("{}, which is not supported; expected one of {} (or '<u2' for bf16 when asked)", head,
       supported_descrs);
}

struct npy_header {
  npy_type type;
  std::vector<std::int64_t> shape;
};

npy_header interpret_header(const py_value& d, std::string_view source, const npy_options& o) {
  const std::string w = where(source);
  if (d.k != py_value::kind::dict) {
    fail("{}: header is {} ({}), expected a dict with keys 'descr', 'fortran_order' and 'shape'", w,
         kind_name(d.k), detail::printable(d.text, 80));
  }
  const py_value* descr = nullptr;
  const py_value* fortran = nullptr;
  const py_value* shape = nullptr;
  for (std::size_t k = 0; k < d.keys.size(); ++k) {
    const py_value& key = d.keys[k];
    const py_value& value = d.values[k];
    if (key.k != py_value::kind::string) {
      fail(
          "{}: header key {} is not a string; expected exactly 'descr', 'fortran_order' and "
          "'shape'",
          w, detail::printable(key.text, 40));
    }
    const py_value** slot = key.str == "descr"           ? &descr
                            : key.str == "fortran_order" ? &fortran
                            : key.str == "shape"         ? &shape
                                                         : nullptr;
    if (!slot) {
      fail("{}: unexpected header key '{}'; expected exactly 'descr', 'fortran_order' and 'shape'",
           w, detail::printable(key.str, 40));
    }
    if (*slot) fail("{}: duplicate header key '{}'", w, key.str);
    *slot = &value;
  }
  const std::pair<const char*, const py_value*> required[] = {
      {"descr", descr}, {"fortran_order", fortran}, {"shape", shape}};
  for (const auto& [name, slot] : required) {
    if (!slot) {
      fail("{}: header lacks the key '{}'; expected exactly 'descr', 'fortran_order' and 'shape'",
           w, name);
    }
  }

  npy_header h;
  // descr: a dtype string; a list is a structured dtype, a tuple a subarray dtype.
  if (descr->k == py_value::kind::list) {
    fail(
        "{}: header field 'descr' is a list of fields (a structured dtype), which is not "
        "supported; expected one of {}",
        w, supported_descrs);
  }
  if (descr->k != py_value::kind::string) {
    fail("{}: header field 'descr' is {} ({}), expected a dtype string such as '<f4'", w,
         kind_name(descr->k), detail::printable(descr->text, 40));
  }
  h.type = parse_descr(descr->str, source, o);

  if (fortran->k != py_value::kind::boolean) {
    fail("{}: header field 'fortran_order' is {} ({}), expected True or False", w,
         kind_name(fortran->k), detail::printable(fortran->text, 40));
  }
  if (fortran->boolean) {
    fail(
        "{}: header field 'fortran_order' is True; only C-order arrays are supported (save "
        "np.ascontiguousarray(a))",
        w);
  }

  if (shape->k != py_value::kind::tuple) {
    fail(
        "{}: header field 'shape' is {} ({}), expected a tuple of non-negative integers such as "
        "(2, 3) or (5,)",
        w, kind_name(shape->k), detail::printable(shape->text, 40));
  }
  for (std::size_t i = 0; i < shape->items.size(); ++i) {
    const py_value& e = shape->items[i];
    const std::string entry =
        fmt::format("{}: header field 'shape' entry {} ({})", w, i, detail::printable(e.text, 40));
    if (e.k == py_value::kind::big_integer) fail("{} is outside the int64 range", entry);
    if (e.k != py_value::kind::integer) {
      fail("{} is {}, expected a non-negative integer", entry, kind_name(e.k));
    }
    if (e.integer < 0) fail("{} is negative, expected a non-negative integer", entry);
    h.shape.push_back(e.integer);
  }
  return h;
}

array read(const detail::byte_source& src, std::string_view source, const npy_options& o) {
  const std::string w = where(source);
  const std::uint64_t size = src.size();
  // Magic and version.
  const std::string prefix =
      src.read_string(0, static_cast<std::size_t>(std::min<std::uint64_t>(size, 12)));
  if (prefix.size() < magic.size() || prefix.compare(0, magic.size(), magic) != 0) {
    fail(
        "{}: not an npy file (it does not start with the magic \"\\x93NUMPY\"; the file starts "
        "with \"{}\")",
        w, detail::printable(prefix.substr(0, 8)));
  }
  if (prefix.size() < 8) fail("{}: file truncated after the magic (no version bytes)", w);
  const int major = static_cast<unsigned char>(prefix[6]);
  const int minor = static_cast<unsigned char>(prefix[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail("{}: format version {}.{} is not supported (supported: 1.0, 2.0, 3.0)", w, major, minor);
  }
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t header_start = 8 + length_bytes;
  if (prefix.size() < header_start) {
    fail("{}: file truncated in the header length field ({} bytes)", w, size);
  }
  const auto* p = reinterpret_cast<const std::byte*>(prefix.data()) + 8;
  const std::uint64_t header_length =
      major == 1 ? detail::load_le<std::uint16_t>(p) : detail::load_le<std::uint32_t>(p);
  if (header_length > size - header_start) {
    fail(
        "{}: header length {} runs past the end of the file ({} bytes, {} after the length "
        "field)",
        w, header_length, size, size - header_start);
  }
  if (header_length > max_header_bytes) {
    fail("{}: header length {} exceeds the limit of {} bytes", w, header_length, max_header_bytes);
  }
  const std::string header = src.read_string(header_start, static_cast<std::size_t>(header_length));
  if (major == 3) {
    if (auto bad = detail::utf8_error(header)) {
      fail("{}: format 3.0 header is not valid UTF-8 (byte {})", w, *bad);
    }
  }
  const py_value dict = literal_parser(header, source, major <= 2).parse_document();
  npy_header h = interpret_header(dict, source, o);

  // The data must be exactly product(shape)·itemsize bytes: checked (overflow first) before
  // allocating, so that a header claiming terabytes costs nothing.
  const std::uint64_t data_start = header_start + header_length;
  const std::uint64_t available = size - data_start;
  const std::string what = fmt::format(
      "shape {} of '{}'", shape_string(h.shape),
      h.type.complex ? (h.type.type == dtype::fp32 ? "<c8" : "<c16") : npy_descr(h.type.type));
  const auto elements = detail::checked_product(h.shape);
  if (!elements) {
    fail("{}: header field 'shape' {} has more elements than fit in 64 bits", w,
         shape_string(h.shape));
  }
  const auto needed =
      detail::checked_mul(*elements, size_of(h.type.type) * (h.type.complex ? 2 : 1));
  if (!needed) {
    fail("{}: {} needs more than 2^64 bytes of data", w, what);
  }
  if (*needed > available) {
    fail(
        "{}: {} needs {} bytes of data but the file holds {} after the header (truncated file, "
        "or a wrong shape)",
        w, what, *needed, available);
  }
  if (*needed < available) {
    fail("{}: {} trailing bytes after the {} bytes of data for {}", w, available - *needed, *needed,
         what);
  }
  array a;
  a.type = h.type.type;
  a.shape = std::move(h.shape);
  if (h.type.complex) a.shape.push_back(2);  // (real, imag), as torch.view_as_real
  a.complex = h.type.complex;
  a.data = src.buffer(data_start, static_cast<std::size_t>(*needed),
                      o.unaligned_views ? 1 : size_of(a.type));
  return a;
}

// numpy's header: "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", then room to grow
// the first axis in place (GROWTH_AXIS_MAX_DIGITS = 21 minus its digits), then spaces and '\n' up
// to a multiple of 64 bytes (ARRAY_ALIGN) counting the magic, version and length field; numpy pads
// a full 64 when the header is already aligned (padlen = 64 − (len % 64)). Version 1.0 unless the
// length does not fit its uint16 field.
std::string header_bytes(const array& a) { return npy_header_bytes(a.type, a.shape); }

}  // namespace

std::string npy_header_bytes(dtype type, const std::vector<std::int64_t>& dims) {
  std::string shape = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) shape += ", ";
    shape += std::to_string(dims[i]);
  }
  if (dims.size() == 1) shape += ",";
  shape += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 npy_descr(type), shape);
  if (!dims.empty()) dict.append(21 - std::to_string(dims.front()).size(), ' ');

  for (int major : {1, 2}) {
    const std::size_t prefix = major == 1 ? 10 : 12;
    const std::size_t hlen = dict.size() + 1;
    const std::size_t pad = 64 - (prefix + hlen) % 64;
    const std::size_t total = hlen + pad;
    if (major == 1 && total > 0xFFFF) continue;
    std::string out(magic);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t i = 0; i < prefix - 8; ++i)
      out += static_cast<char>((total >> (8 * i)) & 0xFF);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  return {};  // unreachable: a 2.0 header holds 4 GiB
}

std::string_view npy_descr(dtype t) {
  switch (t) {
    case dtype::fp64:
      return "<f8";
    case dtype::fp32:
      return "<f4";
    case dtype::fp16:
      return "<f2";
    case dtype::bf16:
      return "<u2";
    case dtype::int32:
      return "<i4";
    case dtype::int64:
      return "<i8";
  }
  return "?";
}

std::string npy_bytes(const array& a) {
  a.check("npy");
  std::string out = header_bytes(a);
  out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  return out;
}

void write_npy(const std::filesystem::path& file, const array& a) {
  a.check(where(file.string()));
  detail::atomic_writer w(file);
  w.write(header_bytes(a));
  w.write(a.data.data(), a.data.size());
  w.commit();
}

array parse_npy(std::string_view bytes, std::string_view source, bool u2_is_bf16) {
  return parse_npy(bytes, source, npy_options{u2_is_bf16, false});
}

array parse_npy(std::string_view bytes, std::string_view source, const npy_options& o) {
  return read(*detail::memory_source(bytes), source, o);
}

array detail::read_npy_source(const byte_source& src, std::string_view source,
                              const npy_options& o) {
  return read(src, source, o);
}

array read_npy(const std::filesystem::path& file, bool u2_is_bf16) {
  return read_npy(file, npy_options{u2_is_bf16, false});
}

array read_npy(const std::filesystem::path& file, const npy_options& o) {
  return read(*detail::file_source(file), file.string(), o);
}

array read_npy(const std::filesystem::path& file) { return read_npy(file, false); }

}  // namespace pev::io

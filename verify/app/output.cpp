#include "pev/app/output.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "pev/core/error.h"
#include "pev/core/names.h"
#include "pev/io/array.h"
#include "pev/io/file.h"
#include "pev/io/npy.h"
#include "pev/io/safetensors.h"
#include "pev/io/stream.h"
#include "pev/report/result.h"
#include "pev/scalar/round.h"

namespace pev::app {

std::optional<dtype> parse_out_dtype(const std::string& name) {
  if (name == "exact") return std::nullopt;
  try {
    return parse_float_dtype(name, /*allow_fp64=*/true);
  } catch (const error&) {
    throw error("--dtype: expected exact, fp64, fp32, fp16 or bf16, got " + quoted_text(name));
  }
}

std::string out_dtype_name(std::optional<dtype> t) { return t ? to_string(*t) : "exact"; }

namespace {

// The names of out_format (docs/design.md §11.11).
constexpr name_table<out_format, 5> kFormats({{{out_format::text, "text"},
                                               {out_format::csv, "csv"},
                                               {out_format::json, "json"},
                                               {out_format::npy, "npy"},
                                               {out_format::safetensors, "safetensors"}}});

}  // namespace

out_format parse_out_format(const std::string& name) {
  if (const auto f = kFormats.find(name)) return *f;
  throw error("--format: expected " + kFormats.list(", ", " or ") + ", got " + quoted_text(name));
}

namespace {

std::string nonfinite(double d) {
  if (std::isnan(d)) return "nan";
  return d > 0 ? "inf" : "-inf";
}

// RN_t(v) as a double (exact: RN_double).
double rounded_double(const real& v, std::optional<dtype> t) {
  return visit_float(t.value_or(dtype::fp64), [&](auto tag) {
    return scalar_traits<typename decltype(tag)::type>::to_double(
        round_to<typename decltype(tag)::type>(v));
  });
}

// The main tensor's values as text, in order: from the tensor held in memory, or decoded from
// the rows of a stream.
class value_texts {
 public:
  virtual ~value_texts() = default;
  virtual std::string next() = 0;
  /// How many values next() gives.
  virtual std::size_t count() const = 0;
};

class tensor_texts final : public value_texts {
 public:
  tensor_texts(const tensor& t, std::optional<dtype> d, int digits)
      : t_(t), d_(d), digits_(digits) {}
  std::string next() override {
    const std::size_t k = k_++;
    return t_.integer ? std::to_string(t_.ints[k]) : format_value(t_.values[k], d_, digits_);
  }
  std::size_t count() const override { return t_.size(); }

 private:
  const tensor& t_;
  std::optional<dtype> d_;
  int digits_;
  std::size_t k_ = 0;
};

// Text goes out in pieces of about 1 MiB.
class text_sink {
 public:
  explicit text_sink(std::function<void(std::string_view)> out) : out_(std::move(out)) {}
  std::string s;
  void row_done() {
    if (s.size() >= (std::size_t{1} << 20)) flush();
  }
  void flush() {
    if (!s.empty()) out_(s);
    s.clear();
  }

 private:
  std::function<void(std::string_view)> out_;
};

std::size_t row_width(const tensor& t) {
  if (t.shape.empty()) return 1;
  std::size_t w = 1;
  for (std::size_t i = 1; i < t.shape.size(); ++i) w *= static_cast<std::size_t>(t.shape[i]);
  return t.shape.size() == 1 ? 1 : w;
}

void as_text(const output& out, value_texts& v, text_sink& o) {
  const tensor& t = out.main;
  const std::size_t w = out.text_row_width ? out.text_row_width : row_width(t);
  const std::size_t n = v.count();
  for (std::size_t k = 0; k < n; ++k) {
    o.s += v.next();
    const bool end = (k + 1) % w == 0;
    o.s += end ? '\n' : ' ';
    if (end) o.row_done();
  }
}

void as_long_csv(const output& out, value_texts& v, text_sink& o) {
  const tensor& t = out.main;
  for (const auto& n : out.dim_names) {
    o.s += n;
    o.s += ',';
  }
  o.s += out.columns.empty() ? "value" : out.columns[0];
  o.s += '\n';
  const std::size_t rank = t.shape.size();
  std::vector<std::int64_t> idx(rank, 0);
  const std::size_t n = v.count();
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t d = 0; d < rank; ++d) {
      const bool pos = d < out.dim_is_position.size() && out.dim_is_position[d] && out.positions;
      o.s += std::to_string(pos ? (*out.positions)[idx[d]] : idx[d]);
      o.s += ',';
    }
    o.s += v.next();
    o.s += '\n';
    o.row_done();
    for (std::size_t d = rank; d-- > 0;) {
      if (++idx[d] < t.shape[d]) break;
      idx[d] = 0;
    }
  }
}

void as_csv(const output& out, value_texts& v, text_sink& o) {
  if (!out.dim_names.empty()) return as_long_csv(out, v, o);
  if (out.main.shape.empty()) {
    o.s += (out.columns.empty() ? out.what : out.columns[0]) + "\n" + v.next() + "\n";
    return;
  }
  o.s += out.row_label;
  for (const auto& c : out.columns) {
    o.s += ',';
    o.s += c;
  }
  o.s += '\n';
  const tensor& t = out.main;
  const std::size_t w = row_width(t);
  const std::size_t rows = w == 0 ? 0 : v.count() / w;
  for (std::size_t r = 0; r < rows; ++r) {
    o.s += out.positions ? std::to_string((*out.positions)[r]) : std::to_string(r);
    for (std::size_t c = 0; c < w; ++c) {
      o.s += ',';
      o.s += v.next();
    }
    o.s += '\n';
    o.row_done();
  }
}

// The output's provenance: the build's (report::this_build, the one provenance of every result)
// and the request's (spec, what, dtype, recipe, precision).
nlohmann::json provenance(const output& out) {
  const report::provenance build = report::this_build();
  nlohmann::json j;
  j["pev_version"] = build.pev_version;
  j["git_revision"] = build.git_revision;
  j["spec"] = out.spec;
  j["what"] = out.what;
  j["dtype"] = out_dtype_name(out.dtype);
  j["recipe"] = out.recipe;
  j["precision_bits"] = out.precision_bits;
  return j;
}

void as_json(const output& out, value_texts& v, text_sink& o) {
  nlohmann::json j = provenance(out);
  j["shape"] = out.main.shape;
  if (out.positions) j["positions"] = *out.positions;
  // Numbers are spliced in as text so that exact values keep every digit they are printed with.
  std::string head = j.dump(2);
  head.pop_back();  // '}'
  while (!head.empty() && (head.back() == '\n' || head.back() == ' ')) head.pop_back();
  o.s += head + ",\n  \"data\": [";
  const std::size_t n = v.count();
  for (std::size_t k = 0; k < n; ++k) {
    if (k) {
      const bool line = k % 8 == 0;
      o.s += line ? ",\n    " : ", ";
      if (line) o.row_done();
    }
    std::string x = v.next();
    if (x == "nan" || x == "inf" || x == "-inf") x = "\"" + x + "\"";
    o.s += x;
  }
  o.s += "]\n}\n";
}

}  // namespace

io::array to_array(const tensor& t, std::optional<dtype> d) {
  if (t.integer) return io::array::from_int64(t.shape, t.ints);
  return visit_float(d.value_or(dtype::fp64), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> v(t.values.size());
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = round_to<T>(t.values[k]);
    return io::array::from_values<T>(t.shape, v);
  });
}

namespace {

// A float dtype's value, given as the double it converts to exactly, as text (format_value).
std::string format_rounded(double d, dtype t, int digits) {
  if (!std::isfinite(d)) return nonfinite(d);
  if (digits > 0) return fmt::format("{:.{}g}", d, digits);
  if (t == dtype::fp64) return fmt::format("{:.17g}", d);
  // fp32, fp16, bf16: the shortest decimal that reads back as the same float (hence the same
  // 16-bit value, since every fp16/bf16 value is a float).
  return fmt::format("{}", static_cast<float>(d));
}

// The values of a row_stream, decoded chunk by chunk.
class stream_texts final : public value_texts {
 public:
  stream_texts(const row_stream& rows, dtype t, int digits)
      : rows_(rows), t_(t), digits_(digits), es_(size_of(t)) {}
  std::string next() override {
    if (k_ == have_) load();
    const std::byte* p = buf_.data() + k_++ * es_;
    const double d = visit_float(t_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using tr = scalar_traits<T>;
      typename tr::bits_type b;
      std::memcpy(&b, p, sizeof b);
      return tr::to_double(tr::from_bits(b));
    });
    return format_rounded(d, t_, digits_);
  }
  std::size_t count() const override { return rows_.rows * rows_.width; }

 private:
  void load() {
    const std::size_t r1 = std::min(rows_.rows, r_ + row_stream::chunk_rows(rows_.width));
    buf_.resize((r1 - r_) * rows_.width * es_);
    rows_.fill(r_, r1, buf_.data());
    have_ = (r1 - r_) * rows_.width;
    k_ = 0;
    r_ = r1;
  }
  const row_stream& rows_;
  dtype t_;
  int digits_;
  std::size_t es_;
  std::vector<std::byte> buf_;
  std::size_t r_ = 0, k_ = 0, have_ = 0;
};

void write_text(const output& out, out_format format, value_texts& v, text_sink& o) {
  switch (format) {
    case out_format::text:
      return as_text(out, v, o);
    case out_format::csv:
      return as_csv(out, v, o);
    case out_format::json:
      return as_json(out, v, o);
    default:
      throw error("internal: not a text format");
  }
}

void note_bf16_npy(const output& out, const std::filesystem::path& file) {
  if (out.dtype == dtype::bf16) {
    std::fprintf(stderr,
                 "pev: note: npy has no bfloat16 dtype; %s holds the bf16 encodings as '<u2' "
                 "(numpy: np.load(f).view(ml_dtypes.bfloat16))\n",
                 file.c_str());
  }
}

std::map<std::string, std::string> safetensors_metadata(const output& out) {
  std::map<std::string, std::string> m;
  const nlohmann::json meta = provenance(out);
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    m[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  }
  return m;
}

// The positions as written: [n], or [S, n / S] for MRoPE's S streams (docs/encodings.md §4.6).
io::array positions_array(const output& out) {
  const auto n = static_cast<std::int64_t>(out.positions->size());
  const std::int64_t S = out.position_streams;
  return io::array::from_int64(
      S > 1 ? std::vector<std::int64_t>{S, n / S} : std::vector<std::int64_t>{n}, *out.positions);
}

std::string positions_name(const output& out) {
  return out.row_label == "distance" ? "distances" : "positions";
}

// Text formats to standard output (file empty) or to a file, streamed in pieces.
void write_text_output(const output& out, out_format format, const std::filesystem::path& file,
                       value_texts& v) {
  if (file.empty()) {
    text_sink o([](std::string_view s) { std::cout.write(s.data(), std::streamsize(s.size())); });
    write_text(out, format, v, o);
    o.flush();
    std::cout << std::flush;
    return;
  }
  io::stream_file f(file);
  text_sink o([&](std::string_view s) { f.write(s); });
  write_text(out, format, v, o);
  o.flush();
  f.commit();
}

}  // namespace

std::size_t row_stream::chunk_rows(std::size_t width) {
  // About 2^16 values a chunk (256 KiB of fp32), at least one row.
  return std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(1, width));
}

std::string format_value(const real& v, std::optional<dtype> t, int digits) {
  if (!t) {
    if (boost::multiprecision::isnan(v) || boost::multiprecision::isinf(v)) {
      return nonfinite(v.convert_to<double>());
    }
    if (v == 0) return "0";
    return v.str(digits > 0 ? digits : 21, std::ios_base::fmtflags(0));
  }
  return format_rounded(rounded_double(v, t), *t, digits);
}

void write_output(const output& out, out_format format, const std::filesystem::path& file) {
  switch (format) {
    case out_format::text:
    case out_format::csv:
    case out_format::json: {
      tensor_texts v(out.main, out.dtype, out.digits);
      return write_text_output(out, format, file, v);
    }
    case out_format::npy: {
      if (file.empty()) throw error("--format npy needs --out FILE");
      note_bf16_npy(out, file);
      io::write_npy(file, to_array(out.main, out.dtype));
      return;
    }
    case out_format::safetensors: {
      if (file.empty()) throw error("--format safetensors needs --out FILE");
      io::tensor_file tf;
      tf.metadata = safetensors_metadata(out);
      if (out.parts.empty()) {
        tf.add(out.main.name, to_array(out.main, out.dtype));
      } else {
        for (const auto& p : out.parts) tf.add(p.name, to_array(p, out.dtype));
      }
      if (out.positions) tf.add(positions_name(out), positions_array(out));
      io::write_safetensors(file, tf);
      return;
    }
  }
}

void write_output(const output& out, const row_stream& rows, out_format format,
                  const std::filesystem::path& file) {
  if (!out.dtype || !is_float(*out.dtype))
    throw error("internal: a row stream needs a float dtype");
  const dtype t = *out.dtype;
  const std::size_t es = size_of(t);
  const std::size_t chunk = row_stream::chunk_rows(rows.width);
  std::vector<std::byte> buf;
  switch (format) {
    case out_format::text:
    case out_format::csv:
    case out_format::json: {
      stream_texts v(rows, t, out.digits);
      return write_text_output(out, format, file, v);
    }
    case out_format::npy: {
      if (file.empty()) throw error("--format npy needs --out FILE");
      note_bf16_npy(out, file);
      io::stream_file f(file);
      f.write(io::npy_header_bytes(t, out.main.shape));
      for (std::size_t r0 = 0; r0 < rows.rows; r0 += chunk) {
        const std::size_t r1 = std::min(rows.rows, r0 + chunk);
        buf.resize((r1 - r0) * rows.width * es);
        rows.fill(r0, r1, buf.data());
        f.write(buf.data(), buf.size());
      }
      f.commit();
      return;
    }
    case out_format::safetensors: {
      if (file.empty()) throw error("--format safetensors needs --out FILE");
      // Parts interleave: part j holds the main tensor's values j, j + np, j + 2·np, ….
      const std::size_t np = out.parts.empty() ? 1 : out.parts.size();
      if (rows.width % np != 0) throw error("internal: parts do not divide a row");
      std::vector<io::tensor_layout> layout;
      if (out.parts.empty()) {
        layout.push_back({out.main.name, t, out.main.shape});
      } else {
        for (const auto& p : out.parts) layout.push_back({p.name, t, p.shape});
      }
      if (out.positions) {
        layout.push_back(
            {positions_name(out), dtype::int64, {std::int64_t(out.positions->size())}});
      }
      const std::string header = io::safetensors_header(layout, safetensors_metadata(out));
      io::stream_file f(file);
      f.write(header);
      const std::size_t part_bytes = rows.rows * (rows.width / np) * es;
      std::vector<std::byte> part;
      // One part's slice of rows [r0, r1) from the chunk in buf.
      auto slice = [&](std::size_t j) {
        const std::size_t n = buf.size() / es / np;
        part.resize(n * es);
        for (std::size_t k = 0; k < n; ++k) {
          std::memcpy(part.data() + k * es, buf.data() + (k * np + j) * es, es);
        }
      };
      if (np == 1 || f.seekable()) {
        // One pass; each part's slice at its place in the file.
        for (std::size_t r0 = 0; r0 < rows.rows; r0 += chunk) {
          const std::size_t r1 = std::min(rows.rows, r0 + chunk);
          buf.resize((r1 - r0) * rows.width * es);
          rows.fill(r0, r1, buf.data());
          if (np == 1) {
            f.write(buf.data(), buf.size());
            continue;
          }
          for (std::size_t j = 0; j < np; ++j) {
            slice(j);
            f.write_at(header.size() + j * part_bytes + r0 * (rows.width / np) * es, part.data(),
                       part.size());
          }
        }
      } else {
        // A device or a pipe: one pass over the rows per part.
        for (std::size_t j = 0; j < np; ++j) {
          for (std::size_t r0 = 0; r0 < rows.rows; r0 += chunk) {
            const std::size_t r1 = std::min(rows.rows, r0 + chunk);
            buf.resize((r1 - r0) * rows.width * es);
            rows.fill(r0, r1, buf.data());
            slice(j);
            f.write(part.data(), part.size());
          }
        }
      }
      if (out.positions) {
        // int64 little-endian: the vector's own bytes on a little-endian host (no copy).
        std::optional<io::array> swapped;
        if constexpr (std::endian::native != std::endian::little) swapped = positions_array(out);
        const void* data = swapped ? static_cast<const void*>(swapped->data.data())
                                   : static_cast<const void*>(out.positions->data());
        const std::size_t bytes = out.positions->size() * sizeof(std::int64_t);
        if (np > 1 && f.seekable()) {
          // The append position is still after the header: the positions go after the parts.
          f.write_at(header.size() + np * part_bytes, data, bytes);
        } else {
          f.write(data, bytes);
        }
      }
      f.commit();
      return;
    }
  }
}

}  // namespace pev::app

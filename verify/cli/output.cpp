#include "output.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "pev/core/error.h"
#include "pev/core/version.h"
#include "pev/io/array.h"
#include "pev/io/file.h"
#include "pev/io/npy.h"
#include "pev/io/safetensors.h"
#include "pev/scalar/round.h"

namespace pev::cli {

std::optional<dtype> parse_out_dtype(const std::string& name) {
  if (name == "exact") return std::nullopt;
  try {
    return parse_float_dtype(name, /*allow_fp64=*/true);
  } catch (const error&) {
    throw error("--dtype: expected exact, fp64, fp32, fp16 or bf16, got '" + name + "'");
  }
}

std::string out_dtype_name(std::optional<dtype> t) { return t ? to_string(*t) : "exact"; }

out_format parse_out_format(const std::string& name) {
  if (name == "text") return out_format::text;
  if (name == "csv") return out_format::csv;
  if (name == "json") return out_format::json;
  if (name == "npy") return out_format::npy;
  if (name == "safetensors") return out_format::safetensors;
  throw error("--format: expected text, csv, json, npy or safetensors, got '" + name + "'");
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

std::string format_int_or_value(const tensor& t, std::size_t k, std::optional<dtype> d,
                                int digits) {
  return t.integer ? std::to_string(t.ints[k]) : format_value(t.values[k], d, digits);
}

std::size_t row_width(const tensor& t) {
  if (t.shape.empty()) return 1;
  std::size_t w = 1;
  for (std::size_t i = 1; i < t.shape.size(); ++i) w *= static_cast<std::size_t>(t.shape[i]);
  return t.shape.size() == 1 ? 1 : w;
}

std::string as_text(const output& out) {
  std::string s;
  const tensor& t = out.main;
  const std::size_t w = out.text_row_width ? out.text_row_width : row_width(t);
  const std::size_t n = t.size();
  for (std::size_t k = 0; k < n; ++k) {
    s += format_int_or_value(t, k, out.dtype, out.digits);
    s += (k + 1) % w == 0 ? '\n' : ' ';
  }
  return s;
}

std::string as_long_csv(const output& out) {
  const tensor& t = out.main;
  std::string s;
  for (const auto& n : out.dim_names) {
    s += n;
    s += ',';
  }
  s += out.columns.empty() ? "value" : out.columns[0];
  s += '\n';
  const std::size_t rank = t.shape.size();
  std::vector<std::int64_t> idx(rank, 0);
  for (std::size_t k = 0; k < t.size(); ++k) {
    for (std::size_t d = 0; d < rank; ++d) {
      const bool pos = d < out.dim_is_position.size() && out.dim_is_position[d] && out.positions;
      s += std::to_string(pos ? (*out.positions)[idx[d]] : idx[d]);
      s += ',';
    }
    s += format_int_or_value(t, k, out.dtype, out.digits);
    s += '\n';
    for (std::size_t d = rank; d-- > 0;) {
      if (++idx[d] < t.shape[d]) break;
      idx[d] = 0;
    }
  }
  return s;
}

std::string as_csv(const output& out) {
  if (!out.dim_names.empty()) return as_long_csv(out);
  if (out.main.shape.empty()) {
    return (out.columns.empty() ? out.what : out.columns[0]) + "\n" +
           format_int_or_value(out.main, 0, out.dtype, out.digits) + "\n";
  }
  std::string s = out.row_label;
  for (const auto& c : out.columns) {
    s += ',';
    s += c;
  }
  s += '\n';
  const tensor& t = out.main;
  const std::size_t w = row_width(t);
  const std::size_t rows = w == 0 ? 0 : t.size() / w;
  for (std::size_t r = 0; r < rows; ++r) {
    s += out.positions ? std::to_string((*out.positions)[r]) : std::to_string(r);
    for (std::size_t c = 0; c < w; ++c) {
      s += ',';
      s += format_int_or_value(t, r * w + c, out.dtype, out.digits);
    }
    s += '\n';
  }
  return s;
}

nlohmann::json provenance(const output& out) {
  nlohmann::json j;
  j["pev_version"] = version();
  j["git_revision"] = git_revision();
  j["spec"] = out.spec;
  j["what"] = out.what;
  j["dtype"] = out_dtype_name(out.dtype);
  j["recipe"] = out.recipe;
  j["precision_bits"] = out.precision_bits;
  return j;
}

std::string as_json(const output& out) {
  nlohmann::json j = provenance(out);
  j["shape"] = out.main.shape;
  if (out.positions) j["positions"] = *out.positions;
  // Numbers are spliced in as text so that exact values keep every digit they are printed with.
  std::string head = j.dump(2);
  head.pop_back();  // '}'
  while (!head.empty() && (head.back() == '\n' || head.back() == ' ')) head.pop_back();
  std::string s = head + ",\n  \"data\": [";
  const tensor& t = out.main;
  for (std::size_t k = 0; k < t.size(); ++k) {
    if (k) s += k % 8 == 0 ? ",\n    " : ", ";
    std::string v = format_int_or_value(t, k, out.dtype, out.digits);
    if (v == "nan" || v == "inf" || v == "-inf") v = "\"" + v + "\"";
    s += v;
  }
  s += "]\n}\n";
  return s;
}

// The tensor rounded once to its dtype (exact: fp64).
io::array to_array(const tensor& t, std::optional<dtype> d) {
  if (t.integer) return io::array::from_int64(t.shape, t.ints);
  return visit_float(d.value_or(dtype::fp64), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> v(t.values.size());
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = round_to<T>(t.values[k]);
    return io::array::from_values<T>(t.shape, v);
  });
}

}  // namespace

std::string format_value(const real& v, std::optional<dtype> t, int digits) {
  if (!t) {
    if (boost::multiprecision::isnan(v) || boost::multiprecision::isinf(v)) {
      return nonfinite(v.convert_to<double>());
    }
    if (v == 0) return "0";
    return v.str(digits > 0 ? digits : 21, std::ios_base::fmtflags(0));
  }
  const double d = rounded_double(v, t);
  if (!std::isfinite(d)) return nonfinite(d);
  if (digits > 0) return fmt::format("{:.{}g}", d, digits);
  if (t == dtype::fp64) return fmt::format("{:.17g}", d);
  // fp32, fp16, bf16: the shortest decimal that reads back as the same float (hence the same
  // 16-bit value, since every fp16/bf16 value is a float).
  return fmt::format("{}", static_cast<float>(d));
}

void write_output(const output& out, out_format format, const std::filesystem::path& file) {
  std::string text;
  switch (format) {
    case out_format::text:
      text = as_text(out);
      break;
    case out_format::csv:
      text = as_csv(out);
      break;
    case out_format::json:
      text = as_json(out);
      break;
    case out_format::npy: {
      if (file.empty()) throw error("--format npy needs --out FILE");
      if (out.dtype == dtype::bf16) {
        std::fprintf(stderr,
                     "pev: note: npy has no bfloat16 dtype; %s holds the bf16 encodings as '<u2' "
                     "(numpy: np.load(f).view(ml_dtypes.bfloat16))\n",
                     file.c_str());
      }
      io::write_npy(file, to_array(out.main, out.dtype));
      return;
    }
    case out_format::safetensors: {
      if (file.empty()) throw error("--format safetensors needs --out FILE");
      io::tensor_file tf;
      const nlohmann::json meta = provenance(out);
      for (auto it = meta.begin(); it != meta.end(); ++it) {
        tf.metadata[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
      }
      if (out.parts.empty()) {
        tf.add(out.main.name, to_array(out.main, out.dtype));
      } else {
        for (const auto& p : out.parts) tf.add(p.name, to_array(p, out.dtype));
      }
      if (out.positions) {
        const auto n = static_cast<std::int64_t>(out.positions->size());
        const std::int64_t S = out.position_streams;
        tf.add(out.row_label == "distance" ? "distances" : "positions",
               io::array::from_int64(
                   S > 1 ? std::vector<std::int64_t>{S, n / S} : std::vector<std::int64_t>{n},
                   *out.positions));
      }
      io::write_safetensors(file, tf);
      return;
    }
  }
  if (file.empty()) {
    std::cout << text << std::flush;
  } else {
    io::write_file_atomic(file, text);
  }
}

}  // namespace pev::cli

#include "pev/app/shapes.h"

#include <type_traits>
#include <variant>

#include "pev/core/error.h"

namespace pev::app {

std::string default_what(const spec::encoding& e) {
  return std::visit(
      [](const auto& s) -> std::string {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, spec::rope>) return "table";
        if constexpr (std::is_same_v<T, spec::alibi>) return "bias";
        if constexpr (std::is_same_v<T, spec::t5> || std::is_same_v<T, spec::shaw>) {
          return "buckets";
        }
        return "pe";
      },
      e);
}

void what_mismatch(const std::string& what, const spec::encoding& e, const char* allowed) {
  throw error("--what " + what + " does not apply to " + spec::family_name(e) +
              " (it has: " + allowed + ")");
}

bool what_needs_positions(const std::string& what) {
  return !(what == "inv_freq" || what == "attention_factor" || what == "slopes");
}

output start_output(const spec::encoding& e, const std::string& what, std::optional<dtype> t,
                    int digits) {
  output out;
  out.what = what.empty() ? default_what(e) : what;
  out.dtype = t;
  out.spec = spec::to_spec_string(e);
  out.digits = digits;
  return out;
}

namespace {

// One request holds at most 2^26 values (each an MPFR number until it is written: gigabytes
// beyond), checked before anything is reserved.
constexpr double kMaxValues = double(std::int64_t{1} << 26);

void require_size(const char* what, std::int64_t P, std::int64_t per_position) {
  if (double(P) * double(per_position) > kMaxValues) {
    throw error(std::string("--what ") + what + ": " + std::to_string(P) + " positions × " +
                std::to_string(per_position) +
                " values is too large for one request (at most 2^26 values; use fewer positions)");
  }
}

}  // namespace

void shape_table(output& out, std::int64_t pairs, const std::vector<std::int64_t>& pos,
                 std::int64_t streams) {
  const auto P = static_cast<std::int64_t>(pos.size()) / streams;
  out.position_streams = streams;
  require_size("table", P, 2 * pairs);
  out.main = {"table", {P, pairs, 2}, {}, {}, false};
  out.main.values.reserve(static_cast<std::size_t>(P * pairs * 2));
  out.positions = pos;
  for (std::int64_t i = 0; i < pairs; ++i) {
    out.columns.push_back("cos_" + std::to_string(i));
    out.columns.push_back("sin_" + std::to_string(i));
  }
}
void shape_streamed_table(output& out, std::int64_t pairs, std::vector<std::int64_t>&& pos) {
  const auto P = static_cast<std::int64_t>(pos.size());
  out.main = {"table", {P, pairs, 2}, {}, {}, false};
  out.positions = std::move(pos);
  for (std::int64_t i = 0; i < pairs; ++i) {
    out.columns.push_back("cos_" + std::to_string(i));
    out.columns.push_back("sin_" + std::to_string(i));
  }
  split_table(out);
}
void split_table(output& out) {
  const std::vector<std::int64_t> shape = {out.main.shape[0], out.main.shape[1]};
  tensor c{"cos", shape, {}, {}, false};
  tensor s{"sin", shape, {}, {}, false};
  c.values.reserve(out.main.values.size() / 2);
  s.values.reserve(out.main.values.size() / 2);
  for (std::size_t k = 0; k + 1 < out.main.values.size(); k += 2) {
    c.values.push_back(out.main.values[k]);
    s.values.push_back(out.main.values[k + 1]);
  }
  out.parts = {std::move(c), std::move(s)};
}

void shape_pe(output& out, std::int64_t d, const std::vector<std::int64_t>& pos) {
  const auto P = static_cast<std::int64_t>(pos.size());
  require_size("pe", P, d);
  out.main = {"pe", {P, d}, {}, {}, false};
  out.main.values.reserve(static_cast<std::size_t>(P * d));
  out.positions = pos;
  for (std::int64_t j = 0; j < d; ++j) out.columns.push_back("d_" + std::to_string(j));
}

void shape_streamed_pe(output& out, std::int64_t d, std::vector<std::int64_t>&& pos) {
  out.main = {"pe", {static_cast<std::int64_t>(pos.size()), d}, {}, {}, false};
  out.positions = std::move(pos);
  for (std::int64_t j = 0; j < d; ++j) out.columns.push_back("d_" + std::to_string(j));
}

void shape_bias(output& out, std::int64_t heads, const std::vector<std::int64_t>& pos) {
  const auto P = static_cast<std::int64_t>(pos.size());
  if (static_cast<double>(heads) * double(P) * double(P) > double(std::int64_t(1) << 26)) {
    throw error("--what bias: " + std::to_string(heads) + " heads × " + std::to_string(P) +
                "² positions is too large for one request (at most 2^26 values)");
  }
  out.main = {"bias", {heads, P, P}, {}, {}, false};
  out.positions = pos;
  out.text_row_width = static_cast<std::size_t>(P);
  out.dim_names = {"head", "query", "key"};
  out.dim_is_position = {false, true, true};
  out.columns = {"bias"};
}

void shape_vector(output& out, const std::string& name, std::int64_t n,
                  const std::string& row_label) {
  out.main = {name, {n}, {}, {}, false};
  out.row_label = row_label;
  out.columns = {name == "slopes" ? "slope" : name};
}

void shape_scalar(output& out, const std::string& name) {
  out.main = {name, {}, {}, {}, false};
  out.columns = {name};
}

void shape_buckets(output& out, const std::vector<std::int64_t>& distances) {
  out.main = {"buckets", {static_cast<std::int64_t>(distances.size())}, {}, {}, true};
  out.positions = distances;
  out.row_label = "distance";
  out.columns = {"bucket"};
}

}  // namespace pev::app

#include "pev/app/encoding.h"

#include <filesystem>

#include "pev/io/npy.h"
#include "pev/io/safetensors.h"
#include "pev/spec/parse.h"

namespace pev::app {
namespace {

void load_learned_table(spec::learned& l) {
  if (l.table_file.empty()) return;
  const std::filesystem::path path(l.table_file);
  io::array a;
  if (path.extension() == ".npy") {
    a = io::read_npy(path);
  } else if (path.extension() == ".safetensors") {
    const auto tf = io::read_safetensors(path);
    if (tf.names.size() == 1) {
      a = tf.tensors.at(tf.names[0]);
    } else if (const auto it = tf.tensors.find("table"); it != tf.tensors.end()) {
      a = it->second;
    } else {
      std::string names;
      for (const auto& n : tf.names) names += (names.empty() ? "'" : ", '") + n + "'";
      throw error("learned: table=" + l.table_file +
                  ": expected a tensor named 'table' or a single tensor, found " +
                  (names.empty() ? std::string("no tensors") : names));
    }
  } else {
    throw error("learned: table=" + l.table_file + ": expected a .npy or .safetensors file");
  }
  if (a.shape.size() != 2 || a.shape[0] != l.num_positions || a.shape[1] != l.d_model) {
    std::string shape;
    for (auto d : a.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw error("learned: table=" + l.table_file + " has shape [" + shape + "], expected [" +
                std::to_string(l.num_positions) + ", " + std::to_string(l.d_model) +
                "] (num_positions, d_model)");
  }
  l.table = a.to_doubles();
}

}  // namespace

spec::encoding parse_encoding(const std::string& text, const warning_sink& warn) {
  spec::encoding e = spec::parse_spec(text, warn);
  if (auto* l = std::get_if<spec::learned>(&e)) load_learned_table(*l);
  return e;
}

}  // namespace pev::app

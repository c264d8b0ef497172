#include "pev/app/inputs.h"

#include <fmt/format.h>

#include <system_error>

#include "pev/core/error.h"

namespace pev::app {

namespace {

// `p` resolved through the symbolic links of its existing part.
std::filesystem::path resolved(const std::filesystem::path& p) {
  std::error_code ec;
  auto r = std::filesystem::weakly_canonical(p, ec);
  return ec ? std::filesystem::absolute(p, ec).lexically_normal() : r;
}

}  // namespace

void refuse_inputs_inside_out(const std::filesystem::path& out,
                              const std::vector<input_path>& inputs) {
  if (out.empty() || out == "-") return;
  const std::filesystem::path o = resolved(out);
  for (const input_path& in : inputs) {
    if (in.path.empty()) continue;
    const std::filesystem::path rel = resolved(in.path).lexically_relative(o);
    if (rel.empty() || *rel.begin() == "..") continue;
    throw error(fmt::format(
        "{} {} is {} --out {}, which pev replaces: choose another --out, or move the input",
        in.flag, in.path.string(), rel == "." ? "the same path as" : "inside", out.string()));
  }
}

std::vector<input_path> encoding_files(const spec::encoding& e) {
  if (const auto* l = std::get_if<spec::learned>(&e); l && !l->table_file.empty()) {
    return {{"learned table", l->table_file}};
  }
  return {};
}

}  // namespace pev::app

#pragma once
// Inputs against outputs: pev replaces its --out (a directory as a whole, a file atomically), so an
// input that lies inside it would be deleted, or overwritten, by the very run that reads it. Every
// command passes every path-valued flag here before any work.

#include <filesystem>
#include <string>
#include <vector>

#include "pev/spec/spec.h"

namespace pev::app {

/// A path given to a flag, for the message ("--config", "--exec", "learned table", …).
struct input_path {
  std::string flag;
  std::filesystem::path path;
};

/// Throws pev::error naming the flag when an input is `out` or lies inside it (after resolving
/// symbolic links). `out` empty, or "-" (standard output): nothing is checked.
void refuse_inputs_inside_out(const std::filesystem::path& out,
                              const std::vector<input_path>& inputs);

/// The files an encoding reads: a learned table's `table=FILE`.
std::vector<input_path> encoding_files(const spec::encoding& e);

}  // namespace pev::app

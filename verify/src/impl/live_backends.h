#pragma once
// The two backends pev brings for a live implementation (pev/impl/live.h, live_backend.h): a
// dlopen'ed plugin (live_plugin.cpp) and a subprocess speaking the exec protocol (live_exec.cpp,
// docs/exec-protocol.md). An isolated plugin is served by a subprocess, so load_plugin makes
// either.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "pev/impl/live.h"
#include "pev/impl/live_backend.h"

namespace pev::impl::detail {

/// A subprocess backend: `argv` empty runs `command` by /bin/sh -c, otherwise argv is executed
/// directly (no shell in between, so that a crash shows as the process's own signal); `kind` and
/// `label` name it in certificates and messages; `files`: what it runs, for certificates. Greets
/// it (start_exec's errors).
std::shared_ptr<live_backend> exec_backend_for(std::string command, std::vector<std::string> argv,
                                               std::string kind, std::string label,
                                               std::vector<std::filesystem::path> files,
                                               exec_options o);

}  // namespace pev::impl::detail

#pragma once
// Interrupting long work from its embedder. The `pev` tool is ended by a signal like any process;
// a program that embeds pev's library — pev's Python module (docs/python.md §6), where Ctrl-C must
// stop a certification and leave the interpreter running — installs a check instead, and the long
// loops (reference values per chunk of rows, mistakes replayed by the diagnosis, the rows of
// `pev reference` and `pev compute`) call interruption_point() between chunks.
//
// An interruption is an exception of its own type, deliberately neither a pev::error nor a
// std::exception: code that turns an implementation's errors into failed checks (certification of
// live implementations) does not mistake it for one. The embedder catches it around the call it
// made. Handlers that catch everything (RapidCheck's, around a property case) do swallow it, so a
// check stays true once it has said "stop" until its embedder resets it: every later point throws
// at once and the work unwinds in a few steps.

namespace pev {

/// Thrown by interruption_point() when the installed check asks to stop.
struct interrupted {};

/// Returns true when the work must stop. Called often (every chunk of rows): it should be cheap,
/// and may rate-limit itself.
using interrupt_check = bool (*)();

/// Installs the process-wide check (nullptr: none, the default; the CLI installs none).
void set_interrupt_check(interrupt_check check);

/// Throws pev::interrupted when a check is installed and says to stop; otherwise does nothing
/// (without a check: one atomic load).
void interruption_point();

}  // namespace pev

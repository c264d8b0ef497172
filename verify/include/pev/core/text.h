#pragma once
// Text from outside pev (file and tensor names, a child process's messages, metadata) made safe to
// print: a terminal interprets control characters (ESC starts a sequence that can recolour, retitle
// or rewrite the screen), so they are shown escaped, never sent as they are. Every message and
// summary that quotes external text goes through escaped().

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pev {

/// Offset of the first byte that is not part of a valid UTF-8 sequence (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or nothing.
std::optional<std::size_t> utf8_error(std::string_view s);

struct escape_options {
  /// Output bytes after which the text is cut (and "..." appended).
  std::size_t max = std::string::npos;
  /// Escape every byte outside printable ASCII (quoting bytes in a parse error); otherwise valid
  /// UTF-8 text other than control characters is kept.
  bool ascii_only = false;
  /// Keep '\n' (multi-line text such as a summary); otherwise it is escaped too.
  bool keep_newlines = false;
};

/// `s` with control characters (C0 including ESC, DEL, and the C1 range U+0080–U+009F) and bytes
/// that are not valid UTF-8 shown as \xNN (a C1 character as its two UTF-8 bytes).
std::string escaped(std::string_view s, const escape_options& o = {});

/// A JSON library's message without its bracketed id ("[json.exception.type_error.302] type must
/// be string, but is number" → "type must be string, but is number"): what a refusal quotes.
std::string json_error_text(std::string_view what);

}  // namespace pev

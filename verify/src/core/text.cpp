#include "pev/core/text.h"

#include "pev/core/names.h"

namespace pev {

namespace {

// Length of the valid UTF-8 sequence at p[0..n) (1 to 4), or 0 when it is not one.
std::size_t utf8_length(const unsigned char* p, std::size_t n) {
  const unsigned c = p[0];
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if (p[k] < 0x80 || p[k] > 0xBF) return 0;
  }
  return len;
}

void append_hex(std::string& out, unsigned char c) {
  static constexpr char hex[] = "0123456789abcdef";
  out += "\\x";
  out += hex[c >> 4];
  out += hex[c & 15];
}

}  // namespace

std::optional<std::size_t> utf8_error(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = utf8_length(p + i, s.size() - i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

std::string escaped(std::string_view s, const escape_options& o) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (out.size() >= o.max) {
      out += "...";
      break;
    }
    const unsigned char c = p[i];
    if ((c >= 0x20 && c < 0x7F) || (c == '\n' && o.keep_newlines)) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const std::size_t len = o.ascii_only || c < 0x80 ? 0 : utf8_length(p + i, s.size() - i);
    // C1 controls (U+0080–U+009F) are 0xC2 0x80–0x9F in UTF-8: terminals act on them as on ESC.
    const bool c1 = len == 2 && c == 0xC2 && p[i + 1] <= 0x9F;
    if (len == 0 || c1) {
      const std::size_t n = c1 ? 2 : 1;
      for (std::size_t k = 0; k < n; ++k) append_hex(out, p[i + k]);
      i += n;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string quoted_text(std::string_view text, std::size_t max) {
  return "'" + escaped(text, {.max = max, .ascii_only = true}) + "'";
}

std::string json_error_text(std::string_view what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    if (const auto end = what.find("] "); end != std::string_view::npos)
      what.remove_prefix(end + 2);
  }
  return std::string(what);
}

}  // namespace pev

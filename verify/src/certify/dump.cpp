// Reading dumps for certification: safetensors, npy and npz files and directories of npy files,
// their SHA-256, names of layouts.

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <memory>

#include "detail.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/core/names.h"
#include "pev/io/npy.h"
#include "pev/io/npz.h"
#include "pev/io/safetensors.h"
#include "pev/report/result.h"

namespace pev::certify {

const io::array* dump::find(std::string_view name) const {
  const auto it = tensors.find(std::string(name));
  return it == tensors.end() ? nullptr : &it->second;
}

namespace {

// SHA-256 (OpenSSL EVP) of what `feed` passes to its update callback, lowercase hex.
template <class Feed>
std::string sha256_of(Feed&& feed) {
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                    &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw error("SHA-256: OpenSSL could not initialise the digest");
  }
  feed([&](const char* p, std::size_t n) { EVP_DigestUpdate(ctx.get(), p, n); });
  std::array<unsigned char, EVP_MAX_MD_SIZE> md;
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md.data(), &n);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

}  // namespace

std::string sha256_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw error(fmt::format("cannot open '{}' to hash it", file.string()));
  std::string hex = sha256_of([&](auto&& update) {
    std::array<char, 1 << 16> buf;
    while (in) {
      in.read(buf.data(), buf.size());
      if (in.gcount() > 0) update(buf.data(), static_cast<std::size_t>(in.gcount()));
    }
  });
  if (in.bad()) throw error(fmt::format("error while reading '{}' to hash it", file.string()));
  return hex;
}

std::string sha256_bytes(std::string_view bytes) { return detail::sha256_text(bytes); }

std::optional<std::string> sha256_now(const input_file& f) {
  std::error_code ec;
  if (f.format == "exec" || !std::filesystem::is_regular_file(f.path, ec)) return std::nullopt;
  return sha256_file(f.path);
}

void hash_inputs(std::vector<input_file>& files) {
  for (input_file& f : files) {
    if (f.sha256.empty()) f.sha256 = sha256_file(f.path);
  }
}

std::string detail::sha256_text(std::string_view bytes) {
  return sha256_of([&](auto&& update) { update(bytes.data(), bytes.size()); });
}

namespace {

// Reading options of a dump: bf16 npy arrays are '<u2' encodings (numpy has no bfloat16), complex
// tables (Meta's freqs_cis: complex64 cos + i·sin) are read as (real, imag) pairs, and large
// arrays are mapped at any alignment (numpy.savez's members; certify decodes from bytes).
constexpr io::npy_options kNpy{/*u2_is_bf16=*/true, /*complex_as_pairs=*/true,
                               /*unaligned_views=*/true};
constexpr io::safetensors_options kSafetensors{/*complex_as_pairs=*/true};

// A dump file must be a regular file: a pipe or a device would give the hash of other bytes (or
// none).
void require_regular(const std::filesystem::path& f) {
  std::error_code ec;
  if (std::filesystem::exists(f, ec) && !std::filesystem::is_regular_file(f, ec)) {
    throw error(
        fmt::format("--impl '{}': not a regular file (pev hashes every file it "
                    "certifies: save the dump to a file)",
                    f.string()));
  }
}

}  // namespace

dump read_dump(const std::vector<std::filesystem::path>& files, bool hash) {
  if (files.empty()) throw error("--impl: no input file given");
  dump d;
  auto add = [&](const std::string& name, io::array a, const std::string& file) {
    if (!d.tensors.emplace(name, std::move(a)).second) {
      throw error(fmt::format("tensor '{}' is given twice (again in '{}')", name, file));
    }
  };
  auto add_npy = [&](const std::filesystem::path& f) {
    require_regular(f);
    add(f.stem().string(), io::read_npy(f, kNpy), f.string());
    d.files.push_back({f.string(), "npy", hash ? sha256_file(f) : std::string()});
  };
  for (const auto& f : files) {
    std::error_code ec;
    if (std::filesystem::is_directory(f, ec)) {
      // A directory of .npy files, one tensor each (numpy.save per tensor), in name order; other
      // entries are listed in the certificate's notes, not silently dropped.
      std::vector<std::filesystem::path> npy;
      std::vector<std::string> other;
      for (const auto& e : std::filesystem::directory_iterator(f)) {
        if (e.path().extension() == ".npy" && !e.is_directory(ec)) {
          npy.push_back(e.path());
        } else {
          other.push_back(e.path().filename().string());
        }
      }
      std::sort(npy.begin(), npy.end());
      std::sort(other.begin(), other.end());
      if (npy.empty()) {
        throw error(fmt::format(
            "--impl '{}': a directory is read as one .npy file per tensor (cos.npy holds 'cos'), "
            "and it holds none{}",
            f.string(),
            other.empty() ? " (it is empty)"
                          : fmt::format(" (it holds {})", fmt::join(other, ", "))));
      }
      for (const auto& p : npy) add_npy(p);
      for (const auto& o : other) {
        d.skipped.push_back(
            fmt::format("--impl '{}': '{}' was not read (not an .npy file)", f.string(), o));
      }
      continue;
    }
    require_regular(f);
    const std::string ext = f.extension().string();
    if (ext == ".safetensors") {
      io::tensor_file t = io::read_safetensors(f, kSafetensors);
      for (const auto& name : t.names) add(name, std::move(t.tensors.at(name)), f.string());
      for (auto& [k, v] : t.metadata) d.metadata[k] = v;
      d.files.push_back({f.string(), "safetensors", hash ? sha256_file(f) : std::string()});
    } else if (ext == ".npy") {
      add_npy(f);
    } else if (ext == ".npz") {
      // numpy.savez / savez_compressed: one tensor per member, named by its key.
      for (io::npz_member& m : io::read_npz(f, kNpy)) add(m.name, std::move(m.a), f.string());
      d.files.push_back({f.string(), "npz", hash ? sha256_file(f) : std::string()});
    } else {
      throw error(fmt::format(
          "--impl '{}': expected a .safetensors, .npy or .npz file, or a directory of .npy files "
          "(one tensor per file, named by the file)",
          f.string()));
    }
  }
  return d;
}

namespace {

// The names of the table layouts, q/k layouts and q/k output orders (docs/design.md §11.11), as
// --layout, --qk-layout and --qk-order take them.
constexpr name_table<table_layout, 5> kTableLayouts({{{table_layout::separate, "separate"},
                                                      {table_layout::halves, "halves"},
                                                      {table_layout::repeated, "repeated"},
                                                      {table_layout::vllm, "vllm"},
                                                      {table_layout::pairs, "pairs"}}});
constexpr name_table<qk_layout, 4> kQkLayouts({{{qk_layout::bhtd, "bhtd", "[B, H, T, D]"},
                                                {qk_layout::bthd, "bthd", "[B, T, H, D]"},
                                                {qk_layout::thd, "thd", "[T, H, D]"},
                                                {qk_layout::t_hd, "t(hd)", "[T, H·D]"}}});
constexpr name_table<qk_order, 2> kQkOrders({{{qk_order::input, "input",
                                               "(each rotated pair where its input pair was)"},
                                              {qk_order::half_split, "half-split",
                                               "(pair i at (i, i + rot/2), as DeepSeek-V3's "
                                               "apply_rotary_pos_emb_interleave writes them)"}}});

}  // namespace

const char* to_string(table_layout l) { return kTableLayouts.name(l); }

table_layout parse_table_layout(std::string_view name) {
  if (const auto l = kTableLayouts.find(name)) return *l;
  throw error(fmt::format("--layout: {} is not a table layout (expected {})", quoted_text(name),
                          kTableLayouts.list(", ", " or ")));
}

const char* to_string(qk_layout l) { return kQkLayouts.name(l); }

qk_layout parse_qk_layout(std::string_view name) {
  if (const auto l = kQkLayouts.find(name)) return *l;
  throw error(fmt::format("--qk-layout: {} is not a q/k layout (expected {})", quoted_text(name),
                          kQkLayouts.list(", ", " or ")));
}

const char* to_string(qk_order o) { return kQkOrders.name(o); }

qk_order parse_qk_order(std::string_view name) {
  if (const auto o = kQkOrders.find(name)) return *o;
  throw error(fmt::format("--qk-order: {} is not an output order (expected {})", quoted_text(name),
                          kQkOrders.list(", ", " or ")));
}

}  // namespace pev::certify

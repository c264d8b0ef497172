// Reading dumps for certification: safetensors and npy files, their SHA-256, names of layouts.

#include <fmt/format.h>
#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>

#include "detail.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/io/npy.h"
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

std::string detail::sha256_text(std::string_view bytes) {
  return sha256_of([&](auto&& update) { update(bytes.data(), bytes.size()); });
}

dump read_dump(const std::vector<std::filesystem::path>& files) {
  if (files.empty()) throw error("--impl: no input file given");
  dump d;
  auto add = [&](const std::string& name, io::array a, const std::string& file) {
    if (!d.tensors.emplace(name, std::move(a)).second) {
      throw error(fmt::format("tensor '{}' is given twice (again in '{}')", name, file));
    }
  };
  for (const auto& f : files) {
    // Read and hashed separately: a pipe or a device would give the hash of other bytes (or
    // none), so a dump must be a regular file.
    std::error_code ec;
    if (std::filesystem::exists(f, ec) && !std::filesystem::is_regular_file(f, ec)) {
      throw error(
          fmt::format("--impl '{}': not a regular file (pev hashes every file it "
                      "certifies: save the dump to a file)",
                      f.string()));
    }
    const std::string ext = f.extension().string();
    input_file in{f.string(), "", ""};
    if (ext == ".safetensors") {
      in.format = "safetensors";
      io::tensor_file t = io::read_safetensors(f);
      for (const auto& name : t.names) add(name, std::move(t.tensors.at(name)), f.string());
      for (auto& [k, v] : t.metadata) d.metadata[k] = v;
    } else if (ext == ".npy") {
      in.format = "npy";
      // bf16 tables are stored in npy as '<u2' encodings (numpy has no bfloat16).
      add(f.stem().string(), io::read_npy(f, /*u2_is_bf16=*/true), f.string());
    } else {
      throw error(fmt::format("--impl '{}': expected a .safetensors or .npy file", f.string()));
    }
    in.sha256 = sha256_file(f);
    d.files.push_back(std::move(in));
  }
  return d;
}

const char* to_string(table_layout l) {
  switch (l) {
    case table_layout::separate:
      return "separate";
    case table_layout::halves:
      return "halves";
    case table_layout::repeated:
      return "repeated";
    case table_layout::vllm:
      return "vllm";
    case table_layout::pairs:
      return "pairs";
  }
  return "?";
}

table_layout parse_table_layout(std::string_view name) {
  for (auto l : {table_layout::separate, table_layout::halves, table_layout::repeated,
                 table_layout::vllm, table_layout::pairs}) {
    if (name == to_string(l)) return l;
  }
  throw error(fmt::format(
      "--layout: '{}' is not a table layout (expected separate, halves, repeated, vllm or pairs)",
      name));
}

}  // namespace pev::certify

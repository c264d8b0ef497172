// Certification of dumped tables (pev/certify/certify.h), end to end through files:
// - every built-in strategy × dtype, dumped to safetensors and to npy, gets the grade its contract
//   implies (accurate: correctly rounded or faithful; hf: recipe:hf or better; ggml: recipe:ggml
//   or better; table-fp16/bf16: recipe:hf or recipe:vllm or better);
// - every mutant of the catalogue that certify can read (RoPE and sinusoidal tables) is not
//   certified, and the diagnosis names it (alone, or tied with mistakes that give the same data);
// - the table layouts engines use are detected and give the same figures;
// - malformed dumps are refused (pev::error) or fail their checks, never crash.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/seed.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/io/npy.h"
#include "pev/io/safetensors.h"
#include "pev/report/json.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

namespace fs = std::filesystem;
using certify::grade;

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::path(testing::TempDir()) / ("pev_certify_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Positions 0..767, the bf16/fp16/TF32 edges, and seeded random ones up to 2^17.
std::vector<std::int64_t> test_positions() {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i < 768; ++i) p.push_back(i);
  for (std::int64_t v : {2047, 2048, 2049, 4095, 4097, 65503, 65504, 65505, 65519, 65520, 70000}) {
    p.push_back(v);
  }
  std::mt19937_64 rng(test::test_seed(7));
  std::uniform_int_distribution<std::int64_t> pick(0, 1 << 17);
  for (int i = 0; i < 256; ++i) p.push_back(pick(rng));
  return p;
}

std::optional<std::int64_t> seq_of(const spec::rope& r, const std::vector<std::int64_t>& pos) {
  if (!r.stateful()) return std::nullopt;
  return *std::max_element(pos.begin(), pos.end()) + 1;
}

std::optional<std::int64_t> seq_of(const spec::encoding& e, const std::vector<std::int64_t>& pos) {
  const auto* r = std::get_if<spec::rope>(&e);
  if (!r || !r->stateful()) return std::nullopt;
  return *std::max_element(pos.begin(), pos.end()) + 1;
}

// Dumps an implementation's main table: safetensors (cos, sin, positions; or pe) or npy files
// (table.npy [P, pairs, 2] or pe.npy, positions.npy). Returns the files.
// Rotated q and k ([T, 3, head_dim] and [T, 1, head_dim], GQA) of seeded random inputs at every
// 8th position of `pos`, as tensors q_in, q_out, k_in, k_out and qk_positions.
template <class T>
void add_qk(const impl::implementation& im, const spec::rope& r,
            const std::vector<std::int64_t>& pos, io::tensor_file& tf) {
  std::vector<std::int64_t> qp;
  for (std::size_t t = 0; t < pos.size(); t += 8) qp.push_back(pos[t]);
  const auto T_ = static_cast<std::int64_t>(qp.size());
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& [name, heads] : {std::pair<std::string, std::int64_t>{"q", 3}, {"k", 1}}) {
    std::vector<T> in(static_cast<std::size_t>(T_ * heads * r.head_dim)), out(in.size());
    for (T& v : in) {
      if constexpr (std::is_same_v<T, float>) {
        v = normal(rng);
      } else {
        v = T(normal(rng));
      }
    }
    im.rope_rotate(qp, seq_of(r, pos), kernel::heads_view<const T>{in, T_, heads, r.head_dim},
                   kernel::heads_view<T>{out, T_, heads, r.head_dim});
    tf.add(name + "_in", io::array::from_values<T>({T_, heads, r.head_dim}, in));
    tf.add(name + "_out", io::array::from_values<T>({T_, heads, r.head_dim}, out));
  }
  tf.add("qk_positions", io::array::from_int64({T_}, qp));
}

template <class T>
std::vector<fs::path> dump(const impl::implementation& im, const spec::encoding& e,
                           const std::vector<std::int64_t>& pos, const fs::path& dir, bool npy,
                           bool qk = false) {
  const auto P = static_cast<std::int64_t>(pos.size());
  io::tensor_file tf;
  std::vector<fs::path> files;
  const io::array positions = io::array::from_int64({P}, pos);
  if (const auto* r = std::get_if<spec::rope>(&e)) {
    const std::int64_t n = r->pairs();
    std::vector<T> c(static_cast<std::size_t>(P * n)), s(c.size());
    im.rope_table(pos, seq_of(e, pos), std::span<T>(c), std::span<T>(s));
    if (npy) {
      std::vector<T> pairs;
      for (std::size_t k = 0; k < c.size(); ++k) {
        pairs.push_back(c[k]);
        pairs.push_back(s[k]);
      }
      io::write_npy(dir / "table.npy", io::array::from_values<T>({P, n, 2}, pairs));
      files.push_back(dir / "table.npy");
    } else {
      tf.add("cos", io::array::from_values<T>({P, n}, c));
      tf.add("sin", io::array::from_values<T>({P, n}, s));
      if (qk) add_qk<T>(im, *r, pos, tf);
    }
  } else if (const auto* a = std::get_if<spec::alibi>(&e)) {
    // Slopes, and the bias of 40 queries × 48 keys at scattered positions.
    const std::int64_t H = a->num_heads;
    std::vector<std::int64_t> qs, ks;
    for (std::int64_t i = 0; i < 40; ++i) qs.push_back(pos[static_cast<std::size_t>(i * 7)]);
    for (std::int64_t j = 0; j < 48; ++j) ks.push_back(pos[static_cast<std::size_t>(j * 11 + 3)]);
    std::vector<T> sl(static_cast<std::size_t>(H)), bias(sl.size() * qs.size() * ks.size());
    im.alibi_slopes(std::span<T>(sl));
    im.alibi_bias(qs, ks, std::span<T>(bias));
    tf.add("slopes", io::array::from_values<T>({H}, sl));
    tf.add("bias", io::array::from_values<T>({H, 40, 48}, bias));
    tf.add("queries", io::array::from_int64({40}, qs));
    tf.add("keys", io::array::from_int64({48}, ks));
    io::write_safetensors(dir / "dump.safetensors", tf);
    return {dir / "dump.safetensors"};
  } else if (std::holds_alternative<spec::t5>(e)) {
    std::vector<std::int64_t> dist, buckets;
    for (std::int64_t r = -3000; r <= 3000; ++r) dist.push_back(r);
    buckets.resize(dist.size());
    im.t5_buckets(dist, buckets);
    const auto n = static_cast<std::int64_t>(dist.size());
    tf.add("buckets", io::array::from_int64({n}, buckets));
    tf.add("distances", io::array::from_int64({n}, dist));
    io::write_safetensors(dir / "dump.safetensors", tf);
    return {dir / "dump.safetensors"};
  } else {
    const auto& sp = std::get<spec::sinusoidal>(e);
    std::vector<T> v(static_cast<std::size_t>(P * sp.d_model));
    im.sinusoidal_pe(pos, std::span<T>(v));
    if (npy) {
      io::write_npy(dir / "pe.npy", io::array::from_values<T>({P, sp.d_model}, v));
      files.push_back(dir / "pe.npy");
    } else {
      tf.add("pe", io::array::from_values<T>({P, sp.d_model}, v));
    }
  }
  if (npy) {
    io::write_npy(dir / "positions.npy", positions);
    files.push_back(dir / "positions.npy");
  } else {
    tf.add("positions", positions);
    io::write_safetensors(dir / "dump.safetensors", tf);
    files.push_back(dir / "dump.safetensors");
  }
  return files;
}

const std::vector<std::string>& strategy_specs() {
  static const std::vector<std::string> v = {
      "rope:head_dim=128,rope_theta=500000",
      "rope:head_dim=64,rope_theta=10000,layout=interleaved,partial_rotary_factor=0.5",
      "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
      "original_max_position_embeddings=32768",
      "rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
      "high_freq_factor=4,original_max_position_embeddings=8192",
      "sinusoidal:d_model=128",
      "alibi:num_heads=12",
      "t5:num_buckets=32,max_distance=128,bidirectional=true",
  };
  return v;
}

// The ladder property (docs/numerics.md §13.1, §13.4): a dump graded G satisfies every claim G
// ranks at or above, and no claim ranked above G; re-certified under each claim, the grade is G.
void expect_ladder(const spec::encoding& e, const std::vector<fs::path>& files,
                   const certify::certificate& cert, const std::string& what) {
  const grade g = cert.certification->result;
  for (const auto& [recipe, rung] : {std::pair<const char*, grade>{"exact", grade::faithful},
                                     {"hf", grade::recipe_hf},
                                     {"ggml", grade::recipe_ggml},
                                     {"vllm", grade::recipe_vllm}}) {
    certify::options o;
    o.recipe = recipe;
    o.diagnose = false;
    const auto c = certify::certify_dump(e, certify::read_dump(files), o);
    EXPECT_EQ(c.certification->result, g) << what << " --recipe " << recipe;
    const int want = g != grade::not_certified && g <= rung ? 0 : 1;
    EXPECT_EQ(c.exit_code(), want)
        << what << ": graded " << certify::to_string(g) << ", --recipe " << recipe << "\n"
        << certify::to_text(c);
  }
}

bool grade_matches_contract(kernel::strategy st, grade g, bool sixteen_bit, bool qk) {
  switch (st) {
    case kernel::strategy::accurate:
      // Its table is correctly rounded but the rotation runs in fp32 (apply.h): rotated
      // outputs are within the rotation's few roundings, drift-free, not faithful everywhere.
      return g <= (qk ? grade::drift_free : grade::faithful);
    case kernel::strategy::hf:
      return g <= grade::recipe_hf;
    case kernel::strategy::ggml:
      return g <= grade::recipe_ggml && g != grade::recipe_vllm;
    case kernel::strategy::table_fp16:
    case kernel::strategy::table_bf16:
      // Stored in a 16-bit format: in that dtype it is the hf recipe; in fp32, vllm's.
      return sixteen_bit ? g <= grade::recipe_vllm : g <= grade::recipe_vllm;
  }
  return false;
}

template <class T>
void strategies_for_dtype(const char* dtype_name) {
  const auto pos = test_positions();
  int n = 0;
  for (const std::string& text : strategy_specs()) {
    const spec::encoding e = spec::parse_spec(text);
    for (kernel::strategy st : kernel::all_strategies()) {
      if (!impl::builtin_supports(e, st)) continue;
      const auto im = impl::make_builtin(e, st);
      for (bool npy : {false, true}) {
        const bool relative =
            std::holds_alternative<spec::alibi>(e) || std::holds_alternative<spec::t5>(e);
        if (npy && relative) continue;  // several tensors: safetensors only
        if (std::holds_alternative<spec::t5>(e) && !std::is_same_v<T, float>) continue;
        const fs::path dir = temp_dir(std::string("st_") + dtype_name);
        const bool qk = !npy && std::holds_alternative<spec::rope>(e);
        const auto files = dump<T>(*im, e, pos, dir, npy, qk);
        const auto cert = certify::certify_dump(e, certify::read_dump(files), {});
        if (qk) {
          EXPECT_EQ(cert.checks.size(), 4u) << certify::to_text(cert);  // cos sin q k
        }
        EXPECT_TRUE(
            grade_matches_contract(st, cert.certification->result, !std::is_same_v<T, float>, qk))
            << text << " " << kernel::to_string(st) << " " << dtype_name
            << (npy ? " npy" : " safetensors") << ": "
            << certify::to_string(cert.certification->result) << "\n"
            << certify::to_text(cert);
        EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
        if (!npy) expect_ladder(e, files, cert, text + " " + kernel::to_string(st));
        if (!npy) {
          std::cout << dtype_name << " " << kernel::to_string(st) << " " << text << " -> "
                    << certify::to_string(cert.certification->result) << "\n";
        }
        ++n;
      }
    }
  }
  EXPECT_GT(n, 40);
}

TEST(Certify, BuiltinStrategiesGetTheirContractsGradeFp32) { strategies_for_dtype<float>("fp32"); }
TEST(Certify, BuiltinStrategiesGetTheirContractsGradeFp16) { strategies_for_dtype<half>("fp16"); }
TEST(Certify, BuiltinStrategiesGetTheirContractsGradeBf16) {
  strategies_for_dtype<bfloat16>("bf16");
}

// Specs under which each mutant changes something: the first one it applies to.
// test-backend-ops' rope grid (llama.cpp tests/test-backend-ops.cpp, test_rope): fs {1, 1.4245}
// × ef {0, 0.7465} × af {1, 1.4245} × freq_factors {none, uniform in [0.9, 1.1]} over its shapes
// (head 128 / n_dims 128 NORMAL, 64/64 NEOX, 80 with n_dims 20 and 32 in both modes), n_ctx_orig 0,
// base 10000, betas 1/1 — written as ggml SPECs and certified on pev's own ggml strategy (table and
// rotated q/k, fp32 and fp16): recipe:ggml or better, and `--recipe ggml` holds. Prints each
// spec's grade and ρ against the ggml bound (docs/encodings.md §8.7, docs/numerics.md §8.7).
std::string backend_ops_spec(std::int64_t head_dim, std::int64_t n_dims, const char* mode,
                             double fscale, double ef, double af, bool ff, std::mt19937_64& rng) {
  std::string s = fmt::format("ggml:head_dim={},n_dims={},mode={}", head_dim, n_dims, mode);
  if (fscale != 1) s += fmt::format(",freq_scale={}", fscale);
  if (ef != 0) s += fmt::format(",ext_factor={}", ef);
  if (af != 1) s += fmt::format(",attn_factor={}", af);
  s += ",beta_fast=1,beta_slow=1,n_ctx_orig=0";
  if (ff) {
    // init_tensor_uniform(t, 0.9f, 1.1f) of the freq tensor: floats in [0.9, 1.1].
    std::uniform_real_distribution<float> u(0.9f, 1.1f);
    s += ",freq_factors=[";
    for (std::int64_t i = 0; i < n_dims / 2; ++i) {
      s += fmt::format("{}{}", i ? "," : "", u(rng));
    }
    s += "]";
  }
  return s;
}

template <class T>
void backend_ops_grid(const char* dtype_name) {
  const std::uint64_t seed = test::test_seed(20261124);
  std::cout << "backend-ops grid " << dtype_name << ": freq_factors seed " << seed << "\n";
  std::mt19937_64 rng(seed);
  // Positions as test-backend-ops draws them (< 512), then far beyond: 0..767 and up to 2^17.
  const auto pos = test_positions();
  struct shape {
    std::int64_t head_dim, n_dims;
    const char* mode;
  };
  const shape shapes[] = {{128, 128, "normal"}, {64, 64, "neox"}, {80, 20, "normal"},
                          {80, 32, "normal"},   {80, 20, "neox"}, {80, 32, "neox"}};
  int n = 0;
  double worst = 0;
  for (double fscale : {1.0, 1.4245}) {
    for (double ef : {0.0, 0.7465}) {
      for (double af : {1.0, 1.4245}) {
        for (bool ff : {false, true}) {
          for (const shape& sh : shapes) {
            const std::string text =
                backend_ops_spec(sh.head_dim, sh.n_dims, sh.mode, fscale, ef, af, ff, rng);
            const spec::encoding e = spec::parse_spec(text);
            ASSERT_TRUE(impl::builtin_supports(e, kernel::strategy::ggml)) << text;
            const auto im = impl::make_builtin(e, kernel::strategy::ggml);
            const fs::path dir = temp_dir(std::string("grid_") + dtype_name);
            const auto files = dump<T>(*im, e, pos, dir, false, true);
            certify::options o;
            o.recipe = "ggml";
            const auto cert = certify::certify_dump(e, certify::read_dump(files), o);
            const grade g = cert.certification->result;
            EXPECT_TRUE(g != grade::not_certified && g <= grade::recipe_ggml)
                << text << ": " << certify::to_string(g) << "\n"
                << certify::to_text(cert);
            EXPECT_EQ(cert.exit_code(), 0) << text << "\n" << certify::to_text(cert);
            ASSERT_EQ(cert.checks.size(), 4u) << certify::to_text(cert);  // cos sin q k
            double rho = 0;
            for (const auto& c : cert.checks) {
              ASSERT_TRUE(c.recipe_rho.count("ggml")) << c.id;
              EXPECT_EQ(c.recipe_rho.count("hf"), 0u) << c.id << ": the ggml form has no hf rung";
              rho = std::max(rho, c.recipe_rho.at("ggml"));
            }
            worst = std::max(worst, rho);
            std::cout << dtype_name << " " << text.substr(0, text.find(",freq_factors"))
                      << (ff ? ",freq_factors=[…]" : "") << " -> " << certify::to_string(g)
                      << ", rho ggml " << fmt::format("{:.3g}", rho) << "\n";
            ++n;
          }
        }
      }
    }
  }
  EXPECT_EQ(n, 96);
  std::cout << "backend-ops grid " << dtype_name << ": " << n << " specs, worst rho ggml "
            << fmt::format("{:.3g}", worst) << "\n";
}

TEST(Certify, BackendOpsRopeGridOnTheGgmlStrategyFp32) { backend_ops_grid<float>("fp32"); }
TEST(Certify, BackendOpsRopeGridOnTheGgmlStrategyFp16) { backend_ops_grid<half>("fp16"); }

// A mistake in a ggml-form dump is caught: the same op run with ext_factor 1 instead of 0.7465
// (a YaRN mix of the wrong weight) is not certified under the 0.7465 spec.
TEST(Certify, GgmlFormWrongExtFactorIsNotCertified) {
  const auto pos = test_positions();
  const std::string base =
      "ggml:head_dim=128,mode=normal,freq_scale=0.25,attn_factor=1,"
      "n_ctx_orig=4096,freq_base=500000";
  const spec::encoding claimed = spec::parse_spec(base + ",ext_factor=0.7465");
  const spec::encoding ran = spec::parse_spec(base + ",ext_factor=1");
  const auto im = impl::make_builtin(ran, kernel::strategy::ggml);
  const fs::path dir = temp_dir("grid_wrong");
  const auto files = dump<float>(*im, ran, pos, dir, false, true);
  certify::options o;
  o.recipe = "ggml";
  const auto cert = certify::certify_dump(claimed, certify::read_dump(files), o);
  EXPECT_EQ(cert.certification->result, grade::not_certified) << certify::to_text(cert);
  EXPECT_EQ(cert.exit_code(), 1);
  // The hf strategies have no pipeline for the form: refused, naming the ones that do.
  try {
    (void)impl::make_builtin(claimed, kernel::strategy::hf);
    ADD_FAILURE() << "hf strategy accepted a ggml-form spec";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("ggml and accurate"), std::string::npos) << e.what();
  }
}

spec::encoding longrope_spec() {
  auto e = spec::parse_spec("rope:head_dim=96,rope_theta=10000");
  auto& r = std::get<spec::rope>(e);
  r.type = spec::rope_type::longrope;
  r.original_max_position_embeddings = 4096;
  r.max_position_embeddings = 131072;
  for (int i = 0; i < 48; ++i) {
    r.short_factor.push_back(1.0 + 0.02 * i);
    r.long_factor.push_back(1.5 + 0.5 * i);
  }
  spec::validate(e);
  return e;
}

std::vector<spec::encoding> mutant_specs() {
  std::vector<spec::encoding> v;
  for (const char* t : {
           "rope:head_dim=128,rope_theta=10000",
           "rope:head_dim=64,rope_theta=10000,partial_rotary_factor=0.5",
           "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
           "original_max_position_embeddings=4096,mscale=1,mscale_all_dim=0.5",
           "rope:head_dim=64,rope_theta=150000,rope_type=yarn,factor=32,"
           "original_max_position_embeddings=4096,truncate=false",
           "rope:head_dim=32,rope_theta=10000,rope_type=yarn,factor=4,"
           "original_max_position_embeddings=1000000",
           "rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
           "high_freq_factor=4,original_max_position_embeddings=8192",
           "rope:head_dim=128,rope_theta=10000,rope_type=dynamic,factor=4,"
           "max_position_embeddings=4096",
           "rope:head_dim=128,rope_theta=10000,rope_type=ntk,factor=4",
           "rope:head_dim=128,rope_theta=10000,rope_type=linear,factor=4",
           "rope:head_dim=256,rope_theta=1000000,rope_type=proportional,factor=8,"
           "partial_rotary_factor=0.25",
           "sinusoidal:d_model=64",
           "alibi:num_heads=12",
           "t5:num_buckets=32,max_distance=128,bidirectional=true",
           "t5:num_buckets=32,max_distance=4096,bidirectional=false",
           "t5:num_buckets=20,max_distance=160",
       }) {
    v.push_back(spec::parse_spec(t));
  }
  v.push_back(longrope_spec());
  return v;
}

// Whether a mutant's fp32 table differs from the hf strategy's anywhere at `pos`.
bool changes_the_table(const impl::implementation& m, const spec::encoding& e,
                       const std::vector<std::int64_t>& pos) {
  if (!std::holds_alternative<spec::rope>(e) && !std::holds_alternative<spec::sinusoidal>(e)) {
    return true;  // ALiBi and T5: their only outputs
  }
  const auto hf = impl::make_builtin(e, kernel::strategy::hf);
  std::size_t n = pos.size();
  if (const auto* r = std::get_if<spec::rope>(&e)) {
    n *= static_cast<std::size_t>(r->pairs());
    std::vector<float> c1(n), s1(n), c2(n), s2(n);
    m.rope_table(pos, seq_of(e, pos), std::span<float>(c1), std::span<float>(s1));
    hf->rope_table(pos, seq_of(e, pos), std::span<float>(c2), std::span<float>(s2));
    return std::memcmp(c1.data(), c2.data(), n * 4) != 0 ||
           std::memcmp(s1.data(), s2.data(), n * 4) != 0;
  }
  n *= static_cast<std::size_t>(std::get<spec::sinusoidal>(e).d_model);
  std::vector<float> a(n), b(n);
  m.sinusoidal_pe(pos, std::span<float>(a));
  hf->sinusoidal_pe(pos, std::span<float>(b));
  return std::memcmp(a.data(), b.data(), n * 4) != 0;
}

TEST(Certify, EveryMutantIsNotCertifiedAndDiagnosed) {
  const auto pos = test_positions();
  const auto specs = mutant_specs();
  int tried = 0, named = 0, tied = 0, skipped = 0;
  std::string table;
  for (const impl::mutant_info& info : impl::mutant_catalogue()) {
    const spec::encoding* e = nullptr;
    for (const auto& s : specs) {
      if (std::string_view(info.family) == spec::family_name(s) && info.applies(s)) {
        e = &s;
        break;
      }
    }
    if (!e) {
      ++skipped;  // no spec above where the mistake changes anything
      table += fmt::format("  {:<28} (no spec of the test where it applies)\n", info.id);
      continue;
    }
    const auto m = impl::make_mutant(info.id, *e);
    const bool visible_in_table = changes_the_table(*m, *e, pos);
    ++tried;
    const fs::path dir = temp_dir("mutant");
    // The table, and for RoPE rotated q/k too (rotation-layout bugs leave the table right).
    const auto files = dump<float>(*m, *e, pos, dir, false, std::holds_alternative<spec::rope>(*e));
    const auto cert = certify::certify_dump(*e, certify::read_dump(files), {});
    EXPECT_EQ(cert.exit_code(), 1) << info.id << " was certified:\n" << certify::to_text(cert);
    expect_ladder(*e, files, cert, info.id);
    ASSERT_TRUE(cert.certification->why) << info.id;
    const auto& x = cert.certification->why->explanations;
    ASSERT_FALSE(x.empty()) << info.id;
    // Named: the best explanation is the planted mistake, or ties with it (the same data).
    bool ok = false;
    for (const auto& c : x) {
      if (c.max_rho > x.front().max_rho) break;
      ok = ok || (c.mutant == info.id && c.explains);
    }
    const bool first = cert.certification->why->named && *cert.certification->why->named == info.id;
    named += ok;
    tied += ok && !first;
    table += fmt::format(
        "  {:<28} {:<44} {}{} (max rho {:.3g}; without: {:.3g})\n", info.id,
        spec::to_spec_string(*e).substr(0, 44), visible_in_table ? "" : "[q/k only] ",
        ok ? (first ? "named" : "named (tied with " + *cert.certification->why->named + ")")
           : "NOT named: " + cert.certification->why->named.value_or("none"),
        x.front().max_rho, cert.certification->why->max_rho_without);
  }
  std::cout << "mutant diagnosis:\n" << table;
  std::cout << named << " of " << tried << " mutants named (" << tied << " tied), " << skipped
            << " without an applicable spec\n";
  EXPECT_EQ(named, tried);  // every mistake of the catalogue named (or tied with its twin)
  EXPECT_GE(tried, 35);
}

// MRoPE (docs/encodings.md §4.6): a Qwen2.5-VL or Qwen3-VL table and rotated q/k dumped with
// positions [3, T] (text tokens, image patches with their own height/width positions, large
// positions).
template <class T>
std::vector<fs::path> dump_mrope(const impl::implementation& im, const spec::rope& r,
                                 const fs::path& dir, bool text_positions_1d = false) {
  std::vector<std::int64_t> t, h, w;
  std::mt19937_64 rng(test::test_seed(19));
  std::uniform_int_distribution<std::int64_t> grid(0, 31);
  const auto base = test_positions();
  for (std::size_t k = 0; k < base.size(); ++k) {
    const bool patch = !text_positions_1d && k % 2 == 1;
    t.push_back(base[k]);
    h.push_back(base[k] + (patch ? grid(rng) : 0));
    w.push_back(base[k] + (patch ? grid(rng) : 0));
  }
  std::vector<std::int64_t> pos = t;
  pos.insert(pos.end(), h.begin(), h.end());
  pos.insert(pos.end(), w.begin(), w.end());
  const auto n = static_cast<std::int64_t>(t.size()), P = r.pairs();
  std::vector<T> c(static_cast<std::size_t>(n * P)), s(c.size());
  im.rope_table_streams<T>(pos, std::nullopt, std::span<T>(c), std::span<T>(s));
  io::tensor_file tf;
  tf.add("cos", io::array::from_values<T>({n, P}, c));
  tf.add("sin", io::array::from_values<T>({n, P}, s));
  tf.add("positions",
         text_positions_1d ? io::array::from_int64({n}, t) : io::array::from_int64({3, 1, n}, pos));
  // q/k of every 8th token, with their [3, T'] positions.
  std::vector<std::int64_t> qp;
  const std::int64_t tq = (n + 7) / 8;
  for (int k = 0; k < 3; ++k) {
    for (std::int64_t i = 0; i < n; i += 8) qp.push_back(pos[static_cast<std::size_t>(k * n + i)]);
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& [name, heads] : {std::pair<std::string, std::int64_t>{"q", 2}, {"k", 1}}) {
    std::vector<T> in(static_cast<std::size_t>(tq * heads * r.head_dim)), out(in.size());
    for (T& v : in) v = T(normal(rng));
    im.rope_rotate_streams<T>(qp, std::nullopt,
                              kernel::heads_view<const T>{in, tq, heads, r.head_dim},
                              kernel::heads_view<T>{out, tq, heads, r.head_dim});
    tf.add(name + "_in", io::array::from_values<T>({tq, heads, r.head_dim}, in));
    tf.add(name + "_out", io::array::from_values<T>({tq, heads, r.head_dim}, out));
  }
  tf.add("qk_positions", io::array::from_int64({3, tq}, qp));
  io::write_safetensors(dir / "mrope.safetensors", tf);
  return {dir / "mrope.safetensors"};
}

TEST(Certify, MropeDumpsAreCertifiedAndMistakesNamed) {
  for (const char* text :
       {"rope:head_dim=128,rope_theta=1000000,mrope_section=[16,24,24]",
        "rope:head_dim=128,rope_theta=5000000,mrope_section=[24,20,20],mrope_interleaved=true"}) {
    SCOPED_TRACE(text);
    const spec::encoding e = spec::parse_spec(text);
    const auto& r = std::get<spec::rope>(e);
    const fs::path dir = temp_dir("mrope");
    // Genuine: every strategy gets its contract's grade, with no false alarm.
    for (const kernel::strategy st : kernel::all_strategies()) {
      const auto im = impl::make_builtin(e, st);
      const auto cert =
          certify::certify_dump(e, certify::read_dump(dump_mrope<float>(*im, r, dir)), {});
      EXPECT_EQ(cert.exit_code(), 0) << kernel::to_string(st) << ":\n" << certify::to_text(cert);
      EXPECT_TRUE(grade_matches_contract(st, cert.certification->result, false, true))
          << kernel::to_string(st) << ":\n"
          << certify::to_text(cert);
      if (st == kernel::strategy::accurate) {  // the table checks: correctly rounded
        EXPECT_EQ(cert.checks[0].best, grade::correctly_rounded) << certify::to_text(cert);
      }
      EXPECT_EQ(cert.checks.size(), 4u) << certify::to_text(cert);  // cos, sin, q_out, k_out
    }
    // Text tokens given as 1-D positions: every stream equal, certified as such.
    {
      const auto im = impl::make_builtin(e, kernel::strategy::hf);
      const auto cert =
          certify::certify_dump(e, certify::read_dump(dump_mrope<half>(*im, r, dir, true)), {});
      EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
    }
    // Every MRoPE mistake, and mistakes of the rotation and the table on an MRoPE model: not
    // certified, named.
    for (const char* id :
         {"mrope-hw-swapped", "mrope-interleave-flipped", "mrope-sections-doubled",
          "mrope-text-positions", "neox-as-interleaved", "rotate-inverse", "position-off-by-one"}) {
      const auto m = impl::make_mutant(id, e);
      const auto cert =
          certify::certify_dump(e, certify::read_dump(dump_mrope<float>(*m, r, dir)), {});
      EXPECT_EQ(cert.exit_code(), 1) << id << ":\n" << certify::to_text(cert);
      ASSERT_TRUE(cert.certification->why) << id;
      const auto& named = cert.certification->why->named;
      EXPECT_TRUE(named && *named == id) << id << " named " << named.value_or("nothing") << ":\n"
                                         << certify::to_text(cert);
      std::cout << text << ": planted " << id << ", named " << named.value_or("nothing")
                << " (max rho " << cert.certification->why->explanations.front().max_rho << ")\n";
    }
  }
}

TEST(Certify, LayoutsAreDetected) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=16,rope_theta=10000");
  const auto im = impl::make_builtin(e, kernel::strategy::accurate);
  std::vector<std::int64_t> pos;
  for (std::int64_t p = 0; p < 300; ++p) pos.push_back(p * 7);
  const std::int64_t P = 300, n = 8;
  std::vector<float> c(P * n), s(P * n);
  im->rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  auto write = [&](const std::string& name, std::vector<std::pair<std::string, io::array>> t) {
    io::tensor_file tf;
    for (auto& [k, v] : t) tf.add(k, std::move(v));
    tf.add("positions", io::array::from_int64({P}, pos));
    const fs::path f = temp_dir("layout_" + name) / "d.safetensors";
    io::write_safetensors(f, tf);
    return f;
  };
  std::vector<float> hc, hs, rc, rs, cache;
  for (std::int64_t p = 0; p < P; ++p) {
    for (int half = 0; half < 2; ++half) {
      for (std::int64_t i = 0; i < n; ++i) {
        hc.push_back(c[p * n + i]);
        hs.push_back(s[p * n + i]);
      }
    }
    for (std::int64_t i = 0; i < n; ++i) {
      for (int k = 0; k < 2; ++k) {
        rc.push_back(c[p * n + i]);
        rs.push_back(s[p * n + i]);
      }
    }
    for (std::int64_t i = 0; i < n; ++i) cache.push_back(c[p * n + i]);
    for (std::int64_t i = 0; i < n; ++i) cache.push_back(s[p * n + i]);
  }
  struct layout_case {
    std::string name;
    fs::path file;
    certify::table_layout want;
  };
  const std::vector<layout_case> cases = {
      {"separate",
       write("separate", {{"cos", io::array::from_floats({P, n}, c)},
                          {"sin", io::array::from_floats({P, n}, s)}}),
       certify::table_layout::separate},
      {"halves",
       write("halves", {{"cos", io::array::from_floats({1, P, 2 * n}, hc)},
                        {"sin", io::array::from_floats({1, P, 2 * n}, hs)}}),
       certify::table_layout::halves},
      {"repeated",
       write("repeated", {{"cos", io::array::from_floats({P, 2 * n}, rc)},
                          {"sin", io::array::from_floats({P, 2 * n}, rs)}}),
       certify::table_layout::repeated},
      {"vllm", write("vllm", {{"cos_sin_cache", io::array::from_floats({P, 2 * n}, cache)}}),
       certify::table_layout::vllm},
  };
  for (const auto& lc : cases) {
    const auto cert = certify::certify_dump(e, certify::read_dump({lc.file}), {});
    EXPECT_EQ(cert.certification->result, grade::correctly_rounded) << lc.name << "\n"
                                                                    << certify::to_text(cert);
    EXPECT_NE(cert.certification->what.find(std::string(certify::to_string(lc.want)) +
                                            " layout, detected"),
              std::string::npos)
        << lc.name << ": " << cert.certification->what;
  }
  // A duplicate that differs from its twin is an error of that value, not ignored.
  hc[3 * 2 * n + n + 1] = -hc[3 * 2 * n + n + 1];
  const auto bad = write("halves_bad", {{"cos", io::array::from_floats({P, 2 * n}, hc)},
                                        {"sin", io::array::from_floats({P, 2 * n}, hs)}});
  certify::options o;
  o.layout = certify::table_layout::halves;
  const auto cert = certify::certify_dump(e, certify::read_dump({bad}), o);
  EXPECT_EQ(cert.exit_code(), 1) << certify::to_text(cert);
  ASSERT_TRUE(cert.certification->why);
  ASSERT_FALSE(cert.certification->why->first.empty());
  EXPECT_EQ(cert.certification->why->first.front().position, 3 * 7);
  EXPECT_EQ(cert.certification->why->first.front().index, n + 1);
}

// A bound as large as the values' range certifies nothing (docs/numerics.md §13.1): uniform noise
// at positions near 2^40, where the hf recipe's fp32 positions are off by whole turns, is not
// certified, and the certificate says which bounds were vacuous from which position.
TEST(Certify, VacuousBoundsCertifyNothing) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=8,rope_theta=10000");
  const std::int64_t P = 64, n = 4;
  std::vector<std::int64_t> pos;
  for (std::int64_t k = 0; k < P; ++k) pos.push_back((std::int64_t{1} << 40) + 12345 * k + 7);
  const std::uint64_t seed = test::test_seed(11);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> c(P * n), s(P * n);
  for (float& v : c) v = u(rng);
  for (float& v : s) v = u(rng);
  io::tensor_file tf;
  tf.add("cos", io::array::from_floats({P, n}, c));
  tf.add("sin", io::array::from_floats({P, n}, s));
  tf.add("positions", io::array::from_int64({P}, pos));
  const fs::path f = temp_dir("vacuous") / "noise.safetensors";
  io::write_safetensors(f, tf);
  const auto cert = certify::certify_dump(e, certify::read_dump({f}), {});
  EXPECT_EQ(cert.certification->result, grade::not_certified) << certify::to_text(cert);
  EXPECT_EQ(cert.exit_code(), 1);
  for (const auto& ch : cert.checks) {
    ASSERT_TRUE(ch.vacuous.count("hf")) << ch.id << "\n" << certify::to_text(cert);
    EXPECT_GT(ch.vacuous.at("hf").values, 0u);
    EXPECT_GE(ch.vacuous.at("hf").first_position, pos.front());
  }
}

// An exact value of 0 is judged in its output's scale (docs/numerics.md §13.1): sin at position 0
// off by less than half an ulp of the attention factor stays within every recipe, and ρ is a
// finite, small figure — not the error divided by the smallest subnormal.
TEST(Certify, ZeroReferenceValuesAreBoundedInTheirScale) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=16,rope_theta=10000");
  const auto im = impl::make_builtin(e, kernel::strategy::hf);
  std::vector<std::int64_t> pos;
  for (std::int64_t p = 0; p < 64; ++p) pos.push_back(p);
  const std::int64_t P = 64, n = 8;
  std::vector<float> c(P * n), s(P * n);
  im->rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  ASSERT_EQ(s[3], 0.0f);
  s[3] = 0x1p-27f;  // sin(0) computed as a tiny difference: ¼ ulp_32(1)
  io::tensor_file tf;
  tf.add("cos", io::array::from_floats({P, n}, c));
  tf.add("sin", io::array::from_floats({P, n}, s));
  const fs::path f = temp_dir("zero") / "t.safetensors";
  io::write_safetensors(f, tf);
  const auto cert = certify::certify_dump(e, certify::read_dump({f}), {});
  EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
  for (const auto& ch : cert.checks) {
    EXPECT_LE(ch.recipe_rho.at("hf"), 1.0) << ch.id;
  }
  // Beyond ½ ulp of the scale, the same value is an error.
  s[3] = 0x1p-23f;
  io::tensor_file tf2;
  tf2.add("cos", io::array::from_floats({P, n}, c));
  tf2.add("sin", io::array::from_floats({P, n}, s));
  io::write_safetensors(f, tf2);
  const auto bad = certify::certify_dump(e, certify::read_dump({f}), {});
  double rho = 0;
  for (const auto& ch : bad.checks) rho = std::max(rho, ch.recipe_rho.at("hf"));
  EXPECT_GT(rho, 1.0) << certify::to_text(bad);
  EXPECT_LT(rho, 1e3) << certify::to_text(bad);
}

// The library a table's values came from is measured against the hf recipe's own angles
// fl(fl(p)·f̂) and named by the tightest class that covers it (docs/numerics.md §5.4, §13.6):
// cos/sin rounded from double are correctly rounded; a step further away, the 2-ulp class; an
// absolute error of 3e-7 on small values, beyond every ulp class, the fast-math intrinsics'.
TEST(Certify, TheLibraryIsMeasuredAndNamed) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=32,rope_theta=10000");
  const std::int64_t P = 64, n = 16;
  std::vector<double> angle(P * n);
  for (std::int64_t p = 0; p < P; ++p) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float x = static_cast<float>(2 * i) / 32.0f;
      const float f = 1.0f / std::pow(10000.0f, x);
      angle[p * n + i] = static_cast<double>(static_cast<float>(p) * f);
    }
  }
  auto measured = [&](auto&& value) {
    std::vector<float> c(P * n), s(P * n);
    for (std::size_t k = 0; k < c.size(); ++k) {
      c[k] = value(std::cos(angle[k]));
      s[k] = value(std::sin(angle[k]));
    }
    io::tensor_file tf;
    tf.add("cos", io::array::from_floats({P, n}, c));
    tf.add("sin", io::array::from_floats({P, n}, s));
    const fs::path f = temp_dir("library") / "t.safetensors";
    io::write_safetensors(f, tf);
    certify::options o;
    o.diagnose = false;
    return certify::certify_dump(e, certify::read_dump({f}), o).certification->library;
  };
  const auto cr = measured([](double v) { return static_cast<float>(v); });
  ASSERT_TRUE(cr.trig_ulp) << cr.note;
  EXPECT_EQ(cr.angles, "hf");
  EXPECT_LE(*cr.trig_ulp, 0.5 + 1e-6);
  EXPECT_EQ(cr.trig_class, metric::kCorrectlyRounded.name);
  // One step away from the exact value, for |v| in [0.05, 0.9] (position 0's 1 and 0 stay: the
  // attention factor they imply stays 1).
  const auto two = measured([](double v) {
    const auto t = static_cast<float>(v);
    if (std::fabs(v) < 0.05 || std::fabs(v) > 0.9) return t;
    return std::nextafter(t, static_cast<double>(t) >= v ? 2.0f : -2.0f);
  });
  ASSERT_TRUE(two.trig_ulp) << two.note;
  EXPECT_GT(*two.trig_ulp, 1.0);
  EXPECT_LE(*two.trig_ulp, 1.5 + 1e-6);
  EXPECT_EQ(two.trig_class, metric::kCuda.name);
  const auto fast =
      measured([](double v) { return static_cast<float>(std::fabs(v) < 0.1 ? v + 3e-7 : v); });
  ASSERT_TRUE(fast.trig_ulp) << fast.note;
  EXPECT_GT(*fast.trig_ulp, 2.0);
  ASSERT_TRUE(fast.trig_abs);
  EXPECT_NEAR(*fast.trig_abs, 3e-7, 1e-8);
  EXPECT_EQ(fast.trig_class, std::string(metric::kFastMathName));
}

TEST(Certify, MalformedDumpsAreRefusedOrFail) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=8");
  const fs::path dir = temp_dir("malformed");
  auto write = [&](const std::string& name, std::vector<std::pair<std::string, io::array>> t) {
    io::tensor_file tf;
    for (auto& [k, v] : t) tf.add(k, std::move(v));
    const fs::path f = dir / (name + ".safetensors");
    io::write_safetensors(f, tf);
    return f;
  };
  const std::vector<float> ok(8 * 4, 0.5f);
  struct refused {
    fs::path file;
    std::string message;
  };
  const std::vector<refused> cases = {
      {write("no_table", {{"x", io::array::from_floats({8, 4}, ok)}}), "no RoPE cos/sin table"},
      {write("wrong_width", {{"cos", io::array::from_floats({8, 5}, std::vector<float>(40))},
                             {"sin", io::array::from_floats({8, 5}, std::vector<float>(40))}}),
       "expected [P, 4]"},
      {write("int_table", {{"cos", io::array::from_int64({8, 4}, std::vector<std::int64_t>(32))},
                           {"sin", io::array::from_int64({8, 4}, std::vector<std::int64_t>(32))}}),
       "expected F32, F16, BF16 or F64"},
      {write("rows_mismatch", {{"cos", io::array::from_floats({8, 4}, ok)},
                               {"sin", io::array::from_floats({4, 4}, std::vector<float>(16))}}),
       "different numbers of rows"},
      {write("positions_mismatch",
             {{"cos", io::array::from_floats({8, 4}, ok)},
              {"sin", io::array::from_floats({8, 4}, ok)},
              {"positions", io::array::from_int64({3}, std::vector<std::int64_t>{0, 1, 2})}}),
       "8 rows but 3 positions"},
  };
  for (const auto& c : cases) {
    try {
      (void)certify::certify_dump(e, certify::read_dump({c.file}), {});
      ADD_FAILURE() << c.file << ": accepted";
    } catch (const error& ex) {
      EXPECT_NE(std::string(ex.what()).find(c.message), std::string::npos)
          << c.file << ": " << ex.what();
    }
  }
  // NaN and Inf in a table: checks that fail (non-finite values counted), exit 1.
  std::vector<float> c(8 * 4), s(8 * 4);
  const auto im = impl::make_builtin(e, kernel::strategy::accurate);
  std::vector<std::int64_t> pos = {0, 1, 2, 3, 4, 5, 6, 7};
  im->rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  c[5] = std::numeric_limits<float>::quiet_NaN();
  s[9] = std::numeric_limits<float>::infinity();
  const auto f = write("nan", {{"cos", io::array::from_floats({8, 4}, c)},
                               {"sin", io::array::from_floats({8, 4}, s)}});
  const auto cert = certify::certify_dump(e, certify::read_dump({f}), {});
  EXPECT_EQ(cert.exit_code(), 1);
  ASSERT_EQ(cert.checks.size(), 2u);
  EXPECT_EQ(cert.checks[0].non_finite, 1u);
  EXPECT_EQ(cert.checks[1].non_finite, 1u);
  EXPECT_NE(certify::to_json(cert).find("\"non_finite\": 1"), std::string::npos);
}

// certificate.json of a dump claimed to follow the hf recipe, which it does not (exit 1), certified
// on `threads` threads (seconds zeroed: wall time differs between runs).
std::string not_certified_json(const spec::encoding& e, const certify::dump& d, int threads) {
  certify::options o;
  o.threads = threads;
  o.recipe = "hf";
  certify::certificate cert = certify::certify_dump(e, d, o);
  EXPECT_EQ(cert.exit_code(), 1);
  cert.certification->seconds = 0;
  return report::to_json(cert);
}

// The table's rows are compared on worker threads in fixed chunks whose figures merge in order:
// the certificate (figures, worst cases, the first mismatches, the diagnosis) is the same for 1,
// 2 and 3 threads. A table of 9000 rows (5 chunks) with values pushed beyond the bounds in four
// chunks, so that the mismatches and worst cases come from several chunks.
TEST(Certify, ThreadCountDoesNotChangeTheCertificate) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=64,rope_theta=10000");
  const auto im = impl::make_builtin(e, kernel::strategy::hf);
  const std::int64_t P = 9000, n = 32;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(P));
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
  std::vector<float> c(static_cast<std::size_t>(P * n)), s(c.size());
  im->rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  for (const std::size_t row : {100, 2500, 6000, 8999}) {
    c[row * static_cast<std::size_t>(n) + row % 7] += 0x1p-6f;
    s[row * static_cast<std::size_t>(n) + row % 5] -= 0x1p-6f;
  }
  certify::dump d;
  d.tensors["cos"] = io::array::from_values<float>({P, n}, c);
  d.tensors["sin"] = io::array::from_values<float>({P, n}, s);
  const std::string one = not_certified_json(e, d, 1);
  EXPECT_NE(one.find("\"position\": 6000"), std::string::npos);
  EXPECT_EQ(not_certified_json(e, d, 2), one);
  EXPECT_EQ(not_certified_json(e, d, 3), one);
}

// Rotated q/k are compared on worker threads too, in fixed chunks of tokens whose figures merge in
// order while the calling thread computes the next chunks' reference rotations: the certificate
// is the same for 1, 2 and 3 threads. 8200 tokens × 4 heads × 64 (17 chunks of 512 tokens, more
// than one group of chunks for every thread count) with outputs pushed beyond the bounds in four
// chunks. The layout test's [H, T, D] reading has 4 tokens of 8200 heads, which it splits in
// parts of 4096 (layout_qk_reading.cpp: head_invariance); its counts are in the certificate
// (decided_by).
TEST(Certify, ThreadCountDoesNotChangeTheQkCertificate) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=64,rope_theta=10000");
  const auto& r = std::get<spec::rope>(e);
  const auto im = impl::make_builtin(e, kernel::strategy::hf);
  const std::int64_t T = 8200, H = 4, D = r.head_dim;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(T));
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
  std::mt19937_64 rng(test::test_seed(777));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> in(static_cast<std::size_t>(T * H * D)), out(in.size());
  for (float& v : in) v = normal(rng);
  im->rope_rotate(pos, std::nullopt, kernel::heads_view<const float>{in, T, H, D},
                  kernel::heads_view<float>{out, T, H, D});
  for (const std::size_t t : {100, 1100, 5800, 8199}) {
    out[(t * static_cast<std::size_t>(H) + t % 4) * static_cast<std::size_t>(D) + t % 64] +=
        0x1p-4f;
  }
  certify::dump d;
  d.tensors["q_in"] = io::array::from_values<float>({T, H, D}, in);
  d.tensors["q_out"] = io::array::from_values<float>({T, H, D}, out);
  const std::string one = not_certified_json(e, d, 1);
  EXPECT_NE(one.find("\"position\": 8199"), std::string::npos) << one;
  // The [H, T, D] reading counted every head of its 4 tokens once: 4 × 32 pairs × 8199 heads
  // besides each pair's reference head.
  EXPECT_NE(one.find("bhtd: "), std::string::npos) << one;
  EXPECT_NE(one.find(" of 1049472 head pairs differ"), std::string::npos) << one;
  EXPECT_EQ(not_certified_json(e, d, 2), one);
  EXPECT_EQ(not_certified_json(e, d, 3), one);
}

TEST(Certify, LargeTableThroughput) {
  // Issue figure: a fp32 cos/sin table of 131072 positions × 64 pairs (printed, not asserted).
  const spec::encoding e = spec::parse_spec("rope:head_dim=128,rope_theta=500000");
  const auto im = impl::make_builtin(e, kernel::strategy::hf);
  std::vector<std::int64_t> pos(131072);
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
  const fs::path dir = temp_dir("large");
  const auto files = dump<float>(*im, e, pos, dir, false);
  const auto t0 = std::chrono::steady_clock::now();
  const auto cert = certify::certify_dump(e, certify::read_dump(files), {});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(cert.certification->result, grade::recipe_hf) << certify::to_text(cert);
  std::cout << "certified 131072 x 64 fp32 cos/sin (hf) in " << s << " s, "
            << cert.prov.reference_values << " reference values, " << cert.prov.reference_fallbacks
            << " MPFR fallbacks\n";
}

}  // namespace
}  // namespace pev

// Every tensor layout engines write, certified through files (docs/certify.md §4): q/k as
// [B, H, T, D], [B, T, H, D], [T, H, D] and [T, H·D]; interleaved outputs in half-split order
// (DeepSeek-V3); tables with a batch dimension; complex freqs_cis; .npz archives and directories of
// .npy files; a lone [P, rot] table read as [cos | sin] or (cos, sin) pairs. Each case is
// certified with the reading stated (certification `what` and `layouts`), or refused (pev::error,
// exit 2) naming the option that settles it; planted bugs in each layout are not certified.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/seed.h"
#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/impl/implementation.h"
#include "pev/io/npy.h"
#include "pev/io/npz.h"
#include "pev/io/safetensors.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

namespace fs = std::filesystem;
using certify::grade;

fs::path temp_dir(const std::string& name) {
  // The process id keeps runs of other checkouts on the same machine apart.
  const fs::path d =
      fs::path(testing::TempDir()) / fmt::format("pev_layouts_{}_{}", ::getpid(), name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

fs::path write_st(const std::string& name, std::vector<std::pair<std::string, io::array>> t,
                  std::map<std::string, std::string> metadata = {}) {
  io::tensor_file tf;
  for (auto& [k, v] : t) tf.add(k, std::move(v));
  tf.metadata = std::move(metadata);
  const fs::path f = temp_dir(name) / "d.safetensors";
  io::write_safetensors(f, tf);
  return f;
}

// The reading of `role` in the certificate (fails the test when there is none).
report::layout_reading reading_of(const certify::certificate& c, const std::string& role) {
  for (const auto& l : c.certification->layouts) {
    if (l.role == role) return l;
  }
  ADD_FAILURE() << "no reading of " << role << " in " << c.certification->what;
  return {};
}

certify::certificate run(const spec::encoding& e, const std::vector<fs::path>& files,
                         const certify::options& o = {}) {
  return certify::certify_dump(e, certify::read_dump(files), o);
}

// The message of the pev::error `f` throws ("" when it does not throw).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const pev::error& e) {
    return e.what();
  }
  return "";
}

// Rotated q/k in pev's canonical [tokens, heads, D] order, from the correctly rounded strategy.
struct rotated {
  std::vector<float> in, out;
  std::int64_t tokens = 0, heads = 0, dim = 0;
};

rotated rotate(const spec::encoding& e, const std::vector<std::int64_t>& pos, std::int64_t heads,
               std::uint64_t seed) {
  const auto& r = std::get<spec::rope>(e);
  const auto im = impl::make_builtin(e, kernel::strategy::accurate);
  rotated q;
  q.tokens = static_cast<std::int64_t>(pos.size());
  q.heads = heads;
  q.dim = r.head_dim;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  q.in.resize(static_cast<std::size_t>(q.tokens * heads * q.dim));
  q.out.resize(q.in.size());
  for (float& v : q.in) v = normal(rng);
  im->rope_rotate(pos, std::nullopt, kernel::heads_view<const float>{q.in, q.tokens, heads, q.dim},
                  kernel::heads_view<float>{q.out, q.tokens, heads, q.dim});
  return q;
}

// `v` ([B·T, H, D] canonical) as [B, H, T, D].
std::vector<float> to_bhtd(const std::vector<float>& v, std::int64_t B, std::int64_t T,
                           std::int64_t H, std::int64_t D) {
  std::vector<float> o(v.size());
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t h = 0; h < H; ++h) {
        for (std::int64_t d = 0; d < D; ++d) {
          o[static_cast<std::size_t>(((b * H + h) * T + t) * D + d)] =
              v[static_cast<std::size_t>(((b * T + t) * H + h) * D + d)];
        }
      }
    }
  }
  return o;
}

std::vector<std::int64_t> iota(std::int64_t n, std::int64_t from = 0) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(from + i);
  return v;
}

const std::uint64_t kSeed = test::test_seed(15);

// ---- q/k layouts ------------------------------------------------------------------------------

struct qk_case {
  std::string name;
  certify::qk_layout want;
  std::vector<std::int64_t> shape_q, shape_k;
  bool bhtd = false;    // the data transposed to [B, H, T, D]
  std::string decided;  // what decided the reading (a substring of decided_by)
};

TEST(CertifyLayouts, QkInEveryLayoutIsCertifiedWithTheReadingStated) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=32,rope_theta=10000");
  constexpr std::int64_t B = 2, T = 48, Hq = 4, Hk = 2, D = 32;
  // Two sequences with their own positions (the second starts at 1000).
  std::vector<std::int64_t> pos = iota(T), second = iota(T, 1000);
  pos.insert(pos.end(), second.begin(), second.end());
  const rotated q = rotate(e, pos, Hq, kSeed), k = rotate(e, pos, Hk, kSeed + 1);
  const std::vector<qk_case> cases = {
      {"bhtd", certify::qk_layout::bhtd, {B, Hq, T, D}, {B, Hk, T, D}, true, "shapes"},
      {"bthd", certify::qk_layout::bthd, {B, T, Hq, D}, {B, T, Hk, D}, false, "shapes"},
      {"t(hd)", certify::qk_layout::t_hd, {B, T, Hq * D}, {B, T, Hk * D}, false, "shapes"},
  };
  for (const qk_case& c : cases) {
    auto layout = [&](const std::vector<float>& v, std::int64_t H) {
      return c.bhtd ? to_bhtd(v, B, T, H, D) : v;
    };
    const fs::path f =
        write_st("qk_" + c.name, {{"q_in", io::array::from_floats(c.shape_q, layout(q.in, Hq))},
                                  {"q_out", io::array::from_floats(c.shape_q, layout(q.out, Hq))},
                                  {"k_in", io::array::from_floats(c.shape_k, layout(k.in, Hk))},
                                  {"k_out", io::array::from_floats(c.shape_k, layout(k.out, Hk))},
                                  {"position_ids", io::array::from_int64({B, T}, pos)}});
    const auto cert = run(e, {f});
    EXPECT_EQ(cert.exit_code(), 0) << c.name << "\n" << certify::to_text(cert);
    const auto r = reading_of(cert, "q/k");
    EXPECT_EQ(r.layout, certify::to_string(c.want)) << c.name;
    EXPECT_NE(r.decided_by.find(c.decided), std::string::npos) << c.name << ": " << r.decided_by;
    EXPECT_NE(r.read_as.find("2 sequences of 48 tokens"), std::string::npos) << r.read_as;
    EXPECT_NE(cert.certification->what.find(certify::to_string(c.want)), std::string::npos)
        << cert.certification->what;
    EXPECT_EQ(cert.certification->positions, static_cast<std::uint64_t>(B * T)) << c.name;

    // A planted bug in the same layout: the second sequence read at the first one's positions.
    std::vector<std::int64_t> wrong = iota(T);
    wrong.insert(wrong.end(), pos.begin(), pos.begin() + T);
    const fs::path g = write_st("qk_bug_" + c.name,
                                {{"q_in", io::array::from_floats(c.shape_q, layout(q.in, Hq))},
                                 {"q_out", io::array::from_floats(c.shape_q, layout(q.out, Hq))},
                                 {"position_ids", io::array::from_int64({B, T}, wrong)}});
    const auto bad = run(e, {g});
    EXPECT_EQ(bad.exit_code(), 1) << c.name << " with wrong positions\n" << certify::to_text(bad);
    // q alone: [2, 4, 48, 32] also reads as 4 tokens × 48 heads; the positions [2, 48] fit one.
    const auto rb = reading_of(bad, "q/k");
    EXPECT_EQ(rb.layout, certify::to_string(c.want)) << c.name;
    if (c.want != certify::qk_layout::t_hd) {
      EXPECT_NE(rb.decided_by.find("the positions 'position_ids'"), std::string::npos)
          << c.name << ": " << rb.decided_by;
    }
  }
}

TEST(CertifyLayouts, TransformersQkWithoutPositionsIsReadByItsData) {
  // The issue's case: transformers' query_states [1, 4, 512, 128] at positions 0…511, no
  // positions tensor. Read as 4 tokens × 512 heads, it was "not certified".
  const spec::encoding e = spec::parse_spec("rope:head_dim=128,rope_theta=500000");
  constexpr std::int64_t T = 512, H = 4, D = 128;
  const rotated q = rotate(e, iota(T), H, kSeed);
  const fs::path f =
      write_st("qk_bhtd_nopos",
               {{"q_in", io::array::from_floats({1, H, T, D}, to_bhtd(q.in, 1, T, H, D))},
                {"q_out", io::array::from_floats({1, H, T, D}, to_bhtd(q.out, 1, T, H, D))}});
  const auto cert = run(e, {f});
  EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
  const auto r = reading_of(cert, "q/k");
  EXPECT_EQ(r.layout, "bhtd");
  EXPECT_NE(r.read_as.find("H=4, T=512, D=128"), std::string::npos) << r.read_as;
  EXPECT_NE(r.decided_by.find("the data"), std::string::npos) << r.decided_by;
  EXPECT_EQ(cert.certification->max_position, T - 1);

  // [T, H, D] (pev's own) and [T, H·D] (vLLM) of the same data, with positions [T].
  for (const auto& [name, shape, want] :
       {std::tuple<std::string, std::vector<std::int64_t>, std::string>{"thd", {T, H, D}, "thd"},
        {"t_hd", {T, H * D}, "t(hd)"}}) {
    const fs::path g = write_st(name, {{"q_in", io::array::from_floats(shape, q.in)},
                                       {"q_out", io::array::from_floats(shape, q.out)},
                                       {"positions", io::array::from_int64({T}, iota(T))}});
    const auto c = run(e, {g});
    EXPECT_EQ(c.exit_code(), 0) << name << "\n" << certify::to_text(c);
    EXPECT_EQ(reading_of(c, "q/k").layout, want) << name;
  }
}

TEST(CertifyLayouts, AmbiguousQkAsksForTheOption) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=16,rope_theta=10000");
  constexpr std::int64_t T = 32, H = 4, D = 16;
  const rotated q = rotate(e, iota(T), H, kSeed);
  // Outputs equal to their inputs (a rotation that was never applied): every reading rotates the
  // heads of a token alike, so the data cannot tell [1, H, T, D] from [1, T, H, D].
  const std::vector<float> x = to_bhtd(q.in, 1, T, H, D);
  const fs::path f = write_st("qk_ambiguous", {{"q_in", io::array::from_floats({1, H, T, D}, x)},
                                               {"q_out", io::array::from_floats({1, H, T, D}, x)}});
  const std::string msg = error_of([&] { run(e, {f}); });
  EXPECT_NE(msg.find("--qk-layout"), std::string::npos) << msg;
  EXPECT_NE(msg.find("q/k"), std::string::npos) << msg;
  // Stated: read as said, and not certified (the rotation is missing).
  certify::options o;
  o.qk_layout = certify::qk_layout::bhtd;
  const auto cert = run(e, {f}, o);
  EXPECT_EQ(cert.exit_code(), 1) << certify::to_text(cert);
  EXPECT_EQ(reading_of(cert, "q/k").decided_by, "--qk-layout");

  // The dump's metadata settles it as the option does.
  const fs::path m = write_st("qk_meta",
                              {{"q_in", io::array::from_floats({1, H, T, D}, x)},
                               {"q_out", io::array::from_floats({1, H, T, D}, x)}},
                              {{"qk_layout", "bhtd"}});
  EXPECT_NE(reading_of(run(e, {m}), "q/k").decided_by.find("metadata"), std::string::npos);

  // Positions that fit no reading: the message speaks of q/k, not of a table.
  const fs::path p =
      write_st("qk_badpos", {{"q_in", io::array::from_floats({1, H, T, D}, x)},
                             {"q_out", io::array::from_floats({1, H, T, D}, x)},
                             {"position_ids", io::array::from_int64({1, 7}, iota(7))}});
  const std::string pm = error_of([&] { run(e, {p}); });
  EXPECT_NE(pm.find("q/k"), std::string::npos) << pm;
  EXPECT_EQ(pm.find("table"), std::string::npos) << pm;
  EXPECT_THROW(certify::parse_qk_layout("hdt"), pev::error);
  EXPECT_EQ(certify::parse_qk_layout("t(hd)"), certify::qk_layout::t_hd);
}

// ---- Half-split outputs of an interleaved rotation ----------------------------------------

TEST(CertifyLayouts, HalfSplitOutputsOfAnInterleavedRotation) {
  // DeepSeek-V3's apply_rotary_pos_emb_interleave: pair (2i, 2i + 1) rotated, written at
  // (i, i + rot/2).
  const spec::encoding e = spec::parse_spec("rope:head_dim=32,rope_theta=10000,layout=interleaved");
  constexpr std::int64_t T = 64, H = 2, D = 32, n = D / 2;
  const rotated q = rotate(e, iota(T, 5), H, kSeed);
  auto half_split = [&](const std::vector<float>& v) {
    std::vector<float> o(v.size());
    for (std::size_t row = 0; row < v.size() / D; ++row) {
      for (std::int64_t i = 0; i < n; ++i) {
        o[row * D + static_cast<std::size_t>(i)] = v[row * D + static_cast<std::size_t>(2 * i)];
        o[row * D + static_cast<std::size_t>(i + n)] =
            v[row * D + static_cast<std::size_t>(2 * i + 1)];
      }
    }
    return o;
  };
  auto dump = [&](const std::string& name, const std::vector<float>& out) {
    return write_st(name, {{"q_in", io::array::from_floats({T, H, D}, q.in)},
                           {"q_out", io::array::from_floats({T, H, D}, out)},
                           {"positions", io::array::from_int64({T}, iota(T, 5))}});
  };
  const fs::path f = dump("halfsplit", half_split(q.out));
  const auto cert = run(e, {f});
  EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
  const auto r = reading_of(cert, "q/k");
  EXPECT_NE(r.read_as.find("half-split order"), std::string::npos) << r.read_as;
  EXPECT_NE(r.decided_by.find("the order: the data"), std::string::npos) << r.decided_by;
  // The inputs' order is read as such.
  const auto plain = run(e, {dump("interleaved", q.out)});
  EXPECT_EQ(plain.exit_code(), 0) << certify::to_text(plain);
  EXPECT_NE(reading_of(plain, "q/k").read_as.find("interleaved order"), std::string::npos);
  // Forced to the wrong order: not certified.
  certify::options o;
  o.qk_order = certify::qk_order::input;
  EXPECT_EQ(run(e, {f}, o).exit_code(), 1);
  // A planted bug in half-split order (positions off by one): not certified, order still read.
  const rotated wrong = rotate(e, iota(T, 6), H, kSeed);
  const auto bad = run(e, {dump("halfsplit_bug", half_split(wrong.out))});
  EXPECT_EQ(bad.exit_code(), 1) << certify::to_text(bad);
  EXPECT_NE(reading_of(bad, "q/k").read_as.find("half-split order"), std::string::npos);
  EXPECT_THROW(certify::parse_qk_order("halves"), pev::error);
}

// ---- Tables ------------------------------------------------------------------------------------

struct table_data {
  std::vector<float> c, s;  // [P, pairs]
  std::int64_t P = 0, n = 0;
};

table_data table_of(const spec::encoding& e, const std::vector<std::int64_t>& pos) {
  const auto im = impl::make_builtin(e, kernel::strategy::accurate);
  table_data t;
  t.P = static_cast<std::int64_t>(pos.size());
  t.n = std::get<spec::rope>(e).pairs();
  t.c.resize(static_cast<std::size_t>(t.P * t.n));
  t.s.resize(t.c.size());
  im->rope_table(pos, std::nullopt, std::span<float>(t.c), std::span<float>(t.s));
  return t;
}

// [P, 2·pairs] with duplicated halves (transformers).
std::vector<float> halves(const std::vector<float>& v, std::int64_t P, std::int64_t n) {
  std::vector<float> o;
  for (std::int64_t p = 0; p < P; ++p) {
    for (int k = 0; k < 2; ++k) {
      o.insert(o.end(), v.begin() + p * n, v.begin() + (p + 1) * n);
    }
  }
  return o;
}

TEST(CertifyLayouts, TablesWithABatchDimension) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=16,rope_theta=10000");
  constexpr std::int64_t P = 100;
  std::vector<std::int64_t> pos = iota(P), second = iota(P, 3000);
  const table_data a = table_of(e, pos), b = table_of(e, second);
  const std::int64_t n = a.n;
  auto cat = [](std::vector<float> x, const std::vector<float>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  // Two identical sequences, positions [P] shared: the first is read.
  const fs::path same = write_st(
      "batch_same",
      {{"cos", io::array::from_floats({2, P, 2 * n}, cat(halves(a.c, P, n), halves(a.c, P, n)))},
       {"sin", io::array::from_floats({2, P, 2 * n}, cat(halves(a.s, P, n), halves(a.s, P, n)))},
       {"positions", io::array::from_int64({P}, pos)}});
  const auto c1 = run(e, {same});
  EXPECT_EQ(c1.exit_code(), 0) << certify::to_text(c1);
  EXPECT_NE(reading_of(c1, "table").read_as.find("all 2 the same"), std::string::npos)
      << reading_of(c1, "table").read_as;
  EXPECT_EQ(c1.certification->positions, static_cast<std::uint64_t>(P));

  // Two sequences with their own position_ids [2, P] ([B, 1, P, rot]: unsqueezed for heads).
  const std::vector<std::int64_t> ids = [&] {
    auto v = pos;
    v.insert(v.end(), second.begin(), second.end());
    return v;
  }();
  auto own = [&](const std::string& name, const std::vector<std::int64_t>& given) {
    return write_st(name,
                    {{"cos", io::array::from_floats({2, 1, P, 2 * n},
                                                    cat(halves(a.c, P, n), halves(b.c, P, n)))},
                     {"sin", io::array::from_floats({2, 1, P, 2 * n},
                                                    cat(halves(a.s, P, n), halves(b.s, P, n)))},
                     {"position_ids", io::array::from_int64({2, P}, given)}});
  };
  const auto c2 = run(e, {own("batch_own", ids)});
  EXPECT_EQ(c2.exit_code(), 0) << certify::to_text(c2);
  EXPECT_EQ(reading_of(c2, "table").layout, "halves");
  EXPECT_NE(reading_of(c2, "table").read_as.find("each with its own positions"), std::string::npos);
  EXPECT_EQ(c2.certification->positions, static_cast<std::uint64_t>(2 * P));
  EXPECT_EQ(c2.certification->max_position, 3000 + P - 1);
  // The second sequence's positions wrong: not certified.
  std::vector<std::int64_t> wrong = pos;
  wrong.insert(wrong.end(), pos.begin(), pos.end());
  EXPECT_EQ(run(e, {own("batch_wrong", wrong)}).exit_code(), 1);
  // position_ids of another batch size: an error naming the tensor.
  const fs::path three = write_st(
      "batch_three",
      {{"cos", io::array::from_floats({2, P, 2 * n}, cat(halves(a.c, P, n), halves(b.c, P, n)))},
       {"sin", io::array::from_floats({2, P, 2 * n}, cat(halves(a.s, P, n), halves(b.s, P, n)))},
       {"position_ids", io::array::from_int64({3, P}, [&] {
          auto v = ids;
          v.insert(v.end(), pos.begin(), pos.end());
          return v;
        }())}});
  const std::string msg = error_of([&] { run(e, {three}); });
  EXPECT_NE(msg.find("position_ids"), std::string::npos) << msg;
}

// Bytes of a safetensors file holding `name` as complex64 [P, n] (cos + i·sin) and positions.
std::string complex_safetensors(const table_data& t, const std::vector<std::int64_t>& pos) {
  const std::size_t tb = static_cast<std::size_t>(t.P * t.n) * 8, pb = pos.size() * 8;
  std::string header =
      fmt::format(R"({{"freqs_cis":{{"dtype":"C64","shape":[{},{}],"data_offsets":[0,{}]}},)"
                  R"("positions":{{"dtype":"I64","shape":[{}],"data_offsets":[{},{}]}}}})",
                  t.P, t.n, tb, pos.size(), tb, tb + pb);
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  const std::uint64_t len = header.size();
  std::memcpy(out.data(), &len, 8);
  out += header;
  for (std::size_t k = 0; k < t.c.size(); ++k) {
    out.append(reinterpret_cast<const char*>(&t.c[k]), 4);
    out.append(reinterpret_cast<const char*>(&t.s[k]), 4);
  }
  out.append(reinterpret_cast<const char*>(pos.data()), pb);
  return out;
}

void write_bytes(const fs::path& f, const std::string& bytes) {
  std::ofstream(f, std::ios::binary) << bytes;
}

TEST(CertifyLayouts, ComplexFreqsCis) {
  // Meta's precompute_freqs_cis: complex64 [P, rot/2] = cos + i·sin, in safetensors and in npy.
  const spec::encoding e = spec::parse_spec("rope:head_dim=16,rope_theta=10000,layout=interleaved");
  const std::vector<std::int64_t> pos = iota(200);
  const table_data t = table_of(e, pos);
  const fs::path st = temp_dir("complex_st") / "freqs.safetensors";
  write_bytes(st, complex_safetensors(t, pos));
  // npy '<c8': the (cos, sin) pairs [P, n, 2] with the header of a complex [P, n].
  std::vector<float> pairs;
  for (std::size_t k = 0; k < t.c.size(); ++k) {
    pairs.push_back(t.c[k]);
    pairs.push_back(t.s[k]);
  }
  std::string npy = io::npy_bytes(io::array::from_floats({t.P, t.n, 2}, pairs));
  const std::string shape = fmt::format("({}, {}, 2)", t.P, t.n);
  const std::size_t at = npy.find(shape), descr = npy.find("'<f4'"), nl = npy.find('\n');
  ASSERT_NE(at, std::string::npos);
  ASSERT_NE(descr, std::string::npos);
  npy.replace(descr, 5, "'<c8'");
  npy.insert(nl, "   ");
  npy.replace(at, shape.size(), fmt::format("({}, {})", t.P, t.n));
  const fs::path dir = temp_dir("complex_npy");
  write_bytes(dir / "freqs_cis.npy", npy);
  for (const auto& files :
       {std::vector<fs::path>{st}, std::vector<fs::path>{dir / "freqs_cis.npy"}}) {
    const auto cert = run(e, files);
    EXPECT_EQ(cert.exit_code(), 0) << files[0] << "\n" << certify::to_text(cert);
    const auto r = reading_of(cert, "table");
    EXPECT_EQ(r.layout, "pairs");
    EXPECT_NE(r.read_as.find("complex"), std::string::npos) << r.read_as;
  }
  // Complex tensors are refused where pev does not expect them.
  EXPECT_THROW(io::read_npy(dir / "freqs_cis.npy"), pev::error);
  EXPECT_THROW(io::read_safetensors(st), pev::error);
}

TEST(CertifyLayouts, NpzArchivesAndDirectoriesOfNpy) {
  const spec::encoding e = spec::parse_spec("rope:head_dim=16,rope_theta=10000");
  const std::vector<std::int64_t> pos = iota(150, 40);
  const table_data t = table_of(e, pos);
  const io::array c = io::array::from_floats({t.P, 2 * t.n}, halves(t.c, t.P, t.n)),
                  s = io::array::from_floats({t.P, 2 * t.n}, halves(t.s, t.P, t.n)),
                  p = io::array::from_int64({t.P}, pos);
  for (const bool compress : {false, true}) {
    const fs::path f = temp_dir(compress ? "npz_c" : "npz") / "dump.npz";
    io::write_npz(f, {{"cos", c}, {"sin", s}, {"positions", p}}, compress);
    const auto cert = run(e, {f});
    EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
    EXPECT_EQ(cert.certification->inputs.at(0).format, "npz");
    EXPECT_EQ(cert.certification->min_position, 40);
  }
  const fs::path dir = temp_dir("npydir");
  io::write_npy(dir / "cos.npy", c);
  io::write_npy(dir / "sin.npy", s);
  io::write_npy(dir / "positions.npy", p);
  write_bytes(dir / "README.txt", "how the dump was made\n");
  const auto cert = run(e, {dir});
  EXPECT_EQ(cert.exit_code(), 0) << certify::to_text(cert);
  EXPECT_EQ(cert.certification->inputs.size(), 3u);
  bool noted = false;
  for (const auto& n : cert.notes) noted = noted || n.find("README.txt") != std::string::npos;
  EXPECT_TRUE(noted) << "the file not read is said in the notes";
  const fs::path empty = temp_dir("npydir_empty");
  write_bytes(empty / "x.bin", "x");
  const std::string msg = error_of([&] { certify::read_dump({empty}); });
  EXPECT_NE(msg.find("one .npy file per tensor"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x.bin"), std::string::npos) << msg;
}

TEST(CertifyLayouts, ALoneTableIsReadByItsData) {
  // ggml's NEOX cache is vLLM's cos_sin_cache row ([cos | sin]); its NORMAL cache is (cos, sin)
  // pairs. Under another name, the data decide: only the right reading gives every pair the same
  // cos² + sin².
  const spec::encoding e = spec::parse_spec("rope:head_dim=16,rope_theta=10000");
  const std::vector<std::int64_t> pos = iota(300);
  const table_data t = table_of(e, pos);
  std::vector<float> neox, normal;
  for (std::int64_t r = 0; r < t.P; ++r) {
    for (std::int64_t i = 0; i < t.n; ++i) neox.push_back(t.c[r * t.n + i]);
    for (std::int64_t i = 0; i < t.n; ++i) neox.push_back(t.s[r * t.n + i]);
    for (std::int64_t i = 0; i < t.n; ++i) {
      normal.push_back(t.c[r * t.n + i]);
      normal.push_back(t.s[r * t.n + i]);
    }
  }
  for (const auto& [name, v, want, says] :
       {std::tuple<std::string, std::vector<float>, std::string, std::string>{"neox", neox, "vllm",
                                                                              "ggml's NEOX order"},
        {"normal", normal, "pairs", "ggml's NORMAL order"}}) {
    const fs::path f =
        write_st("lone_" + name, {{"rope_cache", io::array::from_floats({t.P, 2 * t.n}, v)}});
    const auto cert = run(e, {f});
    EXPECT_EQ(cert.exit_code(), 0) << name << "\n" << certify::to_text(cert);
    const auto r = reading_of(cert, "table");
    EXPECT_EQ(r.layout, want) << name;
    EXPECT_NE(r.read_as.find(says), std::string::npos) << r.read_as;
    EXPECT_NE(r.decided_by.find("the data"), std::string::npos) << r.decided_by;
  }
  // vLLM's own name says it (the label names ggml's NEOX order too).
  const auto named = run(
      e, {write_st("cache", {{"cos_sin_cache", io::array::from_floats({t.P, 2 * t.n}, neox)}})});
  EXPECT_NE(reading_of(named, "table").read_as.find("ggml's NEOX order"), std::string::npos);
  // Data that fit neither reading: exit 2 naming --layout.
  std::mt19937_64 rng(kSeed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> noise(neox.size());
  for (float& x : noise) x = u(rng);
  const fs::path g =
      write_st("lone_noise", {{"rope_cache", io::array::from_floats({t.P, 2 * t.n}, noise)}});
  const std::string msg = error_of([&] { run(e, {g}); });
  EXPECT_NE(msg.find("--layout vllm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--layout pairs"), std::string::npos) << msg;
  // A q/k option on a dump without q/k is bad usage, not ignored.
  certify::options qo;
  qo.qk_layout = certify::qk_layout::bhtd;
  const std::string qm = error_of([&] {
    run(e, {write_st("cache2", {{"cos_sin_cache", io::array::from_floats({t.P, 2 * t.n}, neox)}})},
        qo);
  });
  EXPECT_NE(qm.find("--qk-layout: the dump holds no rotated q/k"), std::string::npos) << qm;
  // Stated: the reading is the option's.
  certify::options o;
  o.layout = certify::table_layout::vllm;
  const auto forced = run(e, {g}, o);
  EXPECT_EQ(forced.exit_code(), 1);
  EXPECT_EQ(reading_of(forced, "table").decided_by, "--layout");
}

}  // namespace
}  // namespace pev

// Model traces (docs/certify.md §8): every layer held to its own encoding, NoPE layers as the
// identity, the model graded by its worst layer, and the integration mistakes named at the layers
// they touch — made here with pev's own hf kernels and the mutant catalogue on a four-layer model
// (full θ 10^6, sliding θ 10^4, NoPE, full).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/certify/trace.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/kernel/relative.h"
#include "pev/report/json.h"
#include "pev/spec/config.h"
#include "pev/spec/model.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

constexpr std::int64_t B = 2, T = 48, H = 2, kD = 64;

const char* kFull = "rope:head_dim=64,rope_theta=1000000";
const char* kSliding = "rope:head_dim=64,rope_theta=10000";

spec::layer_spec layer(std::int64_t i, const char* type, const char* s, const char* rule) {
  spec::layer_spec l;
  l.index = i;
  l.type = type;
  if (s) l.encoding = spec::parse_spec(s);
  l.rule = rule;
  return l;
}

spec::model_spec model() {
  spec::model_spec m;
  m.model_type = "test";
  m.num_layers = 4;
  m.layers = {layer(0, "full_attention", kFull, "rope_parameters.full_attention"),
              layer(1, "sliding_attention", kSliding, "rope_parameters.sliding_attention"),
              layer(2, "full_attention", nullptr, "no_rope_layers[2] = 0"),
              layer(3, "full_attention", kFull, "rope_parameters.full_attention")};
  return m;
}

// position_ids [B, T]: row 0 at 0 … T − 1, row 1 at 7 … T + 6 (a later request of the batch).
std::vector<std::int64_t> batch_positions() {
  std::vector<std::int64_t> p(static_cast<std::size_t>(B * T));
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t t = 0; t < T; ++t) p[static_cast<std::size_t>(b * T + t)] = t + 7 * b;
  }
  return p;
}

// Layer i of the trace (its site `site`, "" for the attention's rotation): seeded q and k
// [B, T, H, D] (bthd) rotated by `im` at `pos` (B·T positions, row-major), or the identity (`im`
// null: q_out = q_in), or the `none` marker.
void add_layer(certify::dump& d, std::int64_t i, const impl::implementation* im,
               const std::vector<std::int64_t>& pos, bool marker = false,
               const std::string& site = "") {
  const std::string p = "layers." + std::to_string(i) + "." + (site.empty() ? "" : site + ".");
  if (marker) {
    d.tensors.emplace(p + "none", io::array::from_int64({}, {1}));
    return;
  }
  std::mt19937_64 rng(20261128 + static_cast<std::uint64_t>(i));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::int64_t D = im ? std::get<spec::rope>(im->claimed_spec()).head_dim : kD;
  for (const char* role : {"q", "k"}) {
    std::vector<float> in(static_cast<std::size_t>(B * T * H * D)), out(in.size());
    for (float& v : in) v = normal(rng);
    if (im) {
      // One batch row at a time: a [T, H, D] block of in and out at the row's positions.
      const auto n = static_cast<std::size_t>(T * H * D);
      for (std::int64_t b = 0; b < B; ++b) {
        const auto o = static_cast<std::size_t>(b) * n;
        im->rope_rotate(std::span(pos).subspan(static_cast<std::size_t>(b * T), T), std::nullopt,
                        kernel::heads_view<const float>{std::span(in).subspan(o, n), T, H, D},
                        kernel::heads_view<float>{std::span(out).subspan(o, n), T, H, D});
      }
    } else {
      out = in;
    }
    d.tensors.emplace(p + role + "_in", io::array::from_values<float>({B, T, H, D}, in));
    d.tensors.emplace(p + role + "_out", io::array::from_values<float>({B, T, H, D}, out));
  }
}

struct kernels {
  std::unique_ptr<impl::implementation> full =
      impl::make_builtin(spec::parse_spec(kFull), kernel::strategy::hf);
  std::unique_ptr<impl::implementation> sliding =
      impl::make_builtin(spec::parse_spec(kSliding), kernel::strategy::hf);
};

// The genuine trace, each layer made by `layer_impl` (defaults: the config's).
certify::dump trace(const kernels& k, const std::vector<std::int64_t>& pos = batch_positions()) {
  (void)k;
  certify::dump d;
  d.metadata["qk_layout"] = "bthd";
  d.tensors.emplace("position_ids", io::array::from_int64({B, T}, pos));
  return d;
}

certify::options opts() {
  certify::options o;
  o.threads = 2;
  return o;
}

const report::layer_result& row(const certify::certificate& c, std::int64_t i) {
  for (const auto& l : c.certification->layers) {
    if (l.index == i) return l;
  }
  throw std::runtime_error("no layer " + std::to_string(i));
}

TEST(Trace, GenuineModelIsCertifiedLayerByLayerWithTheNoPELayerAsIdentity) {
  const kernels k;
  certify::dump d = trace(k);
  const auto pos = batch_positions();
  add_layer(d, 0, k.full.get(), pos);
  add_layer(d, 1, k.sliding.get(), pos);
  add_layer(d, 2, nullptr, pos);
  add_layer(d, 3, k.full.get(), pos);
  ASSERT_TRUE(certify::is_trace(d));
  EXPECT_EQ(certify::traced_layers(d), (std::vector<std::int64_t>{0, 1, 2, 3}));
  // Progress: one call per site (a site's own rows are not counted), the count rising to the total.
  certify::options o = opts();
  std::vector<std::size_t> seen;
  o.progress = [&](std::string_view what, std::size_t done, std::size_t total) {
    EXPECT_EQ(what, "trace sites");
    EXPECT_EQ(total, 4u);
    seen.push_back(done);
  };
  const auto c = certify::certify_trace(model(), d, o);
  EXPECT_EQ(seen, (std::vector<std::size_t>{1, 2, 3, 4}));
  const auto& z = *c.certification;
  ASSERT_EQ(z.layers.size(), 4u) << certify::to_text(c);
  EXPECT_NE(z.result, report::grade::not_certified) << certify::to_text(c);
  EXPECT_EQ(c.exit_code(), 0);
  EXPECT_EQ(row(c, 2).spec, "none");
  EXPECT_EQ(row(c, 2).result, report::grade::correctly_rounded);
  EXPECT_EQ(row(c, 1).spec, spec::to_spec_string(spec::parse_spec(kSliding)));
  EXPECT_EQ(row(c, 0).checks.size(), 2u);  // q and k
  // The model's grade is its worst layer's.
  report::grade worst = report::grade::correctly_rounded;
  for (const auto& l : z.layers) worst = std::max(worst, l.result);
  EXPECT_EQ(z.result, worst);
  // The layers survive certificate.json.
  const auto back = report::from_json(certify::to_json(c), "test");
  EXPECT_EQ(back.certification->layers, z.layers);
  EXPECT_NE(certify::to_text(c).find("identity (NoPE)"), std::string::npos);
}

TEST(Trace, TheNoneMarkerIsTheIdentity) {
  const kernels k;
  certify::dump d = trace(k);
  const auto pos = batch_positions();
  add_layer(d, 0, k.full.get(), pos);
  add_layer(d, 1, k.sliding.get(), pos);
  add_layer(d, 2, nullptr, pos, /*marker=*/true);
  add_layer(d, 3, k.full.get(), pos);
  const auto c = certify::certify_trace(model(), d, opts());
  EXPECT_EQ(c.exit_code(), 0) << certify::to_text(c);
  EXPECT_EQ(row(c, 2).read, "none (not rotated)");
}

// Each integration mistake: not certified, named at exactly the layers it touches.
void expect_named(const certify::certificate& c, const std::vector<std::int64_t>& bad,
                  const std::string& id, const std::string& finding_part = "") {
  SCOPED_TRACE(certify::to_text(c));
  EXPECT_EQ(c.exit_code(), 1);
  for (const auto& l : c.certification->layers) {
    const bool is_bad = std::find(bad.begin(), bad.end(), l.index) != bad.end();
    EXPECT_EQ(l.result == report::grade::not_certified, is_bad) << "layer " << l.index;
    if (!is_bad) continue;
    ASSERT_TRUE(l.named) << "layer " << l.index;
    EXPECT_EQ(*l.named, id) << "layer " << l.index;
    if (!finding_part.empty()) {
      ASSERT_FALSE(l.findings.empty());
      EXPECT_NE(l.findings[0].find(finding_part), std::string::npos) << l.findings[0];
    }
  }
  ASSERT_TRUE(c.certification->why);
  EXPECT_EQ(c.certification->why->named.value_or(""), id);
}

TEST(Trace, SlidingLayerWithTheGlobalThetaIsNamed) {
  const kernels k;
  certify::dump d = trace(k);
  const auto pos = batch_positions();
  add_layer(d, 0, k.full.get(), pos);
  add_layer(d, 1, k.full.get(), pos);  // the global θ on the sliding layer
  add_layer(d, 2, nullptr, pos);
  add_layer(d, 3, k.full.get(), pos);
  expect_named(certify::certify_trace(model(), d, opts()), {1}, "rope-of-other-layer-type",
               "rope_theta=1000000");
}

TEST(Trace, RotatedNoPELayerIsNamedWithTheRoPEItFollows) {
  const kernels k;
  certify::dump d = trace(k);
  const auto pos = batch_positions();
  add_layer(d, 0, k.full.get(), pos);
  add_layer(d, 1, k.sliding.get(), pos);
  add_layer(d, 2, k.full.get(), pos);  // RoPE on the NoPE layer
  add_layer(d, 3, k.full.get(), pos);
  expect_named(certify::certify_trace(model(), d, opts()), {2}, "rope-on-nope-layer",
               "the RoPE of the full_attention layers");
}

TEST(Trace, RoPELayerLeftUnrotatedIsNamed) {
  const kernels k;
  certify::dump d = trace(k);
  const auto pos = batch_positions();
  add_layer(d, 0, k.full.get(), pos);
  add_layer(d, 1, k.sliding.get(), pos);
  add_layer(d, 2, nullptr, pos);
  add_layer(d, 3, nullptr, pos);  // NoPE where the config says RoPE
  expect_named(certify::certify_trace(model(), d, opts()), {3}, "rope-layer-not-rotated");
}

TEST(Trace, BatchRowsAtRowZerosPositionsAreNamed) {
  const kernels k;
  certify::dump d = trace(k);
  auto row0 = batch_positions();
  std::copy_n(row0.begin(), T, row0.begin() + T);  // every row at row 0's positions
  add_layer(d, 0, k.full.get(), row0);
  add_layer(d, 1, k.sliding.get(), row0);
  add_layer(d, 2, nullptr, row0);
  add_layer(d, 3, k.full.get(), row0);
  expect_named(certify::certify_trace(model(), d, opts()), {0, 1, 3}, "batch-row-positions");
}

TEST(Trace, PackedSequencesWhosePositionsRunOnAreNamed) {
  const kernels k;
  // Each row packs two sequences of T/2 tokens: positions restart at T/2.
  std::vector<std::int64_t> packed(static_cast<std::size_t>(B * T)), run_on(packed.size());
  for (std::size_t j = 0; j < packed.size(); ++j) {
    const auto t = static_cast<std::int64_t>(j % T);
    packed[j] = t % (T / 2);
    run_on[j] = t;
  }
  certify::dump genuine = trace(k, packed), wrong = trace(k, packed);
  for (std::int64_t i : {0, 3}) {
    add_layer(genuine, i, k.full.get(), packed);
    add_layer(wrong, i, k.full.get(), run_on);
  }
  add_layer(genuine, 1, k.sliding.get(), packed);
  add_layer(wrong, 1, k.sliding.get(), packed);  // only the full layers run on
  add_layer(genuine, 2, nullptr, packed);
  add_layer(wrong, 2, nullptr, packed);
  EXPECT_EQ(certify::certify_trace(model(), genuine, opts()).exit_code(), 0);
  expect_named(certify::certify_trace(model(), wrong, opts()), {0, 3},
               "packed-positions-not-restarting");
}

TEST(Trace, ACatalogueMistakeIsNamedAtItsLayer) {
  const kernels k;
  certify::dump d = trace(k);
  const auto pos = batch_positions();
  const auto shifted = impl::make_mutant("position-off-by-one", spec::parse_spec(kSliding));
  add_layer(d, 0, k.full.get(), pos);
  add_layer(d, 1, shifted.get(), pos);
  add_layer(d, 2, nullptr, pos);
  add_layer(d, 3, k.full.get(), pos);
  const auto c = certify::certify_trace(model(), d, opts());
  EXPECT_EQ(c.exit_code(), 1);
  EXPECT_EQ(row(c, 1).result, report::grade::not_certified);
  EXPECT_EQ(row(c, 1).named.value_or(""), "position-off-by-one") << certify::to_text(c);
  EXPECT_NE(row(c, 0).result, report::grade::not_certified);
}

TEST(Trace, BadTracesAreNamedErrors) {
  const kernels k;
  const auto pos = batch_positions();
  const auto message = [&](const certify::dump& d, const certify::trace_options& to = {}) {
    try {
      (void)certify::certify_trace(model(), d, opts(), to);
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  certify::dump d = trace(k);
  add_layer(d, 0, k.full.get(), pos);
  // A layer of the config the trace does not hold, unless --layers says which were traced.
  EXPECT_NE(message(d).find("no tensor of layer 1"), std::string::npos) << message(d);
  certify::trace_options only0;
  only0.layers = {0};
  EXPECT_EQ(message(d, only0), "(no error)");
  // A layer the config does not have, or one --layers leaves out.
  certify::dump extra = d;
  add_layer(extra, 7, k.full.get(), pos);
  certify::trace_options with7;
  with7.layers = {0, 7};
  EXPECT_NE(message(extra, with7).find("which the config does not have"), std::string::npos)
      << message(extra, with7);
  EXPECT_NE(message(extra, only0).find("holds layer 7, which --layers leaves out"),
            std::string::npos)
      << message(extra, only0);
  // A role no site has: a misspelt name is not left unchecked.
  certify::dump typo = d;
  typo.tensors.emplace("layers.0.qout", d.tensors.at("layers.0.q_out"));
  EXPECT_NE(message(typo, only0).find("'qout' is not a role"), std::string::npos)
      << message(typo, only0);
  // An error inside a site names the site.
  certify::dump half = d;
  half.tensors.erase("layers.0.k_out");
  EXPECT_NE(message(half, only0).find("trace site layers.0: "), std::string::npos)
      << message(half, only0);
  // A trace is certified whole.
  certify::options sharded = opts();
  sharded.shard_count = 2;
  EXPECT_THROW((void)certify::certify_trace(model(), d, sharded, only0), error);
}

// T5 from one config (docs/encodings.md §7.9): the encoder's bidirectional buckets and the
// decoder's causal ones, each certified against its own site; the decoder given the encoder's
// buckets is named at the decoder.
io::array buckets(const spec::t5& s, std::int64_t Q, std::int64_t K) {
  std::vector<std::int64_t> r, b(static_cast<std::size_t>(Q * K));
  for (std::int64_t q = 0; q < Q; ++q) {
    for (std::int64_t k = 0; k < K; ++k) r.push_back(k - q);
  }
  kernel::t5_buckets(s, kernel::strategy::hf, r, b);
  return io::array::from_int64({Q, K}, b);
}

TEST(Trace, T5EncoderAndDecoderBucketsFromOneConfig) {
  const spec::model_spec m = spec::parse_config_model_file(
      std::filesystem::path(PEV_SOURCE_DIR) / "tests/spec/configs/families/t5_small.json");
  const spec::t5 enc{32, 128, true}, dec{32, 128, false};
  certify::dump d;
  d.tensors.emplace("encoder.buckets", buckets(enc, 200, 200));
  d.tensors.emplace("decoder.buckets", buckets(dec, 200, 200));
  const auto c = certify::certify_trace(m, d, opts());
  EXPECT_EQ(c.exit_code(), 0) << certify::to_text(c);
  ASSERT_EQ(c.certification->layers.size(), 2u);
  // The decoder with the encoder's (bidirectional) buckets.
  certify::dump wrong;
  wrong.tensors.emplace("encoder.buckets", buckets(enc, 200, 200));
  wrong.tensors.emplace("decoder.buckets", buckets(enc, 200, 200));
  const auto w = certify::certify_trace(m, wrong, opts());
  SCOPED_TRACE(certify::to_text(w));
  EXPECT_EQ(w.exit_code(), 1);
  for (const auto& l : w.certification->layers) {
    EXPECT_EQ(l.result == report::grade::not_certified, l.site == "decoder") << l.site;
    if (l.site == "decoder") {
      EXPECT_TRUE(l.named.has_value());
    }
  }
}

// A learned table added at the input (OPT: offset 2, docs/encodings.md §7.9): the rows the model
// added, read from the checkpoint's table at position + 2; left padding (attention_mask 0,
// position −1 as OPT makes it) left out; the offset forgotten named at the embed site.
TEST(Trace, LearnedTableWithOPTsOffsetAndLeftPadding) {
  const spec::model_spec m = spec::parse_config_model_file(
      std::filesystem::path(PEV_SOURCE_DIR) / "tests/spec/configs/families/opt_125m.json");
  ASSERT_EQ(m.layers.front().site, "embed");
  const auto& want = std::get<spec::learned>(*m.layers.front().encoding);
  ASSERT_EQ(want.offset, 2);
  const std::int64_t N = want.num_positions, d = want.d_model, Tn = 10;
  std::mt19937_64 rng(20261128);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> table(static_cast<std::size_t>(N * d));
  for (float& v : table) v = normal(rng);
  // Row 0 of the batch: 10 tokens; row 1: 3 padding tokens, then 7.
  const std::vector<std::int64_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                          0, 0, 0, 1, 1, 1, 1, 1, 1, 1};
  std::vector<std::int64_t> pos;
  for (std::int64_t b = 0; b < 2; ++b) {
    std::int64_t p = -1;
    for (std::int64_t t = 0; t < Tn; ++t) {
      const bool real = mask[static_cast<std::size_t>(b * Tn + t)] != 0;
      pos.push_back(real ? ++p : -1);
    }
  }
  const auto rows_at = [&](std::int64_t offset) {
    std::vector<float> r;
    for (const std::int64_t p : pos) {
      // A padding token (position −1) reads row 0 when the offset is forgotten: left out anyway.
      const auto at = static_cast<std::size_t>(std::max<std::int64_t>(p + offset, 0) * d);
      r.insert(r.end(), table.begin() + static_cast<std::ptrdiff_t>(at),
               table.begin() + static_cast<std::ptrdiff_t>(at + static_cast<std::size_t>(d)));
    }
    return io::array::from_values<float>({2, Tn, d}, r);
  };
  const auto make = [&](std::int64_t offset) {
    certify::dump t;
    t.tensors.emplace("position_ids", io::array::from_int64({2, Tn}, pos));
    t.tensors.emplace("attention_mask", io::array::from_int64({2, Tn}, mask));
    t.tensors.emplace("embed.table", io::array::from_values<float>({N, d}, table));
    t.tensors.emplace("embed.positions", rows_at(offset));
    return t;
  };
  const auto genuine = certify::certify_trace(m, make(2), opts());
  EXPECT_EQ(genuine.exit_code(), 0) << certify::to_text(genuine);
  EXPECT_EQ(genuine.certification->layers.size(), 1u);  // the layers apply none: not traced
  const auto forgot = certify::certify_trace(m, make(0), opts());  // OPT's + 2 forgotten
  SCOPED_TRACE(certify::to_text(forgot));
  EXPECT_EQ(forgot.exit_code(), 1);
  EXPECT_EQ(forgot.certification->layers.front().named.value_or(""), "learned-offset");
}

// DeepSeek-V3.2 (docs/encodings.md §7.9): each layer's MLA rotation (interleaved pairs over
// qk_rope_head_dim) and its indexer's (NeoX pairs), two sites of one layer, each under its own
// encoding; the indexer rotated with the MLA's interleaved pairs is named at the indexer only.
TEST(Trace, DeepSeekV32IndexerIsASiteOfItsOwn) {
  const spec::model_spec m = spec::parse_config_model_file(
      std::filesystem::path(PEV_SOURCE_DIR) / "tests/spec/configs/families/deepseek_v32_exp.json");
  const spec::layer_spec* main = nullptr;
  const spec::layer_spec* indexer = nullptr;
  for (const auto& l : m.layers) {
    if (l.index == 0 && l.site.empty()) main = &l;
    if (l.index == 0 && l.site == "indexer") indexer = &l;
  }
  ASSERT_TRUE(main && indexer);
  const auto& mr = std::get<spec::rope>(*main->encoding);
  const auto& ir = std::get<spec::rope>(*indexer->encoding);
  EXPECT_EQ(mr.layout, spec::rope_layout::interleaved);
  EXPECT_EQ(ir.layout, spec::rope_layout::neox);
  const auto mk = impl::make_builtin(*main->encoding, kernel::strategy::hf);
  const auto ik = impl::make_builtin(*indexer->encoding, kernel::strategy::hf);
  // The indexer given the MLA's layout: the same frequencies over interleaved pairs.
  spec::rope wrong_layout = ir;
  wrong_layout.layout = spec::rope_layout::interleaved;
  const auto wk = impl::make_builtin(spec::encoding{wrong_layout}, kernel::strategy::hf);
  const auto pos = batch_positions();
  certify::trace_options only0;
  only0.layers = {0};
  for (const bool genuine : {true, false}) {
    certify::dump d = trace(kernels{});
    add_layer(d, 0, mk.get(), pos);
    add_layer(d, 0, genuine ? ik.get() : wk.get(), pos, false, "indexer");
    const auto c = certify::certify_trace(m, d, opts(), only0);
    SCOPED_TRACE(certify::to_text(c));
    ASSERT_EQ(c.certification->layers.size(), 2u);
    EXPECT_EQ(c.exit_code(), genuine ? 0 : 1);
    for (const auto& l : c.certification->layers) {
      EXPECT_EQ(l.result == report::grade::not_certified, !genuine && l.site == "indexer");
      if (!genuine && l.site == "indexer") {
        EXPECT_TRUE(l.named.has_value());
      }
    }
  }
}

// Issue-34 hostile traces (docs/certify.md §8.1–§8.2): tensors present are always compared, every
// tensor is a site's or refused by name, markers and attention_mask are checked, positions come
// only from the trace.
std::string trace_error(const certify::dump& d, const certify::options& o = opts(),
                        const certify::trace_options& to = {}) {
  try {
    (void)certify::certify_trace(model(), d, o, to);
  } catch (const error& e) {
    return e.what();
  }
  return "(no error)";
}

// Layer i's q/k taken out of a trace (to be replaced).
void drop_qk(certify::dump& d, std::int64_t i) {
  for (const char* role : {"q_in", "q_out", "k_in", "k_out"}) {
    d.tensors.erase("layers." + std::to_string(i) + "." + role);
  }
}

certify::dump genuine_trace(const kernels& k) {
  certify::dump d = trace(k);
  const auto pos = batch_positions();
  add_layer(d, 0, k.full.get(), pos);
  add_layer(d, 1, k.sliding.get(), pos);
  add_layer(d, 2, nullptr, pos);
  add_layer(d, 3, k.full.get(), pos);
  return d;
}

TEST(TraceHostile, ANoneMarkerBesideRotatedQKIsComparedNotSkipped) {
  const kernels k;
  const auto pos = batch_positions();
  // The NoPE layer 2 rotated with the global RoPE, its exporter writing `none` from the config.
  certify::dump d = trace(k);
  add_layer(d, 0, k.full.get(), pos);
  add_layer(d, 1, k.sliding.get(), pos);
  add_layer(d, 2, k.full.get(), pos);
  add_layer(d, 2, nullptr, pos, /*marker=*/true);
  add_layer(d, 3, k.full.get(), pos);
  const auto c = certify::certify_trace(model(), d, opts());
  expect_named(c, {2}, "rope-on-nope-layer", "beside layers.2.none");
  EXPECT_NE(row(c, 2).findings[0].find("with the RoPE of the full_attention layers"),
            std::string::npos);
  // A marker beside the right rotation of a RoPE layer: the data are certified, the marker's
  // contradiction is on the row.
  certify::dump r = genuine_trace(k);
  add_layer(r, 0, nullptr, pos, /*marker=*/true);
  const auto cr = certify::certify_trace(model(), r, opts());
  EXPECT_EQ(cr.exit_code(), 0) << certify::to_text(cr);
  ASSERT_FALSE(row(cr, 0).findings.empty());
  EXPECT_NE(row(cr, 0).findings[0].find("layers.0.none says the layer was not rotated"),
            std::string::npos);
  // The marker beside q/k left unrotated on the NoPE layer: the identity, read from the data.
  certify::dump g = genuine_trace(k);
  add_layer(g, 2, nullptr, pos, /*marker=*/true);
  const auto cg = certify::certify_trace(model(), g, opts());
  EXPECT_EQ(cg.exit_code(), 0) << certify::to_text(cg);
  EXPECT_EQ(row(cg, 2).read, "q_in, q_out (compared bit for bit) beside a none marker");
}

TEST(TraceHostile, ATableRecordedForANoPELayerIsRopeOnNopeLayer) {
  const kernels k;
  const auto pos = batch_positions();
  certify::dump d = genuine_trace(k);
  drop_qk(d, 2);
  // The table [B, T, D/2] the full layers use, as the engine computed it at layer 2.
  std::vector<float> cos(pos.size() * kD / 2), sin(cos.size());
  k.full->rope_table(pos, std::nullopt, cos, sin);
  d.tensors.emplace("layers.2.cos", io::array::from_values<float>({B, T, kD / 2}, cos));
  d.tensors.emplace("layers.2.sin", io::array::from_values<float>({B, T, kD / 2}, sin));
  const auto c = certify::certify_trace(model(), d, opts());
  expect_named(c, {2}, "rope-on-nope-layer", "a table was recorded for the layer");
  EXPECT_NE(row(c, 2).findings[0].find("with the RoPE of the full_attention layers"),
            std::string::npos);
}

TEST(TraceHostile, EveryTensorIsASitesOrRefusedByName) {
  const kernels k;
  const certify::dump good = genuine_trace(k);
  const io::array& q = good.tensors.at("layers.0.q_in");
  for (const std::string name :
       {"layers.01.q_in", "layers.-1.none", "layers.+1.none", "layers.a.q_in", "Layers.0.q_in",
        "layers.99999999999999999999.q_in", "layers.0", "layers", "foo", "positions"}) {
    certify::dump d = good;
    d.tensors.emplace(name,
                      name.find("none") != std::string::npos ? io::array::from_int64({}, {1}) : q);
    const std::string why = trace_error(d);
    EXPECT_NE(why.find("tensor '" + name + "' is not a name of a model trace"), std::string::npos)
        << name << ": " << why;
  }
  // A dump whose only layer tensors are misnamed is still read as a trace, and refused.
  certify::dump only;
  only.tensors.emplace("Layers.0.q_in", q);
  EXPECT_TRUE(certify::is_trace(only));
}

TEST(TraceHostile, MarkersAndTheAttentionMaskAreChecked) {
  const kernels k;
  const auto pos = batch_positions();
  certify::dump base = trace(k);
  add_layer(base, 0, k.full.get(), pos);
  add_layer(base, 1, k.sliding.get(), pos);
  add_layer(base, 3, k.full.get(), pos);
  certify::dump f = base;
  f.tensors.emplace("layers.2.none", io::array::from_values<float>({3}, {0.5f, 1.0f, 2.0f}));
  EXPECT_NE(trace_error(f).find("a none marker is an int32 or int64 scalar"), std::string::npos)
      << trace_error(f);
  certify::dump ok = base;
  ok.tensors.emplace("layers.2.none", io::array::from_int64({1}, {1}));
  EXPECT_EQ(trace_error(ok), "(no error)");
  const auto mask_error = [&](io::array m) {
    certify::dump d = ok;
    d.tensors.emplace("attention_mask", std::move(m));
    return trace_error(d);
  };
  std::vector<std::int64_t> ones(static_cast<std::size_t>(B * T), 1);
  EXPECT_EQ(mask_error(io::array::from_int64({B, T}, ones)), "(no error)");
  ones[5] = 0;
  EXPECT_EQ(mask_error(io::array::from_int64({B, T}, ones)), "(no error)");
  EXPECT_NE(
      mask_error(io::array::from_int64({B, T - 1}, std::vector<std::int64_t>(
                                                       static_cast<std::size_t>(B * (T - 1)), 1)))
          .find("expected one value per token of position_ids"),
      std::string::npos);
  EXPECT_NE(mask_error(io::array::from_values<float>(
                           {B, T}, std::vector<float>(static_cast<std::size_t>(B * T), 1.0f)))
                .find("expected integers 0 and 1"),
            std::string::npos);
  ones[5] = 7;
  EXPECT_NE(mask_error(io::array::from_int64({B, T}, ones)).find("holds 7"), std::string::npos);
}

TEST(TraceHostile, PositionsComeOnlyFromTheTraceAndLayersFromTheConfig) {
  const kernels k;
  const auto pos = batch_positions();
  // Row 1 rotated at row 0's positions: given row 0's positions for every row, it would pass.
  certify::dump d = genuine_trace(k);
  std::vector<std::int64_t> row0(pos.size());
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t t = 0; t < T; ++t) row0[static_cast<std::size_t>(b * T + t)] = t;
  }
  drop_qk(d, 0);
  add_layer(d, 0, k.full.get(), row0);
  certify::options given = opts();
  given.positions = row0;
  EXPECT_NE(trace_error(d, given).find("a model trace holds its own position_ids"),
            std::string::npos);
  expect_named(certify::certify_trace(model(), d, opts()), {0}, "batch-row-positions");
  // --layers naming layers the config does not have.
  certify::trace_options beyond;
  beyond.layers = {0, 1, 2, 3, 4, 30};
  EXPECT_NE(
      trace_error(genuine_trace(k), opts(), beyond)
          .find("--layers names layers 4, 30, which the config does not have (4 layers: 0…3)"),
      std::string::npos)
      << trace_error(genuine_trace(k), opts(), beyond);
}

// A tracer's record in the trace's metadata (docs/certify.md §8.1): its finding fails the layer,
// named, whatever the data say — the same verdict for the saved file as for pev.certify of the
// live trace; its notes reach the certificate; a malformed record is refused by key.
TEST(TraceHostile, TheTracersRecordInTheMetadataIsApplied) {
  const kernels k;
  certify::dump d = genuine_trace(k);
  d.metadata["pev.findings"] = R"({"1": ["rotated-twice", "layer 1: the rotation ran twice"]})";
  d.metadata["pev.notes"] = R"(["layer 1: apply_rotary_pos_emb called twice"])";
  d.metadata["pev.layer_notes"] = R"({"3": ["a note on layer 3"]})";
  const auto c = certify::certify_trace(model(), d, opts());
  expect_named(c, {1}, "rotated-twice", "layer 1: the rotation ran twice");
  EXPECT_NE(std::find(c.notes.begin(), c.notes.end(), "layer 1: apply_rotary_pos_emb called twice"),
            c.notes.end());
  EXPECT_EQ(row(c, 3).findings.back(), "a note on layer 3");
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"pev.findings", R"({"x": ["rotated-twice", "t"]})"},
           {"pev.findings", R"({"1": "rotated-twice"})"},
           {"pev.notes", R"({"a": 1})"},
           {"pev.layer_notes", "not json"}}) {
    certify::dump bad = genuine_trace(k);
    bad.metadata[key] = value;
    EXPECT_NE(trace_error(bad).find("trace metadata '" + key + "'"), std::string::npos)
        << key << " " << value << ": " << trace_error(bad);
  }
}

}  // namespace
}  // namespace pev

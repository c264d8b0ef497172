// A model's encodings layer by layer from its config.json (pev/spec/model.h; docs/encodings.md
// §7.9): which layers rotate, with which group, over how many dimensions — real-shaped configs of
// the families in tests/spec/configs/ and configs/families/, checked layer by layer, and the
// named errors for the rules pev does not know. Each rotating layer's encoding must also equal
// what parse_config_encoding gives for its group, whose fields the family corpus
// (test_config_families.cpp) checks one by one.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "pev/spec/config.h"
#include "pev/spec/model.h"

namespace {

using namespace pev::spec;

const std::filesystem::path kConfigs = std::filesystem::path(PEV_SOURCE_DIR) / "tests/spec/configs";
const std::filesystem::path kFamilies = kConfigs / "families";

struct loaded {
  model_spec m;
  std::vector<std::string> warnings;
};

loaded load(const std::filesystem::path& file) {
  loaded l;
  l.m = parse_config_model_file(file, [&](std::string_view w) { l.warnings.emplace_back(w); });
  return l;
}

// The decoder layer i's entry at `site`.
const layer_spec& at(const model_spec& m, std::int64_t i, const std::string& site = "") {
  for (const auto& l : m.layers) {
    if (l.index == i && l.site == site) return l;
  }
  throw std::runtime_error("no layer " + std::to_string(i) + " site " + site);
}

const rope& rope_of(const layer_spec& l) {
  if (!l.encoding) throw std::runtime_error(l.prefix() + " has no encoding: " + l.rule);
  return std::get<rope>(*l.encoding);
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// What parse_config_encoding gives for one group (warnings dropped: load() collected them).
rope group_of(const std::filesystem::path& file, const std::string& layer_type) {
  config_options o;
  o.layer_type = layer_type;
  return std::get<rope>(parse_config_encoding_file(file, o, [](std::string_view) {}));
}

// Every decoder layer once, in order, sites ordered by (index, site).
void expect_ordered(const model_spec& m) {
  for (std::size_t k = 1; k < m.layers.size(); ++k) {
    const auto& a = m.layers[k - 1];
    const auto& b = m.layers[k];
    EXPECT_TRUE(a.index < b.index || (a.index == b.index && a.site < b.site))
        << a.prefix() << " before " << b.prefix();
  }
  for (std::int64_t i = 0; i < m.num_layers; ++i) EXPECT_NO_THROW((void)at(m, i)) << i;
}

std::string error_of(std::string_view json) {
  try {
    (void)parse_config_model_text(json, "test.json", [](std::string_view) {});
  } catch (const pev::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << json;
  return {};
}

TEST(SpecModel, LayerPrefixes) {
  EXPECT_EQ((layer_spec{3, "", "full_attention", std::nullopt, ""}.prefix()), "layers.3");
  EXPECT_EQ((layer_spec{3, "indexer", "full_attention", std::nullopt, ""}.prefix()),
            "layers.3.indexer");
  EXPECT_EQ((layer_spec{-1, "embed", "embed", std::nullopt, ""}.prefix()), "embed");
}

TEST(SpecModel, Llama31EveryLayerTheSameLlama3Rope) {
  const auto file = kConfigs / "llama3_1_8b_instruct.json";
  const auto [m, w] = load(file);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(m.model_type, "llama");
  ASSERT_EQ(m.num_layers, 32);
  ASSERT_EQ(m.layers.size(), 32u);
  expect_ordered(m);
  const rope whole = group_of(file, "");
  for (const auto& l : m.layers) {
    EXPECT_EQ(l.type, "full_attention");
    EXPECT_EQ(rope_of(l), whole) << l.prefix();
  }
  const rope& r = rope_of(at(m, 31));
  EXPECT_EQ(r.type, rope_type::llama3);
  EXPECT_EQ(r.rope_theta, 500000.0);
  EXPECT_EQ(r.rotary_dim, 128);
  EXPECT_EQ(r.layout, rope_layout::neox);
  EXPECT_TRUE(contains(at(m, 0).rule, "no layer_types")) << at(m, 0).rule;
}

TEST(SpecModel, Gemma3SlidingLayersTakeTheLocalBase) {
  // Gemma-3 4B: no layer_types; Gemma3TextConfig's sliding_window_pattern 6 makes layers 5, 11,
  // 17, 23, 29 global (θ 1e6, linear ×8) and the others local (θ 1e4, unscaled).
  const auto file = kConfigs / "gemma3_4b_it.json";
  const auto [m, w] = load(file);
  ASSERT_EQ(m.num_layers, 34);
  expect_ordered(m);
  const rope full = group_of(file, "full_attention");
  const rope sliding = group_of(file, "sliding_attention");
  for (std::int64_t i = 0; i < 34; ++i) {
    const bool global = (i + 1) % 6 == 0;
    const auto& l = at(m, i);
    EXPECT_EQ(l.type, global ? "full_attention" : "sliding_attention") << i;
    EXPECT_EQ(rope_of(l), global ? full : sliding) << i;
  }
  EXPECT_EQ(rope_of(at(m, 5)).rope_theta, 1e6);
  EXPECT_EQ(rope_of(at(m, 5)).type, rope_type::linear);
  EXPECT_EQ(rope_of(at(m, 5)).factor, 8.0);
  EXPECT_EQ(rope_of(at(m, 0)).rope_theta, 10000.0);
  EXPECT_EQ(rope_of(at(m, 0)).type, rope_type::default_);
  EXPECT_EQ(rope_of(at(m, 33)).type, rope_type::default_);  // Gemma-3 does not force the last
  EXPECT_TRUE(contains(at(m, 0).rule, "rope_local_base_freq")) << at(m, 0).rule;
  EXPECT_TRUE(contains(at(m, 0).rule, "sliding_window_pattern 6")) << at(m, 0).rule;

  // Gemma-3 1B in transformers v5's form: layer_types and per-layer-type rope_parameters.
  const auto v5 = load(kConfigs / "gemma3_1b_v5_layer_types.json").m;
  ASSERT_EQ(v5.num_layers, 26);
  EXPECT_EQ(rope_of(at(v5, 5)).rope_theta, 1e6);
  EXPECT_EQ(rope_of(at(v5, 5)).type, rope_type::linear);
  EXPECT_EQ(rope_of(at(v5, 4)).rope_theta, 10000.0);
  EXPECT_EQ(at(v5, 4).rule,
            "layer_types[4] = sliding_attention: rope_parameters.sliding_attention");
}

TEST(SpecModel, Gemma4FullLayersProportionalOverTheGlobalHeadDim) {
  // Gemma4TextConfig: layer_types absent → pattern 6, last layer full; full_attention layers
  // rotate a quarter of global_head_dim = 512 (proportional), sliding ones all of head_dim 256.
  const auto file = kFamilies / "gemma4_e4b.json";
  const auto [m, w] = load(file);
  EXPECT_TRUE(w.empty()) << w.front();
  EXPECT_EQ(m.model_type, "gemma4_text");
  ASSERT_EQ(m.num_layers, 42);
  for (std::int64_t i = 0; i < 42; ++i) {
    EXPECT_EQ(at(m, i).type, (i + 1) % 6 == 0 ? "full_attention" : "sliding_attention") << i;
  }
  const rope& full = rope_of(at(m, 41));
  EXPECT_EQ(full.type, rope_type::proportional);
  EXPECT_EQ(full.head_dim, 512);
  EXPECT_EQ(full.partial_rotary_factor, 0.25);
  EXPECT_EQ(full.rope_theta, 1e6);
  EXPECT_EQ(full, group_of(file, "full_attention"));
  const rope& sliding = rope_of(at(m, 0));
  EXPECT_EQ(sliding.type, rope_type::default_);
  EXPECT_EQ(sliding.head_dim, 256);
  EXPECT_EQ(sliding.rotary_dim, 256);
  EXPECT_EQ(sliding.rope_theta, 10000.0);
  EXPECT_TRUE(contains(at(m, 5).rule, "global_head_dim")) << at(m, 5).rule;

  // A last layer given as sliding is forced to full_attention, with transformers' warning.
  std::vector<std::string> warned;
  const auto forced = parse_config_model_text(
      R"({"model_type": "gemma4_text", "hidden_size": 2560, "num_attention_heads": 8,
          "num_hidden_layers": 2, "layer_types": ["sliding_attention", "sliding_attention"]})",
      "g.json", [&](std::string_view m) { warned.emplace_back(m); });
  EXPECT_EQ(at(forced, 1).type, "full_attention");
  EXPECT_EQ(rope_of(at(forced, 1)).head_dim, 512);  // Gemma4TextConfig's global_head_dim
  EXPECT_EQ(rope_of(at(forced, 1)).type, rope_type::proportional);
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_TRUE(contains(warned[0], "Forcing last layer")) << warned[0];
}

TEST(SpecModel, Llama4ScoutNoPEEveryFourthLayerChunkedElsewhere) {
  // no_rope_layers [] → Llama4TextConfig's default: use_rope = (i + 1) % 4 != 0; RoPE layers are
  // chunked_attention, the NoPE ones full_attention.
  const auto file = kFamilies / "llama4_scout.json";
  const auto [m, w] = load(file);
  ASSERT_EQ(m.num_layers, 48);
  ASSERT_EQ(m.layers.size(), 48u);
  const rope whole = group_of(file, "");
  int nope = 0;
  for (std::int64_t i = 0; i < 48; ++i) {
    const auto& l = at(m, i);
    if ((i + 1) % 4 == 0) {
      ++nope;
      EXPECT_FALSE(l.encoding.has_value()) << i;
      EXPECT_EQ(l.type, "full_attention") << i;
      EXPECT_TRUE(contains(l.rule, "NoPE")) << l.rule;
    } else {
      EXPECT_EQ(l.type, "chunked_attention") << i;
      EXPECT_EQ(rope_of(l), whole) << i;
    }
  }
  EXPECT_EQ(nope, 12);
  const rope& r = rope_of(at(m, 0));
  EXPECT_EQ(r.layout, rope_layout::interleaved);
  EXPECT_EQ(r.type, rope_type::llama3);
  EXPECT_EQ(r.factor, 16.0);
  EXPECT_EQ(r.rope_theta, 500000.0);
  EXPECT_TRUE(contains(at(m, 3).rule, "no_rope_layer_interval = 4")) << at(m, 3).rule;
}

TEST(SpecModel, SmolLM3NoRopeLayersOneMeansRope) {
  const auto file = kFamilies / "smollm3_3b.json";
  const auto [m, w] = load(file);
  EXPECT_TRUE(w.empty()) << w.front();
  ASSERT_EQ(m.num_layers, 36);
  for (std::int64_t i = 0; i < 36; ++i) {
    const auto& l = at(m, i);
    EXPECT_EQ(l.type, "full_attention");
    EXPECT_EQ(l.encoding.has_value(), (i + 1) % 4 != 0) << i;
  }
  EXPECT_EQ(at(m, 3).rule,
            "layer_types absent: SmolLM3Config → full_attention; no_rope_layers[3] = 0 (0: "
            "NoPE): NoPE, identity expected");
  const rope& r = rope_of(at(m, 0));
  EXPECT_EQ(r.rope_theta, 5e6);
  EXPECT_EQ(r.head_dim, 128);
  EXPECT_EQ(r.rotary_dim, 128);
  EXPECT_EQ(r.type, rope_type::default_);
  EXPECT_EQ(r.layout, rope_layout::neox);
}

TEST(SpecModel, Qwen3NextLinearLayersHaveNoRopeFullLayersPartial) {
  const auto file = kFamilies / "qwen3_next_80b_a3b.json";
  const auto [m, w] = load(file);
  EXPECT_TRUE(w.empty()) << w.front();
  ASSERT_EQ(m.num_layers, 48);
  for (std::int64_t i = 0; i < 48; ++i) {
    const bool full = (i + 1) % 4 == 0;
    EXPECT_EQ(at(m, i).type, full ? "full_attention" : "linear_attention") << i;
    EXPECT_EQ(at(m, i).encoding.has_value(), full) << i;
  }
  const rope& r = rope_of(at(m, 3));
  EXPECT_EQ(r.head_dim, 256);
  EXPECT_EQ(r.partial_rotary_factor, 0.25);
  EXPECT_EQ(r.rotary_dim, 64);
  EXPECT_EQ(r.rope_theta, 1e7);
  EXPECT_EQ(r.layout, rope_layout::neox);
  EXPECT_TRUE(contains(at(m, 0).rule, "linear-attention")) << at(m, 0).rule;
  EXPECT_TRUE(contains(at(m, 3).rule, "rotary_dim 64 of head_dim 256")) << at(m, 3).rule;
}

TEST(SpecModel, Qwen35LayerTypesWithInterleavedMropeAndPartialRotary) {
  const auto file = kFamilies / "qwen3_5_9b.json";
  const auto [m, w] = load(file);
  EXPECT_TRUE(w.empty()) << w.front();
  EXPECT_EQ(m.model_type, "qwen3_5_text");
  ASSERT_EQ(m.num_layers, 32);
  EXPECT_FALSE(at(m, 0).encoding.has_value());
  const rope& r = rope_of(at(m, 3));
  EXPECT_EQ(r.rotary_dim, 64);
  EXPECT_EQ(r.mrope_section, (std::vector<std::int64_t>{11, 11, 10}));
  EXPECT_TRUE(r.mrope_interleaved);
  EXPECT_EQ(r.rope_theta, 1e7);
  EXPECT_EQ(r, group_of(file, ""));
}

TEST(SpecModel, Glm45PartialRotaryNeoxEveryLayer) {
  const auto file = kFamilies / "glm4_5_air.json";
  const auto [m, w] = load(file);
  ASSERT_EQ(m.num_layers, 46);
  for (const auto& l : m.layers) {
    const rope& r = rope_of(l);
    EXPECT_EQ(r.head_dim, 128);
    EXPECT_EQ(r.rotary_dim, 64);
    EXPECT_EQ(r.rope_theta, 1e6);
    EXPECT_EQ(r.layout, rope_layout::neox);  // Glm4MoeAttention: rotate_half, unlike glm/glm4
  }
}

TEST(SpecModel, Phi4MiniLongropeOverThreeQuartersOfTheHead) {
  const auto file = kFamilies / "phi4_mini.json";
  const auto [m, w] = load(file);
  ASSERT_EQ(m.num_layers, 32);
  const rope& r = rope_of(at(m, 17));
  EXPECT_EQ(r.type, rope_type::longrope);
  EXPECT_EQ(r.head_dim, 128);
  EXPECT_EQ(r.rotary_dim, 96);
  EXPECT_EQ(r.short_factor.size(), 48u);
  EXPECT_EQ(r.factor, 32.0);
  EXPECT_EQ(r.original_max_position_embeddings, 4096);
  EXPECT_EQ(r, group_of(file, ""));
}

TEST(SpecModel, Qwen3VLInterleavedMropeFromTextConfig) {
  const auto file = kFamilies / "qwen3_vl_8b.json";
  const auto [m, w] = load(file);
  EXPECT_TRUE(w.empty()) << w.front();
  EXPECT_EQ(m.model_type, "qwen3_vl_text");
  ASSERT_EQ(m.num_layers, 36);
  const rope& r = rope_of(at(m, 35));
  EXPECT_EQ(r.mrope_section, (std::vector<std::int64_t>{24, 20, 20}));
  EXPECT_TRUE(r.mrope_interleaved);
  EXPECT_EQ(r.rotary_dim, 128);
  EXPECT_EQ(r.rope_theta, 5e6);
  EXPECT_EQ(r.layout, rope_layout::neox);  // the sections interleave, not the pairs
  EXPECT_TRUE(contains(at(m, 0).rule, "mrope_interleaved")) << at(m, 0).rule;
}

TEST(SpecModel, DeepSeekV3InterleavedMlaRope) {
  const auto file = kConfigs / "deepseek_v3.json";
  const auto [m, w] = load(file);
  ASSERT_EQ(m.num_layers, 61);
  ASSERT_EQ(m.layers.size(), 61u);
  const rope& r = rope_of(at(m, 60));
  EXPECT_EQ(r.head_dim, 64);
  EXPECT_EQ(r.layout, rope_layout::interleaved);
  EXPECT_EQ(r.type, rope_type::yarn);
  EXPECT_EQ(r.factor, 40.0);
  EXPECT_EQ(r.mscale, 1.0);
  EXPECT_EQ(r.mscale_all_dim, 1.0);
}

TEST(SpecModel, DeepSeekV32IndexerRotatesNeoxOverTheRopeHalf) {
  const auto file = kFamilies / "deepseek_v32_exp.json";
  const auto [m, w] = load(file);
  ASSERT_EQ(m.num_layers, 61);
  ASSERT_EQ(m.layers.size(), 122u);
  expect_ordered(m);
  EXPECT_EQ(m.layers[1].prefix(), "layers.0.indexer");
  const rope& main = rope_of(at(m, 7));
  const rope& idx = rope_of(at(m, 7, "indexer"));
  EXPECT_EQ(main.layout, rope_layout::interleaved);
  EXPECT_EQ(main.head_dim, 64);
  EXPECT_EQ(idx.layout, rope_layout::neox);
  EXPECT_EQ(idx.head_dim, 128);
  EXPECT_EQ(idx.rotary_dim, 64);
  // The same frequencies and scaling as the main attention.
  EXPECT_EQ(idx.type, rope_type::yarn);
  EXPECT_EQ(idx.factor, main.factor);
  EXPECT_EQ(idx.rope_theta, main.rope_theta);
  EXPECT_EQ(idx.mscale, main.mscale);
  EXPECT_EQ(idx.original_max_position_embeddings, 4096);
  EXPECT_NO_THROW(validate(idx));
}

TEST(SpecModel, Olmo3YarnOnFullLayersOnly) {
  const auto file = kFamilies / "olmo3_7b_think.json";
  const auto [m, w] = load(file);
  EXPECT_TRUE(w.empty()) << w.front();
  ASSERT_EQ(m.num_layers, 32);
  const rope& full = rope_of(at(m, 3));
  EXPECT_EQ(full.type, rope_type::yarn);
  EXPECT_EQ(full.factor, 8.0);
  EXPECT_EQ(full.original_max_position_embeddings, 8192);
  EXPECT_EQ(full.attention_factor, 1.2079441541679836);
  EXPECT_EQ(full.rope_theta, 500000.0);
  const rope& sliding = rope_of(at(m, 0));
  EXPECT_EQ(sliding.type, rope_type::default_);
  EXPECT_EQ(sliding.rope_theta, 500000.0);
  EXPECT_EQ(sliding.factor, 1.0);
  EXPECT_FALSE(sliding.attention_factor.has_value());
  for (std::int64_t i = 0; i < 32; ++i) {
    EXPECT_EQ(rope_of(at(m, i)), (i + 1) % 4 == 0 ? full : sliding) << i;
  }
  // The single-group reader now gives the sliding table too (it refused it before).
  EXPECT_EQ(group_of(file, "sliding_attention"), sliding);
  EXPECT_EQ(group_of(file, ""), full);
  EXPECT_TRUE(contains(at(m, 0).rule, "full-attention layers only")) << at(m, 0).rule;
}

TEST(SpecModel, Ministral3ScalingBetaIsNotARotation) {
  const auto file = kFamilies / "ministral3_8b.json";
  const auto [m, w] = load(file);
  EXPECT_TRUE(w.empty()) << w.front();
  EXPECT_EQ(m.model_type, "ministral3");
  ASSERT_EQ(m.num_layers, 34);
  const rope& r = rope_of(at(m, 0));
  EXPECT_EQ(r.type, rope_type::yarn);
  EXPECT_EQ(r.factor, 16.0);
  EXPECT_EQ(r.original_max_position_embeddings, 16384);
  EXPECT_EQ(r.rope_theta, 1e6);
  EXPECT_TRUE(contains(at(m, 0).rule, "llama_4_scaling_beta = 0.1")) << at(m, 0).rule;
  EXPECT_TRUE(contains(at(m, 0).rule, "not a rotation")) << at(m, 0).rule;
}

TEST(SpecModel, HunyuanAlphaIsDefaultRopeWithTheNtkBase) {
  // HunYuanDenseV1RotaryEmbedding: base = rope_theta·alpha^(head_dim/(head_dim−2)); Python's
  // 10000.0 * 1000.0 ** (128 / 126) is 11158839.92507748.
  const auto file = kFamilies / "hunyuan_7b.json";
  const auto [m, w] = load(file);
  ASSERT_EQ(m.num_layers, 32);
  const rope& r = rope_of(at(m, 0));
  EXPECT_EQ(r.type, rope_type::default_);
  EXPECT_EQ(r.rope_theta, 11158839.92507748);
  EXPECT_EQ(r.factor, 1.0);
  EXPECT_EQ(r.rotary_dim, 128);
  EXPECT_TRUE(contains(at(m, 0).rule, "alpha = 1000")) << at(m, 0).rule;
}

TEST(SpecModel, T5EncoderAndDecoderBucketsFromOneConfig) {
  const auto [m, w] = load(kFamilies / "t5_small.json");
  EXPECT_EQ(m.num_layers, 0);
  ASSERT_EQ(m.layers.size(), 2u);
  EXPECT_EQ(m.layers[0].prefix(), "decoder");
  EXPECT_EQ(m.layers[0].index, -1);
  EXPECT_EQ(std::get<t5>(*m.layers[0].encoding), (t5{32, 128, false}));
  EXPECT_EQ(m.layers[1].prefix(), "encoder");
  EXPECT_EQ(std::get<t5>(*m.layers[1].encoding), (t5{32, 128, true}));
}

TEST(SpecModel, LearnedTablesAreAModelLevelEmbedSite) {
  const auto gpt2 = load(kFamilies / "gpt2.json").m;
  ASSERT_EQ(gpt2.num_layers, 12);
  ASSERT_EQ(gpt2.layers.size(), 13u);
  EXPECT_EQ(gpt2.layers[0].prefix(), "embed");
  const auto& t = std::get<learned>(*gpt2.layers[0].encoding);
  EXPECT_EQ(t.num_positions, 1024);
  EXPECT_EQ(t.d_model, 768);
  EXPECT_TRUE(t.table.empty());
  EXPECT_TRUE(t.table_file.empty());
  for (std::int64_t i = 0; i < 12; ++i) EXPECT_FALSE(at(gpt2, i).encoding.has_value());

  // OPT: nn.Embedding(max_position_embeddings + 2, hidden_size), row p + 2 for position p.
  const auto opt = load(kFamilies / "opt_125m.json").m;
  const auto& o = std::get<learned>(*opt.layers[0].encoding);
  EXPECT_EQ(o.num_positions, 2050);
  EXPECT_EQ(o.d_model, 768);
  EXPECT_TRUE(contains(opt.layers[0].rule, "offset 2")) << opt.layers[0].rule;

  const auto bert = load(kFamilies / "bert_base.json").m;
  EXPECT_EQ(std::get<learned>(*bert.layers[0].encoding).num_positions, 512);
  EXPECT_EQ(bert.num_layers, 12);
}

TEST(SpecModel, ModernBertGlobalEveryThirdLayer) {
  const auto [m, w] = load(kFamilies / "modernbert_base.json");
  ASSERT_EQ(m.num_layers, 22);
  for (std::int64_t i = 0; i < 22; ++i) {
    EXPECT_EQ(rope_of(at(m, i)).rope_theta, i % 3 == 0 ? 160000.0 : 10000.0) << i;
  }
  EXPECT_TRUE(contains(at(m, 1).rule, "local_rope_theta")) << at(m, 1).rule;
}

TEST(SpecModel, AlibiEveryLayer) {
  const auto [m, w] = load(kFamilies / "bloom_560m.json");
  ASSERT_EQ(m.num_layers, 24);
  for (const auto& l : m.layers) EXPECT_EQ(std::get<alibi>(*l.encoding).num_heads, 16);
}

TEST(SpecModel, Cohere2FullAttentionLayersApplyNoRope) {
  const auto m = parse_config_model_text(
      R"({"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32,
          "num_hidden_layers": 8, "rope_theta": 50000.0, "max_position_embeddings": 8192})",
      "c.json", [](std::string_view) {});
  for (std::int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(at(m, i).encoding.has_value(), (i + 1) % 4 != 0) << i;
  }
  EXPECT_EQ(rope_of(at(m, 0)).layout, rope_layout::interleaved);
}

TEST(SpecModel, NamedErrorsForRulesPevDoesNotKnow) {
  EXPECT_TRUE(contains(error_of(R"({"model_type": "deepseek_v4", "hidden_size": 4096,
      "num_attention_heads": 64, "num_hidden_layers": 43})"),
                       "rotates the last qk_rope_head_dim channels"));
  // no_rope_layers means something only to the families that read it.
  EXPECT_TRUE(contains(error_of(R"({"model_type": "llama", "hidden_size": 4096,
      "num_attention_heads": 32, "num_hidden_layers": 2, "no_rope_layers": [1, 0]})"),
                       "no_rope_layers is given, but pev knows its meaning only"));
  EXPECT_TRUE(contains(error_of(R"({"model_type": "smollm3", "hidden_size": 2048,
      "num_attention_heads": 16, "num_hidden_layers": 2, "no_rope_layers": [1, 2]})"),
                       "no_rope_layers[1] must be 0 (NoPE) or 1 (RoPE), got 2"));
  EXPECT_TRUE(contains(error_of(R"({"model_type": "smollm3", "hidden_size": 2048,
      "num_attention_heads": 16, "num_hidden_layers": 3, "no_rope_layers": [1, 1]})"),
                       "fewer than num_hidden_layers"));
  EXPECT_TRUE(contains(error_of(R"({"model_type": "lfm2", "hidden_size": 1024,
      "num_attention_heads": 16, "num_hidden_layers": 2, "layer_types": ["conv", "full_attention"]})"),
                       "layer_types[0] = 'conv': pev does not know"));
  EXPECT_TRUE(contains(error_of(R"({"model_type": "llama", "hidden_size": 4096,
      "num_attention_heads": 32, "num_hidden_layers": 3, "layer_types": ["full_attention"]})"),
                       "one layer type per layer"));
  EXPECT_TRUE(contains(error_of(R"({"model_type": "llama", "hidden_size": 4096,
      "num_attention_heads": 32})"),
                       "num_hidden_layers is not given"));
  EXPECT_TRUE(contains(error_of(R"({"model_type": "gemma3_text", "num_hidden_layers": 2,
      "layer_types": ["sliding_attention", "chunked_attention"], "head_dim": 256,
      "hidden_size": 1152, "num_attention_heads": 4})"),
                       "no group 'chunked_attention'"));
  // Groups by layer type without layer_types, in a family whose pattern pev does not know.
  EXPECT_TRUE(contains(error_of(R"({"model_type": "newmodel", "hidden_size": 1024,
      "num_attention_heads": 8, "num_hidden_layers": 4, "rope_parameters": {
      "full_attention": {"rope_type": "default", "rope_theta": 1e6},
      "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}})"),
                       "layer_types is not given, and pev does not know"));
  // The learned table's shape is needed.
  EXPECT_TRUE(contains(error_of(R"({"model_type": "gpt2", "n_layer": 2})"), "n_positions"));
}

}  // namespace

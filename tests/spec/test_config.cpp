// config.json → spec::rope (pev/spec/config.h): real model configs under tests/spec/configs/, the
// warnings transformers emits, and the standardization rules of docs/encodings.md §5.1, §7.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "pev/spec/config.h"
#include "pev/spec/parse.h"

namespace {

using namespace pev::spec;

const std::filesystem::path kConfigs = std::filesystem::path(PEV_SOURCE_DIR) / "tests/spec/configs";

struct warnings {
  std::vector<std::string> messages;
  pev::warning_sink sink() {
    return [this](std::string_view m) { messages.emplace_back(m); };
  }
  bool any_contains(std::string_view part) const {
    for (const auto& m : messages) {
      if (m.find(part) != std::string::npos) return true;
    }
    return false;
  }
};

// Parses a config file and expects no warning.
rope quiet_file(const std::string& name, const config_options& options = {}) {
  warnings w;
  rope r = parse_config_file(kConfigs / name, options, w.sink());
  EXPECT_TRUE(w.messages.empty()) << name << ": " << w.messages.front();
  return r;
}

rope text(std::string_view json, warnings& w, const config_options& options = {}) {
  return parse_config_text(json, "test.json", options, w.sink());
}

std::string error_of(std::string_view json, const config_options& options = {}) {
  warnings w;
  try {
    text(json, w, options);
  } catch (const pev::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << json;
  return {};
}

// Every config result must also survive the SPEC round trip (the CLI prints configs as SPECs).
void expect_spec_round_trip(const rope& r) {
  const std::string s = to_spec_string(r);
  EXPECT_EQ(std::get<rope>(parse_spec(s, [](std::string_view) {})), r) << s;
}

TEST(SpecConfigModels, Llama2) {
  const rope r = quiet_file("llama2_7b.json");
  EXPECT_EQ(r.type, rope_type::default_);
  EXPECT_EQ(r.head_dim, 128);
  EXPECT_EQ(r.rotary_dim, 128);
  EXPECT_EQ(r.rope_theta, 10000.0);
  EXPECT_EQ(r.max_position_embeddings, 4096);
  EXPECT_EQ(r.layout, rope_layout::neox);
  EXPECT_EQ(to_spec_string(r), "rope:head_dim=128,max_position_embeddings=4096");
}

TEST(SpecConfigModels, Llama31) {
  const rope r = quiet_file("llama3_1_8b_instruct.json");
  EXPECT_EQ(r.type, rope_type::llama3);
  EXPECT_EQ(r.head_dim, 128);
  EXPECT_EQ(r.rope_theta, 500000.0);
  EXPECT_EQ(r.factor, 8.0);
  EXPECT_EQ(r.low_freq_factor, 1.0);
  EXPECT_EQ(r.high_freq_factor, 4.0);
  EXPECT_EQ(r.original_max_position_embeddings, 8192);
  EXPECT_EQ(r.max_position_embeddings, 131072);
  expect_spec_round_trip(r);
}

TEST(SpecConfigModels, Llama32V5RopeParameters) {
  const rope r = quiet_file("llama3_2_1b_v5_rope_parameters.json");
  EXPECT_EQ(r.type, rope_type::llama3);
  EXPECT_EQ(r.head_dim, 64);
  EXPECT_EQ(r.rotary_dim, 64);
  EXPECT_EQ(r.rope_theta, 500000.0);
  EXPECT_EQ(r.factor, 32.0);
  EXPECT_EQ(r.original_max_position_embeddings, 8192);
  expect_spec_round_trip(r);
}

TEST(SpecConfigModels, Qwen25Yarn) {
  const rope r = quiet_file("qwen2_5_7b_instruct_yarn.json");
  EXPECT_EQ(r.type, rope_type::yarn);  // from the legacy key `type`
  EXPECT_EQ(r.head_dim, 128);          // 3584 // 28
  EXPECT_EQ(r.rope_theta, 1e6);
  EXPECT_EQ(r.factor, 4.0);
  EXPECT_EQ(r.original_max_position_embeddings, 32768);
  EXPECT_EQ(r.max_position_embeddings, 32768);  // implicit factor 1: no warning
  EXPECT_EQ(r.beta_fast, 32.0);
  EXPECT_EQ(r.beta_slow, 1.0);
  EXPECT_TRUE(r.truncate);
  EXPECT_FALSE(r.attention_factor);
  expect_spec_round_trip(r);
}

TEST(SpecConfigModels, DeepSeekV3) {
  const rope r = quiet_file("deepseek_v3.json");
  EXPECT_EQ(r.type, rope_type::yarn);
  EXPECT_EQ(r.head_dim, 64);  // qk_rope_head_dim, not 7168 // 128 = 56
  EXPECT_EQ(r.rotary_dim, 64);
  EXPECT_EQ(r.layout, rope_layout::interleaved);
  EXPECT_EQ(r.factor, 40.0);
  EXPECT_EQ(r.original_max_position_embeddings, 4096);
  EXPECT_EQ(r.max_position_embeddings, 163840);
  ASSERT_TRUE(r.mscale && r.mscale_all_dim);
  EXPECT_EQ(*r.mscale, 1.0);
  EXPECT_EQ(*r.mscale_all_dim, 1.0);
  expect_spec_round_trip(r);
}

TEST(SpecConfigModels, GptOss) {
  // gpt-oss has layer_types, but its rope_scaling keys are not layer types: a flat dict.
  const rope r = quiet_file("gpt_oss_20b.json");
  EXPECT_EQ(r.type, rope_type::yarn);
  EXPECT_EQ(r.head_dim, 64);
  EXPECT_EQ(r.rope_theta, 150000.0);
  EXPECT_EQ(r.factor, 32.0);
  EXPECT_EQ(r.original_max_position_embeddings, 4096);
  EXPECT_FALSE(r.truncate);
  EXPECT_EQ(r.layout, rope_layout::neox);
  expect_spec_round_trip(r);
}

TEST(SpecConfigModels, Gemma3TextConfig) {
  const rope r = quiet_file("gemma3_4b_it.json");
  EXPECT_EQ(r.type, rope_type::linear);
  EXPECT_EQ(r.factor, 8.0);
  EXPECT_EQ(r.head_dim, 256);  // text_config.head_dim, not the vision tower's
  EXPECT_EQ(r.rope_theta, 1e6);
  EXPECT_EQ(r.max_position_embeddings, 131072);
  expect_spec_round_trip(r);
}

TEST(SpecConfigModels, Gemma3PerLayerType) {
  const rope full = quiet_file("gemma3_1b_v5_layer_types.json");
  EXPECT_EQ(full.type, rope_type::linear);
  EXPECT_EQ(full.factor, 8.0);
  EXPECT_EQ(full.rope_theta, 1e6);
  EXPECT_EQ(full.head_dim, 256);
  const rope sliding = quiet_file("gemma3_1b_v5_layer_types.json", {"sliding_attention"});
  EXPECT_EQ(sliding.type, rope_type::default_);
  EXPECT_EQ(sliding.rope_theta, 10000.0);
  EXPECT_EQ(sliding.factor, 1.0);
  warnings w;
  try {
    parse_config_file(kConfigs / "gemma3_1b_v5_layer_types.json", {"chunked_attention"}, w.sink());
    FAIL();
  } catch (const pev::error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "layer_type 'chunked_attention' is not a group of rope_parameters (groups: "
                  "full_attention, sliding_attention)"),
              std::string::npos)
        << e.what();
  }
}

TEST(SpecConfigModels, Phi3LongRope) {
  warnings w;
  const rope r = parse_config_file(kConfigs / "phi3_mini_128k_instruct.json", {}, w.sink());
  EXPECT_EQ(r.type, rope_type::longrope);
  EXPECT_EQ(r.head_dim, 96);
  EXPECT_EQ(r.pairs(), 48);
  ASSERT_EQ(r.short_factor.size(), 48u);
  ASSERT_EQ(r.long_factor.size(), 48u);
  EXPECT_EQ(r.long_factor[0], 1.0299999713897705);
  EXPECT_EQ(r.long_factor[47], 48.0);
  EXPECT_EQ(r.original_max_position_embeddings, 4096);  // the top-level attribute
  EXPECT_EQ(r.factor, 32.0);                            // factor None → 131072 / 4096
  EXPECT_FALSE(r.attention_factor);
  EXPECT_TRUE(r.stateful());
  // transformers recommends an explicit factor; nothing else warns.
  ASSERT_EQ(w.messages.size(), 1u);
  EXPECT_NE(w.messages[0].find("Please set the `factor` field"), std::string::npos);
  EXPECT_EQ(w.messages[0].rfind((kConfigs / "phi3_mini_128k_instruct.json").string() + ": ", 0),
            0u);
  expect_spec_round_trip(r);
}

TEST(SpecConfigStandardize, RopeThetaPriorityAndDefaults) {
  warnings w;
  EXPECT_EQ(text(R"({"head_dim": 64, "rope_theta": 5e5,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}})",
                 w)
                .rope_theta,
            1e6);
  EXPECT_EQ(
      text(R"({"head_dim": 64, "rope_theta": 5e5, "rope_parameters": {"rope_type": "default"}})", w)
          .rope_theta,
      5e5);
  EXPECT_EQ(text(R"({"head_dim": 64})", w).rope_theta, 10000.0);
  EXPECT_EQ(text(R"({"head_dim": 64, "rope_scaling": {}, "rope_theta": 20000})", w).rope_theta,
            20000.0);
  EXPECT_TRUE(w.messages.empty());
}

TEST(SpecConfigStandardize, HeadDimRules) {
  warnings w;
  // `getattr(config, "head_dim", None) or hidden_size // num_attention_heads`.
  EXPECT_EQ(
      text(R"({"head_dim": null, "hidden_size": 4096, "num_attention_heads": 32})", w).head_dim,
      128);
  EXPECT_EQ(text(R"({"head_dim": 0, "hidden_size": 4096, "num_attention_heads": 32})", w).head_dim,
            128);
  EXPECT_EQ(text(R"({"hidden_size": 4100, "num_attention_heads": 32,
                     "rope_scaling": {"rope_type": "linear", "factor": 2}})",
                 w)
                .head_dim,
            128);  // 4100 // 32 (floor)
  // dynamic/yarn/longrope: an explicit null stays None and transformers fails.
  EXPECT_NE(error_of(R"({"head_dim": null, "hidden_size": 4096, "num_attention_heads": 32,
                         "max_position_embeddings": 4096,
                         "rope_scaling": {"rope_type": "dynamic", "factor": 2}})")
                .find("head_dim is null"),
            std::string::npos);
  EXPECT_TRUE(w.messages.empty());
}

TEST(SpecConfigStandardize, PartialRotaryFactor) {
  warnings w;
  const rope phi2 = text(R"({"hidden_size": 2560, "num_attention_heads": 32,
                             "partial_rotary_factor": 0.4, "rope_theta": 10000.0})",
                         w);
  EXPECT_EQ(phi2.head_dim, 80);
  EXPECT_EQ(phi2.rotary_dim, 32);
  EXPECT_EQ(phi2.partial_rotary_factor, 0.4);
  // standardize_rope_params assigns the top-level value over the dict's.
  const rope both = text(R"({"head_dim": 128, "partial_rotary_factor": 0.5,
                             "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.25}})",
                         w);
  EXPECT_EQ(both.rotary_dim, 64);
  const rope inside = text(R"({"head_dim": 128,
                               "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.25}})",
                           w);
  EXPECT_EQ(inside.rotary_dim, 32);
  EXPECT_TRUE(w.messages.empty());
}

TEST(SpecConfigStandardize, OriginalMaxPositionEmbeddings) {
  warnings w;
  // Flat dict: the config attribute wins over the dict's value.
  const rope attr = text(R"({"head_dim": 128, "max_position_embeddings": 131072,
                             "original_max_position_embeddings": 4096,
                             "rope_scaling": {"rope_type": "yarn", "factor": 32,
                                              "original_max_position_embeddings": 8192}})",
                         w);
  EXPECT_EQ(attr.original_max_position_embeddings, 4096);
  EXPECT_TRUE(w.messages.empty());
  // Absent everywhere: setdefault L (then the implicit factor is 1: no warning).
  const rope from_l = text(R"({"head_dim": 128, "max_position_embeddings": 32768,
                               "rope_scaling": {"rope_type": "yarn", "factor": 4}})",
                           w);
  EXPECT_EQ(from_l.original_max_position_embeddings, 32768);
  EXPECT_TRUE(w.messages.empty());
  // Per-layer groups only get the setdefault: the attribute is not used.
  const rope nested = text(R"({"head_dim": 128, "max_position_embeddings": 32768,
                               "original_max_position_embeddings": 4096,
                               "rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 4,
                                                   "original_max_position_embeddings": 4096},
                                                   "sliding_attention": {"rope_type": "llama3",
                                                   "factor": 8, "low_freq_factor": 1,
                                                   "high_freq_factor": 4}}})",
                           w, {"sliding_attention"});
  EXPECT_EQ(nested.original_max_position_embeddings, 32768);
  // …and transformers warns about Lo ≥ L there (llama3), and the full group's implicit factor.
  EXPECT_TRUE(w.any_contains("must be less than max_position_embeddings, got 32768"));
  EXPECT_TRUE(w.any_contains("implicit factor"));
}

TEST(SpecConfigStandardize, YarnDefaultsAndTruncate) {
  warnings w;
  // `beta_fast or 32`: 0 and null take the defaults.
  const rope r = text(R"({"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4,
                          "original_max_position_embeddings": 4096, "beta_fast": 0, "beta_slow": null,
                          "truncate": null}})",
                      w);
  EXPECT_EQ(r.beta_fast, 32.0);
  EXPECT_EQ(r.beta_slow, 1.0);
  EXPECT_FALSE(r.truncate);  // rope_parameters.get("truncate", True) is None: falsy
  EXPECT_TRUE(w.messages.empty());
  // truncate is never read from per-layer groups: nested configs are always truncated.
  const rope nested = text(R"({"head_dim": 64, "rope_parameters": {"full_attention": {
                               "rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 4096,
                               "truncate": false}}})",
                           w);
  EXPECT_TRUE(nested.truncate);
  // factor None → L/Lo, with transformers' two warnings.
  const rope implicit = text(R"({"head_dim": 64, "max_position_embeddings": 131072,
                                 "rope_scaling": {"rope_type": "yarn", "factor": null,
                                 "original_max_position_embeddings": 4096}})",
                             w);
  EXPECT_EQ(implicit.factor, 32.0);
  EXPECT_TRUE(w.any_contains("factor field must be a float or int >= 1, got None"));
  EXPECT_TRUE(w.any_contains("implicit factor"));
}

TEST(SpecConfigStandardize, LayoutAndLegacyKeys) {
  warnings w;
  EXPECT_EQ(text(R"({"head_dim": 64, "rope_interleave": true})", w).layout,
            rope_layout::interleaved);
  EXPECT_EQ(text(R"({"head_dim": 64, "model_type": "deepseek_v2"})", w).layout,
            rope_layout::interleaved);
  EXPECT_EQ(
      text(R"({"head_dim": 64, "model_type": "deepseek_v3", "rope_interleave": false})", w).layout,
      rope_layout::neox);
  // rope_type wins over the legacy type.
  EXPECT_EQ(text(R"({"head_dim": 64, "rope_scaling": {"type": "dynamic", "rope_type": "linear",
                     "factor": 2}})",
                 w)
                .type,
            rope_type::linear);
  EXPECT_TRUE(w.messages.empty());
  // convert_rope_params_to_dict: `rope_scaling or rope_parameters`.
  const rope both = text(R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2},
                             "rope_parameters": {"rope_type": "linear", "factor": 4}})",
                         w);
  EXPECT_EQ(both.factor, 2.0);
  EXPECT_TRUE(w.any_contains("rope_scaling and rope_parameters differ"));
}

TEST(SpecConfigWarnings, ExactlyWhereTransformersWarns) {
  struct warn_case {
    const char* json;
    const char* expected;  // substring of the one warning
  };
  const warn_case cases[] = {
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2, "foo": 1}})",
       "Unrecognized keys in `rope_parameters` for 'rope_type'='linear': foo"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "default", "factor": 2}})",
       "Unrecognized keys in `rope_parameters` for 'rope_type'='default': factor"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 0.5}})",
       "factor field must be a float or int >= 1, got 0.5"},
      {R"({"head_dim": 64, "max_position_embeddings": 2048,
           "rope_scaling": {"rope_type": "dynamic", "factor": 0.5}})",
       "factor field must be a float or int >= 1, got 0.5"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4,
           "original_max_position_embeddings": 4096, "attention_factor": 1}})",
       "attention_factor field must be a float greater than 0, got 1"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4,
           "original_max_position_embeddings": 4096, "attention_factor": -1.0}})",
       "attention_factor field must be a float greater than 0, got -1.0"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4,
           "original_max_position_embeddings": 4096, "beta_fast": 1, "beta_slow": 32}})",
       "beta_fast field must be greater than beta_slow, got beta_fast=1"},
      {R"({"head_dim": 64, "max_position_embeddings": 131072, "rope_scaling": {"rope_type": "yarn",
           "factor": 4, "original_max_position_embeddings": 4096}})",
       "does not match the ratio implicitly set"},
      {R"({"head_dim": 4, "max_position_embeddings": 8192, "rope_scaling": {"rope_type": "longrope",
           "short_factor": [1, 1], "long_factor": [1, 2], "factor": 0.5,
           "original_max_position_embeddings": 4096}})",
       "factor field must be a float or int >= 1, got 0.5"},
      {R"({"head_dim": 4, "rope_scaling": {"rope_type": "longrope", "short_factor": [1, 1],
           "long_factor": [1, 2], "factor": 2, "attention_factor": -1,
           "original_max_position_embeddings": 4096}})",
       "attention_factor field must be a float or int greater than 0, got -1"},
      {R"({"head_dim": 128, "max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3",
           "factor": 8, "low_freq_factor": 4, "high_freq_factor": 4,
           "original_max_position_embeddings": 8192}})",
       "high_freq_factor field must be greater than low_freq_factor"},
      {R"({"head_dim": 128, "max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3",
           "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
           "original_max_position_embeddings": 8192.0}})",
       "original_max_position_embeddings field must be an integer, got 8192.0"},
      {R"({"head_dim": 128, "max_position_embeddings": 8192, "rope_scaling": {"rope_type": "llama3",
           "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
           "original_max_position_embeddings": 8192}})",
       "must be less than max_position_embeddings, got 8192 and max_position_embeddings=8192"},
      {R"({"head_dim": 256, "rope_parameters": {"rope_type": "proportional", "rope_theta": 1e6}})",
       "partial_rotary_factor is None"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "ntk", "factor": 4}})", "rope_type 'ntk'"},
  };
  for (const auto& c : cases) {
    warnings w;
    EXPECT_NO_THROW(text(c.json, w)) << c.json;
    ASSERT_EQ(w.messages.size(), 1u) << c.json;
    EXPECT_NE(w.messages[0].find(c.expected), std::string::npos) << w.messages[0];
    EXPECT_EQ(w.messages[0].rfind("test.json: ", 0), 0u) << w.messages[0];
  }
}

TEST(SpecConfigWarnings, WarnedThenUncomputableIsAnError) {
  warnings w;
  // A longrope list of the wrong length warns (transformers) and then fails validate().
  try {
    text(R"({"head_dim": 8, "rope_scaling": {"rope_type": "longrope", "factor": 2,
             "short_factor": [1, 1, 1], "long_factor": [1, 1, 1, 1],
             "original_max_position_embeddings": 4096}})",
         w);
    FAIL();
  } catch (const pev::error& e) {
    EXPECT_NE(std::string(e.what()).find("short_factor must have rotary_dim/2 = 4 entries, got 3"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(w.any_contains("short_factor field must have length 4, got 3"));
  // A string factor warns and then cannot be computed with.
  w.messages.clear();
  try {
    text(R"({"head_dim": 8, "rope_scaling": {"rope_type": "linear", "factor": "8"}})", w);
    FAIL();
  } catch (const pev::error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_scaling.factor must be a number"),
              std::string::npos);
  }
  EXPECT_TRUE(w.any_contains("factor field must be a float or int >= 1, got 8"));
}

TEST(SpecConfigErrors, MissingKeysAndJson) {
  EXPECT_NE(error_of(R"({"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4}})")
                .find("Missing required keys in `rope_parameters` for 'rope_type'='yarn': "
                      "original_max_position_embeddings"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"head_dim": 64, "rope_scaling": {"rope_type": "llama3"}})")
                .find("'rope_type'='llama3': factor, high_freq_factor, low_freq_factor, "
                      "original_max_position_embeddings"),
            std::string::npos);
  const std::string json_error = error_of("{\n  \"head_dim\": 64,\n  \"rope_theta\": ,\n}");
  EXPECT_NE(json_error.find("test.json: invalid JSON: parse error at line 3, column"),
            std::string::npos)
      << json_error;
  EXPECT_NE(error_of("[1, 2]").find("must be a JSON object, got array"), std::string::npos);
  EXPECT_NE(error_of(R"({"head_dim": 64, "rope_parameters": {"a": {}, "b": {}}})")
                .find("several layer_type groups (a, b)"),
            std::string::npos);
}

TEST(SpecConfigErrors, FileErrors) {
  warnings w;
  EXPECT_THROW(parse_config_file(kConfigs / "no_such_config.json", {}, w.sink()), pev::error);
  EXPECT_THROW(parse_config_file(kConfigs, {}, w.sink()), pev::error);
}

}  // namespace

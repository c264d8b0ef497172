// The config corpus of model families (tests/spec/configs/families/, docs/encodings.md §7.8): each
// config.json resolves to the encoding transformers uses for it, checked field by field. The
// expected values are written from transformers' config classes (attribute_map, class defaults,
// convert_rope_params_to_dict) and modeling_rope_utils, one per field; every field a case does not
// list must keep its default, so a stray value (a Pythia read as full rotary, …) fails.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pev/spec/config.h"
#include "pev/spec/parse.h"

namespace {

using namespace pev::spec;

const std::filesystem::path kFamilies =
    std::filesystem::path(PEV_SOURCE_DIR) / "tests/spec/configs/families";

// Shortest round-trip text of a double (as pev's SPECs write numbers).
std::string fmt_number(double v) { return fmt::format("{}", v); }

// The model_type a config.json names first (the root's; a wrapper's own).
std::string model_type_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "\"model_type\": \"";
  const auto at = text.find(key);
  if (at == std::string::npos) return {};
  const auto start = at + key.size();
  return text.substr(start, text.find('"', start) - start);
}

// The rope fields, by name, as text (lists as their length and values).
std::map<std::string, std::string> fields(const rope& r) {
  const auto list = [](const std::vector<double>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + fmt_number(v[i]);
    return s + "]";
  };
  const auto opt = [](const std::optional<double>& v) {
    return v ? fmt_number(*v) : std::string("none");
  };
  return {
      {"head_dim", std::to_string(r.head_dim)},
      {"partial_rotary_factor", fmt_number(r.partial_rotary_factor)},
      {"rotary_dim", std::to_string(r.rotary_dim)},
      {"rope_theta", fmt_number(r.rope_theta)},
      {"layout", r.layout == rope_layout::neox ? "neox" : "interleaved"},
      {"rope_type", to_string(r.type)},
      {"factor", fmt_number(r.factor)},
      {"freq_scale", fmt_number(r.freq_scale)},
      {"max_position_embeddings", std::to_string(r.max_position_embeddings)},
      {"original_max_position_embeddings", std::to_string(r.original_max_position_embeddings)},
      {"beta_fast", fmt_number(r.beta_fast)},
      {"beta_slow", fmt_number(r.beta_slow)},
      {"truncate", r.truncate ? "true" : "false"},
      {"mscale", opt(r.mscale)},
      {"mscale_all_dim", opt(r.mscale_all_dim)},
      {"attention_factor", opt(r.attention_factor)},
      {"low_freq_factor", fmt_number(r.low_freq_factor)},
      {"high_freq_factor", fmt_number(r.high_freq_factor)},
      {"short_factor", list(r.short_factor)},
      {"long_factor", list(r.long_factor)},
      {"ext_factor", fmt_number(r.ext_factor)},
      {"attn_factor", fmt_number(r.attn_factor)},
      {"freq_factors", list(r.freq_factors)},
      {"mrope_section",
       [&] {
         std::string s = "[";
         for (std::size_t i = 0; i < r.mrope_section.size(); ++i) {
           s += (i ? "," : "") + std::to_string(r.mrope_section[i]);
         }
         return s + "]";
       }()},
      {"mrope_interleaved", r.mrope_interleaved ? "true" : "false"},
  };
}

struct rope_case {
  std::string file;
  std::string layer_type;                     // empty: the default group
  std::map<std::string, std::string> expect;  // every other field: rope{}'s default
  std::vector<std::string> warnings = {};     // substrings, one per expected warning
  bool round_trip = true;                     // the SPEC string parses back
};

std::string list_of(int n, double first, double step) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + fmt_number(first + step * i);
  return s + "]";
}

// clang-format off
// Each expectation is what transformers' config class and modeling_rope_utils give for the file.
const std::vector<rope_case>& rope_cases() {
  static const std::vector<rope_case> v = {
      // GPTNeoXConfig: rotary_emb_base is the base, rotary_pct the rotated fraction (head 1024/16).
      {"gpt_neox_pythia", "", {{"head_dim", "64"}, {"partial_rotary_factor", "0.25"},
        {"rotary_dim", "16"}, {"rope_theta", "500000"}, {"max_position_embeddings", "2048"}}},
      {"gpt_neox_japanese", "", {{"head_dim", "80"}, {"rotary_dim", "80"},
        {"max_position_embeddings", "2048"}}},
      // GPTJConfig: n_embd/n_head, rotary_dim 64 of 256, base 10000, rotate_every_two.
      {"gptj_6b", "", {{"head_dim", "256"}, {"partial_rotary_factor", "0.25"}, {"rotary_dim", "64"},
        {"layout", "interleaved"}, {"max_position_embeddings", "2048"}}},
      {"codegen_350m", "", {{"head_dim", "64"}, {"partial_rotary_factor", "0.5"}, {"rotary_dim", "32"},
        {"layout", "interleaved"}, {"max_position_embeddings", "2048"}}},
      // FalconConfig: n_head is num_attention_heads; head_dim = 4544 // 71; class L 2048.
      {"falcon_7b", "", {{"head_dim", "64"}, {"rotary_dim", "64"}, {"max_position_embeddings", "2048"}}},
      {"falcon_40b", "", {{"head_dim", "64"}, {"rotary_dim", "64"}, {"max_position_embeddings", "2048"}}},
      // Mistral-Nemo: head_dim 128 wins over 5120 // 32 = 160.
      {"mistral_nemo", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "1000000"},
        {"max_position_embeddings", "1024000"}}},
      // MixtralConfig's rope_theta default is 1e6.
      {"mixtral_8x7b_default_theta", "", {{"head_dim", "128"}, {"rotary_dim", "128"},
        {"rope_theta", "1000000"}, {"max_position_embeddings", "32768"}}},
      {"qwen2_7b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "1000000"},
        {"max_position_embeddings", "32768"}}},
      {"qwen2_moe", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "1000000"},
        {"max_position_embeddings", "8192"}}},
      // Qwen2VLTextConfig: rope_scaling {"type": "mrope"} standardized to default, its sections kept
      // (transformers validates without mrope_section: no warning).
      {"qwen2_vl_mrope", "", {{"head_dim", "128"}, {"rotary_dim", "128"},
        {"rope_theta", "1000000"}, {"max_position_embeddings", "32768"},
        {"mrope_section", "[16,24,24]"}}},
      {"qwen3_8b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "1000000"},
        {"max_position_embeddings", "40960"}}},
      // Qwen3-MoE: head_dim 128, not 2048 // 32 = 64.
      {"qwen3_moe_30b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "1000000"},
        {"max_position_embeddings", "40960"}}},
      {"gemma_7b", "", {{"head_dim", "256"}, {"rotary_dim", "256"}, {"max_position_embeddings", "8192"}}},
      {"gemma2_9b", "", {{"head_dim", "256"}, {"rotary_dim", "256"}, {"max_position_embeddings", "8192"}}},
      // Gemma3TextConfig: full_attention from rope_theta (class default 1e6), sliding_attention
      // from rope_local_base_freq.
      {"gemma3_text_default_theta", "", {{"head_dim", "256"}, {"rotary_dim", "256"},
        {"rope_theta", "1000000"}, {"max_position_embeddings", "32768"}}},
      {"gemma3_text_default_theta", "sliding_attention", {{"head_dim", "256"}, {"rotary_dim", "256"},
        {"max_position_embeddings", "32768"}}},
      // Phi-2: partial_rotary_factor 0.4 of 80 → int(32.0) = 32.
      {"phi_2", "", {{"head_dim", "80"}, {"partial_rotary_factor", "0.4"}, {"rotary_dim", "32"},
        {"max_position_embeddings", "2048"}}},
      // Phi3Config maps the legacy type "su" to longrope; factor None → L/Lo = 32.
      {"phi3_su", "", {{"head_dim", "96"}, {"rotary_dim", "96"}, {"rope_type", "longrope"},
        {"factor", "32"}, {"max_position_embeddings", "131072"},
        {"original_max_position_embeddings", "4096"}, {"short_factor", list_of(48, 1.0, 0.05)},
        {"long_factor", list_of(48, 1.0, 1.0)}},
       {"Please set the `factor` field"}},
      {"stablelm_2", "", {{"head_dim", "64"}, {"partial_rotary_factor", "0.25"}, {"rotary_dim", "16"},
        {"max_position_embeddings", "4096"}}},
      // PersimmonConfig defaults: rope_theta 25000, partial_rotary_factor 0.5.
      {"persimmon_8b_defaults", "", {{"head_dim", "64"}, {"partial_rotary_factor", "0.5"},
        {"rotary_dim", "32"}, {"rope_theta", "25000"}, {"max_position_embeddings", "16384"}}},
      {"nemotron_minitron", "", {{"head_dim", "128"}, {"partial_rotary_factor", "0.5"},
        {"rotary_dim", "64"}, {"max_position_embeddings", "4096"}}},
      // RecurrentGemmaConfig.head_dim is the property hidden_size // num_attention_heads.
      {"recurrent_gemma_2b", "", {{"head_dim", "256"}, {"partial_rotary_factor", "0.5"},
        {"rotary_dim", "128"}}},
      {"glm_4_9b", "", {{"head_dim", "128"}, {"partial_rotary_factor", "0.5"}, {"rotary_dim", "64"},
        {"layout", "interleaved"}, {"max_position_embeddings", "131072"}}},
      {"glm4_0414", "", {{"head_dim", "128"}, {"partial_rotary_factor", "0.5"}, {"rotary_dim", "64"},
        {"layout", "interleaved"}, {"max_position_embeddings", "32768"}}},
      {"cohere_command_r", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "8000000"},
        {"layout", "interleaved"}, {"max_position_embeddings", "131072"}}},
      // Cohere2 rotates only its sliding-window layers.
      {"cohere2_r7b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "50000"},
        {"layout", "interleaved"}, {"max_position_embeddings", "8192"}}},
      // DeepSeek-V2: qk_rope_head_dim, interleaved, legacy type yarn with mscale.
      {"deepseek_v2_lite", "", {{"head_dim", "64"}, {"rotary_dim", "64"}, {"layout", "interleaved"},
        {"rope_type", "yarn"}, {"factor", "40"}, {"max_position_embeddings", "163840"},
        {"original_max_position_embeddings", "4096"}, {"mscale", "0.707"},
        {"mscale_all_dim", "0.707"}}},
      {"olmo2_7b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "500000"},
        {"max_position_embeddings", "4096"}}},
      {"starcoder2_7b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "1000000"},
        {"max_position_embeddings", "16384"}}},
      // Granite, with Infinity and -Infinity elsewhere in the file.
      {"granite_3_8b", "", {{"head_dim", "128"}, {"rotary_dim", "128"},
        {"max_position_embeddings", "4096"}}},
      // Llama-4 (Maverick): text_config, Llama4TextConfig, interleaved (complex freqs_cis).
      {"llama4_maverick", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "500000"},
        {"layout", "interleaved"}, {"max_position_embeddings", "1048576"}}},
      // Llama-4 Scout: llama3 with low_freq_factor = high_freq_factor = 1 — transformers warns and
      // computes (an empty medium band); pev too. Its SPEC is strict there (docs/encodings.md §7.7),
      // so this one does not round-trip through a SPEC string.
      {"llama4_scout", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "500000"},
        {"layout", "interleaved"}, {"rope_type", "llama3"}, {"factor", "16"},
        {"max_position_embeddings", "10485760"}, {"original_max_position_embeddings", "8192"},
        {"high_freq_factor", "1"}},
       {"high_freq_factor field must be greater than low_freq_factor"}, false},
      {"mllama_11b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "500000"},
        {"rope_type", "llama3"}, {"factor", "8"}, {"max_position_embeddings", "131072"},
        {"original_max_position_embeddings", "8192"}}},
      // ModernBERT: global_rope_theta for the global layers, local_rope_theta for the local ones.
      {"modernbert_base", "", {{"head_dim", "64"}, {"rotary_dim", "64"}, {"rope_theta", "160000"},
        {"max_position_embeddings", "8192"}}},
      {"modernbert_base", "sliding_attention", {{"head_dim", "64"}, {"rotary_dim", "64"},
        {"max_position_embeddings", "8192"}}},
      // DbrxConfig: d_model/n_heads, max_seq_len, attn_config.rope_theta.
      {"dbrx", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "500000"},
        {"max_position_embeddings", "32768"}}},
      // The families of docs/encodings.md §7.9 (their per-layer rules: test_model.cpp).
      // SmolLM3Config: generic keys; its NoPE layers are per-layer.
      {"smollm3_3b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "5000000"},
        {"max_position_embeddings", "65536"}}},
      // Qwen3NextConfig / Qwen3_5TextConfig: partial_rotary_factor 0.25 of head_dim 256.
      {"qwen3_next_80b_a3b", "", {{"head_dim", "256"}, {"partial_rotary_factor", "0.25"},
        {"rotary_dim", "64"}, {"rope_theta", "10000000"}, {"max_position_embeddings", "262144"}}},
      {"qwen3_5_9b", "", {{"head_dim", "256"}, {"partial_rotary_factor", "0.25"}, {"rotary_dim", "64"},
        {"rope_theta", "10000000"}, {"max_position_embeddings", "262144"},
        {"mrope_section", "[11,11,10]"}, {"mrope_interleaved", "true"}}},
      // Glm4MoeConfig: partial_rotary_factor 0.5, NeoX pairs (rotate_half), unlike glm/glm4.
      {"glm4_5_air", "", {{"head_dim", "128"}, {"partial_rotary_factor", "0.5"}, {"rotary_dim", "64"},
        {"rope_theta", "1000000"}, {"max_position_embeddings", "131072"}}},
      // Phi-4-mini: LongRoPE over 0.75 of the head (96 of 128); factor None → L/Lo = 32.
      {"phi4_mini", "", {{"head_dim", "128"}, {"partial_rotary_factor", "0.75"}, {"rotary_dim", "96"},
        {"rope_type", "longrope"}, {"factor", "32"}, {"max_position_embeddings", "131072"},
        {"original_max_position_embeddings", "4096"}, {"short_factor", list_of(48, 1.0, 1.0 / 64)},
        {"long_factor", list_of(48, 1.0, 0.5)}},
       {"Please set the `factor` field"}},
      // Qwen3-VL: text_config, interleaved MRoPE sections (pairs stay NeoX).
      {"qwen3_vl_8b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "5000000"},
        {"max_position_embeddings", "262144"}, {"mrope_section", "[24,20,20]"},
        {"mrope_interleaved", "true"}}},
      // DeepSeek-V3.2: DeepSeek-V3's MLA rope (its indexer: test_model.cpp).
      {"deepseek_v32_exp", "", {{"head_dim", "64"}, {"rotary_dim", "64"}, {"layout", "interleaved"},
        {"rope_type", "yarn"}, {"factor", "40"}, {"max_position_embeddings", "163840"},
        {"original_max_position_embeddings", "4096"}, {"mscale", "1"}, {"mscale_all_dim", "1"}}},
      // OLMo-3: YaRN with an explicit attention_factor on the full-attention layers; the sliding
      // layers default RoPE with the same base.
      {"olmo3_7b_think", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "500000"},
        {"rope_type", "yarn"}, {"factor", "8"}, {"max_position_embeddings", "65536"},
        {"original_max_position_embeddings", "8192"}, {"attention_factor", "1.2079441541679836"}}},
      {"olmo3_7b_think", "sliding_attention", {{"head_dim", "128"}, {"rotary_dim", "128"},
        {"rope_theta", "500000"}, {"max_position_embeddings", "65536"}}},
      // Ministral-3: yarn; llama_4_scaling_beta scales q, it is no RoPE field.
      {"ministral3_8b", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_theta", "1000000"},
        {"rope_type", "yarn"}, {"factor", "16"}, {"max_position_embeddings", "262144"},
        {"original_max_position_embeddings", "16384"}, {"mscale", "1"}, {"mscale_all_dim", "1"}}},
      // Gemma-4: per-layer groups; full_attention proportional over global_head_dim 512.
      {"gemma4_e4b", "", {{"head_dim", "512"}, {"partial_rotary_factor", "0.25"},
        {"rotary_dim", "512"}, {"rope_theta", "1000000"}, {"rope_type", "proportional"},
        {"max_position_embeddings", "131072"}}},
      {"gemma4_e4b", "sliding_attention", {{"head_dim", "256"}, {"rotary_dim", "256"},
        {"max_position_embeddings", "131072"}}},
      // HunYuan: dynamic with alpha 1000 is default RoPE with base 1e4·1000^(128/126).
      {"hunyuan_7b", "", {{"head_dim", "128"}, {"rotary_dim", "128"},
        {"rope_theta", "11158839.92507748"}, {"max_position_embeddings", "262144"}}},
      // Legacy rope_scaling.type "dynamic".
      {"llama_dynamic_legacy", "", {{"head_dim", "128"}, {"rotary_dim", "128"}, {"rope_type", "dynamic"},
        {"factor", "2"}, {"max_position_embeddings", "4096"}}},
  };
  return v;
}
// clang-format on

TEST(SpecConfigFamilies, EachRopeFamilyResolvesFieldByField) {
  const auto defaults = fields(rope{});
  for (const rope_case& c : rope_cases()) {
    SCOPED_TRACE(c.file + (c.layer_type.empty() ? "" : " --layer-type " + c.layer_type));
    std::vector<std::string> warned;
    config_options o;
    o.layer_type = c.layer_type;
    const encoding e = parse_config_encoding_file(
        kFamilies / (c.file + ".json"), o, [&](std::string_view m) { warned.emplace_back(m); });
    ASSERT_TRUE(std::holds_alternative<rope>(e)) << to_spec_string(e);
    const auto got = fields(std::get<rope>(e));
    for (const auto& [name, value] : c.expect) {
      ASSERT_TRUE(defaults.count(name)) << "unknown field " << name;
    }
    for (const auto& [name, def] : defaults) {
      const auto it = c.expect.find(name);
      EXPECT_EQ(got.at(name), it == c.expect.end() ? def : it->second) << "field " << name;
    }
    ASSERT_EQ(warned.size(), c.warnings.size()) << (warned.empty() ? "" : warned.front());
    for (std::size_t i = 0; i < warned.size(); ++i) {
      EXPECT_NE(warned[i].find(c.warnings[i]), std::string::npos) << warned[i];
    }
    // The CLI names configs by their SPEC: it must parse back to the same struct.
    if (c.round_trip) {
      EXPECT_EQ(parse_spec(to_spec_string(e), [](std::string_view) {}), e);
    } else {
      EXPECT_THROW(parse_spec(to_spec_string(e), [](std::string_view) {}), pev::error);
    }
  }
  std::cout << "config corpus: " << rope_cases().size() << " RoPE cases checked field by field\n";
}

struct other_case {
  std::string file;
  std::string spec;   // the encoding, as a canonical SPEC ("" when an error is expected)
  std::string error;  // a substring of the message naming what is missing
};

// Families without RoPE: pev's own encoding where transformers' semantics are that, else an error
// naming what pev would need.
const std::vector<other_case>& other_cases() {
  static const std::vector<other_case> v = {
      // BloomModel: build_alibi_tensor over n_head heads (max_bias 8).
      {"bloom_560m", "alibi:num_heads=16", ""},
      // MptModel: build_mpt_alibi_tensor, n_heads, alibi_bias_max 8.
      {"mpt_7b", "alibi:num_heads=32", ""},
      // FalconConfig.alibi: Falcon-RW uses BLOOM's ALiBi.
      {"falcon_rw_1b", "alibi:num_heads=32", ""},
      // T5Attention: relative buckets, bidirectional in the encoder.
      {"t5_small", "t5", ""},  // num_buckets 32, max_distance 128: the defaults
      // DistilBERT with sinusoidal_pos_embds: create_sinusoidal_embeddings(512, dim 768).
      {"distilbert_sinusoidal", "sinusoidal:d_model=768", ""},
      {"gpt2", "",
       "learned absolute position embeddings (n_positions = 1024 positions × n_embd = 768)"},
      {"bert_base", "", "learned absolute position embeddings"},
      {"opt_125m", "", "OPT's table has 2"},
      {"mamba_130m", "", "has no positional encoding pev could check"},

  };
  return v;
}

TEST(SpecConfigFamilies, NonRopeFamiliesMapOrNameWhatIsMissing) {
  for (const other_case& c : other_cases()) {
    SCOPED_TRACE(c.file);
    const auto file = kFamilies / (c.file + ".json");
    if (!c.spec.empty()) {
      const encoding e = parse_config_encoding_file(
          file, {}, [](std::string_view m) { ADD_FAILURE() << "unexpected warning: " << m; });
      EXPECT_EQ(to_spec_string(e), c.spec);
      // The RoPE entry point names the family's encoding instead of returning it.
      try {
        (void)parse_config_file(file, {}, [](std::string_view) {});
        ADD_FAILURE() << "parse_config_file accepted a non-RoPE config";
      } catch (const pev::error& err) {
        EXPECT_NE(std::string(err.what()).find(c.spec.substr(0, c.spec.find(':'))),
                  std::string::npos)
            << err.what();
      }
      continue;
    }
    try {
      (void)parse_config_encoding_file(file, {}, [](std::string_view) {});
      ADD_FAILURE() << "no error";
    } catch (const pev::error& err) {
      EXPECT_NE(std::string(err.what()).find(c.error), std::string::npos) << err.what();
      EXPECT_NE(std::string(err.what()).find(file.string()), std::string::npos) << err.what();
    }
  }
  // T5's decoder stack uses causal buckets.
  config_options dec;
  dec.layer_type = "decoder";
  EXPECT_EQ(to_spec_string(parse_config_encoding_file(kFamilies / "t5_small.json", dec)),
            "t5:bidirectional=false");
}

TEST(SpecConfigFamilies, TheCorpusCoversThirtyFamilies) {
  // Every file of the directory is a case, and the cases span ≥ 30 distinct model_types.
  std::set<std::string> files, cased;
  for (const auto& f : std::filesystem::directory_iterator(kFamilies)) {
    files.insert(f.path().stem().string());
  }
  for (const auto& c : rope_cases()) cased.insert(c.file);
  for (const auto& c : other_cases()) cased.insert(c.file);
  EXPECT_EQ(files, cased);
  std::set<std::string> model_types;
  for (const auto& f : files) model_types.insert(model_type_of(kFamilies / (f + ".json")));
  model_types.erase("");
  EXPECT_GE(model_types.size(), 30u);
  std::cout << "config corpus: " << files.size() << " files, " << model_types.size()
            << " distinct model_types\n";
}

}  // namespace

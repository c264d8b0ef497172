// The family catalogue of the config.json reader (config_family.h; docs/encodings.md §7.8).

#include "config_family.h"

namespace pev::spec::config_detail {

const std::vector<family>& families() {
  using fk = family_kind;
  using sp = special;
  constexpr auto inter = rope_layout::interleaved;
  static const std::vector<family> kFamilies = {
      // RoPE families with the generic rules and their class defaults.
      {.model_type = "llama", .config_class = "LlamaConfig"},
      {.model_type = "mistral", .config_class = "MistralConfig"},
      {.model_type = "mixtral", .config_class = "MixtralConfig", .default_theta = 1e6},
      {.model_type = "qwen2", .config_class = "Qwen2Config"},
      {.model_type = "qwen2_moe", .config_class = "Qwen2MoeConfig"},
      // The VL models' text configs (MRoPE sections in rope_scaling; docs/encodings.md §4.6).
      {.model_type = "qwen2_vl", .config_class = "Qwen2VLTextConfig", .default_theta = 1e6},
      {.model_type = "qwen2_5_vl", .config_class = "Qwen2_5_VLTextConfig", .default_theta = 1e6},
      {.model_type = "qwen3", .config_class = "Qwen3Config", .default_head_dim = 128},
      {.model_type = "qwen3_moe", .config_class = "Qwen3MoeConfig", .default_head_dim = 128},
      {.model_type = "gemma", .config_class = "GemmaConfig", .default_head_dim = 256},
      {.model_type = "gemma2", .config_class = "Gemma2Config", .default_head_dim = 256},
      {.model_type = "gemma3_text",
       .config_class = "Gemma3TextConfig",
       .sp = sp::gemma3,
       .default_theta = 1e6,
       .default_head_dim = 256,
       .default_max_position = 131072},
      {.model_type = "gemma4_text",
       .config_class = "Gemma4TextConfig",
       .sp = sp::gemma4,
       .default_head_dim = 256,
       .default_max_position = 131072},
      {.model_type = "phi", .config_class = "PhiConfig", .default_prf = 0.5},
      {.model_type = "phi3",
       .config_class = "Phi3Config",
       .sp = sp::phi3,
       .default_max_position = 4096},
      {.model_type = "phimoe",
       .config_class = "PhimoeConfig",
       .sp = sp::phimoe,
       .default_theta = 1e6},
      {.model_type = "stablelm", .config_class = "StableLmConfig", .default_prf = 0.25},
      {.model_type = "persimmon",
       .config_class = "PersimmonConfig",
       .default_theta = 25000.0,
       .default_prf = 0.5},
      {.model_type = "nemotron", .config_class = "NemotronConfig", .default_prf = 0.5},
      {.model_type = "recurrent_gemma", .config_class = "RecurrentGemmaConfig", .default_prf = 0.5},
      {.model_type = "glm",
       .config_class = "GlmConfig",
       .default_prf = 0.5,
       .default_head_dim = 128,
       .layout = inter},
      {.model_type = "glm4",
       .config_class = "Glm4Config",
       .default_prf = 0.5,
       .default_head_dim = 128,
       .layout = inter},
      {.model_type = "cohere", .config_class = "CohereConfig", .layout = inter},
      {.model_type = "cohere2",
       .config_class = "Cohere2Config",
       .sp = sp::cohere2,
       .layout = inter},
      {.model_type = "deepseek_v2", .config_class = "DeepseekV2Config", .layout = inter},
      {.model_type = "deepseek_v3", .config_class = "DeepseekV3Config", .sp = sp::deepseek_v3},
      {.model_type = "olmo", .config_class = "OlmoConfig"},
      {.model_type = "olmo2", .config_class = "Olmo2Config"},
      {.model_type = "olmo3",
       .config_class = "Olmo3Config",
       .sp = sp::olmo3,
       .default_theta = 500000.0},
      {.model_type = "smollm3", .config_class = "SmolLM3Config", .default_theta = 2000000.0},
      // Hybrid linear-attention models: partial_rotary_factor 0.25 by kwargs.setdefault, head 256.
      {.model_type = "qwen3_next",
       .config_class = "Qwen3NextConfig",
       .default_prf = 0.25,
       .default_head_dim = 256},
      {.model_type = "qwen3_5_text",
       .config_class = "Qwen3_5TextConfig",
       .default_prf = 0.25,
       .default_head_dim = 256},
      {.model_type = "qwen3_vl_text", .config_class = "Qwen3VLTextConfig"},
      // Glm4MoeConfig: partial_rotary_factor 0.5 by kwargs.setdefault; rotate_half (NeoX) on the
      // rotated part, unlike glm/glm4.
      {.model_type = "glm4_moe", .config_class = "Glm4MoeConfig", .default_prf = 0.5},
      {.model_type = "ministral3", .config_class = "Ministral3Config", .sp = sp::ministral3},
      {.model_type = "hunyuan_v1_dense", .config_class = "HunYuanDenseV1Config", .sp = sp::hunyuan},
      {.model_type = "hunyuan_v1_moe", .config_class = "HunYuanMoEV1Config", .sp = sp::hunyuan},
      {.model_type = "deepseek_v32", .config_class = "DeepseekV32Config", .sp = sp::deepseek_v3},
      {.model_type = "starcoder2", .config_class = "Starcoder2Config"},
      {.model_type = "granite", .config_class = "GraniteConfig"},
      {.model_type = "llama4_text",
       .config_class = "Llama4TextConfig",
       .default_theta = 500000.0,
       .layout = inter},
      {.model_type = "mllama_text_model",
       .config_class = "MllamaTextConfig",
       .default_theta = 500000.0},
      {.model_type = "gpt_oss",
       .config_class = "GptOssConfig",
       .default_theta = 150000.0,
       .default_head_dim = 64},
      {.model_type = "modernbert",
       .config_class = "ModernBertConfig",
       .sp = sp::modernbert,
       .default_theta = 160000.0},
      {.model_type = "gpt_neox",
       .config_class = "GPTNeoXConfig",
       .sp = sp::gpt_neox,
       .default_prf = 0.25,
       .default_max_position = 2048},
      {.model_type = "gpt_neox_japanese",
       .config_class = "GPTNeoXJapaneseConfig",
       .sp = sp::gpt_neox,
       .default_prf = 1.0,
       .default_max_position = 2048},
      {.model_type = "gptj",
       .config_class = "GPTJConfig",
       .sp = sp::gptj,
       .default_max_position = 2048,
       .layout = inter,
       .aliases = {{"hidden_size", "n_embd"},
                   {"num_attention_heads", "n_head"},
                   {"max_position_embeddings", "n_positions"}}},
      {.model_type = "codegen",
       .config_class = "CodeGenConfig",
       .sp = sp::gptj,
       .default_max_position = 2048,
       .layout = inter,
       .aliases = {{"hidden_size", "n_embd"},
                   {"num_attention_heads", "n_head"},
                   {"max_position_embeddings", "n_positions"}}},
      {.model_type = "falcon",
       .config_class = "FalconConfig",
       .sp = sp::falcon,
       .default_max_position = 2048,
       .aliases = {{"num_attention_heads", "n_head"}}},
      {.model_type = "dbrx",
       .config_class = "DbrxConfig",
       .sp = sp::dbrx,
       .aliases = {{"hidden_size", "d_model"},
                   {"num_attention_heads", "n_heads"},
                   {"max_position_embeddings", "max_seq_len"}}},
      // Multimodal wrappers: the language model's config is text_config.
      {.model_type = "gemma3",
       .config_class = "Gemma3Config",
       .kind = fk::container,
       .text_family = "gemma3_text"},
      {.model_type = "llama4",
       .config_class = "Llama4Config",
       .kind = fk::container,
       .text_family = "llama4_text"},
      {.model_type = "mllama",
       .config_class = "MllamaConfig",
       .kind = fk::container,
       .text_family = "mllama_text_model"},
      {.model_type = "llava",
       .config_class = "LlavaConfig",
       .kind = fk::container,
       .text_family = "llama"},
      {.model_type = "llava_next",
       .config_class = "LlavaNextConfig",
       .kind = fk::container,
       .text_family = "llama"},
      {.model_type = "gemma4",
       .config_class = "Gemma4Config",
       .kind = fk::container,
       .text_family = "gemma4_text"},
      {.model_type = "qwen3_vl",
       .config_class = "Qwen3VLConfig",
       .kind = fk::container,
       .text_family = "qwen3_vl_text"},
      {.model_type = "qwen3_5",
       .config_class = "Qwen3_5Config",
       .kind = fk::container,
       .text_family = "qwen3_5_text"},
      {.model_type = "mistral3",
       .config_class = "Mistral3Config",
       .kind = fk::container,
       .text_family = "mistral"},
      {.model_type = "paligemma",
       .config_class = "PaliGemmaConfig",
       .kind = fk::container,
       .text_family = "gemma"},
      // Families without RoPE.
      {.model_type = "bloom",
       .config_class = "BloomConfig",
       .kind = fk::alibi,
       .aliases = {{"num_attention_heads", "n_head"}}},
      {.model_type = "mpt",
       .config_class = "MptConfig",
       .kind = fk::alibi,
       .sp = sp::mpt,
       .aliases = {{"num_attention_heads", "n_heads"},
                   {"hidden_size", "d_model"},
                   {"max_position_embeddings", "max_seq_len"}}},
      {.model_type = "t5", .config_class = "T5Config", .kind = fk::t5},
      {.model_type = "mt5", .config_class = "MT5Config", .kind = fk::t5},
      {.model_type = "umt5", .config_class = "UMT5Config", .kind = fk::t5},
      {.model_type = "gpt2",
       .config_class = "GPT2Config",
       .kind = fk::learned,
       .aliases = {{"hidden_size", "n_embd"}, {"max_position_embeddings", "n_positions"}}},
      {.model_type = "gpt_bigcode",
       .config_class = "GPTBigCodeConfig",
       .kind = fk::learned,
       .aliases = {{"hidden_size", "n_embd"}, {"max_position_embeddings", "n_positions"}}},
      {.model_type = "gpt_neo", .config_class = "GPTNeoConfig", .kind = fk::learned},
      {.model_type = "opt", .config_class = "OPTConfig", .kind = fk::learned},
      {.model_type = "bert", .config_class = "BertConfig", .kind = fk::learned},
      {.model_type = "roberta", .config_class = "RobertaConfig", .kind = fk::learned},
      {.model_type = "xlm-roberta", .config_class = "XLMRobertaConfig", .kind = fk::learned},
      {.model_type = "distilbert",
       .config_class = "DistilBertConfig",
       .kind = fk::distilbert,
       .aliases = {{"hidden_size", "dim"}}},
      {.model_type = "mamba", .config_class = "MambaConfig", .kind = fk::none},
      {.model_type = "mamba2", .config_class = "Mamba2Config", .kind = fk::none},
      {.model_type = "falcon_mamba", .config_class = "FalconMambaConfig", .kind = fk::none},
      {.model_type = "rwkv", .config_class = "RwkvConfig", .kind = fk::none},
      {.model_type = "jamba", .config_class = "JambaConfig", .kind = fk::none},
  };
  return kFamilies;
}

const family* find_family(std::string_view model_type) {
  for (const family& f : families()) {
    if (f.model_type == model_type) return &f;
  }
  return nullptr;
}

// The value of a family attribute: the key transformers' attribute_map stores it under (n_embd,
// n_head, …), else the attribute's own name. `name` receives the key found.
const json* attribute(const json& cfg, const family* fam, std::string_view attr,
                      std::string* name) {
  if (fam != nullptr) {
    for (const auto& [a, stored] : fam->aliases) {
      if (a == attr) {
        if (const json* v = find(cfg, stored)) {
          if (name) *name = std::string(stored);
          return v;
        }
      }
    }
  }
  if (name) *name = std::string(attr);
  return find(cfg, attr);
}

bool has_attention_keys(const json& object) {
  for (const char* k : {"head_dim", "hidden_size", "num_attention_heads", "qk_rope_head_dim",
                        "n_embd", "n_head", "d_model", "n_heads"}) {
    if (find(object, k)) return true;
  }
  return false;
}

}  // namespace pev::spec::config_detail

"""Small PyTorch models of the RoPE families of 2025–2026, for pev.torch.trace's tests
(docs/python.md §9): each built from a config.json-like dict (CONFIGS: the families' real keys
and values, sizes shrunk to 2–6 layers, hidden ≤ 256) in one of two structures —
transformers-style (hf_style: attention modules call apply_rotary_pos_emb) or engine-style
(engine_style: a vLLM-like rotary module per layer) — or with a learned table (learned), genuine
or with planted integration mistakes (MISTAKES; docs/encodings.md §10 and issue 27's scope 4).

    model = models.build("gemma3", mistakes={"sliding-global"})
"""

import torch

from . import engine_style, hf_style, learned

_LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}

#: name → (structure, config dict).
CONFIGS = {
    "llama3": ("hf", {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "num_hidden_layers": 2,
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": _LLAMA3,
        "vocab_size": 256}),
    "gemma3": ("hf", {
        "model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"], "hidden_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32, "num_hidden_layers": 6,
        "layer_types": ["sliding_attention"] * 5 + ["full_attention"], "sliding_window": 512,
        "sliding_window_pattern": 6, "query_pre_attn_scalar": 32,
        "max_position_embeddings": 131072, "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        "vocab_size": 256}),
    "llama4": ("hf", {
        "model_type": "llama4_text", "architectures": ["Llama4ForCausalLM"], "hidden_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "num_hidden_layers": 4,
        "no_rope_layer_interval": 4, "max_position_embeddings": 10485760,
        "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 1.0, "original_max_position_embeddings": 8192},
        "vocab_size": 256}),
    "smollm3": ("hf", {
        "model_type": "smollm3", "architectures": ["SmolLM3ForCausalLM"], "hidden_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 4,
        "no_rope_layers": [1, 1, 1, 0], "no_rope_layer_interval": 4,
        "max_position_embeddings": 65536, "rope_theta": 5000000.0, "vocab_size": 256}),
    "qwen3_next": ("engine", {
        "model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"], "hidden_size": 128,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
        "partial_rotary_factor": 0.25, "num_hidden_layers": 4,
        "layer_types": ["linear_attention"] * 3 + ["full_attention"], "full_attention_interval": 4,
        "max_position_embeddings": 262144, "rope_theta": 10000000.0, "vocab_size": 256}),
    "glm4_moe": ("engine", {
        "model_type": "glm4_moe", "architectures": ["Glm4MoeForCausalLM"], "hidden_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
        "partial_rotary_factor": 0.5, "num_hidden_layers": 2, "max_position_embeddings": 131072,
        "rope_theta": 1000000.0, "vocab_size": 256}),
    "phi4_mini": ("hf", {
        "model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "hidden_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
        "partial_rotary_factor": 0.75, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": [1.0, 1.0, 1.05, 1.1, 1.2, 1.35, 1.5, 1.7, 1.9, 2.1, 2.3, 2.5],
            "long_factor": [1.0, 1.2, 1.6, 2.2, 3.0, 4.5, 6.5, 9.0, 12.0, 16.0, 20.0, 25.0]},
        "vocab_size": 256}),
    "qwen3_vl": ("hf", {
        "model_type": "qwen3_vl", "architectures": ["Qwen3VLForConditionalGeneration"],
        "text_config": {
            "model_type": "qwen3_vl_text", "hidden_size": 128, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 32, "num_hidden_layers": 2,
            "max_position_embeddings": 262144, "rope_theta": 5000000.0,
            "rope_scaling": {"rope_type": "default", "mrope_section": [6, 5, 5],
                             "mrope_interleaved": True},
            "vocab_size": 256}}),
    "deepseek_v3": ("hf", {
        "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 64, "kv_lora_rank": 32,
        "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "num_hidden_layers": 2,
        "max_position_embeddings": 163840, "rope_theta": 10000,
        "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                         "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
        "vocab_size": 256}),
    "olmo3": ("hf", {
        "model_type": "olmo3", "architectures": ["Olmo3ForCausalLM"], "hidden_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 4,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"], "sliding_window": 4096,
        "max_position_embeddings": 65536, "rope_theta": 500000,
        "rope_scaling": {"rope_type": "yarn", "factor": 8.0,
                         "original_max_position_embeddings": 8192, "attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1},
        "vocab_size": 256}),
    "gpt2": ("learned", {
        "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 64, "n_head": 4,
        "n_layer": 2, "n_positions": 1024, "n_ctx": 1024, "vocab_size": 256}),
    "opt": ("learned", {
        "model_type": "opt", "architectures": ["OPTForCausalLM"], "hidden_size": 64,
        "num_attention_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048,
        "word_embed_proj_dim": 64, "vocab_size": 256}),
}

#: mistake → what it plants (issue 27, scope 4).
MISTAKES = {
    "rope-on-nope": "NoPE layers rotate",
    "nope-on-rope": "layers the config gives RoPE do not rotate",
    "no-rope-inverted": "no_rope_layers read the other way round (both of the above)",
    "sliding-global": "sliding layers take the global θ and scaling",
    "partial-full": "a partial-rotary model rotates the whole head",
    "freq-head-dim": "frequencies over head_dim instead of rotary_dim",
    "mrope-hw-swapped": "MRoPE: the h and w streams exchanged",
    "mrope-blocked": "MRoPE: interleaved sections applied as blocked",
    "batch-row0": "every batch row rotated by row 0's positions",
    "packed-no-restart": "packed sequences: positions 0 … T − 1 over the whole pack",
    "attn-factor-squared": "the attention factor applied twice",
    "attn-factor-dropped": "the attention factor left out",
    "opt-offset": "OPT's offset of 2 forgotten",
}

#: model → the mistakes that apply to it (each one changes what some layer does).
APPLICABLE = {
    "llama3": ["batch-row0", "packed-no-restart"],
    "gemma3": ["sliding-global", "batch-row0"],
    "llama4": ["rope-on-nope", "nope-on-rope", "no-rope-inverted"],
    "smollm3": ["rope-on-nope", "nope-on-rope", "no-rope-inverted"],
    "qwen3_next": ["partial-full", "freq-head-dim", "packed-no-restart"],
    "glm4_moe": ["partial-full", "freq-head-dim", "packed-no-restart"],
    "phi4_mini": ["freq-head-dim", "attn-factor-squared", "attn-factor-dropped"],
    "qwen3_vl": ["mrope-hw-swapped", "mrope-blocked"],
    "deepseek_v3": ["packed-no-restart"],
    "olmo3": ["sliding-global", "attn-factor-squared", "attn-factor-dropped"],
    "gpt2": [],
    "opt": ["opt-offset"],
}


def config(name):
    return CONFIGS[name][1]


def structure(name):
    return CONFIGS[name][0]


def build(name, mistakes=(), dtype=torch.float32, seed=0):
    """The model `name` of CONFIGS with the planted `mistakes`, weights drawn from `seed`."""
    kind, cfg = CONFIGS[name]
    unknown = set(mistakes) - set(MISTAKES)
    if unknown:
        raise ValueError(f"unknown mistakes {sorted(unknown)}")
    torch.manual_seed(seed)
    if kind == "hf":
        model = hf_style.Model(cfg, mistakes)
    elif kind == "engine":
        model = engine_style.Model(cfg, mistakes)
    elif name == "gpt2":
        model = learned.GPT2(cfg, mistakes)
    else:
        model = learned.OPT(cfg, mistakes)
    return model.to(dtype).eval()

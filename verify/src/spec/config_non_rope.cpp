// The families without RoPE in a config.json: ALiBi, T5 buckets, a sinusoidal table, or an error
// naming what pev would need (config_family.h).

#include <fmt/format.h>

#include "config_family.h"

namespace pev::spec::config_detail {

// The encoding of a family without RoPE, or an error naming what pev would need.
encoding non_rope(const reader& in, const json& cfg, const std::string& at, const family& fam,
                  const config_options& options) {
  const auto attr = [&](std::string_view a, std::string* name = nullptr) {
    return attribute(cfg, &fam, a, name);
  };
  const auto int_attr = [&](std::string_view a, std::int64_t fallback) {
    std::string name;
    const json* v = attr(a, &name);
    if (v == nullptr || v->is_null()) return fallback;
    return in.integer(*v, at + name);
  };
  const std::string who = fmt::format("model_type '{}' ({})", fam.model_type, fam.config_class);
  if (fam.kind != family_kind::t5 && !options.layer_type.empty()) {
    in.fail(fmt::format("layer_type '{}' given, but {} has no layer-type groups",
                        options.layer_type, who));
  }
  switch (fam.kind) {
    case family_kind::alibi: {
      // BLOOM and MPT build their biases with build_alibi_tensor / build_mpt_alibi_tensor: the
      // slopes of docs/encodings.md §3.1 with max_bias 8 (MptModel passes no alibi_bias_max).
      std::string name;
      const json* h = attr("num_attention_heads", &name);
      if (h == nullptr || h->is_null()) {
        in.fail(fmt::format("{} uses ALiBi: its head count {}{} is needed and not given", who, at,
                            name));
      }
      alibi a;
      a.num_heads = in.integer(*h, at + name);
      if (fam.sp == special::mpt) {
        if (const json* ac = find(cfg, "attn_config"); ac != nullptr && ac->is_object()) {
          if (const json* b = find(*ac, "alibi_bias_max");
              b != nullptr && b->is_number() && b->get<double>() != 8.0) {
            in.warning(fmt::format(
                "{}attn_config.alibi_bias_max = {} is not read by transformers' MptModel, which "
                "builds its ALiBi slopes with alibi_bias_max 8; pev follows transformers",
                at, json_text(*b)));
          }
          if (const json* al = find(*ac, "alibi");
              al != nullptr && al->is_boolean() && !al->get<bool>()) {
            in.warning(fmt::format(
                "{}attn_config.alibi is false, but transformers' MptModel always adds ALiBi "
                "biases (it has no learned position embeddings); pev follows transformers",
                at));
          }
        }
      }
      try {
        validate(a);
      } catch (const error& e) {
        in.fail(e.what());
      }
      return a;
    }
    case family_kind::t5: {
      // T5Attention._relative_position_bucket: bidirectional in the encoder, causal in the
      // decoder (bidirectional=not self.is_decoder).
      t5 t;
      t.num_buckets = int_attr("relative_attention_num_buckets", 32);
      t.max_distance = int_attr("relative_attention_max_distance", 128);
      if (options.layer_type.empty() || options.layer_type == "encoder") {
        t.bidirectional = true;
      } else if (options.layer_type == "decoder") {
        t.bidirectional = false;
      } else {
        in.fail(fmt::format(
            "layer_type '{}' is not a stack of {} (encoder: bidirectional buckets, decoder: "
            "causal buckets)",
            options.layer_type, who));
      }
      try {
        validate(t);
      } catch (const error& e) {
        in.fail(e.what());
      }
      return t;
    }
    case family_kind::distilbert: {
      // Embeddings: create_sinusoidal_embeddings(max_position_embeddings, dim) when
      // sinusoidal_pos_embds, else an nn.Embedding.
      if (const json* s = find(cfg, "sinusoidal_pos_embds"); s != nullptr && truthy(*s)) {
        sinusoidal p;
        p.d_model = int_attr("hidden_size", 768);
        try {
          validate(p);
        } catch (const error& e) {
          in.fail(e.what());
        }
        return p;
      }
      [[fallthrough]];
    }
    case family_kind::learned: {
      std::string pn, dn;
      const json* P = attr("max_position_embeddings", &pn);
      const json* D = attr("hidden_size", &dn);
      const std::string shape = P != nullptr && D != nullptr
                                    ? fmt::format(" ({}{} = {} positions × {}{} = {})", at, pn,
                                                  json_text(*P), at, dn, json_text(*D))
                                    : "";
      std::string offset;
      if (fam.model_type == "opt") {
        offset =
            "; OPT's table has 2 more rows (position p is row p + 2), an offset pev does not "
            "apply (docs/encodings.md §2.4)";
      } else if (fam.model_type == "roberta" || fam.model_type == "xlm-roberta") {
        offset =
            "; its position ids start at padding_idx + 1, an offset pev does not apply "
            "(docs/encodings.md §2.4)";
      }
      in.fail(fmt::format(
          "{} has no RoPE: it uses learned absolute position embeddings{}, whose values are in "
          "the model's weights, not in config.json; what is missing is the table itself: give it "
          "as --spec learned:num_positions=P,d_model=D,table=FILE.npy{}",
          who, shape, offset));
    }
    case family_kind::none:
      in.fail(fmt::format(
          "{} has no positional encoding pev could check: {}", who,
          fam.model_type == "jamba"
              ? "its attention layers use no position embeddings (the Mamba layers carry order)"
              : "a state-space / recurrent model orders tokens by its recurrence"));
    case family_kind::rope:
    case family_kind::container:
      break;
  }
  in.fail(fmt::format("{}: not a family without RoPE", who));
}

}  // namespace pev::spec::config_detail

// A model's positional encodings layer by layer from its config.json (pev/spec/model.h;
// docs/encodings.md §7.9). The encodings themselves come from the one config reader
// (config.cpp: read_config, every layer-type group at once); this file decides which layer takes
// which group, which layers apply none, and the model-level sites (T5's buckets, a learned table).

#include "pev/spec/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "config_family.h"
#include "detail.h"
#include "model_layers.h"
#include "pev/io/file.h"
#include "pev/spec/config.h"

namespace pev::spec {

std::string layer_spec::prefix() const {
  if (index < 0) return site;
  if (site.empty()) return fmt::format("layers.{}", index);
  return fmt::format("layers.{}.{}", index, site);
}

namespace {

using namespace config_detail;

const warning_sink& silent() {
  static const warning_sink kSilent = [](std::string_view) {};
  return kSilent;
}

// An integer attribute under any of `keys` (the first present), or nothing.
std::optional<std::int64_t> int_key(const reader& in, const json& cfg, const std::string& at,
                                    std::initializer_list<const char*> keys,
                                    std::string* name = nullptr) {
  for (const char* k : keys) {
    if (const json* v = find(cfg, k); v != nullptr && !v->is_null()) {
      if (name) *name = at + k;
      return in.integer(*v, at + k);
    }
  }
  return std::nullopt;
}

// The decoder layer count (num_hidden_layers and the names families store it under).
std::int64_t layer_count(const reader& in, const json& cfg, const std::string& at) {
  std::string name;
  const auto n =
      int_key(in, cfg, at, {"num_hidden_layers", "n_layer", "num_layers", "n_layers"}, &name);
  if (!n) {
    in.fail(fmt::format(
        "{}num_hidden_layers is not given (nor n_layer, num_layers, n_layers): the per-layer "
        "encodings need the layer count",
        at));
  }
  if (*n < 0 || *n > max_model_layers) {
    in.fail(fmt::format("{} must be in [0, {}], got {}", name, max_model_layers, *n));
  }
  return *n;
}

// A learned absolute table added at the input (GPT-2, OPT, BERT, …): the model-level site
// "embed" with the table's shape; the table itself is the checkpoint's (a trace's embed.table).
model_spec learned_model(const reader& in, const json& cfg, const std::string& at,
                         const family& fam) {
  std::string pn, dn;
  const json* P = attribute(cfg, &fam, "max_position_embeddings", &pn);
  const json* D = attribute(cfg, &fam, "hidden_size", &dn);
  // Name an absent attribute by the key the family stores it under (GPT-2's n_positions).
  for (const auto& [a, stored] : fam.aliases) {
    if (a == "max_position_embeddings" && P == nullptr) pn = std::string(stored);
    if (a == "hidden_size" && D == nullptr) dn = std::string(stored);
  }
  if (P == nullptr || P->is_null() || D == nullptr || D->is_null()) {
    in.fail(fmt::format(
        "model_type '{}' ({}) adds a learned position table at the input: its shape {}{} × {}{} "
        "is needed and not given",
        fam.model_type, fam.config_class, at, pn, at, dn));
  }
  learned table;
  table.num_positions = in.integer(*P, at + pn);
  table.d_model = in.integer(*D, at + dn);
  std::string rule =
      fmt::format("{}: learned absolute table [{}{} = {}, {}{} = {}] added at the input",
                  fam.config_class, at, pn, table.num_positions, at, dn, table.d_model);
  if (fam.model_type == "opt") {
    // OPTLearnedPositionalEmbedding: nn.Embedding(num_embeddings + 2, …), looked up at p + 2.
    table.num_positions += 2;
    table.offset = 2;
    rule += fmt::format(
        "; OPT: the table has {} + 2 = {} rows and position p reads row p + 2 (offset 2, "
        "OPTLearnedPositionalEmbedding)",
        pn, table.num_positions);
  } else if (fam.model_type == "roberta" || fam.model_type == "xlm-roberta") {
    const auto pad = int_key(in, cfg, at, {"pad_token_id"}).value_or(1);
    table.offset = pad + 1;
    rule += fmt::format(
        "; RoBERTa: position ids start at pad_token_id + 1 = {} (offset {}, "
        "create_position_ids_from_input_ids)",
        pad + 1, pad + 1);
  }
  if (table.num_positions <= 0 || table.d_model <= 0) {
    in.fail(fmt::format("the learned table's shape must be positive, got [{}, {}]",
                        table.num_positions, table.d_model));
  }
  model_spec m;
  m.model_type = std::string(fam.model_type);
  m.num_layers = layer_count(in, cfg, at);
  m.layers.push_back({-1, "embed", "embed", encoding{std::move(table)}, rule});
  for (std::int64_t i = 0; i < m.num_layers; ++i) {
    m.layers.push_back({i, "", "full_attention", std::nullopt,
                        "learned absolute positions are added at the input (site embed): the "
                        "layer applies no positional encoding"});
  }
  return m;
}

// DeepSeek-V3.2's lightning indexer (DeepSeek's reference inference/model.py, Indexer.forward):
// the first qk_rope_head_dim of its index_head_dim channels rotate with the model's freqs_cis
// (the main attention's frequencies and scaling), pairs not interleaved ("rope in indexer is not
// interleaved"); the rest pass through.
rope indexer_rope(const reader& in, const json& cfg, const std::string& at, const rope& main) {
  std::string name;
  const auto d = int_key(in, cfg, at, {"index_head_dim"}, &name);
  if (!d) in.fail(fmt::format("{}index_head_dim is not given (DeepSeek-V3.2's indexer)", at));
  rope r = main;
  r.layout = rope_layout::neox;
  r.head_dim = *d;
  if (main.rotary_dim > r.head_dim) {
    in.fail(fmt::format("{} = {} is smaller than the rotated width qk_rope_head_dim = {}", name,
                        r.head_dim, main.rotary_dim));
  }
  // The fraction whose int(head_dim·f) gives the rotated width back, as a SPEC's rotary_dim is.
  double f = static_cast<double>(main.rotary_dim) / static_cast<double>(r.head_dim);
  while (detail::expected_rotary_dim(r.head_dim, f, r.type) < main.rotary_dim) {
    f = std::nextafter(f, 2.0);
  }
  r.partial_rotary_factor = f;
  r.rotary_dim = main.rotary_dim;
  try {
    validate(r);
  } catch (const error& e) {
    in.fail(e.what());
  }
  return r;
}

}  // namespace

model_spec parse_config_model_text(std::string_view json_text, std::string_view source,
                                   const warning_sink& warn) {
  const reader in(source, warn);
  const json root = parse_json(in, json_text);
  if (!root.is_object()) {
    in.fail(fmt::format("a config.json must be a JSON object, got {}", root.type_name()));
  }
  const language_model lm = find_language_model(root);
  const json& cfg = *lm.cfg;
  const std::string& at = lm.at;
  const family* fam = lm.fam;

  if (lm.model_type == "deepseek_v4") {
    // DeepseekV4Config: rope_parameters {"main": rope_theta, default; "compress":
    // compress_rope_theta, yarn, attention_factor 1}; sliding_attention layers read main, the
    // compressed ones (CSA, HCA) compress. Each head is [nope | rope]: the rotated channels are
    // the last qk_rope_head_dim, interleaved — a placement spec::rope cannot state (it rotates the
    // leading rotary_dim channels).
    in.fail(
        "model_type 'deepseek_v4': DeepSeek-V4 rotates the last qk_rope_head_dim channels of each "
        "head ([nope | rope], interleaved pairs; main group on sliding layers, compress group on "
        "compressed ones), a channel placement pev's rope spec cannot state yet "
        "(docs/encodings.md §7.9)");
  }
  if (fam != nullptr &&
      (fam->kind == family_kind::learned ||
       (fam->kind == family_kind::distilbert &&
        !(find(cfg, "sinusoidal_pos_embds") && truthy(*find(cfg, "sinusoidal_pos_embds")))))) {
    return learned_model(in, cfg, at, *fam);
  }

  std::map<std::string, rope> groups;
  const encoding whole = read_config(json_text, source, {}, warn, &groups);

  model_spec m;
  m.model_type = lm.model_type;
  if (groups.empty()) {
    // A family without RoPE (read_config stores no group for those).
    if (const auto* t = std::get_if<t5>(&whole)) {
      // T5Attention._relative_position_bucket: bidirectional=not is_decoder; one bias table per
      // stack (layer 0's), so the sites are model-level.
      config_options dec;
      dec.layer_type = "decoder";
      const encoding d = read_config(json_text, source, dec, silent(), nullptr);
      m.layers.push_back({-1, "decoder", "decoder", d,
                          "T5 decoder stack: causal buckets (bidirectional = not is_decoder), "
                          "relative_attention_num_buckets, relative_attention_max_distance"});
      m.layers.push_back({-1, "encoder", "encoder", encoding{*t},
                          "T5 encoder stack: bidirectional buckets, "
                          "relative_attention_num_buckets, relative_attention_max_distance"});
      return m;
    }
    if (std::holds_alternative<sinusoidal>(whole)) {
      m.num_layers = layer_count(in, cfg, at);
      m.layers.push_back({-1, "embed", "embed", whole,
                          "sinusoidal_pos_embds: the sinusoidal table added at the input"});
      for (std::int64_t i = 0; i < m.num_layers; ++i) {
        m.layers.push_back({i, "", "full_attention", std::nullopt,
                            "absolute positions are added at the input (site embed): the layer "
                            "applies no positional encoding"});
      }
      return m;
    }
    // ALiBi: every layer adds the same slopes' biases.
    m.num_layers = layer_count(in, cfg, at);
    for (std::int64_t i = 0; i < m.num_layers; ++i) {
      m.layers.push_back(
          {i, "", "full_attention", whole,
           fmt::format("{}: every layer adds the ALiBi biases", family_name(whole))});
    }
    return m;
  }

  // RoPE: which layer rotates, and with which group.
  m.num_layers = layer_count(in, cfg, at);
  const json* lt = find(cfg, "layer_types");
  if ((lt == nullptr || lt->is_null()) && groups.count("") == 0 && groups.size() > 1 &&
      !derives_layer_types(fam != nullptr ? fam->model_type : std::string_view())) {
    std::string names;
    for (const auto& [g, r] : groups) names += (names.empty() ? "" : ", ") + g;
    in.fail(fmt::format(
        "the rope dict has layer-type groups ({}) but {}layer_types is not given, and pev does not "
        "know how model_type {} assigns them to layers (docs/encodings.md §7.9)",
        names, at, lm.model_type.empty() ? "(not given)" : "'" + lm.model_type + "'"));
  }
  const std::vector<layer_plan> plan = plan_layers(in, cfg, at, fam, m.num_layers);
  const bool v32 = fam != nullptr && fam->model_type == "deepseek_v32";
  for (std::int64_t i = 0; i < m.num_layers; ++i) {
    const layer_plan& p = plan[static_cast<std::size_t>(i)];
    layer_spec l{i, "", p.type, std::nullopt, p.why};
    if (p.rotates) {
      const auto flat = groups.find("");
      const auto it = flat != groups.end() ? flat : groups.find(p.group);
      if (it == groups.end()) {
        std::string names;
        for (const auto& [g, r] : groups) names += (names.empty() ? "" : ", ") + g;
        in.fail(fmt::format("layer {} is {}, but the rope dict has no group '{}' (groups: {})", i,
                            p.type, p.group, names));
      }
      l.encoding = it->second;
      l.rule += it->first.empty() ? ": the rope dict of every layer"
                                  : fmt::format(": rope_parameters.{}", it->first);
      l.rule += rope_note(cfg, at, fam, it->second, it->first);
    }
    m.layers.push_back(std::move(l));
    if (v32 && p.rotates) {
      const rope main = std::get<rope>(*m.layers.back().encoding);
      m.layers.push_back({i, "indexer", p.type, indexer_rope(in, cfg, at, main),
                          fmt::format("DeepSeek-V3.2 lightning indexer: the first qk_rope_head_dim "
                                      "= {} of index_head_dim channels, the main attention's "
                                      "frequencies, NeoX pairs (DeepSeek inference/model.py)",
                                      main.rotary_dim)});
    }
  }
  std::stable_sort(m.layers.begin(), m.layers.end(), [](const layer_spec& a, const layer_spec& b) {
    return std::tie(a.index, a.site) < std::tie(b.index, b.site);
  });
  return m;
}

model_spec parse_config_model_file(const std::filesystem::path& file, const warning_sink& warn) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    throw error(fmt::format("{}: is a directory, expected a config.json file", file.string()));
  }
  return parse_config_model_text(io::read_file(file, max_config_bytes), file.string(), warn);
}

}  // namespace pev::spec

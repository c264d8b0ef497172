// Finding rotated q/k in a dump and how they are laid out (layout.h's find_qk): a pipeline of
// stages, each deciding one thing in the order docs/certify.md §4 states — the tensor pairs, what
// the options or the metadata state, the output order, the positions given, the readings the
// shapes allow, then the positions and the data to narrow them to one — and the tensors copied in
// the reading found.

#include <fmt/format.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include "layout.h"
#include "layout_evidence.h"
#include "layout_qk_reading.h"
#include "pev/core/error.h"

namespace pev::certify::detail {

namespace {

// A rotated tensor pair of the dump: q_in/q_out or k_in/k_out.
struct qk_pair {
  std::string name;  // "q" or "k"
  const io::array *in, *out;
};

// A choice (a q/k layout, an output order) stated before the data is read, and who stated it.
template <class E>
struct stated {
  std::optional<E> value;
  std::string by;
};

// One layout class that reads every tensor pair, with each pair's reading in it.
struct candidate {
  qk_class cls;
  std::vector<axes> per;  // one per tensor pair
};

// The positions given for the tokens, if any: `name` empty when none were.
struct given_positions {
  std::vector<std::int64_t> values, shape;
  std::string name;  // "--positions", or the tensor and its shape
  bool given() const { return !name.empty(); }
};

// The q/k tensor pairs of the dump, q before k: both tensors of a pair, of one shape and dtype,
// a float dtype, and a shape that some layout reads (docs/certify.md §4, "Rotated q/k").
std::vector<qk_pair> dumped_pairs(const dump& d, const spec::rope& s) {
  std::vector<qk_pair> found;
  for (const char* n : {"q", "k"}) {
    const std::string in_name = std::string(n) + "_in", out_name = std::string(n) + "_out";
    const io::array* in = d.find(in_name);
    const io::array* out = d.find(out_name);
    if (!in && !out) continue;
    if (!in || !out) {
      throw error(fmt::format("tensor '{}' needs its pair '{}' (inputs and rotated outputs)",
                              in ? in_name : out_name, in ? out_name : in_name));
    }
    if (in->shape != out->shape || in->type != out->type) {
      throw error(
          fmt::format("tensors '{}' {} {} and '{}' {} {} must have the same shape and dtype",
                      in_name, io::shape_string(in->shape), io::safetensors_name(in->type),
                      out_name, io::shape_string(out->shape), io::safetensors_name(out->type)));
    }
    (void)visit_tensor(*in, "tensor '" + in_name + "'", [](auto) { return 0; });
    if (readings_of(in->shape, s.head_dim, std::nullopt).empty()) {
      throw error(fmt::format(
          "tensors '{}' and '{}' {}: expected head_dim = {} last, as [B, H, T, D], [B, T, H, D], "
          "[T, H, D] or [T, H·D] (the last axis a multiple of head_dim)",
          in_name, out_name, io::shape_string(in->shape), s.head_dim));
    }
    found.push_back({n, in, out});
  }
  return found;
}

// What the option `flag` states, else the dump's metadata `key` (pev's own keys): these decide
// before the shapes and the data (docs/certify.md §4). `by` defaults to the flag.
template <class E, class Parse>
stated<E> stated_by_option_or_metadata(const dump& d, std::optional<E> option, const char* flag,
                                       const char* key, Parse parse) {
  stated<E> st{option, flag};
  if (st.value) return st;
  if (const auto it = d.metadata.find(key); it != d.metadata.end()) {
    try {
      st.value = parse(it->second);
    } catch (const error& e) {
      throw error(fmt::format("the dump's metadata {}: {}", key, e.what()));
    }
    st.by = fmt::format("the dump's metadata {} = {}", key, it->second);
  }
  return st;
}

// The order of the outputs, and its statement for the certificate (`text` empty where the orders
// do not differ), and the output dim of each canonical dim in it (output_perm).
struct output_order {
  qk_order order = qk_order::input;
  std::string by, text;
  std::vector<std::int64_t> perm;
};

// The order of the outputs (docs/certify.md §4, "Output order"): it matters only where the two
// orders differ (an interleaved rotation of two pairs or more). Rows of D values are the same in
// every axis reading, so it is settled first: as stated, else from the pair norms — the order that
// reads each rotated pair where it is keeps |output pair| / |input pair| the same for every pair;
// both keeping it is pev::error naming --qk-order, neither reads the inputs' order.
output_order settle_output_order(const std::vector<qk_pair>& found, const spec::rope& s,
                                 const stated<qk_order>& st) {
  output_order o;
  o.by = st.by;
  const bool orders_differ =
      s.layout == spec::rope_layout::interleaved && s.pairs() >= 2 && s.rotary_dim > 2;
  if (!orders_differ) {
    o.order = qk_order::input;
  } else if (st.value) {
    o.order = *st.value;
  } else {
    agreement as_input, as_half;
    for (const qk_pair& r : found) {
      as_input += pair_norms(*r.in, *r.out, output_perm(s, qk_order::input), s, r.name);
      as_half += pair_norms(*r.in, *r.out, output_perm(s, qk_order::half_split), s, r.name);
    }
    if (as_input.fits() && !as_half.fits()) {
      o.order = qk_order::input;
      o.by = "the data: only that order keeps every rotated pair's norm";
    } else if (as_half.fits() && !as_input.fits()) {
      o.order = qk_order::half_split;
      o.by = "the data: only that order keeps every rotated pair's norm";
    } else if (as_input.fits()) {
      throw error(fmt::format(
          "q/k: the outputs can be read in the inputs' interleaved order or in half-split order "
          "(DeepSeek-V3's apply_rotary_pos_emb_interleave), and both keep every pair's norm: "
          "state it with --qk-order input|half-split"));
    } else {
      o.order = qk_order::input;
      o.by =
          "default: neither order keeps every rotated pair's norm (not a plain rotation either "
          "way), read in the inputs' order";
    }
  }
  o.perm = output_perm(s, o.order);
  if (orders_differ) {
    o.text = o.order == qk_order::half_split
                 ? fmt::format(
                       "outputs in half-split order (rotated pair i at (i, i + {}), as "
                       "DeepSeek-V3's apply_rotary_pos_emb_interleave writes them)",
                       s.pairs())
                 : "outputs in the inputs' interleaved order (pair i at (2i, 2i + 1))";
  }
  return o;
}

// The positions given for the tokens (docs/design.md §6.3): --positions (without a table), else
// the tensor qk_positions, or without a table also positions or position_ids ([T] or [B, T]).
// MRoPE's [S, T] (or [S, 1, T]) positions: the layout is settled on the first stream's T
// (certify_rope reads every stream's; docs/encodings.md §4.6).
given_positions positions_given(const dump& d, const spec::rope& s, const options& o,
                                bool with_table) {
  given_positions g;
  if (!with_table && !o.positions.empty()) {
    g.values = o.positions;
    g.shape = {static_cast<std::int64_t>(g.values.size())};
    g.name = "--positions";
    return g;
  }
  std::string name;
  const io::array* p = with_table
                           ? find_any(d, {"qk_positions"}, &name)
                           : find_any(d, {"qk_positions", "positions", "position_ids"}, &name);
  if (!p) return g;
  g.values = p->to_int64();
  g.shape = drop_ones(p->shape, 1);
  const std::int64_t S = s.streams();
  if (S > 1 && !g.shape.empty() && g.shape.front() == S &&
      g.values.size() % static_cast<std::size_t>(S) == 0 && g.shape.size() > 1) {
    g.values.resize(g.values.size() / static_cast<std::size_t>(S));
    g.shape = {static_cast<std::int64_t>(g.values.size())};
  }
  if (g.shape.size() > 2) {
    throw error(
        fmt::format("tensor '{}' has shape {}, expected positions [T] or [B, T] (position_ids)",
                    name, io::shape_string(p->shape)));
  }
  g.name = fmt::format("'{}' {}", name, io::shape_string(p->shape));
  return g;
}

// Whether the positions given fit reading `r`'s batch × tokens: [B, T] exactly; [T] shared by
// every sequence, or one per token row; MRoPE's --positions S·T values, stream after stream.
// None given fit every reading.
bool positions_fit(const given_positions& g, const axes& r, const spec::rope& s) {
  if (!g.given()) return true;
  const auto n = static_cast<std::int64_t>(g.values.size());
  if (s.streams() > 1 && r.batch == 1 && n == s.streams() * r.tokens) return true;
  if (g.shape.size() == 2) return g.shape[0] == r.batch && g.shape[1] == r.tokens;
  return n == r.batch * r.tokens || (r.batch > 1 && n == r.tokens);
}

// "'q_in' [2, 4, 8], 'k_in' [2, 4, 8]": the tensors' shapes, for messages.
std::string input_shapes(const std::vector<qk_pair>& found) {
  std::string shapes;
  for (const qk_pair& r : found) {
    shapes += fmt::format("{}'{}_in' {}", shapes.empty() ? "" : ", ", r.name,
                          io::shape_string(r.in->shape));
  }
  return shapes;
}

// "bthd (q [T=4, H=2, D=8], k [T=4, H=2, D=8])": a candidate, for messages.
std::string describe(const candidate& c, const std::vector<qk_pair>& found) {
  std::string v;
  for (std::size_t i = 0; i < c.per.size(); ++i) {
    v += fmt::format("{}{} {}", i ? ", " : "", found[i].name, c.per[i].text());
  }
  return fmt::format("{} ({})", class_name(c.cls), v);
}

// Every candidate, for messages.
std::string describe_all(const std::vector<candidate>& cands, const std::vector<qk_pair>& found) {
  std::string list;
  for (const candidate& c : cands) list += (list.empty() ? "" : "; ") + describe(c, found);
  return list;
}

// The readings the shapes allow (docs/certify.md §4): a class fits when every tensor has a reading
// in it, with the same batch and tokens; a stated layout allows its class only. pev::error when
// none fits.
std::vector<candidate> shape_readings(const std::vector<qk_pair>& found, const spec::rope& s,
                                      const stated<qk_layout>& layout) {
  std::optional<qk_class> fc;
  if (layout.value) fc = class_of(*layout.value);
  std::vector<candidate> cands;
  for (qk_class c : {qk_class::bhtd, qk_class::bthd, qk_class::t_hd}) {
    if (fc && *fc != c) continue;
    candidate k{c, {}};
    for (const qk_pair& r : found) {
      for (const axes& a : readings_of(r.in->shape, s.head_dim, fc)) {
        if (a.cls == c) k.per.push_back(a);
      }
    }
    if (k.per.size() != found.size()) continue;
    bool agree = true;
    for (const axes& a : k.per) {
      agree = agree && a.batch == k.per[0].batch && a.tokens == k.per[0].tokens;
    }
    if (agree) cands.push_back(std::move(k));
  }
  if (cands.empty()) {
    throw error(fmt::format(
        "q/k: {} do not fit {} (expected head_dim = {} last; q and k with the same batch and "
        "tokens)",
        input_shapes(found),
        layout.value ? fmt::format("--qk-layout {} ({})", to_string(*layout.value), layout.by)
                     : std::string("one layout"),
        s.head_dim));
  }
  return cands;
}

// Readings that group the rows alike are one reading (a head or token axis of size 1,
// docs/certify.md §4): of such candidates the first is kept.
void merge_same_groupings(std::vector<candidate>& cands) {
  auto same_grouping = [](const candidate& a, const candidate& b) {
    for (std::size_t i = 0; i < a.per.size(); ++i) {
      const axes &x = a.per[i], &y = b.per[i];
      const bool tx = x.heads_first && x.heads > 1 && x.tokens > 1;
      const bool ty = y.heads_first && y.heads > 1 && y.tokens > 1;
      if (x.batch != y.batch || x.tokens != y.tokens || x.heads != y.heads || tx != ty) {
        return false;
      }
    }
    return true;
  };
  for (std::size_t i = 0; i < cands.size(); ++i) {
    for (std::size_t j = i + 1; j < cands.size();) {
      if (same_grouping(cands[i], cands[j])) {
        cands.erase(cands.begin() + static_cast<std::ptrdiff_t>(j));
      } else {
        ++j;
      }
    }
  }
}

// Where several readings remain, the positions given drop those whose batch × tokens they do not
// fit (docs/certify.md §4); `by` names them when they decided. pev::error when they fit none.
void keep_readings_the_positions_fit(std::vector<candidate>& cands, const given_positions& g,
                                     const std::vector<qk_pair>& found, const spec::rope& s,
                                     std::string& by) {
  if (cands.size() <= 1 || !g.given()) return;
  std::vector<candidate> kept;
  for (const candidate& c : cands) {
    if (positions_fit(g, c.per[0], s)) kept.push_back(c);
  }
  if (kept.empty()) {
    throw error(fmt::format(
        "q/k: the {} positions of {} fit no reading of {}: {} (give the positions of every "
        "token, [T] or [B, T], or state the layout with --qk-layout)",
        g.values.size(), g.name, input_shapes(found), describe_all(cands, found)));
  }
  if (kept.size() < cands.size()) by = fmt::format("the positions {}", g.name);
  cands = std::move(kept);
}

// Where several readings remain, the data decides (docs/certify.md §4): a RoPE rotation is the
// same for every head of a token, so only the reading whose heads are heads rotates every head of
// a token alike (head_invariance, on the --threads arena); `by` gives every reading's counts.
// pev::error, naming --qk-layout, unless exactly one fits.
void keep_the_reading_heads_rotate_alike(std::vector<candidate>& cands,
                                         const std::vector<qk_pair>& found,
                                         const output_order& order, const spec::rope& s,
                                         const options& o, std::string& by) {
  if (cands.size() <= 1) return;
  tbb::task_arena arena(arena_threads(o));
  std::vector<candidate> kept;
  std::string figures;
  for (const candidate& c : cands) {
    agreement g;
    for (std::size_t i = 0; i < found.size(); ++i) {
      g += arena.execute([&] {
        return head_invariance(c.per[i], *found[i].in, *found[i].out, order.perm, s, found[i].name);
      });
    }
    figures += fmt::format("{}{}: {} of {} head pairs differ", figures.empty() ? "" : "; ",
                           class_name(c.cls), g.off, g.samples);
    if (g.fits()) kept.push_back(c);
  }
  if (kept.size() != 1) {
    throw error(fmt::format(
        "q/k: {} can be read as {}, and {} ({}): state the layout with --qk-layout "
        "bhtd|bthd|thd|t(hd), or give the positions of every token (position_ids [B, T])",
        input_shapes(found), describe_all(cands, found),
        kept.empty() ? "no reading rotates every head of a token alike"
                     : "the data fit several (every head of a token is rotated alike in each)",
        figures));
  }
  cands = std::move(kept);
  by = fmt::format("the data: only this reading rotates every head of a token alike ({})", figures);
}

// The position of every token row of reading `c` (docs/design.md §6.3): those given (one per row,
// or [T] repeated for every sequence), else 0 … T − 1 in every sequence. pev::error when the
// positions given do not fit it, or one is negative; without a table, --exhaustive requires every
// position.
std::vector<std::int64_t> token_positions(const candidate& c, const given_positions& g,
                                          const std::vector<qk_pair>& found, const spec::rope& s,
                                          const options& o, bool with_table) {
  if (g.given() && !positions_fit(g, c.per[0], s)) {
    throw error(fmt::format("q/k have {} tokens ({}) but {} positions are given ({})",
                            c.per[0].batch * c.per[0].tokens, describe(c, found), g.values.size(),
                            g.name));
  }
  const std::int64_t B = c.per[0].batch, T = c.per[0].tokens;
  std::vector<std::int64_t> pos;
  if (!g.given()) {
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t t = 0; t < T; ++t) pos.push_back(t);
    }
  } else if (static_cast<std::int64_t>(g.values.size()) == B * T) {
    pos = g.values;
  } else {
    for (std::int64_t b = 0; b < B; ++b) pos.insert(pos.end(), g.values.begin(), g.values.end());
  }
  if (!pos.empty() && *std::min_element(pos.begin(), pos.end()) < 0) {
    throw error("negative positions cannot be certified");
  }
  if (!with_table) covers_every_position(pos, o.exhaustive);
  return pos;
}

// The tensors in reading `c` and output order `order`, copied as [tokens, heads, D] (canonical),
// and the reading stated for the certificate (its `layouts` entry and `what`).
void read_in(const candidate& c, const std::vector<qk_pair>& found, const output_order& order,
             const spec::rope& s, const std::string& by, qk_set& set) {
  const std::int64_t B = c.per[0].batch, T = c.per[0].tokens;
  const std::vector<std::int64_t> identity = output_perm(s, qk_order::input);
  std::string tensors, read;
  for (std::size_t i = 0; i < found.size(); ++i) {
    const qk_pair& r = found[i];
    const axes& a = c.per[i];
    qk_source q;
    q.name = r.name;
    q.in = canonical(*r.in, a, identity);
    q.out = canonical(*r.out, a, order.perm);
    q.tokens = B * T;
    q.heads = a.heads;
    q.dim = a.dim;
    q.source =
        fmt::format("tensors '{0}_in' and '{0}_out' {1}", r.name, io::shape_string(r.out->shape));
    tensors += fmt::format("{}'{}_in'/'{}_out' {}", i ? ", " : "", r.name, r.name,
                           io::shape_string(r.in->shape));
    read += fmt::format("{}{} {}", i ? ", " : "", r.name, a.text());
    set.qk.push_back(std::move(q));
  }
  const qk_layout layout = c.per[0].layout();
  std::string read_as = fmt::format("{} {}", to_string(layout), read);
  if (B > 1) read_as += fmt::format("; {} sequences of {} tokens", B, T);
  if (!order.text.empty()) read_as += "; " + order.text;
  set.reading = {"q/k", to_string(layout), tensors, read_as,
                 order.text.empty() ? by : by + "; the order: " + order.by};
  set.what = fmt::format("rotated {}: {} read as {} ({} layout; decided by {})",
                         set.qk.size() == 2 ? "q and k" : set.qk.front().name, tensors, read_as,
                         spec::to_string(s.layout), set.reading.decided_by);
}

}  // namespace

qk_set find_qk(const dump& d, const spec::rope& s, const options& o, bool with_table) {
  qk_set set;
  const std::vector<qk_pair> found = dumped_pairs(d, s);
  if (found.empty()) {
    if (o.qk_layout || o.qk_order) {
      throw error(
          fmt::format("{}: the dump holds no rotated q/k (q_in/q_out, k_in/k_out); it holds {}",
                      o.qk_layout ? "--qk-layout" : "--qk-order", tensor_list(d)));
    }
    return set;
  }
  const auto layout =
      stated_by_option_or_metadata(d, o.qk_layout, "--qk-layout", "qk_layout",
                                   [](std::string_view v) { return parse_qk_layout(v); });
  const auto stated_order =
      stated_by_option_or_metadata(d, o.qk_order, "--qk-order", "qk_order",
                                   [](std::string_view v) { return parse_qk_order(v); });
  const output_order order = settle_output_order(found, s, stated_order);
  const given_positions given = positions_given(d, s, o, with_table);

  std::vector<candidate> cands = shape_readings(found, s, layout);
  merge_same_groupings(cands);
  std::string by = layout.value ? layout.by : "the shapes";
  keep_readings_the_positions_fit(cands, given, found, s, by);
  keep_the_reading_heads_rotate_alike(cands, found, order, s, o, by);

  const candidate& c = cands.front();
  set.pos = token_positions(c, given, found, s, o, with_table);
  read_in(c, found, order, s, by, set);
  return set;
}

}  // namespace pev::certify::detail

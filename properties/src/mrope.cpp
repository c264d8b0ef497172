// MRoPE properties (docs/encodings.md §4.6): an MRoPE table or rotation is RoPE whose pair i takes
// its position from stream s(i). Checked against the exact reference of each pair at its own
// stream's position (within the claimed contract, as rope.table_exact), and bit for bit against
// the implementation's own 1-D outputs: text tokens (t = h = w) and each section at its stream.

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include "detail.h"
#include "pev/compare/reference.h"

namespace pev::prop::detail {
namespace {

namespace gen = rc::gen;
using metric::half_ulp;
using metric::kF64;

/// T tokens of S streams, [S, T] row-major: every stream drawn independently.
std::vector<std::int64_t> gen_stream_positions(std::int64_t streams, std::int64_t max_tokens) {
  const auto n = *gen::inRange<std::int64_t>(1, max_tokens + 1);
  return *gen::container<std::vector<std::int64_t>>(static_cast<std::size_t>(n * streams),
                                                    position());
}

struct mrope_case {
  spec::rope s;
  std::optional<std::int64_t> seq;
  std::unique_ptr<impl::implementation> impl;
  std::unique_ptr<impl::rope_contract> contract;
  std::unique_ptr<compare::rope_reference> ref;
  double m = 1;
};

mrope_case make_case(const subject& sub) {
  mrope_case c;
  c.s = accepted(sub, mrope_spec());
  // Stateful types take a sequence length beyond every position (as transformers derives it).
  c.impl = sub.make(spec::encoding{c.s});
  return c;
}

void finish_case(mrope_case& c, const std::vector<std::int64_t>& pos) {
  if (c.s.stateful()) c.seq = *std::max_element(pos.begin(), pos.end()) + 1;
  c.ref = std::make_unique<compare::rope_reference>(c.s, c.seq, compare::reference_path::fast);
  c.m = c.ref->attention_factor();
  c.contract = std::make_unique<impl::rope_contract>(c.s, c.impl->claimed_accuracy(), c.seq, c.m);
}

std::string where(const mrope_case& c, std::int64_t tok, std::int64_t i, std::int64_t p) {
  std::ostringstream os;
  os << c.impl->name() << " " << spec::to_spec_string(spec::encoding{c.s}) << " token=" << tok
     << " pair=" << i << " stream=" << spec::mrope_stream(c.s, i) << " p=" << p;
  return os.str();
}

}  // namespace

void mrope_table_exact(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    auto c = make_case(sub);
    const std::int64_t S = c.s.streams();
    const auto pos = gen_stream_positions(S, 3);
    finish_case(c, pos);
    const auto n = static_cast<std::int64_t>(pos.size()) / S;
    const auto P = static_cast<std::size_t>(c.s.pairs());
    std::vector<T> cos(static_cast<std::size_t>(n) * P), sin(cos.size());
    c.impl->rope_table_streams<T>(pos, c.seq, std::span<T>(cos), std::span<T>(sin));
    // The independent evaluation: pair i of token t is the exact 1-D value at its stream's
    // position, p = pos[s(i)·T + t].
    for (std::int64_t tok = 0; tok < n; ++tok) {
      for (std::size_t i = 0; i < P; ++i) {
        const auto ii = static_cast<std::int64_t>(i);
        const std::int64_t p = pos[static_cast<std::size_t>(spec::mrope_stream(c.s, ii) * n + tok)];
        RC_TAG(position_bucket(p), c.s.mrope_interleaved ? "interleaved" : "consecutive");
        compare::typed_values<T> rc, rs;
        const std::int64_t one[] = {p};
        c.ref->table<T>(one, rc, rs, /*rounded_doubles=*/true);
        const std::size_t k = static_cast<std::size_t>(tok) * P + i;
        for (int which = 0; which < 2; ++which) {
          const double got = dbl(which ? sin[k] : cos[k]);
          const double want = which ? rs.exact[i] : rc.exact[i];
          const double B =
              c.contract->table_bound(p, ii, want, format_of<T>()) + half_ulp(want, kF64);
          if (!(std::fabs(got - want) <= B)) {
            std::ostringstream os;
            os << (which ? "m·sin" : "m·cos") << " at " << where(c, tok, ii, p) << ": got "
               << dec_hex(got) << ", expected " << dec_hex(want) << " (bound " << B << ")";
            RC_FAIL(os.str());
          }
        }
      }
    }
  });
}

void mrope_rotate_exact(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    auto c = make_case(sub);
    const std::int64_t S = c.s.streams();
    const auto pos = gen_stream_positions(S, 2);
    finish_case(c, pos);
    const auto n = static_cast<std::int64_t>(pos.size()) / S;
    const auto heads = *gen::inRange<std::int64_t>(1, 3);
    const auto D = static_cast<std::size_t>(c.s.head_dim);
    const auto x =
        *gen::container<std::vector<T>>(static_cast<std::size_t>(n * heads) * D, finite<T>(4));
    std::vector<T> y(x.size());
    c.impl->rope_rotate_streams<T>(pos, c.seq,
                                   kernel::heads_view<const T>{x, n, heads, c.s.head_dim},
                                   kernel::heads_view<T>{y, n, heads, c.s.head_dim});
    std::vector<std::int64_t> sp(static_cast<std::size_t>(S));
    std::vector<double> want(D), xd(D);
    std::vector<T> rn(D);
    for (std::int64_t tok = 0; tok < n; ++tok) {
      for (std::int64_t k = 0; k < S; ++k) {
        sp[static_cast<std::size_t>(k)] = pos[static_cast<std::size_t>(k * n + tok)];
      }
      for (std::int64_t h = 0; h < heads; ++h) {
        const std::size_t base = static_cast<std::size_t>(tok * heads + h) * D;
        for (std::size_t j = 0; j < D; ++j) xd[j] = dbl(x[base + j]);
        c.ref->rotate_streams<T>(sp, xd, rn, want);
        for (std::int64_t i = 0; i < c.s.pairs(); ++i) {
          const std::int64_t p = sp[static_cast<std::size_t>(spec::mrope_stream(c.s, i))];
          const auto [j0, j1] = spec::pair_dims(c.s, i);
          const double x0 = xd[static_cast<std::size_t>(j0)], x1 = xd[static_cast<std::size_t>(j1)];
          const double B0 =
              c.contract->rotation_bound_at(c.contract->angle_error(p, i), x0, x1,
                                            c.m * (std::fabs(x0) + std::fabs(x1)), format_of<T>());
          for (const std::int64_t j : {j0, j1}) {
            const auto u = static_cast<std::size_t>(j);
            const double got = dbl(y[base + u]);
            const double B = B0 + half_ulp(want[u], kF64);
            if (!(std::fabs(got - want[u]) <= B)) {
              std::ostringstream os;
              os << "rotated dim " << j << " at " << where(c, tok, i, p) << ": got " << dec_hex(got)
                 << ", expected " << dec_hex(want[u]) << " (bound " << B << ")";
              RC_FAIL(os.str());
            }
          }
        }
      }
    }
  });
}

void mrope_sections_plain(const subject& sub, dtype t) {
  dispatch(t, [&]<class T>() {
    auto c = make_case(sub);
    const std::int64_t S = c.s.streams();
    auto pos = gen_stream_positions(S, 3);
    // Text tokens (every stream at the temporal position) in some cases.
    const bool text = *gen::element(false, true);
    const auto n = static_cast<std::int64_t>(pos.size()) / S;
    if (text) {
      for (std::int64_t k = 1; k < S; ++k) {
        std::copy_n(pos.begin(), n, pos.begin() + k * n);
      }
    }
    finish_case(c, pos);
    RC_TAG(text ? "text tokens" : "multimodal");
    // The sections partition the pairs: one stream per pair, below S.
    const std::vector<std::int64_t> map = spec::mrope_streams(c.s);
    RC_ASSERT(static_cast<std::int64_t>(map.size()) == c.s.pairs());
    for (const std::int64_t k : map) RC_ASSERT(k >= 0 && k < S);
    const auto P = static_cast<std::size_t>(c.s.pairs());
    std::vector<T> cos(static_cast<std::size_t>(n) * P), sin(cos.size());
    c.impl->rope_table_streams<T>(pos, c.seq, std::span<T>(cos), std::span<T>(sin));
    // Each section is the implementation's own plain RoPE at its stream's positions, bit for bit.
    std::vector<T> c1(cos.size()), s1(cos.size());
    for (std::int64_t k = 0; k < S; ++k) {
      const std::span<const std::int64_t> stream(pos.data() + k * n, static_cast<std::size_t>(n));
      c.impl->rope_table(stream, c.seq, std::span<T>(c1), std::span<T>(s1));
      for (std::size_t e = 0; e < cos.size(); ++e) {
        if (map[e % P] != k) continue;
        if (scalar_traits<T>::to_bits(cos[e]) != scalar_traits<T>::to_bits(c1[e]) ||
            scalar_traits<T>::to_bits(sin[e]) != scalar_traits<T>::to_bits(s1[e])) {
          std::ostringstream os;
          os << "section of stream " << k << " differs from plain RoPE at that stream's positions: "
             << where(c, static_cast<std::int64_t>(e / P), static_cast<std::int64_t>(e % P),
                      stream[e / P])
             << ": cos " << dec_hex(dbl(cos[e])) << " vs " << dec_hex(dbl(c1[e]));
          RC_FAIL(os.str());
        }
      }
    }
  });
}

}  // namespace pev::prop::detail

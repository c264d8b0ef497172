#pragma once
// Readings of rotated q/k (layout.h's find_qk, docs/certify.md §4): the layout classes, how a
// class reads a tensor's shape (axes), the tests of the data that tell readings and output orders
// apart, and the tensors copied in the canonical [tokens, heads, D] order.

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detail.h"
#include "layout_evidence.h"

namespace pev::certify::detail {

/// The three layout classes of q/k: thd and bthd are one (with or without the batch axis).
enum class qk_class { bhtd, bthd, t_hd };

/// The class of a layout.
inline qk_class class_of(qk_layout l) {
  return l == qk_layout::bhtd   ? qk_class::bhtd
         : l == qk_layout::t_hd ? qk_class::t_hd
                                : qk_class::bthd;
}

/// One reading of a q/k tensor's shape: batch × tokens × heads rows of D values.
struct axes {
  qk_class cls = qk_class::bthd;
  std::int64_t batch = 1, tokens = 0, heads = 0, dim = 0;
  bool heads_first = false;  // [B, H, T, D]
  std::size_t rank = 0;      // of the shape as dumped (after extra leading 1s)

  /// The flat row (of D values) of token t of batch b, head h.
  std::int64_t row(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return heads_first ? (b * heads + h) * tokens + t : (b * tokens + t) * heads + h;
  }
  /// The layout this reading is (thd or bthd by the rank).
  qk_layout layout() const {
    switch (cls) {
      case qk_class::bhtd:
        return qk_layout::bhtd;
      case qk_class::t_hd:
        return qk_layout::t_hd;
      case qk_class::bthd:
        break;
    }
    return rank == 4 ? qk_layout::bthd : qk_layout::thd;
  }
  /// "[B=1, H=4, T=512, D=128]"
  std::string text() const {
    const std::string b = batch > 1 || rank == 4 || (cls == qk_class::t_hd && rank == 3)
                              ? fmt::format("B={}, ", batch)
                              : "";
    switch (cls) {
      case qk_class::bhtd:
        return fmt::format("[{}H={}, T={}, D={}]", b, heads, tokens, dim);
      case qk_class::bthd:
        return fmt::format("[{}T={}, H={}, D={}]", b, tokens, heads, dim);
      case qk_class::t_hd:
        return fmt::format("[{}T={}, H·D={}·{}]", b, tokens, heads, dim);
    }
    return "";
  }
};

/// The readings of a tensor's shape (D = head_dim last): every class that fits, or with `forced`
/// that class only (t(hd) of a [B, T, D] tensor, one head, only when forced).
std::vector<axes> readings_of(std::vector<std::int64_t> shape, std::int64_t D,
                              std::optional<qk_class> forced);

/// How many head pairs of `r`'s tokens rotate alike (tensor pair `in`, `out` named `name`, the
/// outputs read at `perm`), on the calling arena's threads: the better of the spec's pairing and
/// the other layout's (layout_qk_reading.cpp).
agreement head_invariance(const axes& r, const io::array& in, const io::array& out,
                          const std::vector<std::int64_t>& perm, const spec::rope& s,
                          const std::string& name);

/// How many pairs of every row keep |output pair|² / |input pair|² (tensor pair `in`, `out` named
/// `name`, rows of `s.head_dim` values, the outputs read at `perm`).
agreement pair_norms(const io::array& in, const io::array& out,
                     const std::vector<std::int64_t>& perm, const spec::rope& s,
                     const std::string& name);

/// The dim of the dumped output that holds canonical dim j (the inputs' pair order): the identity,
/// or for half-split outputs pair i's two values at (i, i + pairs).
std::vector<std::int64_t> output_perm(const spec::rope& s, qk_order o);

/// `a` ([…, D] rows in the reading's order) as [tokens, heads, D] in (batch, token, head) order,
/// each row's dims taken from `perm`.
std::shared_ptr<const io::array> canonical(const io::array& a, const axes& r,
                                           const std::vector<std::int64_t>& perm);

/// "bhtd", "bthd" or "t(hd)".
const char* class_name(qk_class c);

}  // namespace pev::certify::detail

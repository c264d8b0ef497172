#pragma once
// RapidCheck generators for pev's types (docs/design.md §7.3, §7.6). RapidCheck's own float
// generator is too weak (no subnormals, NaN or infinities, poor range), and its integer ranges are
// size-scaled; pev's generators draw bit patterns and edge buckets instead, are wrapped in
// gen::resize(kNominalSize, …) so that their distribution does not depend on the size, and shrink
// toward simple values (fewer significand bits, small positions). kNominalSize stays ≤ 100: the
// Debian RapidCheck lacks the BitStream shift fix of upstream #289.

#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <string>

#include "pev/core/hex.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"

namespace pev::prop {

inline constexpr int kNominalSize = 100;

/// Any bit pattern of T (float, half, bfloat16), with specials weighted in: ±0, ±min normal, ±max
/// subnormal, ±max finite, ±Inf, NaN, powers of two.
template <class T>
rc::Gen<T> bit_pattern();

/// Finite values of T with |x| < 2^max_exp: random sign, exponent and significand (subnormals and
/// zeros included), shrinking toward 1 and fewer significand bits.
template <class T>
rc::Gen<T> finite(int max_exp);

/// Positions in [0, max], weighted to the edge buckets of docs/numerics.md §2.3: 0, 1, 255–257,
/// 2047–2049, 65503–65505, 65519–65520, 2^24 ± 1 and powers of two (± 1) up to 2^31; otherwise
/// uniform per octave. Shrinks toward 0.
rc::Gen<std::int64_t> position(std::int64_t max = std::int64_t{1} << 31);

/// Edge bucket of a position, for RC_CLASSIFY / RC_TAG: "0", "<256", "256..2048", "2048..65504",
/// "65504..2^24", ">=2^24".
const char* position_bucket(std::int64_t p);

/// Valid specs (built as SPEC strings and parsed, so derived fields are consistent).
rc::Gen<spec::rope> rope_spec();  // transformers' rope_types (not ggml), 1 in 8 with MRoPE
rc::Gen<spec::rope> rope_spec(spec::rope_type type);  // one rope_type
/// A rope_spec() with an MRoPE section plan (docs/encodings.md §4.6): transformers' three
/// sections summing to the pairs or ggml's four, consecutive or interleaved.
rc::Gen<spec::rope> mrope_spec();
rc::Gen<spec::sinusoidal> sinusoidal_spec();
rc::Gen<spec::alibi> alibi_spec();
rc::Gen<spec::t5> t5_spec();
/// A generated spec of the family named like spec::family_name ("rope", …) as an encoding.
rc::Gen<spec::encoding> encoding_of(const std::string& family);

/// Decimal and C99 hex of a value: pev::dec_hex (pev/core/hex.h).
using pev::dec_hex;

}  // namespace pev::prop

// showValue overloads (found by argument-dependent lookup from rc::show) and rc::Arbitrary.
namespace pev {
void showValue(half v, std::ostream& os);
void showValue(bfloat16 v, std::ostream& os);
}  // namespace pev
namespace pev::spec {
void showValue(const rope& s, std::ostream& os);
void showValue(const sinusoidal& s, std::ostream& os);
void showValue(const alibi& s, std::ostream& os);
void showValue(const t5& s, std::ostream& os);
}  // namespace pev::spec

namespace rc {
template <>
struct Arbitrary<pev::half> {
  static Gen<pev::half> arbitrary() { return pev::prop::bit_pattern<pev::half>(); }
};
template <>
struct Arbitrary<pev::bfloat16> {
  static Gen<pev::bfloat16> arbitrary() { return pev::prop::bit_pattern<pev::bfloat16>(); }
};
template <>
struct Arbitrary<pev::spec::rope> {
  static Gen<pev::spec::rope> arbitrary() { return pev::prop::rope_spec(); }
};
template <>
struct Arbitrary<pev::spec::sinusoidal> {
  static Gen<pev::spec::sinusoidal> arbitrary() { return pev::prop::sinusoidal_spec(); }
};
template <>
struct Arbitrary<pev::spec::alibi> {
  static Gen<pev::spec::alibi> arbitrary() { return pev::prop::alibi_spec(); }
};
template <>
struct Arbitrary<pev::spec::t5> {
  static Gen<pev::spec::t5> arbitrary() { return pev::prop::t5_spec(); }
};
}  // namespace rc

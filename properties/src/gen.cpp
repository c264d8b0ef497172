// Generators (gen.h).

#include "pev/prop/gen.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "pev/spec/parse.h"

namespace pev::prop {
namespace {

using rc::Gen;
namespace gen = rc::gen;

template <class T>
T from_bits(typename scalar_traits<T>::bits_type b) {
  return scalar_traits<T>::from_bits(b);
}

// The specials of a format, as encodings.
template <class T>
std::vector<typename scalar_traits<T>::bits_type> specials() {
  using tr = scalar_traits<T>;
  using B = typename tr::bits_type;
  const B one = static_cast<B>(B(tr::bias) << tr::mantissa_bits);
  std::vector<B> v = {
      0,
      tr::sign_mask,
      one,
      static_cast<B>(one | tr::sign_mask),
      static_cast<B>(B(1) << tr::mantissa_bits),  // min normal
      tr::mantissa_mask,                          // max subnormal
      1,                                          // min subnormal
      tr::max_finite_bits,
      static_cast<B>(tr::max_finite_bits | tr::sign_mask),
      tr::infinity_bits,
      static_cast<B>(tr::infinity_bits | tr::sign_mask),
      static_cast<B>(tr::infinity_bits | (B(1) << (tr::mantissa_bits - 1)))};  // NaN
  // Powers of two across the range.
  for (int e = 1; e < (1 << tr::exponent_bits) - 1; e += 3) {
    v.push_back(static_cast<B>(B(e) << tr::mantissa_bits));
  }
  return v;
}

std::string fmt_num(double v) { return fmt::format("{}", v); }

template <class E>
E parse_as(const std::string& text) {
  return std::get<E>(spec::parse_spec(text, [](std::string_view) {}));
}

// Small option indices (shrink toward 0 = each list's first, simplest option).
Gen<std::vector<int>> choices() { return gen::container<std::vector<int>>(8, gen::inRange(0, 8)); }

template <class V>
V pick(const std::vector<V>& options, int c) {
  return options[static_cast<std::size_t>(c) % options.size()];
}

std::string rope_text(spec::rope_type t, const std::vector<int>& c, std::int64_t head_dim,
                      double theta, bool interleaved, double prf) {
  using rt = spec::rope_type;
  if (t == rt::ggml) {
    // The ggml form (ggml_rope_ext's own parameters): a YaRN mix of weight ext_factor, factors
    // below and above 1, n_ctx_orig 0 or a context, partial n_dims.
    auto n_dims = static_cast<std::int64_t>(static_cast<double>(head_dim) * prf);
    if (n_dims < 2 || n_dims % 2 != 0) n_dims = head_dim;
    std::string s = "ggml:head_dim=" + std::to_string(head_dim) +
                    ",n_dims=" + std::to_string(n_dims) +
                    ",mode=" + (interleaved ? "normal" : "neox") + ",freq_base=" + fmt_num(theta) +
                    ",freq_scale=" + fmt_num(pick<double>({1, 0.25, 1.4245, 0.5}, c[0])) +
                    ",ext_factor=" + fmt_num(pick<double>({0, 1, 0.7465, 0.5}, c[1])) +
                    ",attn_factor=" + fmt_num(pick<double>({1, 1.4245, 0.75}, c[2])) +
                    ",n_ctx_orig=" + std::to_string(pick<int>({0, 4096, 512}, c[3]));
    return s;
  }
  // NTK-style exponents d/(d − 2) need rotary_dim ≥ 4: the 2-dim head only for plain types.
  const bool tiny_ok = t == rt::default_ || t == rt::linear;
  if (!tiny_ok && head_dim < 4) head_dim = 4;
  std::string s = "rope:head_dim=" + std::to_string(head_dim) + ",rope_theta=" + fmt_num(theta) +
                  ",layout=" + (interleaved ? "interleaved" : "neox") +
                  ",rope_type=" + spec::to_string(t);
  if (t == rt::proportional) {
    prf = pick<double>({1.0, 0.5, 0.25}, c[0]);
    return s + ",partial_rotary_factor=" + fmt_num(prf) +
           ",factor=" + fmt_num(pick<double>({1, 2, 4}, c[1]));
  }
  auto rot = static_cast<std::int64_t>(static_cast<double>(head_dim) * prf);
  if (rot < (tiny_ok ? 2 : 4) || rot % 2 != 0) prf = 1.0, rot = head_dim;
  if (prf != 1.0) s += ",partial_rotary_factor=" + fmt_num(prf);
  const std::int64_t pairs = rot / 2;
  switch (t) {
    case rt::default_:
    case rt::proportional:
    case rt::ggml:  // above
      break;
    case rt::linear:
      s += ",factor=" + fmt_num(pick<double>({2, 4, 8, 16, 1.5, 10}, c[0]));
      break;
    case rt::ntk:
      s += ",factor=" + fmt_num(pick<double>({2, 4, 8}, c[0]));
      break;
    case rt::dynamic:
      s += ",factor=" + fmt_num(pick<double>({2, 4, 10}, c[0])) +
           ",max_position_embeddings=" + std::to_string(pick<int>({2048, 512, 4096}, c[1]));
      break;
    case rt::yarn: {
      const double f = pick<double>({4, 8, 10, 16, 32, 40, 2}, c[0]);
      const std::int64_t Lo = pick<std::int64_t>({4096, 2048, 32768, 131072}, c[1]);
      s += ",factor=" + fmt_num(f) + ",original_max_position_embeddings=" + std::to_string(Lo) +
           ",max_position_embeddings=" + std::to_string(static_cast<std::int64_t>(f) * Lo);
      if (c[2] % 2 == 1) s += ",truncate=false";
      switch (c[3] % 6) {
        case 2:
          s += ",mscale=1,mscale_all_dim=1";
          break;
        case 3:
          s += ",mscale=0.707,mscale_all_dim=0.707";
          break;
        case 4:
          s += ",mscale=2,mscale_all_dim=1";
          break;
        case 5:
          s += ",mscale=1,mscale_all_dim=0";
          break;
        default:
          break;
      }
      if (c[4] % 4 == 3) s += ",attention_factor=0.8";
      if (c[5] % 2 == 1) s += ",beta_fast=16,beta_slow=2";
      break;
    }
    case rt::llama3:
      s += ",factor=" + fmt_num(pick<double>({8, 32, 4}, c[0])) +
           ",low_freq_factor=1,high_freq_factor=" + fmt_num(pick<double>({4, 2}, c[1])) +
           ",original_max_position_embeddings=" + std::to_string(pick<int>({8192, 2048}, c[2]));
      break;
    case rt::longrope: {
      // Phi-3-like lists: short factors near 1, long ones growing to ~40.
      std::string sh = "[", lg = "[";
      for (std::int64_t i = 0; i < pairs; ++i) {
        const double x = pairs > 1 ? double(i) / double(pairs - 1) : 0.0;
        sh += (i ? "," : "") + fmt_num(std::round((1.0 + 0.6 * x * x) * 1000) / 1000);
        lg += (i ? "," : "") + fmt_num(std::round((1.0 + 44.0 * x * x) * 1000) / 1000);
      }
      const double f = pick<double>({32, 16, 4}, c[0]);
      const std::int64_t Lo = pick<std::int64_t>({4096, 2048}, c[1]);
      s += ",factor=" + fmt_num(f) + ",original_max_position_embeddings=" + std::to_string(Lo) +
           ",max_position_embeddings=" + std::to_string(static_cast<std::int64_t>(f) * Lo) +
           ",short_factor=" + sh + "],long_factor=" + lg + "]";
      break;
    }
  }
  return s;
}

}  // namespace

template <class T>
Gen<T> bit_pattern() {
  using B = typename scalar_traits<T>::bits_type;
  const auto sp = specials<T>();
  return gen::resize(
      kNominalSize,
      gen::map(gen::weightedOneOf<B>({{1, gen::elementOf(sp)}, {3, gen::arbitrary<B>()}}),
               [](B b) { return from_bits<T>(b); }));
}

template <class T>
Gen<T> finite(int max_exp) {
  using tr = scalar_traits<T>;
  using B = typename tr::bits_type;
  const int emin = tr::min_normal_exponent;
  const int emax = std::min(max_exp - 1, tr::max_exponent);
  // Sign, exponent (mostly within 2^±8, shrinking toward 2^−8…) and a significand of `bits`
  // random leading bits (shrinking toward short significands).
  auto with_mant = gen::mapcat(
      gen::tuple(gen::arbitrary<bool>(),
                 gen::weightedOneOf<int>({{6, gen::inRange(-8, std::min(emax, 8) + 1)},
                                          {1, gen::inRange(emin, emax + 1)}}),
                 gen::inRange<int>(0, tr::mantissa_bits + 1)),
      [](const std::tuple<bool, int, int>& t) {
        const auto [neg, e, bits] = t;
        return gen::map(gen::arbitrary<B>(), [=](B raw) {
          const int shift = tr::mantissa_bits - bits;
          const B mant =
              static_cast<B>((static_cast<B>(raw >> shift) << shift) & tr::mantissa_mask);
          const B biased = static_cast<B>(e + tr::bias);
          return from_bits<T>(static_cast<B>((neg ? tr::sign_mask : B(0)) |
                                             static_cast<B>(biased << tr::mantissa_bits) | mant));
        });
      });
  auto tiny = gen::map(gen::inRange<B>(0, static_cast<B>(tr::mantissa_mask + 1)),
                       [](B b) { return from_bits<T>(b); });  // zeros and subnormals
  return gen::resize(kNominalSize, gen::weightedOneOf<T>({{12, with_mant}, {1, tiny}}));
}

template Gen<float> bit_pattern<float>();
template Gen<half> bit_pattern<half>();
template Gen<bfloat16> bit_pattern<bfloat16>();
template Gen<float> finite<float>(int);
template Gen<half> finite<half>(int);
template Gen<bfloat16> finite<bfloat16>(int);

Gen<std::int64_t> position(std::int64_t max) {
  std::vector<std::int64_t> edges = {0,     1,     255,           256,     257,          2047,
                                     2048,  2049,  65503,         65504,   65505,        65519,
                                     65520, 65521, (1 << 24) - 1, 1 << 24, (1 << 24) + 1};
  for (int k = 1; k <= 31; ++k) {
    const std::int64_t v = std::int64_t{1} << k;
    edges.insert(edges.end(), {v - 1, v, v + 1});
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  edges.erase(std::remove_if(edges.begin(), edges.end(), [&](std::int64_t v) { return v > max; }),
              edges.end());
  const int top = std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(max, 1))) - 1;
  auto octave = gen::mapcat(gen::inRange(0, top + 1), [max](int k) {
    const std::int64_t lo = std::int64_t{1} << k;
    const std::int64_t hi = std::min(lo << 1, max + 1);
    return gen::inRange<std::int64_t>(lo, std::max(hi, lo + 1));
  });
  auto small = gen::inRange<std::int64_t>(0, std::min<std::int64_t>(512, max + 1));
  return gen::resize(kNominalSize, gen::weightedOneOf<std::int64_t>(
                                       {{3, gen::elementOf(edges)}, {2, small}, {5, octave}}));
}

const char* position_bucket(std::int64_t p) {
  if (p == 0) return "p=0";
  if (p < 256) return "p<256";
  if (p <= 2048) return "256<=p<=2048";
  if (p <= 65504) return "2048<p<=65504";
  if (p < (1 << 24)) return "65504<p<2^24";
  return "p>=2^24";
}

Gen<spec::rope> rope_spec(spec::rope_type t) {
  return gen::resize(
      kNominalSize,
      gen::map(gen::tuple(choices(), gen::element<std::int64_t>(8, 4, 16, 32, 64, 128, 80, 2),
                          gen::element<double>(10000, 500000, 1000000, 100), gen::arbitrary<bool>(),
                          gen::element<double>(1, 1, 0.5, 0.25, 0.75)),
               [t](const std::tuple<std::vector<int>, std::int64_t, double, bool, double>& a) {
                 const auto& [c, hd, theta, inter, prf] = a;
                 return parse_as<spec::rope>(rope_text(t, c, hd, theta, inter, prf));
               }));
}

namespace {
Gen<spec::rope> plain_rope_spec() {
  using rt = spec::rope_type;
  return gen::mapcat(gen::element(rt::default_, rt::linear, rt::ntk, rt::dynamic, rt::yarn,
                                  rt::llama3, rt::longrope, rt::proportional),
                     [](rt t) { return rope_spec(t); });
}
}  // namespace

Gen<spec::rope> rope_spec() {
  // One spec in eight carries an MRoPE section plan: one position per token is a text token of
  // it (docs/encodings.md §4.6), so every 1-D property holds for it as for the plain spec.
  return gen::weightedOneOf<spec::rope>({{7, plain_rope_spec()}, {1, mrope_spec()}});
}

Gen<spec::rope> mrope_spec() {
  return gen::mapcat(plain_rope_spec(), [](const spec::rope& base) {
    const std::int64_t P = base.pairs();
    return gen::map(
        gen::tuple(gen::inRange<std::int64_t>(0, P + 1), gen::inRange<std::int64_t>(0, P + 1),
                   gen::arbitrary<bool>(), gen::element(false, false, true)),
        [base, P](const std::tuple<std::int64_t, std::int64_t, bool, bool>& a) {
          const auto& [x, y, interleaved, ggml] = a;
          // Three cuts of [0, P] (transformers), or four sections of ggml summing to
          // at most P (its map then repeats).
          const std::int64_t lo = std::min(x, y), hi = std::max(x, y);
          std::string sec = "[" + std::to_string(lo) + "," + std::to_string(hi - lo) + "," +
                            std::to_string(P - hi);
          if (ggml) sec = "[" + std::to_string(hi - lo) + ",1,1," + std::to_string(lo);
          sec += "]";
          if (ggml && hi - lo + 2 + lo > P) sec = "[1,0,0,0]";
          std::string text = spec::to_spec_string(spec::encoding{base}) + ",mrope_section=" + sec;
          if (interleaved) text += ",mrope_interleaved=true";
          return parse_as<spec::rope>(text);
        });
  });
}

Gen<spec::sinusoidal> sinusoidal_spec() {
  return gen::resize(kNominalSize,
                     gen::map(gen::tuple(gen::element<std::int64_t>(8, 4, 16, 64, 128, 6, 5),
                                         gen::element<double>(10000, 100, 100000),
                                         gen::arbitrary<bool>(), gen::element<double>(1, 0)),
                              [](const std::tuple<std::int64_t, double, bool, double>& a) {
                                const auto& [d, base, blocked, shift] = a;
                                std::string s = "sinusoidal:d_model=" + std::to_string(d) +
                                                ",base=" + fmt_num(base);
                                if (blocked) s += ",layout=blocked,freq_shift=" + fmt_num(shift);
                                return parse_as<spec::sinusoidal>(s);
                              }));
}

Gen<spec::alibi> alibi_spec() {
  return gen::resize(
      kNominalSize,
      gen::map(gen::tuple(gen::element<std::int64_t>(8, 12, 16, 6, 32, 48, 5, 2, 1, 64, 24, 40),
                          gen::element<double>(8, 16)),
               [](const std::tuple<std::int64_t, double>& a) {
                 return parse_as<spec::alibi>("alibi:num_heads=" + std::to_string(std::get<0>(a)) +
                                              ",max_bias=" + fmt_num(std::get<1>(a)));
               }));
}

Gen<spec::t5> t5_spec() {
  // (num_buckets, max_distance) pairs of real models and of the contract table, plus (20, 160)
  // and (40, 320), where the log branch lands exactly on integers (n/e and D/e powers of two,
  // bidirectional e = 5, 10): float32 (transformers) and exact agree there while a float64
  // evaluation lands just below (e.g. ln 2/ln 32·5 = 0.99999999999999989 at n = 10). Every pair
  // here was checked at all distances |r| ≤ 4·max_distance: transformers' float32 buckets equal
  // the exact ones (not so for every config: (72, 50) and (96, 1029) bidirectional differ).
  struct cfg {
    std::int64_t nb, md;
  };
  static const std::vector<cfg> kCfg = {{32, 128}, {16, 128}, {64, 256}, {160, 800}, {320, 800},
                                        {32, 64},  {8, 32},   {48, 512}, {20, 160},  {40, 320}};
  return gen::resize(
      kNominalSize,
      gen::map(gen::tuple(gen::inRange<std::size_t>(0, kCfg.size()), gen::arbitrary<bool>()),
               [](const std::tuple<std::size_t, bool>& a) {
                 const cfg& c = kCfg[std::get<0>(a)];
                 return parse_as<spec::t5>("t5:num_buckets=" + std::to_string(c.nb) +
                                           ",max_distance=" + std::to_string(c.md) +
                                           ",bidirectional=" + (std::get<1>(a) ? "false" : "true"));
               }));
}

Gen<spec::encoding> encoding_of(const std::string& family) {
  auto as_enc = [](auto g) {
    return gen::map(std::move(g), [](const auto& s) { return spec::encoding{s}; });
  };
  if (family == "rope") return as_enc(rope_spec());
  if (family == "sinusoidal") return as_enc(sinusoidal_spec());
  if (family == "alibi") return as_enc(alibi_spec());
  return as_enc(t5_spec());
}

}  // namespace pev::prop

namespace pev {
void showValue(half v, std::ostream& os) {
  os << dec_hex(static_cast<float>(v)) << " [fp16 0x" << std::hex << v.bits << std::dec << "]";
}
void showValue(bfloat16 v, std::ostream& os) {
  os << dec_hex(static_cast<float>(v)) << " [bf16 0x" << std::hex << v.bits << std::dec << "]";
}
}  // namespace pev

namespace pev::spec {
void showValue(const rope& s, std::ostream& os) { os << to_spec_string(encoding{s}); }
void showValue(const sinusoidal& s, std::ostream& os) { os << to_spec_string(encoding{s}); }
void showValue(const alibi& s, std::ostream& os) { os << to_spec_string(encoding{s}); }
void showValue(const t5& s, std::ostream& os) { os << to_spec_string(encoding{s}); }
}  // namespace pev::spec

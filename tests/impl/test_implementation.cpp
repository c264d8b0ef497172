// pev::impl unit tests: every built-in strategy behind the implementation interface gives exactly
// (bit for bit) what the kernels give; what an implementation cannot produce is refused with
// pev::error; mutants apply only where their bug changes something.

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "pev/core/error.h"
#include "pev/impl/contract.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/kernel/absolute.h"
#include "pev/kernel/apply.h"
#include "pev/kernel/relative.h"
#include "pev/kernel/rope.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

template <class E>
E parse_as(const std::string& text) {
  return std::get<E>(spec::parse_spec(text));
}

template <class T>
std::vector<std::uint32_t> bits(const std::vector<T>& v) {
  std::vector<std::uint32_t> out;
  for (T x : v) out.push_back(static_cast<std::uint32_t>(scalar_traits<T>::to_bits(x)));
  return out;
}

template <class T, class TT>
void rope_matches_kernel(const spec::rope& s, kernel::strategy st,
                         std::optional<std::int64_t> seq) {
  const auto im = impl::make_builtin(spec::encoding{s}, st);
  const kernel::rope_kernel k(s, st, seq);
  const std::vector<std::int64_t> pos{0, 1, 257, 2049, 65505, (1 << 24) + 1};
  const auto n = pos.size() * static_cast<std::size_t>(s.pairs());
  std::vector<T> c(n), sn(n), kc(n), ks(n);
  im->rope_table(pos, seq, std::span<T>(c), std::span<T>(sn));
  k.table<T>(pos, kc, ks);
  EXPECT_EQ(bits(c), bits(kc)) << kernel::to_string(st);
  EXPECT_EQ(bits(sn), bits(ks)) << kernel::to_string(st);
  const auto f = im->inv_freq(seq);
  EXPECT_TRUE(std::equal(f.begin(), f.end(), k.inv_freq().begin()));
  EXPECT_EQ(im->attention_factor(seq), static_cast<double>(k.attention_factor()));
  // Rotation: the strategy's own table in its storage type, then kernel::rope_apply.
  const std::int64_t T_ = static_cast<std::int64_t>(pos.size()), H = 2, D = s.head_dim;
  std::vector<T> x(static_cast<std::size_t>(T_ * H * D));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = T(static_cast<float>(i % 7) - 3.25f);
  std::vector<T> y(x.size()), want(x.size());
  im->rope_rotate(pos, seq, kernel::heads_view<const T>{x, T_, H, D},
                  kernel::heads_view<T>{y, T_, H, D});
  std::vector<TT> tc(n), ts(n);
  k.table<TT>(pos, tc, ts);
  std::vector<std::int64_t> rows(pos.size());
  std::iota(rows.begin(), rows.end(), std::int64_t{0});
  kernel::rope_apply<T, TT>(s, kernel::rope_table_view<TT>{tc, ts, T_, s.pairs()}, rows,
                            kernel::heads_view<const T>{x, T_, H, D},
                            kernel::heads_view<T>{want, T_, H, D});
  EXPECT_EQ(bits(y), bits(want)) << kernel::to_string(st);
}

TEST(Builtin, RopeIsTheKernelBitForBit) {
  const auto s = parse_as<spec::rope>(
      "rope:head_dim=64,partial_rotary_factor=0.5,rope_type=yarn,factor=8,"
      "original_max_position_embeddings=4096,max_position_embeddings=32768");
  for (kernel::strategy st :
       {kernel::strategy::hf, kernel::strategy::ggml, kernel::strategy::accurate}) {
    rope_matches_kernel<float, float>(s, st, std::nullopt);
    rope_matches_kernel<bfloat16, float>(s, st, std::nullopt);
  }
  rope_matches_kernel<half, half>(s, kernel::strategy::table_fp16, std::nullopt);
  rope_matches_kernel<float, bfloat16>(s, kernel::strategy::table_bf16, std::nullopt);
  const auto d = parse_as<spec::rope>(
      "rope:head_dim=32,rope_type=dynamic,factor=4,max_position_embeddings=512");
  rope_matches_kernel<float, float>(d, kernel::strategy::hf, 4096);
  rope_matches_kernel<float, float>(d, kernel::strategy::hf, 100);
}

TEST(Builtin, StaticTypesIgnoreTheSequenceLength) {
  const auto s = parse_as<spec::rope>("rope:head_dim=16,rope_type=linear,factor=4");
  const auto im = impl::make_builtin(spec::encoding{s}, kernel::strategy::hf);
  EXPECT_EQ(im->inv_freq(std::nullopt), im->inv_freq(100000));
}

TEST(Builtin, OtherFamiliesAreTheKernels) {
  const auto sin = parse_as<spec::sinusoidal>("sinusoidal:d_model=16,layout=blocked");
  const auto a = parse_as<spec::alibi>("alibi:num_heads=12");
  const auto t5 = parse_as<spec::t5>("t5:num_buckets=32,max_distance=128");
  const std::vector<std::int64_t> pos{0, 3, 70000};
  for (kernel::strategy st :
       {kernel::strategy::hf, kernel::strategy::table_bf16, kernel::strategy::accurate}) {
    std::vector<half> pe(pos.size() * 16), kpe(pe.size());
    impl::make_builtin(spec::encoding{sin}, st)->sinusoidal_pe(pos, std::span<half>(pe));
    kernel::sinusoidal_table<half>(sin, st, pos, kpe);
    EXPECT_EQ(bits(pe), bits(kpe));
    std::vector<float> sl(12), ksl(12), b(12 * 9), kb(b.size());
    const auto ia = impl::make_builtin(spec::encoding{a}, st);
    ia->alibi_slopes(std::span<float>(sl));
    kernel::alibi_slopes<float>(a, st, ksl);
    EXPECT_EQ(sl, ksl);
    ia->alibi_bias(pos, pos, std::span<float>(b));
    kernel::alibi_bias<float>(a, st, pos, pos, kb);
    EXPECT_EQ(b, kb);
    const std::vector<std::int64_t> r{-300, -16, 0, 16, 300};
    std::vector<std::int64_t> got(r.size()), want(r.size());
    impl::make_builtin(spec::encoding{t5}, st)->t5_buckets(r, got);
    kernel::t5_buckets(t5, st, r, want);
    EXPECT_EQ(got, want);
  }
}

TEST(Builtin, RefusesWhatItCannotProduce) {
  const spec::encoding sin = parse_as<spec::sinusoidal>("sinusoidal:d_model=8");
  EXPECT_FALSE(impl::builtin_supports(sin, kernel::strategy::ggml));
  EXPECT_THROW(impl::make_builtin(sin, kernel::strategy::ggml), error);
  const auto rope =
      impl::make_builtin(parse_as<spec::rope>("rope:head_dim=8"), kernel::strategy::hf);
  EXPECT_TRUE(rope->supports(impl::output::rope_rotate, dtype::bf16));
  EXPECT_FALSE(rope->supports(impl::output::sinusoidal_pe, dtype::fp32));
  std::vector<float> out(8);
  try {
    rope->sinusoidal_pe(std::vector<std::int64_t>{0}, std::span<float>(out));
    FAIL() << "no exception";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("sinusoidal_pe is not supported"), std::string::npos);
  }
}

TEST(Mutants, ApplyOnlyWhereTheBugChangesSomething) {
  const auto& pow2 = impl::find_mutant("alibi-pow2-rule");
  EXPECT_TRUE(pow2.applies(parse_as<spec::alibi>("alibi:num_heads=12")));
  EXPECT_FALSE(pow2.applies(parse_as<spec::alibi>("alibi:num_heads=16")));
  EXPECT_THROW(impl::make_mutant("alibi-pow2-rule", parse_as<spec::alibi>("alibi:num_heads=16")),
               error);
  const auto& missing = impl::find_mutant("attention-factor-missing");
  EXPECT_FALSE(missing.applies(parse_as<spec::rope>("rope:head_dim=8")));
  EXPECT_TRUE(missing.applies(parse_as<spec::rope>(
      "rope:head_dim=8,rope_type=yarn,factor=4,original_max_position_embeddings=2048,"
      "max_position_embeddings=8192")));
  for (const auto& m : impl::mutant_catalogue()) {
    EXPECT_TRUE(std::string(m.family) == "rope" || std::string(m.family) == "sinusoidal" ||
                std::string(m.family) == "alibi" || std::string(m.family) == "t5")
        << m.id;
  }
}

TEST(Contract, BoundsGrowWithPositionAndShrinkWithPrecision) {
  const auto s = parse_as<spec::rope>("rope:head_dim=64");
  const impl::rope_contract hf(s, kernel::strategy::hf, std::nullopt, 1.0);
  EXPECT_LT(hf.table_bound(10, 0, 1.0, metric::kF32),
            hf.table_bound(1 << 20, 0, 1.0, metric::kF32));
  EXPECT_LT(hf.table_bound(10, 0, 1.0, metric::kF32), hf.table_bound(10, 0, 1.0, metric::kBF16));
  const impl::rope_contract acc(s, kernel::strategy::accurate, std::nullopt, 1.0);
  EXPECT_EQ(acc.table_bound(10, 0, 0.75, metric::kF32),
            acc.table_bound(1 << 30, 0, 0.75, metric::kF32));
  EXPECT_FALSE(impl::rope_contract(s, kernel::strategy::ggml, std::nullopt, 1.0).inv_freq_bound(0));
}

}  // namespace
}  // namespace pev

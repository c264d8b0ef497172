// SPEC strings (pev/spec/parse.h), canonical SPEC strings and validate() (pev/spec/spec.h).

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "pev/spec/parse.h"
#include "pev/spec/spec.h"

namespace {

using namespace pev::spec;

// Collects warnings instead of printing them.
struct warnings {
  std::vector<std::string> messages;
  pev::warning_sink sink() {
    return [this](std::string_view m) { messages.emplace_back(m); };
  }
};

template <class T>
T parse_as(std::string_view text) {
  warnings w;
  const encoding e = parse_spec(text, w.sink());
  EXPECT_TRUE(w.messages.empty()) << text << ": " << w.messages.front();
  EXPECT_TRUE(std::holds_alternative<T>(e)) << text;
  return std::get<T>(e);
}

std::string error_of(std::string_view text) {
  try {
    warnings w;
    parse_spec(text, w.sink());
  } catch (const pev::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return {};
}

TEST(SpecNames, FamiliesTypesLayouts) {
  EXPECT_STREQ(family_name(sinusoidal{}), "sinusoidal");
  EXPECT_STREQ(family_name(learned{}), "learned");
  EXPECT_STREQ(family_name(alibi{}), "alibi");
  EXPECT_STREQ(family_name(t5{}), "t5");
  EXPECT_STREQ(family_name(shaw{}), "shaw");
  EXPECT_STREQ(family_name(rope{}), "rope");
  for (rope_type t :
       {rope_type::default_, rope_type::linear, rope_type::ntk, rope_type::dynamic, rope_type::yarn,
        rope_type::llama3, rope_type::longrope, rope_type::proportional}) {
    EXPECT_EQ(parse_rope_type(to_string(t)), t) << to_string(t);
  }
  EXPECT_STREQ(to_string(rope_type::default_), "default");
  EXPECT_STREQ(to_string(rope_layout::neox), "neox");
  EXPECT_STREQ(to_string(rope_layout::interleaved), "interleaved");
  EXPECT_STREQ(to_string(sinusoidal_layout::interleaved), "interleaved");
  EXPECT_STREQ(to_string(sinusoidal_layout::blocked), "blocked");
  try {
    parse_rope_type("su", "rope_scaling.type");
    FAIL();
  } catch (const pev::error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_scaling.type = 'su'"), std::string::npos);
  }
}

TEST(SpecParse, DesignExampleLlama3) {
  const auto r = parse_as<rope>(
      "rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
      "high_freq_factor=4,original_max_position_embeddings=8192,layout=neox");
  EXPECT_EQ(r.head_dim, 128);
  EXPECT_EQ(r.rotary_dim, 128);
  EXPECT_EQ(r.pairs(), 64);
  EXPECT_EQ(r.rope_theta, 500000.0);
  EXPECT_EQ(r.type, rope_type::llama3);
  EXPECT_EQ(r.factor, 8.0);
  EXPECT_EQ(r.low_freq_factor, 1.0);
  EXPECT_EQ(r.high_freq_factor, 4.0);
  EXPECT_EQ(r.original_max_position_embeddings, 8192);
  EXPECT_EQ(r.max_position_embeddings, 0);
  EXPECT_EQ(r.layout, rope_layout::neox);
  EXPECT_FALSE(r.stateful());
}

TEST(SpecParse, Defaults) {
  const auto s = parse_as<sinusoidal>("sinusoidal:d_model=512");
  EXPECT_EQ(s, (sinusoidal{512, 10000.0, sinusoidal_layout::interleaved, 1.0}));
  const auto t = parse_as<t5>("t5");
  EXPECT_EQ(t, t5{});
  const auto a = parse_as<alibi>("alibi:num_heads=12");
  EXPECT_EQ(a.num_heads, 12);
  EXPECT_EQ(a.max_bias, 8.0);
  const auto r = parse_as<rope>("rope:head_dim=64");
  EXPECT_EQ(r.type, rope_type::default_);
  EXPECT_EQ(r.rope_theta, 10000.0);
  EXPECT_EQ(r.rotary_dim, 64);
  EXPECT_EQ(parse_as<shaw>("shaw:max_relative_position=16").max_relative_position, 16);
}

TEST(SpecParse, ValuesAndSpaces) {
  const auto s =
      parse_as<sinusoidal>(" sinusoidal : d_model = 6 , layout = blocked, freq_shift=0 ");
  EXPECT_EQ(s.d_model, 6);
  EXPECT_EQ(s.layout, sinusoidal_layout::blocked);
  EXPECT_EQ(s.freq_shift, 0.0);
  const auto t = parse_as<t5>("t5:num_buckets=32,max_distance=128,bidirectional=0");
  EXPECT_FALSE(t.bidirectional);
  EXPECT_TRUE(parse_as<t5>("t5:bidirectional=1").bidirectional);
  EXPECT_TRUE(parse_as<t5>("t5:bidirectional=true").bidirectional);
  // Integer keys accept an integral decimal.
  EXPECT_EQ(parse_as<rope>("rope:head_dim=128.0").head_dim, 128);
  EXPECT_EQ(parse_as<rope>("rope:head_dim=1.28e2").head_dim, 128);
  EXPECT_EQ(parse_as<rope>("rope:head_dim=64,rope_theta=1e6").rope_theta, 1e6);
}

TEST(SpecParse, ListsKeepTheirCommas) {
  std::string entries;
  for (int i = 0; i < 32; ++i) {
    if (i > 0) entries.append(i % 2 ? ", " : ",");
    entries.append(std::to_string(1.0 + i / 64.0));
  }
  std::string text = "rope:head_dim=64,rope_type=longrope,short_factor=[";
  text.append(entries).append("],long_factor=[ ").append(entries).append(" ]");
  text.append(",original_max_position_embeddings=4096,max_position_embeddings=131072");
  const auto r = parse_as<rope>(text);
  ASSERT_EQ(r.short_factor.size(), 32u);
  ASSERT_EQ(r.long_factor.size(), 32u);
  EXPECT_EQ(r.short_factor[1], 1.015625);
  EXPECT_EQ(r.long_factor[31], 1.0 + 31 / 64.0);
  // Absent factor: L/Lo, as transformers' factor None.
  EXPECT_EQ(r.factor, 32.0);
  EXPECT_TRUE(r.stateful());
}

TEST(SpecParse, RotaryDimAlternative) {
  const auto r = parse_as<rope>("rope:head_dim=96,rotary_dim=32");
  EXPECT_EQ(r.rotary_dim, 32);
  EXPECT_EQ(static_cast<std::int64_t>(96 * r.partial_rotary_factor), 32);
  const auto p = parse_as<rope>("rope:head_dim=80,partial_rotary_factor=0.4,rotary_dim=32");
  EXPECT_EQ(p.rotary_dim, 32);
  EXPECT_EQ(p.partial_rotary_factor, 0.4);
  // Python truncation: int(66·0.5) = 33 is odd.
  EXPECT_NE(error_of("rope:head_dim=66,partial_rotary_factor=0.5").find("must be even"),
            std::string::npos);
  // Every even rotary_dim of every head_dim up to 512 round-trips through partial_rotary_factor.
  for (std::int64_t h = 2; h <= 512; ++h) {
    for (std::int64_t d = 2; d <= h; d += 2) {
      const auto q = std::get<rope>(
          parse_spec("rope:head_dim=" + std::to_string(h) + ",rotary_dim=" + std::to_string(d)));
      ASSERT_EQ(q.rotary_dim, d) << h;
      ASSERT_EQ(std::get<rope>(parse_spec(to_spec_string(q))), q) << to_spec_string(q);
    }
  }
}

TEST(SpecParse, YarnImplicitFactorOnlyWarns) {
  warnings w;
  const auto e = parse_spec(
      "rope:head_dim=128,rope_type=yarn,factor=4,original_max_position_embeddings=4096,"
      "max_position_embeddings=131072",
      w.sink());
  ASSERT_EQ(w.messages.size(), 1u);
  EXPECT_NE(w.messages[0].find("implicit factor"), std::string::npos) << w.messages[0];
  EXPECT_EQ(std::get<rope>(e).factor, 4.0);
  // Ratio 1 (Lo filled from L) and ratio == factor do not warn.
  parse_as<rope>(
      "rope:head_dim=128,rope_type=yarn,factor=4,original_max_position_embeddings=32768,"
      "max_position_embeddings=32768");
  parse_as<rope>(
      "rope:head_dim=128,rope_type=yarn,factor=32,original_max_position_embeddings=4096,"
      "max_position_embeddings=131072,truncate=false,beta_fast=32,beta_slow=1");
}

TEST(SpecParse, Proportional) {
  const auto r =
      parse_as<rope>("rope:head_dim=256,rope_type=proportional,partial_rotary_factor=0.25");
  EXPECT_EQ(r.rotary_dim, 256);
  EXPECT_EQ(r.partial_rotary_factor, 0.25);
  EXPECT_EQ(r.factor, 1.0);
  const auto f = parse_as<rope>("rope:head_dim=128,rope_type=proportional,factor=8");
  EXPECT_EQ(f.partial_rotary_factor, 1.0);
  EXPECT_EQ(f.factor, 8.0);
}

TEST(SpecLearned, SeededTableIsDeterministicAndFloat32Exact) {
  const auto l = parse_as<learned>("learned:num_positions=4,d_model=3");
  ASSERT_EQ(l.table.size(), 12u);
  // splitmix64 from state 0: first outputs 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, …
  EXPECT_EQ(l.table[0], 6430888.0 / 8388608.0);
  EXPECT_EQ(l.table[1], -1148770.0 / 8388608.0);
  EXPECT_EQ(l.table[2], -7945123.0 / 8388608.0);
  for (double v : l.table) {
    EXPECT_EQ(static_cast<double>(static_cast<float>(v)), v);
    EXPECT_GE(v, -1.0);
    EXPECT_LT(v, 1.0);
  }
  EXPECT_EQ(parse_as<learned>("learned:num_positions=1,d_model=1,seed=42").table[0],
            4052786.0 / 8388608.0);
  EXPECT_EQ(learned_table_from_seed(7, 5, 2), learned_table_from_seed(7, 5, 2));
  EXPECT_NE(learned_table_from_seed(7, 5, 2), learned_table_from_seed(8, 5, 2));

  const auto f = parse_as<learned>(
      "learned:num_positions=2048,d_model=768,table=/data/wpe.npy,target_positions=4096,"
      "align_corners=false");
  EXPECT_EQ(f.table_file, "/data/wpe.npy");
  EXPECT_TRUE(f.table.empty());  // the caller loads it
  EXPECT_FALSE(f.align_corners);
  EXPECT_EQ(to_spec_string(f),
            "learned:num_positions=2048,d_model=768,target_positions=4096,align_corners=false,"
            "table=/data/wpe.npy");
}

TEST(SpecLearned, OffsetIndexesRowPPlusOffset) {
  // OPT's embed_positions: position p reads row p + 2 (docs/encodings.md §2.4).
  const auto o = parse_as<learned>("learned:num_positions=6,d_model=2,offset=2");
  EXPECT_EQ(o.offset, 2);
  EXPECT_EQ(to_spec_string(o), "learned:num_positions=6,d_model=2,offset=2");
  EXPECT_EQ(learned_index(o, 0), 2);
  EXPECT_EQ(learned_index(o, 3), 5);
  EXPECT_EQ(learned_index(o, -2), 0);  // OPT's left padding: position −1 reads row 1
  EXPECT_EQ(learned_index(o, 4), std::nullopt);
  EXPECT_EQ(learned_index(o, -3), std::nullopt);
  EXPECT_EQ(learned_index(o, INT64_MAX), std::nullopt);
  EXPECT_EQ(learned_index(o, INT64_MIN), std::nullopt);
  // Interpolated: the offset indexes the interpolated table's rows.
  EXPECT_EQ(learned_rows(parse_as<learned>("learned:num_positions=6,d_model=2,target_positions=9,"
                                           "offset=8")),
            9);
  EXPECT_NE(error_of("learned:num_positions=6,d_model=2,offset=-1").find("offset"),
            std::string::npos);
  EXPECT_NE(error_of("learned:num_positions=6,d_model=2,offset=6").find("[0, 5]"),
            std::string::npos);
}

TEST(SpecRoundTrip, CanonicalStringsParseBack) {
  const std::vector<std::string> specs = {
      "sinusoidal:d_model=512",
      "sinusoidal:d_model=7,base=10,layout=blocked,freq_shift=0",
      "sinusoidal:d_model=320,base=10000,layout=blocked",
      "learned:num_positions=16,d_model=8,seed=123",
      "learned:num_positions=16,d_model=8,target_positions=40,align_corners=0",
      "learned:num_positions=16,d_model=8,offset=2",
      "alibi:num_heads=12,max_bias=16",
      "t5:num_buckets=64,max_distance=256,bidirectional=false",
      "t5",
      "shaw:max_relative_position=0",
      "rope:head_dim=128",
      "rope:head_dim=64,freq_scale=0.25,layout=interleaved",
      "rope:head_dim=80,partial_rotary_factor=0.4,rope_theta=1e4",
      "rope:head_dim=128,rope_type=linear,factor=10",
      "rope:head_dim=128,rope_type=ntk,factor=4",
      "rope:head_dim=128,rope_type=dynamic,factor=10,max_position_embeddings=2048",
      "rope:head_dim=64,rope_theta=150000,rope_type=yarn,factor=32,"
      "original_max_position_embeddings=4096,max_position_embeddings=131072,truncate=false",
      "rope:head_dim=64,rope_type=yarn,factor=40,original_max_position_embeddings=4096,"
      "mscale=0.707,mscale_all_dim=0.707,beta_fast=16,beta_slow=2,layout=interleaved",
      "rope:head_dim=128,rope_type=yarn,factor=4,original_max_position_embeddings=32768,"
      "attention_factor=1",
      "rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
      "high_freq_factor=4,original_max_position_embeddings=8192,max_position_embeddings=131072",
      "rope:head_dim=4,rope_type=longrope,factor=32,original_max_position_embeddings=4096,"
      "short_factor=[1,1.0299999713897705],long_factor=[1.5,64.8],attention_factor=1.19",
      "rope:head_dim=256,rope_type=proportional,partial_rotary_factor=0.25,factor=8",
  };
  for (const auto& text : specs) {
    const encoding e = parse_spec(text);
    const std::string canonical = to_spec_string(e);
    const encoding back = parse_spec(canonical);
    EXPECT_EQ(back, e) << text << " → " << canonical;
    EXPECT_EQ(to_spec_string(back), canonical);
  }
  EXPECT_EQ(to_spec_string(parse_spec("rope:layout=neox,rope_theta=500000,head_dim=128")),
            "rope:head_dim=128,rope_theta=500000");
  EXPECT_EQ(to_spec_string(parse_spec("t5:num_buckets=32")), "t5");
  EXPECT_EQ(to_spec_string(parse_spec("rope:head_dim=16,rope_theta=0.1e2")),
            "rope:head_dim=16,rope_theta=10");
  // Doubles survive the text exactly.
  rope r;
  r.head_dim = 128;
  r.rotary_dim = 128;
  r.rope_theta = 1e4 + 1.0 / 3.0;
  r.type = rope_type::linear;
  r.factor = 0.1 + 0.2 + 1;
  EXPECT_EQ(std::get<rope>(parse_spec(to_spec_string(r))), r) << to_spec_string(r);
}

TEST(SpecValidate, HandBuiltStructs) {
  rope r;
  r.head_dim = 128;
  r.rotary_dim = 128;
  EXPECT_NO_THROW(validate(r));
  const auto message = [](const encoding& e) {
    try {
      validate(e);
    } catch (const pev::error& err) {
      return std::string(err.what());
    }
    return std::string("(no error)");
  };
  rope bad = r;
  bad.head_dim = 0;
  EXPECT_EQ(message(bad), "rope: head_dim must be an integer in [2, 65536], got 0");
  bad = r;
  bad.rotary_dim = 64;
  EXPECT_NE(message(bad).find("rotary_dim must be int(head_dim·partial_rotary_factor) = 128"),
            std::string::npos);
  bad = r;
  bad.beta_fast = 16;  // a yarn field on a default rope
  EXPECT_NE(message(bad).find("beta_fast applies to rope_type yarn only"), std::string::npos);
  bad = r;
  bad.type = rope_type::yarn;
  bad.factor = 4;
  EXPECT_NE(message(bad).find("original_max_position_embeddings >= 1"), std::string::npos);
  bad = r;
  bad.type = rope_type::longrope;
  bad.original_max_position_embeddings = 4096;
  bad.short_factor.assign(64, 1.0);
  bad.long_factor.assign(63, 1.0);
  EXPECT_NE(message(bad).find("long_factor must have rotary_dim/2 = 64 entries, got 63"),
            std::string::npos);
  bad.long_factor.assign(64, 1.0);
  bad.long_factor[5] = 0.0;
  EXPECT_NE(message(bad).find("long_factor[5] must be finite and > 0"), std::string::npos);
  bad = r;
  bad.type = rope_type::dynamic;
  bad.factor = 2;
  EXPECT_NE(message(bad).find("max_position_embeddings >= 1"), std::string::npos);
  bad = r;
  bad.rope_theta = std::nan("");
  EXPECT_NE(message(bad).find("rope_theta must be finite and > 1"), std::string::npos);

  EXPECT_NE(message(sinusoidal{0}).find("d_model must be an integer in [1, 1048576]"),
            std::string::npos);
  EXPECT_NE(message(sinusoidal{8, 1.0}).find("base must be finite, > 0 and != 1"),
            std::string::npos);
  EXPECT_NE(message(sinusoidal{2, 10000.0, sinusoidal_layout::blocked, 1.0})
                .find("floor(d_model/2) - freq_shift > 0"),
            std::string::npos);
  EXPECT_NO_THROW(validate(sinusoidal{2, 10000.0, sinusoidal_layout::blocked, 0.0}));
  EXPECT_NE(message(alibi{0}).find("num_heads"), std::string::npos);
  EXPECT_NE(message(alibi{8, 0.0}).find("max_bias"), std::string::npos);
  EXPECT_NE(message(t5{2, 128, true}).find("num_buckets must be an integer in [4, "),
            std::string::npos);
  EXPECT_NO_THROW(validate(t5{2, 2, false}));
  EXPECT_NE(message(t5{32, 8, true}).find("exact-bucket limit 8"), std::string::npos);
  EXPECT_NO_THROW(validate(t5{32, 9, true}));
  EXPECT_NE(message(t5{32, 16, false}).find("exact-bucket limit 16"), std::string::npos);
  EXPECT_NE(message(shaw{-1}).find("max_relative_position"), std::string::npos);
  learned l;
  l.num_positions = 4;
  l.d_model = 2;
  EXPECT_NE(message(l).find("table must hold num_positions·d_model = 8 values"), std::string::npos);
  l.table_file = "wpe.npy";
  EXPECT_NO_THROW(validate(l));
  l.num_positions = 1 << 20;
  l.d_model = 1 << 10;
  EXPECT_NE(message(l).find("at most 2^28"), std::string::npos);
}

TEST(SpecParse, StrictErrorsNameTheKey) {
  // A few beyond the shared corpus (tests/spec/invalid_specs.tsv).
  EXPECT_NE(error_of("rope:head_dim=128,rope_type=proportional,rotary_dim=64")
                .find("rotary_dim does not apply to rope_type=proportional"),
            std::string::npos);
  EXPECT_NE(error_of("rope:head_dim=128,partial_rotary_factor=0.5,rotary_dim=32").find("disagrees"),
            std::string::npos);
  EXPECT_NE(error_of("learned:num_positions=4,d_model=4,table=a.npy,seed=1").find("seed"),
            std::string::npos);
  EXPECT_NE(
      error_of("sinusoidal:d_model=8,freq_shift=0").find("freq_shift applies to layout=blocked"),
      std::string::npos);
  EXPECT_NE(error_of("rope:head_dim=128,rope_type=longrope,short_factor=[1],long_factor=[1],"
                     "original_max_position_embeddings=4096")
                .find("needs factor"),
            std::string::npos);
  EXPECT_NE(
      error_of("rope:head_dim=128,short_factor=1").find("does not apply to rope_type=default"),
      std::string::npos);
  EXPECT_NE(error_of("rope:head_dim=8,rope_type=longrope,factor=2,original_max_position_embeddings="
                     "64,short_factor=1,long_factor=[1,1]")
                .find("short_factor must be a list"),
            std::string::npos);
  EXPECT_NE(error_of("rope:head_dim=8,factor=[2]").find("does not apply"), std::string::npos);
  EXPECT_NE(
      error_of("rope:head_dim=8,rope_type=linear,factor=[2]").find("factor takes a single value"),
      std::string::npos);
  EXPECT_NE(
      error_of("rope:head_dim=8,rope_type=yarn,factor=2,original_max_position_embeddings=4096,"
               "beta_fast=0")
          .find("beta_fast and beta_slow must be > 0"),
      std::string::npos);
  EXPECT_NE(error_of("rope:head_dim=1e-400").find("head_dim"), std::string::npos);
  EXPECT_NE(error_of("rope:head_dim=9223372036854775808").find("head_dim is out of range"),
            std::string::npos);
  EXPECT_NE(error_of("t5:").find("expected key=value"), std::string::npos);
  EXPECT_NE(error_of("rope:head_dim=8,,rope_theta=2").find("empty item"), std::string::npos);
  EXPECT_NE(error_of("rope:head_dim").find("expected key=value"), std::string::npos);
  EXPECT_NE(error_of("").find("missing family"), std::string::npos);
  EXPECT_NE(error_of("rope:head_dim=8,short_factor=[[1]]").find("nested"), std::string::npos);
  EXPECT_NE(error_of("rope:head_dim=2,rope_type=ntk,factor=2").find("rotary_dim >= 4"),
            std::string::npos);
}

// The ggml form (docs/encodings.md §8.7): ggml_rope_ext's parameters, their defaults, and the
// canonical SPEC that parses back; a GGUF rope_freqs tensor from npy bytes.
TEST(SpecGgmlForm, ParsesDefaultsAndRoundTrips) {
  const auto r = std::get<rope>(
      parse_spec("ggml:head_dim=80,n_dims=20,mode=normal,freq_scale=1.4245,ext_factor=0.7465,"
                 "attn_factor=1.4245,beta_fast=1,beta_slow=1,n_ctx_orig=0,"
                 "freq_factors=[1,0.9,1.1,1,1.05,1,1,1,1,0.95]"));
  EXPECT_EQ(r.type, rope_type::ggml);
  EXPECT_EQ(r.head_dim, 80);
  EXPECT_EQ(r.rotary_dim, 20);
  EXPECT_EQ(r.layout, rope_layout::interleaved);
  EXPECT_EQ(r.rope_theta, 10000.0);
  EXPECT_EQ(r.freq_scale, 1.4245);
  EXPECT_EQ(r.ext_factor, 0.7465);
  EXPECT_EQ(r.attn_factor, 1.4245);
  EXPECT_EQ(r.beta_fast, 1.0);
  EXPECT_EQ(r.beta_slow, 1.0);
  EXPECT_EQ(r.original_max_position_embeddings, 0);
  EXPECT_EQ(r.freq_factors, (std::vector<double>{1, 0.9, 1.1, 1, 1.05, 1, 1, 1, 1, 0.95}));
  EXPECT_EQ(std::get<rope>(parse_spec(to_spec_string(r))), r) << to_spec_string(r);

  // Defaults: ggml_rope_ext's off values, n_dims = head_dim; mode 2 is NEOX.
  const auto d = std::get<rope>(parse_spec("ggml:head_dim=64,mode=2"));
  EXPECT_EQ(d.rotary_dim, 64);
  EXPECT_EQ(d.layout, rope_layout::neox);
  EXPECT_EQ(d.freq_scale, 1.0);
  EXPECT_EQ(d.ext_factor, 0.0);
  EXPECT_EQ(d.attn_factor, 1.0);
  EXPECT_EQ(d.beta_fast, 32.0);
  EXPECT_EQ(d.beta_slow, 1.0);
  EXPECT_EQ(to_spec_string(d), "ggml:head_dim=64,mode=neox");

  // The form's fields are refused on a transformers rope_type.
  rope bad = d;
  bad.type = rope_type::default_;
  bad.ext_factor = 0.5;
  EXPECT_THROW(validate(bad), pev::error);

  // rope_freqs as a float32 npy of n_dims/2 values, and as [1, n] (a leading 1 dropped).
  const auto npy = [](const std::string& shape, const std::vector<float>& v) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = std::string("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    out += header;
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    return out;
  };
  EXPECT_EQ(freq_factors_from_bytes(npy("(4,)", {1.0f, 2.0f, 0.5f, 1.0f}), "f.npy", 4),
            (std::vector<double>{1, 2, 0.5, 1}));
  EXPECT_EQ(freq_factors_from_bytes(npy("(1, 2)", {1.0f, 3.0f}), "f.npy", 2),
            (std::vector<double>{1, 3}));
  try {
    (void)freq_factors_from_bytes(npy("(3,)", {1.0f, 2.0f, 3.0f}), "f.npy", 4);
    ADD_FAILURE() << "wrong length accepted";
  } catch (const pev::error& e) {
    EXPECT_NE(std::string(e.what()).find("expected [4] (n_dims/2)"), std::string::npos) << e.what();
  }
}

}  // namespace

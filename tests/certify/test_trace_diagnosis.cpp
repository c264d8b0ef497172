// A failing trace site diagnosed on what was compared (docs/certify.md §8.3): the site's own
// certification compared once, its RoPE diagnosis kept and run on that comparison, the integration
// candidates tried on a sample of the site's tokens first and on the whole site only when the
// sample holds — the certificate the same as certifying with the diagnosis in place. Made with
// pev's own hf kernels on a model of a sliding layer (θ 10^4) and a full one (θ 10^6).

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <vector>

#include "../../verify/src/certify/detail.h"
#include "../../verify/src/certify/trace_sites.h"
#include "pev/certify/certify.h"
#include "pev/core/interrupt.h"
#include "pev/impl/implementation.h"
#include "pev/impl/mutants.h"
#include "pev/report/json.h"
#include "pev/spec/model.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

constexpr std::int64_t B = 2, H = 2, D = 64;
const char* kSliding = "rope:head_dim=64,rope_theta=10000";
const char* kFull = "rope:head_dim=64,rope_theta=1000000";
const char* kWrongTheta = "rope:head_dim=64,rope_theta=20000";

spec::model_spec model() {
  spec::model_spec m;
  m.model_type = "test";
  m.num_layers = 2;
  for (std::int64_t i = 0; i < 2; ++i) {
    spec::layer_spec l;
    l.index = i;
    l.type = i == 0 ? "sliding_attention" : "full_attention";
    l.encoding = spec::parse_spec(i == 0 ? kSliding : kFull);
    l.rule = "layer_types[" + std::to_string(i) + "]";
    m.layers.push_back(l);
  }
  return m;
}

// position_ids [B, T]: row 0 at 0 … T − 1, row 1 at 7 … T + 6.
std::vector<std::int64_t> positions(std::int64_t T) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(B * T));
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t t = 0; t < T; ++t) p[static_cast<std::size_t>(b * T + t)] = t + 7 * b;
  }
  return p;
}

// A trace of layer 0 only: seeded q and k [B, T, H, D] (bthd) rotated by `spec` at `rotated_at`
// (B·T positions), position_ids `pos`.
certify::dump trace(std::int64_t T, const char* spec, const std::vector<std::int64_t>& rotated_at,
                    const std::vector<std::int64_t>& pos) {
  certify::dump d;
  d.metadata["qk_layout"] = "bthd";
  d.tensors.emplace("position_ids", io::array::from_int64({B, T}, pos));
  const auto im = impl::make_builtin(spec::parse_spec(spec), kernel::strategy::hf);
  std::mt19937_64 rng(20261207);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const char* role : {"q", "k"}) {
    std::vector<float> in(static_cast<std::size_t>(B * T * H * D)), out(in.size());
    for (float& v : in) v = normal(rng);
    const auto n = static_cast<std::size_t>(T * H * D);
    for (std::int64_t b = 0; b < B; ++b) {
      const auto o = static_cast<std::size_t>(b) * n;
      im->rope_rotate(std::span(rotated_at).subspan(static_cast<std::size_t>(b * T), T),
                      std::nullopt,
                      kernel::heads_view<const float>{std::span(in).subspan(o, n), T, H, D},
                      kernel::heads_view<float>{std::span(out).subspan(o, n), T, H, D});
    }
    d.tensors.emplace(std::string("layers.0.") + role + "_in",
                      io::array::from_values<float>({B, T, H, D}, in));
    d.tensors.emplace(std::string("layers.0.") + role + "_out",
                      io::array::from_values<float>({B, T, H, D}, out));
  }
  return d;
}

certify::detail::trace_site site_of(const certify::dump& d) {
  return certify::detail::trace_sites(model(), d, {0}).front();
}

certify::options opts() {
  certify::options o;
  o.threads = 2;
  return o;
}

// The certificate as JSON, its timing left out.
std::string json_of(certify::certificate c) {
  c.certification->seconds = 0;
  return certify::to_json(c);
}

// Counts the interruption points the work passes (pev/core/interrupt.h): one per chunk of rows a
// comparison prepares, one per mistake the diagnosis replays — on the calling thread only.
std::atomic<std::uint64_t> points{0};
bool count_point() {
  ++points;
  return false;
}
std::uint64_t points_of(const std::function<void()>& work) {
  points = 0;
  set_interrupt_check(&count_point);
  work();
  set_interrupt_check(nullptr);
  return points;
}

TEST(TraceDiagnosis, AFailingSiteIsComparedOnceAndDiagnosedOnThatComparison) {
  // A sliding layer with θ 2·10^4: no integration mistake explains it (neither the full layers'
  // RoPE nor row 0's positions), so the site gets the one-dump diagnosis of its own encoding.
  const std::int64_t T = 4096;
  const auto pos = positions(T);
  const certify::dump d = trace(T, kWrongTheta, pos, pos);
  const auto ts = site_of(d);
  const certify::options o = opts();
  certify::detail::site_outcome site;
  const std::uint64_t at_site =
      points_of([&] { site = certify::detail::certify_site(ts, model(), d, o); });
  // The same sub-dump certified once with its diagnosis in place.
  const certify::dump sub = certify::detail::site_dump(ts.data, d);
  certify::certificate one;
  const std::uint64_t once =
      points_of([&] { one = certify::certify_dump(*ts.layer.encoding, sub, o); });
  // One comparison alone (the genuine layer's: the same shapes, certified, no diagnosis).
  const certify::dump genuine = trace(T, kSliding, pos, pos);
  const std::uint64_t comparison = points_of([&] {
    certify::certify_dump(spec::parse_spec(kSliding),
                          certify::detail::site_dump(site_of(genuine).data, genuine), o);
  });
  RecordProperty("points_at_site", std::to_string(at_site));
  RecordProperty("points_one_certification", std::to_string(once));
  RecordProperty("points_one_comparison", std::to_string(comparison));
  ASSERT_GT(comparison, 8u);
  EXPECT_EQ(site.row.named.value_or(""), "rope-theta-wrong");
  EXPECT_EQ(site.row.result, report::grade::not_certified);
  // The site's work is that run's and the candidates' samples — less than one more comparison
  // (certified whole, each candidate and a second certification for the diagnosis would be four).
  EXPECT_GE(at_site, once);
  EXPECT_LT(at_site, once + comparison)
      << "site " << at_site << ", one certification " << once << ", one comparison " << comparison;
  // What the site's row says is that certificate's.
  ASSERT_EQ(site.checks.size(), one.checks.size());
  for (std::size_t i = 0; i < one.checks.size(); ++i) {
    EXPECT_EQ(site.checks[i].id, one.checks[i].id);
    EXPECT_EQ(site.checks[i].best, one.checks[i].best);
    EXPECT_EQ(site.checks[i].recipe_rho, one.checks[i].recipe_rho);
  }
  EXPECT_EQ(site.row.named, one.certification->why->named);
  EXPECT_EQ(site.mismatches.size(), one.certification->why->first.size());
}

TEST(TraceDiagnosis, AKeptDiagnosisGivesTheCertificateOfOneRun) {
  // certify_rope keeps its diagnosis (context::later); run later on the certificate, it gives the
  // certificate certify_dump gives with the diagnosis in place, field by field.
  const std::int64_t T = 256;
  const auto pos = positions(T);
  const certify::dump d = trace(T, kWrongTheta, pos, pos);
  const certify::dump sub = certify::detail::site_dump(site_of(d).data, d);
  const spec::encoding e = spec::parse_spec(kSliding);
  const certify::options o = opts();
  std::function<void(certify::detail::context&)> later;
  certify::certificate kept = certify::detail::certify_frame(e, sub, o, [&](auto& k) {
    k.later = &later;
    certify::detail::certify_rope(std::get<spec::rope>(e), k);
  });
  ASSERT_TRUE(later);
  EXPECT_FALSE(kept.certification->why->named);  // not diagnosed yet
  certify::detail::diagnose_later(later, e, sub, o, kept);
  const certify::certificate in_place = certify::certify_dump(e, sub, o);
  ASSERT_TRUE(in_place.certification->why && in_place.certification->why->named);
  EXPECT_EQ(json_of(kept), json_of(in_place));
}

TEST(TraceDiagnosis, ACandidateIsNamedOnlyWhereItHoldsOnTheWholeSite) {
  // Rows 1… rotated at row 0's positions: batch-row-positions, from the sample then the whole.
  const std::int64_t T = 1024;
  const auto pos = positions(T);
  auto row0 = pos;
  std::copy_n(row0.begin(), T, row0.begin() + T);
  const certify::options o = opts();
  const auto named = [&](const certify::dump& d) {
    return certify::detail::certify_site(site_of(d), model(), d, o).row.named.value_or("");
  };
  EXPECT_EQ(named(trace(T, kSliding, row0, pos)), "batch-row-positions");
  // The same but for one token that no sample column holds (sample_columns): the sample holds,
  // the whole site does not — not named.
  const std::vector<std::size_t> cols = certify::detail::sample_columns(
      certify::detail::trace_batch_positions(trace(T, kSliding, pos, pos)), &row0);
  std::size_t off = 1;
  while (std::binary_search(cols.begin(), cols.end(), off)) ++off;
  auto all_but_one = row0;
  all_but_one[static_cast<std::size_t>(T) + off] += 1;
  EXPECT_NE(named(trace(T, kSliding, all_but_one, pos)), "batch-row-positions");
  // The full layers' RoPE on the sliding layer: rope-of-other-layer-type.
  EXPECT_EQ(named(trace(T, kFull, pos, pos)), "rope-of-other-layer-type");
}

TEST(TraceDiagnosis, TheSampleIsTheLargestPositionsAndEvenlySpacedCutInTheSitesLayout) {
  const std::int64_t T = 1024;
  const auto pos = positions(T);
  auto packed = pos;  // row 1 restarts at 512: the largest positions of its second half are small
  for (std::int64_t t = T / 2; t < T; ++t) packed[static_cast<std::size_t>(T + t)] = t - T / 2;
  certify::detail::batch_positions b{B, T, pos};
  const auto cols = certify::detail::sample_columns(b, &packed);
  ASSERT_FALSE(cols.empty());
  EXPECT_TRUE(std::is_sorted(cols.begin(), cols.end()));
  EXPECT_EQ(cols.back(), static_cast<std::size_t>(T - 1));
  EXPECT_EQ(cols.front(), 0u);
  EXPECT_LE(cols.size(), 2 * certify::detail::kSampleLargest + certify::detail::kSampleEven);
  // A short site is certified whole.
  EXPECT_TRUE(certify::detail::sample_columns({B, 100, positions(100)}, nullptr).empty());

  // The cut: q/k at the sampled tokens, in the layout read; position_ids as given.
  const certify::dump d = trace(T, kSliding, pos, pos);
  const auto ts = site_of(d);
  const auto s = certify::detail::sample_dump(ts.data, d, &packed, cols, "bthd");
  ASSERT_TRUE(s);
  const io::array& q = *s->find("q_out");
  const auto n = static_cast<std::int64_t>(cols.size());
  EXPECT_EQ(q.shape, (std::vector<std::int64_t>{B, n, H, D}));
  const auto full = ts.data.find("q_out")->to_doubles(), cut = q.to_doubles();
  const auto p = s->find("position_ids")->to_int64();
  for (std::int64_t r = 0; r < B; ++r) {
    for (std::int64_t c = 0; c < n; ++c) {
      const auto t = static_cast<std::int64_t>(cols[static_cast<std::size_t>(c)]);
      EXPECT_EQ(p[static_cast<std::size_t>(r * n + c)],
                packed[static_cast<std::size_t>(r * T + t)]);
      for (std::int64_t u = 0; u < H * D; ++u) {
        ASSERT_EQ(cut[static_cast<std::size_t>((r * n + c) * H * D + u)],
                  full[static_cast<std::size_t>((r * T + t) * H * D + u)]);
      }
    }
  }
  EXPECT_EQ(s->metadata.at("qk_layout"), "bthd");
  // A layout whose token axis does not have T entries, and a site holding a table: no sample.
  EXPECT_FALSE(certify::detail::sample_dump(ts.data, d, nullptr, cols, "bhtd"));
  auto with_table = ts.data;
  with_table.tensors.emplace("cos",
                             io::array::from_values<float>({T, D}, std::vector<float>(T * D)));
  EXPECT_FALSE(certify::detail::sample_dump(with_table, d, nullptr, cols, "bthd"));
}

}  // namespace
}  // namespace pev

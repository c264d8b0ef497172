// `pev certify --shard I/N` and the merge of shard certificates (docs/design.md §9.3): for table
// and q/k dumps, certified and not, the certificates of N shards — written as certificate.json
// and read back — merge into the certificate.json of the unsharded run, field for field but the
// merge's provenance and the wall time; shards of different runs, missing or repeated shards are
// refused naming the problem.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/core/error.h"
#include "pev/impl/implementation.h"
#include "pev/io/safetensors.h"
#include "pev/report/difference.h"
#include "pev/report/json.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::path(testing::TempDir()) / ("pev_shard_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Rotated q (2 heads) and k (1 head) of seeded standard-normal inputs at `qp`.
template <class T>
void add_qk(const impl::implementation& im, const spec::rope& r,
            const std::vector<std::int64_t>& qp, io::tensor_file& tf) {
  const auto T_ = static_cast<std::int64_t>(qp.size());
  std::mt19937_64 rng(20261124);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& [name, heads] : {std::pair<std::string, std::int64_t>{"q", 2}, {"k", 1}}) {
    std::vector<T> in(static_cast<std::size_t>(T_ * heads * r.head_dim)), out(in.size());
    for (T& v : in) v = T(normal(rng));
    im.rope_rotate(qp, std::nullopt, kernel::heads_view<const T>{in, T_, heads, r.head_dim},
                   kernel::heads_view<T>{out, T_, heads, r.head_dim});
    tf.add(name + "_in", io::array::from_values<T>({T_, heads, r.head_dim}, in));
    tf.add(name + "_out", io::array::from_values<T>({T_, heads, r.head_dim}, out));
  }
}

// The fp32 table of `pev compute --strategy hf` at positions 0 … P − 1, its inv_freq, and with
// `qk` rotated q/k at every 8th position; `perturb` changes one value first (a planted bug).
fs::path table_dump(const std::string& name, const std::string& spec_text, std::int64_t P, bool qk,
                    const std::function<void(std::vector<float>&)>& perturb = {}) {
  const spec::encoding e = spec::parse_spec(spec_text);
  const auto& r = std::get<spec::rope>(e);
  const auto im = impl::make_builtin(e, kernel::strategy::hf);
  std::vector<std::int64_t> pos(static_cast<std::size_t>(P));
  for (std::int64_t p = 0; p < P; ++p) pos[static_cast<std::size_t>(p)] = p;
  std::vector<float> c(static_cast<std::size_t>(P * r.pairs())), s(c.size());
  im->rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  if (perturb) perturb(c);
  io::tensor_file tf;
  tf.add("cos", io::array::from_values<float>({P, r.pairs()}, c));
  tf.add("sin", io::array::from_values<float>({P, r.pairs()}, s));
  tf.add("positions", io::array::from_int64({P}, pos));
  tf.add("inv_freq", io::array::from_floats({r.pairs()}, im->inv_freq(std::nullopt)));
  if (qk) {
    std::vector<std::int64_t> qp;
    for (std::int64_t p = 0; p < P; p += 8) qp.push_back(p);
    add_qk<float>(*im, r, qp, tf);
    tf.add("qk_positions", io::array::from_int64({static_cast<std::int64_t>(qp.size())}, qp));
  }
  const fs::path f = temp_dir(name) / "dump.safetensors";
  io::write_safetensors(f, tf);
  return f;
}

// bf16 q/k rotated by the hf strategy (no table) at T seeded positions below 2^17.
fs::path qk_dump(const std::string& spec_text, std::int64_t T) {
  const spec::encoding e = spec::parse_spec(spec_text);
  const auto im = impl::make_builtin(e, kernel::strategy::hf);
  std::vector<std::int64_t> qp;
  std::mt19937_64 rng(20261124);
  std::uniform_int_distribution<std::int64_t> pick(0, 1 << 17);
  for (std::int64_t t = 0; t < T; ++t) qp.push_back(pick(rng));
  io::tensor_file tf;
  add_qk<bfloat16>(*im, std::get<spec::rope>(e), qp, tf);
  tf.add("positions", io::array::from_int64({T}, qp));
  const fs::path f = temp_dir("qk") / "dump.safetensors";
  io::write_safetensors(f, tf);
  return f;
}

// A certificate as `pev merge` reads it: written as certificate.json and parsed back.
certify::certificate through_json(const certify::certificate& c) {
  return report::from_json(certify::to_json(c), "certificate.json");
}

// The first field where two certificates differ (report::differences), skipping what a merge may
// change: the merge's provenance (merged_shards) and record (merged_from, inputs_reverified), and
// the wall time. Empty when they agree.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b) {
  const auto d = report::differences(
      a.dump(), b.dump(),
      {"/provenance/merged_shards", "/seconds", "/merged_from", "/inputs_reverified"}, 1);
  return d.empty() ? "" : d.front();
}

std::vector<certify::certificate> shards_of(const spec::encoding& e, const certify::dump& d,
                                            certify::options o, int n) {
  std::vector<certify::certificate> v;
  o.shard_count = n;
  for (int i = 0; i < n; ++i) {
    o.shard_index = i;
    v.push_back(through_json(certify::certify_dump(e, d, o)));
  }
  return v;
}

// Certifies the dump whole and in N = 1, 2, 3, 7 shards; each merge equals the whole run's
// certificate.json. Returns the whole run's exit code.
int expect_merges_equal_whole(const std::string& what, const spec::encoding& e, const fs::path& f,
                              const certify::options& o) {
  const certify::dump d = certify::read_dump({f});
  const certify::certificate whole = certify::certify_dump(e, d, o);
  const auto want = nlohmann::json::parse(certify::to_json(whole));
  for (int n : {1, 2, 3, 7}) {
    std::vector<certify::certificate> shards = shards_of(e, d, o, n);
    if (n > 1) {
      // A shard is never certified on its own: 1 when its rows fail, else partial.
      bool any_fails = false;
      for (const auto& s : shards) {
        EXPECT_TRUE(s.exit_code() == 1 || s.exit_code() == report::kExitPartial) << what;
        EXPECT_TRUE(s.checks.empty() || s.checks.back().state.has_value()) << what;
        any_fails = any_fails || s.exit_code() == 1;
      }
      EXPECT_EQ(any_fails, whole.exit_code() == 1) << what << ", " << n << " shards";
    }
    if (n == 1) {
      // --shard 0/1 is the unsharded run.
      EXPECT_EQ(first_difference(want, nlohmann::json::parse(certify::to_json(shards[0]))), "")
          << what;
      continue;
    }
    // In any order given.
    std::reverse(shards.begin(), shards.end());
    const certify::certificate merged = certify::merge_shards(std::move(shards));
    const auto got = nlohmann::json::parse(certify::to_json(merged));
    EXPECT_EQ(first_difference(want, got), "") << what << ", " << n << " shards";
    EXPECT_EQ(got["provenance"]["merged_shards"].size(), static_cast<std::size_t>(n));
    EXPECT_EQ(merged.exit_code(), whole.exit_code()) << what;
  }
  return whole.exit_code();
}

TEST(CertifyShard, Fp32TableMergesToTheUnshardedCertificate) {
  const std::string spec = "rope:head_dim=128,rope_theta=500000";
  const fs::path f = table_dump("fp32", spec, 4096, false);
  EXPECT_EQ(expect_merges_equal_whole("fp32 hf table 4096x64", spec::parse_spec(spec), f, {}), 0);
}

TEST(CertifyShard, Bf16QkMergesToTheUnshardedCertificate) {
  const std::string spec = "rope:head_dim=64,rope_theta=10000";
  const fs::path f = qk_dump(spec, 300);
  certify::options o;
  o.recipe = "hf";
  EXPECT_EQ(expect_merges_equal_whole("bf16 q/k", spec::parse_spec(spec), f, o), 0);
}

TEST(CertifyShard, NotCertifiedDumpMergesWithItsDiagnosis) {
  // A planted bug: two values of one pair off by 2^-8, at rows 300 and 301 (in one
  // shard of every N here, so that the other shards hold on their rows and the merge takes the
  // failing shard's diagnosis), in a table with q/k (first mismatches across checks).
  const std::string spec = "rope:head_dim=32,rope_theta=10000";
  const fs::path f = table_dump("bug", spec, 512, true, [](std::vector<float>& c) {
    c[300 * 16 + 5] += 0x1p-8f;
    c[301 * 16 + 5] += 0x1p-8f;
  });
  const int code = expect_merges_equal_whole("planted bug", spec::parse_spec(spec), f, {});
  EXPECT_EQ(code, 1);
}

TEST(CertifyShard, ADeferredChoiceCheckMergesToTheShardsChoice) {
  // Unsharded, an fp32 table's choice of hf frequencies on the rows of the largest positions is
  // checked on every row by the replay of every row (docs/numerics.md §13.9); shards check it
  // before their rows. The rows below 12288 of pair 1 follow the next fp32 frequency up: the
  // choice on the top 4096 rows leaves values beyond every rung there, and the pair is chosen
  // again on every row, where the frequency up fits more rows — the rows replayed again under it.
  // The same choice and certificate either way. No inv_freq: the frequencies are chosen.
  const std::string spec_text = "rope:head_dim=32,rope_theta=10000";
  const spec::encoding e = spec::parse_spec(spec_text);
  const auto& r = std::get<spec::rope>(e);
  const auto im = impl::make_builtin(e, kernel::strategy::hf);
  constexpr std::int64_t P = 16384;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(P));
  for (std::int64_t p = 0; p < P; ++p) pos[static_cast<std::size_t>(p)] = p;
  std::vector<float> c(static_cast<std::size_t>(P * r.pairs())), s(c.size());
  im->rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  const float up = std::nextafter(im->inv_freq(std::nullopt)[1], 1.0f);
  for (std::int64_t p = 0; p < 12288; ++p) {
    const double angle = static_cast<float>(p) * up;
    c[static_cast<std::size_t>(p * r.pairs() + 1)] = static_cast<float>(std::cos(angle));
    s[static_cast<std::size_t>(p * r.pairs() + 1)] = static_cast<float>(std::sin(angle));
  }
  io::tensor_file tf;
  tf.add("cos", io::array::from_values<float>({P, r.pairs()}, c));
  tf.add("sin", io::array::from_values<float>({P, r.pairs()}, s));
  const fs::path f = temp_dir("deferred") / "dump.safetensors";
  io::write_safetensors(f, tf);
  certify::options o;
  o.diagnose = false;
  expect_merges_equal_whole("deferred choice check", e, f, o);
}

TEST(CertifyShard, ShardRowsPartitionEveryRow) {
  // The rows of N shards are contiguous and cover every row once, for any R and N (R < N too).
  const spec::encoding e = spec::parse_spec("rope:head_dim=8,rope_theta=10000");
  const fs::path f = table_dump("rows", "rope:head_dim=8,rope_theta=10000", 5, false);
  const certify::dump d = certify::read_dump({f});
  std::uint64_t values = 0;
  for (const auto& s : shards_of(e, d, {}, 7)) {
    for (const auto& c : s.checks) {
      if (c.id == "cos") values += c.values;
    }
  }
  EXPECT_EQ(values, 5u * 4u);
}

TEST(CertifyShard, BadMergesAreRefusedNamingTheProblem) {
  const std::string spec = "rope:head_dim=16,rope_theta=10000";
  const spec::encoding e = spec::parse_spec(spec);
  const certify::dump d = certify::read_dump({table_dump("refuse", spec, 64, false)});
  const auto three = shards_of(e, d, {}, 3);
  auto refused = [](std::vector<certify::certificate> v, const std::string& needle) {
    try {
      certify::merge_shards(std::move(v));
    } catch (const error& ex) {
      EXPECT_NE(std::string(ex.what()).find(needle), std::string::npos) << ex.what();
      return;
    }
    ADD_FAILURE() << "merged; expected a refusal naming " << needle;
  };
  refused({three[0], three[2]}, "2 of 3 shards given (missing: 1)");
  refused({three[0], three[1], three[1], three[2]}, "shard 1 given twice");
  // Another dump (other inputs' SHA-256).
  const certify::dump other = certify::read_dump(
      {table_dump("refuse2", spec, 64, false, [](std::vector<float>& c) { c[3] = 0; })});
  refused({three[0], shards_of(e, other, {}, 3)[1], three[2]}, "the inputs' SHA-256 differ");
  // Other options (a claim).
  certify::options claim;
  claim.recipe = "hf";
  refused({three[0], shards_of(e, d, claim, 3)[1], three[2]}, "the options");
  // Another seed, another shard count, another spec.
  auto seeded = three[1];
  seeded.prov.seed = 7;
  refused({three[0], seeded, three[2]}, "the seed differ");
  refused({three[0], shards_of(e, d, {}, 2)[1], three[2]}, "differ");
  const spec::encoding e2 = spec::parse_spec("rope:head_dim=16,rope_theta=20000");
  refused({three[0], shards_of(e2, d, {}, 3)[1], three[2]}, "the spec differ");
  // An unsharded certificate is complete.
  refused({certify::certify_dump(e, d, {})}, "not a shard's");
}

// A shard certificate edited as JSON (a CI artifact is an untrusted file), read back as merge
// reads it; pev::error (naming the problem) where the edit makes it unreadable.
certify::certificate edited(const certify::certificate& c,
                            const std::function<void(nlohmann::json&)>& edit) {
  auto j = nlohmann::json::parse(certify::to_json(c));
  edit(j);
  return report::from_json(j.dump(), "certificate.json");
}

// Merge verifies what it merges (docs/certify.md §6): each forgery of the shards of a good and
// a bad dump is refused naming the inconsistency, where merging them as given certified the bad
// dump or claimed rows never compared.
TEST(CertifyShard, ForgedShardsAreRefusedNamingTheInconsistency) {
  const std::string spec = "rope:head_dim=16,rope_theta=10000";
  const spec::encoding e = spec::parse_spec(spec);
  const certify::dump good = certify::read_dump({table_dump("forge_good", spec, 64, false)});
  // One wrong value in row 10: in shard 0's rows of 2.
  const certify::dump bad = certify::read_dump({table_dump(
      "forge_bad", spec, 64, false, [](std::vector<float>& c) { c[10 * 8 + 3] += 0x1p-6f; })});
  const auto g = shards_of(e, good, {}, 2), b = shards_of(e, bad, {}, 2);
  ASSERT_EQ(certify::merge_shards({g[0], g[1]}).exit_code(), 0);
  ASSERT_EQ(certify::merge_shards({b[0], b[1]}).exit_code(), 1);
  ASSERT_EQ(b[1].exit_code(), report::kExitPartial);  // the bad row is shard 0's
  auto refused = [](std::vector<certify::certificate> v, const std::string& needle) {
    try {
      const auto m = certify::merge_shards(std::move(v));
      ADD_FAILURE() << "merged (exit " << m.exit_code() << "); expected a refusal naming "
                    << needle;
    } catch (const error& ex) {
      EXPECT_NE(std::string(ex.what()).find(needle), std::string::npos) << ex.what();
    }
  };
  const auto one_shard = [](nlohmann::json& j) {
    j["shard"]["count"] = 1;
    j["provenance"]["shard_count"] = 1;
  };
  // Shard 0 of 2 edited to be shard 0 of 1: alone it would claim every row.
  refused({edited(g[0], one_shard)}, "compares rows [0, 64) of 64 for check 'cos', but says it");
  // Shard 0 relabelled as shard 1 (rows 0 … 31 twice, 32 … 63 never): it holds shard 0's own
  // check (inv_freq, no rows); without it, its rows are not shard 1's; with its rows edited to
  // shard 1's too, the digests still tell.
  const auto drop = [](nlohmann::json& j, const std::string& id) {
    auto& cs = j["checks"];
    cs.erase(std::find_if(cs.begin(), cs.end(), [&](const auto& c) { return c["id"] == id; }));
  };
  const auto as_shard_1 = [&](nlohmann::json& j) {
    j["shard"]["index"] = 1;
    j["provenance"]["shard_index"] = 1;
  };
  refused({g[0], edited(g[0], as_shard_1)},
          "shard 1 has check 'inv_freq', which only shard 0 runs");
  const auto relabelled = [&](nlohmann::json& j) {
    as_shard_1(j);
    drop(j, "inv_freq");
  };
  refused({g[0], edited(g[0], relabelled)}, "but says it compared rows [0, 32)");
  refused({g[0], edited(g[0],
                        [&](nlohmann::json& j) {
                          relabelled(j);
                          for (auto& c : j["checks"]) {
                            c["figures_state"]["rows"]["first"] = 32;
                            c["figures_state"]["rows"]["end"] = 64;
                          }
                        })},
          "the digests of the shards' rows add up to");
  // A check deleted from a shard.
  refused({g[0], edited(g[1], [&](nlohmann::json& j) { drop(j, "sin"); })},
          "shard 1 lacks the rows of check 'sin'");
  // Counts: negative (unreadable), more faithful than values, values not the rows' own.
  try {
    edited(g[1], [](nlohmann::json& j) { j["checks"][0]["figures_state"]["faithful"] = -5; });
    ADD_FAILURE() << "a negative count was read";
  } catch (const error& ex) {
    EXPECT_NE(std::string(ex.what()).find("a count is -5"), std::string::npos) << ex.what();
  }
  refused({g[0], edited(g[1],
                        [](nlohmann::json& j) {
                          auto& st = j["checks"][0]["figures_state"];
                          st["faithful"] = st["values"].get<std::uint64_t>() + 100;
                        })},
          "faithful of 256 values");
  refused({g[0], edited(g[1],
                        [](nlohmann::json& j) {
                          auto& st = j["checks"][0]["figures_state"];
                          for (const char* k : {"values", "correctly_rounded", "faithful"}) {
                            st[k] = st[k].get<std::uint64_t>() / 2;
                          }
                        })},
          "inconsistent");
  // Good shard 0 pointed at the bad dump (its path and SHA-256), with the bad dump's honest
  // shard 1: the shards did not read the same data.
  refused({edited(g[0],
                  [&](nlohmann::json& j) {
                    for (auto& f : j["inputs"]) {
                      f["path"] = bad.files[0].path;
                      f["sha256"] = bad.files[0].sha256;
                    }
                  }),
           b[1]},
          "did not read the same data for check 'cos'");
  // The inputs re-hashed: a SHA-256 edited in every shard no longer matches the file.
  const auto other_sha = [](nlohmann::json& j) { j["inputs"][0]["sha256"] = std::string(64, 'a'); };
  refused({edited(g[0], other_sha), edited(g[1], other_sha)}, "the shards recorded aaaa");
  // merge --impl: the file given must be the dump the shards read.
  certify::merge_options given;
  given.inputs = {bad.files[0].path};
  EXPECT_THROW(certify::merge_shards({g[0], g[1]}, given), error);
  given.inputs = {good.files[0].path};
  const auto m = certify::merge_shards({g[0], g[1]}, given);
  EXPECT_EQ(m.exit_code(), 0);
  EXPECT_EQ(m.certification->inputs_reverified, true);
  // Without the files the merge says so.
  auto gone = g;
  for (auto& c : gone) c.certification->inputs[0].path = "/nonexistent/dump.safetensors";
  EXPECT_EQ(certify::merge_shards({gone[0], gone[1]}).certification->inputs_reverified, false);
}

}  // namespace
}  // namespace pev

// `pev verify CERT_DIR` (docs/certify.md §7) and the merge's refusals of forged shards through the
// CLI (docs/certify.md §6): a genuine certificate, merged or not, verifies (exit 0); an edited
// figure, an edited grade or one changed input byte does not (exit 1, naming what differs).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run.h"

namespace pev {
namespace {

using test::run_pev;
namespace fs = std::filesystem;

const std::string kSpec = "rope:head_dim=64,rope_theta=500000";

nlohmann::json read_json(const std::string& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << file;
  return nlohmann::json::parse(in);
}

void write_json(const std::string& file, const nlohmann::json& j) {
  std::ofstream(file) << j.dump(1);
}

// A copy of certificate directory `from` at `to` with its certificate.json edited by `edit`.
void edited_copy(const std::string& from, const std::string& to,
                 const std::function<void(nlohmann::json&)>& edit) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
  auto j = read_json(to + "/certificate.json");
  edit(j);
  write_json(to + "/certificate.json", j);
}

TEST(CliVerify, GenuineVerifiesEditedDoesNot) {
  const std::string dir = test::temp_dir("verify");
  const std::string dump = dir + "/d.safetensors";
  ASSERT_EQ(run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "0:600",
                     "--format", "safetensors", "--out", dump})
                .exit_code,
            0);
  auto c = run_pev({"certify", "--impl", dump, "--recipe", "hf", "--out", dir + "/cert"});
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const auto j = read_json(dir + "/cert/certificate.json");
  ASSERT_EQ(j["command"]["args"][0], "certify");
  auto v = run_pev({"verify", dir + "/cert"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("VERIFIED"), std::string::npos) << v.out;

  // One figure edited.
  edited_copy(dir + "/cert", dir + "/fig", [](nlohmann::json& x) {
    for (auto& k : x["checks"]) {
      if (k["id"] == "sin") k["max_abs"] = k["max_abs"].get<double>() / 2;
    }
  });
  v = run_pev({"verify", dir + "/fig"});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("/checks[sin]/max_abs"), std::string::npos) << v.out;
  // The grade edited.
  edited_copy(dir + "/cert", dir + "/grade",
              [](nlohmann::json& x) { x["grade"] = "correctly-rounded"; });
  v = run_pev({"verify", dir + "/grade"});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("/grade: \"correctly-rounded\" recorded, \"recipe:hf\" now"),
            std::string::npos)
      << v.out;
  // One input byte changed (the last byte of the last cos/sin value).
  {
    std::fstream f(dump, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    char b = 0;
    f.get(b);
    f.seekp(-1, std::ios::end);
    f.put(static_cast<char>(b ^ 1));
  }
  v = run_pev({"verify", dir + "/cert"});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("input " + dump + " (safetensors): SHA-256"), std::string::npos) << v.out;
  // No certificate, or one without a recorded command: bad input.
  v = run_pev({"verify", dir});
  EXPECT_EQ(v.exit_code, 2);
  edited_copy(dir + "/cert", dir + "/nocmd", [](nlohmann::json& x) { x.erase("command"); });
  v = run_pev({"verify", dir + "/nocmd"});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("records no `pev certify` command"), std::string::npos) << v.err;
  // The command is data: only `pev certify` runs, and a live implementation only when allowed.
  edited_copy(dir + "/cert", dir + "/other", [](nlohmann::json& x) {
    x["command"]["args"] = {"report", "--out", "/tmp/x"};
  });
  v = run_pev({"verify", dir + "/other"});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("not a `pev certify`"), std::string::npos) << v.err;
  auto live = run_pev({"certify", "--spec", kSpec, "--exec",
                       std::string(PEV_BINARY) + " serve --strategy hf", "--max-position", "3000",
                       "--samples", "2", "--property-cases", "5", "--out", dir + "/live"});
  ASSERT_EQ(live.exit_code, 0) << live.out << live.err;
  v = run_pev({"verify", dir + "/live"});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("certifies a live implementation: re-running it runs its --exec again"),
            std::string::npos)
      << v.err;
  v = run_pev({"verify", dir + "/live", "--allow-live"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// A merged certificate verifies (its command re-runs unsharded); a merge of a good shard edited
// to name the bad dump with the bad dump's honest shard is refused; a certificate.json over the
// size limit is refused before it is parsed.
TEST(CliVerify, MergedVerifiesForgedMergeRefused) {
  const std::string dir = test::temp_dir("verify_merge");
  const std::string good = dir + "/good.safetensors", bad = dir + "/bad.safetensors";
  ASSERT_EQ(run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "0:400",
                     "--format", "safetensors", "--out", good})
                .exit_code,
            0);
  // The bad dump: a value of row 5 (shard 0 of 2) with its last mantissa bits flipped.
  fs::copy_file(good, bad);
  {
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    std::uint64_t n = 0;
    f.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, ' ');
    f.read(header.data(), static_cast<std::streamsize>(n));
    const auto h = nlohmann::json::parse(header);
    const auto at = 8 + n + h["cos"]["data_offsets"][0].get<std::uint64_t>() + 4 * (5 * 32 + 7);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(0x55));
  }
  for (const std::string& d : {std::string("good"), std::string("bad")}) {
    for (int i = 0; i < 2; ++i) {
      auto r =
          run_pev({"certify", "--impl", dir + "/" + d + ".safetensors", "--no-diagnosis", "--shard",
                   std::to_string(i) + "/2", "--out", dir + "/" + d + std::to_string(i)});
      ASSERT_TRUE(r.exit_code == 1 || r.exit_code == 3) << r.out << r.err;
    }
  }
  auto m = run_pev({"merge", dir + "/good0", dir + "/good1", "--out", dir + "/merged"});
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("inputs re-hashed by the merge: they match"), std::string::npos) << m.out;
  const auto mj = read_json(dir + "/merged/certificate.json");
  EXPECT_EQ(mj["merged_from"].size(), 2u);
  EXPECT_EQ(mj["merged_from"][0]["sha256"].get<std::string>().size(), 64u);
  auto v = run_pev({"verify", dir + "/merged"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  const std::string bad_sha = read_json(dir + "/bad1/certificate.json")["inputs"][0]["sha256"];
  edited_copy(dir + "/good0", dir + "/forged0", [&](nlohmann::json& x) {
    x["inputs"][0]["path"] = bad;
    x["inputs"][0]["sha256"] = bad_sha;
  });
  m = run_pev({"merge", dir + "/forged0", dir + "/bad1", "--out", dir + "/m2"});
  EXPECT_EQ(m.exit_code, 2) << m.out << m.err;
  EXPECT_NE(m.err.find("did not read the same data"), std::string::npos) << m.err;
  // merge --impl: the dump given must be the one the shards read.
  m = run_pev({"merge", dir + "/good0", dir + "/good1", "--impl", bad, "--out", dir + "/m3"});
  EXPECT_EQ(m.exit_code, 2) << m.out << m.err;
  EXPECT_NE(m.err.find("is not that of a file the shards read"), std::string::npos) << m.err;

  // Over 64 MiB: refused naming the limit.
  edited_copy(dir + "/good1", dir + "/huge", [](nlohmann::json& x) {
    x["notes"] = nlohmann::json::array({std::string(65 << 20, 'x')});
  });
  m = run_pev({"merge", dir + "/good0", dir + "/huge", "--out", dir + "/m4"});
  EXPECT_EQ(m.exit_code, 2) << m.out << m.err;
  EXPECT_NE(m.err.find("huge/certificate.json"), std::string::npos) << m.err;
}

// A certificate edited into the wrong types, or cut short: refused (exit 2) naming the field, in
// pev's words, never the JSON library's bracketed ids.
TEST(CliVerify, MistypedCertificateFieldsAreNamed) {
  const std::string dir = test::temp_dir("verify_types");
  const std::string dump = dir + "/d.safetensors";
  ASSERT_EQ(run_pev({"compute", "--strategy", "hf", "--spec", kSpec, "--positions", "0:64",
                     "--format", "safetensors", "--out", dump})
                .exit_code,
            0);
  ASSERT_EQ(run_pev({"certify", "--impl", dump, "--out", dir + "/cert"}).exit_code, 0);
  edited_copy(dir + "/cert", dir + "/notes", [](nlohmann::json& x) { x["notes"] = 5; });
  auto v = run_pev({"verify", dir + "/notes"});
  EXPECT_EQ(v.exit_code, 2) << v.out << v.err;
  EXPECT_NE(v.err.find("not a pev report: field 'notes' is 5: type must be array, but is number"),
            std::string::npos)
      << v.err;
  EXPECT_EQ(v.err.find("[json.exception"), std::string::npos) << v.err;
  edited_copy(dir + "/cert", dir + "/version",
              [](nlohmann::json& x) { x["provenance"]["pev_version"] = 3; });
  v = run_pev({"merge", dir + "/version", "--out", dir + "/m"});
  EXPECT_EQ(v.exit_code, 2) << v.out << v.err;
  EXPECT_NE(v.err.find("field 'pev_version' is 3"), std::string::npos) << v.err;
  EXPECT_EQ(v.err.find("[json.exception"), std::string::npos) << v.err;
  fs::create_directories(dir + "/cut");
  std::ofstream(dir + "/cut/certificate.json") << "{\"schema_version\":";
  v = run_pev({"verify", dir + "/cut"});
  EXPECT_EQ(v.exit_code, 2) << v.out << v.err;
  EXPECT_NE(v.err.find("not JSON: parse error"), std::string::npos) << v.err;
  EXPECT_EQ(v.err.find("[json.exception"), std::string::npos) << v.err;
}

}  // namespace
}  // namespace pev

// The config reader's MRoPE keys (verify/src/spec/mrope.h; docs/encodings.md §4.6), tested
// directly (spec/config.cpp calls them on every rope dictionary): transformers' Qwen2-VL
// rope_scaling {"type": "mrope", "mrope_section": [...]}, Qwen3-VL's mrope_interleaved, and
// malformed values named by key.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "mrope.h"
#include "pev/core/error.h"

namespace pev::spec {
namespace {

using nlohmann::json;

TEST(MropeConfig, Qwen2VLRopeScaling) {
  const json d = json::parse(R"({"type": "mrope", "mrope_section": [16, 24, 24]})");
  EXPECT_TRUE(detail::is_mrope_type(d["type"].get<std::string>()));
  EXPECT_FALSE(detail::is_mrope_type("default"));
  rope r;
  r.head_dim = r.rotary_dim = 128;
  r.rope_theta = 1e6;
  detail::read_mrope_keys(d, "rope_scaling", r);
  EXPECT_EQ(r.mrope_section, (std::vector<std::int64_t>{16, 24, 24}));
  EXPECT_FALSE(r.mrope_interleaved);
  EXPECT_NO_THROW(validate(encoding{r}));
  EXPECT_EQ(to_spec_string(encoding{r}),
            "rope:head_dim=128,rope_theta=1000000,mrope_section=[16,24,24]");
}

TEST(MropeConfig, Qwen3VLInterleaved) {
  const json d = json::parse(R"({"rope_type": "default", "mrope_section": [24, 20, 20.0],
                      "mrope_interleaved": true})");
  rope r;
  detail::read_mrope_keys(d, "rope_parameters", r);
  EXPECT_EQ(r.mrope_section, (std::vector<std::int64_t>{24, 20, 20}));
  EXPECT_TRUE(r.mrope_interleaved);
}

TEST(MropeConfig, AbsentKeysChangeNothing) {
  rope r;
  detail::read_mrope_keys(json::parse(R"({"rope_type": "default", "mrope_section": null})"), "x",
                          r);
  EXPECT_TRUE(r.mrope_section.empty());
  EXPECT_FALSE(r.mrope_interleaved);
}

TEST(MropeConfig, MalformedValuesNameTheKey) {
  for (const char* bad :
       {R"({"mrope_section": 16})", R"({"mrope_section": []})",
        R"({"mrope_section": [16, "24", 24]})", R"({"mrope_section": [16.5, 24, 24]})",
        R"({"mrope_section": [-16, 24, 24]})", R"({"mrope_interleaved": 1})"}) {
    rope r;
    try {
      detail::read_mrope_keys(json::parse(bad), "rope_scaling", r);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find("rope_scaling.mrope_"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace pev::spec

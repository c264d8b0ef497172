// One certify request (pev/app/request.h, docs/certify.md §9): its defaults, a dump and a trace
// certified through it as the engine certifies them, the rows the engine reports as progress, and
// the progress line's redraws (docs/certify.md §9.1).

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "pev/app/progress.h"
#include "pev/app/request.h"
#include "pev/certify/certify.h"
#include "pev/certify/trace.h"
#include "pev/core/error.h"
#include "pev/impl/implementation.h"
#include "pev/io/safetensors.h"
#include "pev/report/json.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSpec = "rope:head_dim=64,rope_theta=10000";

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("pev-test-request-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The hf table of kSpec at positions 0 … P−1, with q/k of `tokens` tokens (none: 0).
io::tensor_file table(std::int64_t P, std::int64_t tokens = 0) {
  const spec::encoding e = spec::parse_spec(kSpec);
  const auto im = impl::make_builtin(e, kernel::strategy::hf);
  std::vector<std::int64_t> pos(static_cast<std::size_t>(P));
  for (std::size_t p = 0; p < pos.size(); ++p) pos[p] = static_cast<std::int64_t>(p);
  std::vector<float> c(static_cast<std::size_t>(P * 32)), s(c.size());
  im->rope_table(pos, std::nullopt, std::span<float>(c), std::span<float>(s));
  io::tensor_file tf;
  tf.add("cos", io::array::from_values<float>({P, 32}, c));
  tf.add("sin", io::array::from_values<float>({P, 32}, s));
  if (tokens > 0) {
    const std::vector<std::int64_t> qp(pos.begin(), pos.begin() + tokens);
    std::vector<float> in(static_cast<std::size_t>(tokens * 2 * 64)), out(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
    im->rope_rotate(qp, std::nullopt, kernel::heads_view<const float>{in, tokens, 2, 64},
                    kernel::heads_view<float>{out, tokens, 2, 64});
    tf.add("q_in", io::array::from_values<float>({tokens, 2, 64}, in));
    tf.add("q_out", io::array::from_values<float>({tokens, 2, 64}, out));
    tf.add("qk_positions", io::array::from_int64({tokens}, qp));
  }
  tf.add("positions", io::array::from_int64({P}, pos));
  return tf;
}

// The message of the pev::error that f() throws ("" when it throws none).
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  ADD_FAILURE() << "not refused";
  return "";
}

// certificate.json without its timing.
std::string json_of(certify::certificate c) {
  c.certification->seconds = 0;
  return report::to_json(c);
}

TEST(CertifyRequest, TheLiveDefaultsAreTheEnginesWrittenOnce) {
  const app::certify_request r;
  const certify::live_options lo;
  // 2^20 − 1: every position of the octaves below 2^20 (pev.certify asked 2^20, one octave more).
  EXPECT_EQ(r.max_position, (std::int64_t{1} << 20) - 1);
  EXPECT_EQ(r.max_position, lo.max_position);
  EXPECT_EQ(r.samples, lo.samples);
  EXPECT_EQ(r.seed, lo.seed);
  EXPECT_EQ(r.properties, lo.properties);
  EXPECT_EQ(r.property_cases, lo.property_cases);
  const certify::live_options asked = app::live_options(r);
  EXPECT_EQ(asked.max_position, lo.max_position);
  EXPECT_EQ(asked.type, dtype::fp32);
}

TEST(CertifyRequest, FlagsAreNamedAsTheFrontEndNamesThem) {
  app::certify_request r;
  r.max_position = -1;
  EXPECT_EQ(refusal([&] { (void)app::live_options(r); }).rfind("--max-position: ", 0), 0u);
  r.front = app::front_end::python;
  EXPECT_EQ(refusal([&] { (void)app::live_options(r); }).rfind("max_position: ", 0), 0u);
}

TEST(CertifyRequest, ADumpIsCertifiedAsTheEngineCertifiesIt) {
  const fs::path dir = temp_dir("dump");
  io::write_safetensors(dir / "t.safetensors", table(5000));
  app::certify_request r;
  r.spec_text = kSpec;
  r.files = {dir / "t.safetensors"};
  r.recipe = "hf";
  r.progress = false;
  const certify::certificate got = app::certify(r);
  certify::options o;
  o.recipe = "hf";
  const certify::certificate want =
      certify::certify_dump(spec::parse_spec(kSpec), certify::read_dump(r.files), o);
  EXPECT_EQ(json_of(got), json_of(want));
  EXPECT_EQ(got.exit_code(), 0);
  // Tensors in memory: hashed as their bytes, certified the same.
  app::certify_request t;
  t.front = app::front_end::python;
  t.encoding = spec::parse_spec(kSpec);
  t.tensors = table(5000).tensors;
  t.progress = false;
  const certify::certificate in_memory = app::certify(t);
  EXPECT_EQ(in_memory.certification->result, want.certification->result);
  ASSERT_EQ(in_memory.certification->inputs.size(), 3u);
  EXPECT_EQ(in_memory.certification->inputs[0].format, "python");
}

TEST(CertifyRequest, ATraceTakesOneSpecAndItsLayers) {
  const fs::path dir = temp_dir("trace");
  const io::tensor_file t = table(64);
  io::tensor_file tf;
  for (const char* layer : {"layers.0.", "layers.1.", "layers.2."}) {
    tf.add(std::string(layer) + "cos", t.at("cos"));
    tf.add(std::string(layer) + "sin", t.at("sin"));
  }
  std::vector<std::int64_t> ids(64);
  for (std::size_t p = 0; p < ids.size(); ++p) ids[p] = static_cast<std::int64_t>(p);
  tf.add("position_ids", io::array::from_int64({1, 64}, ids));
  io::write_safetensors(dir / "trace.safetensors", tf);
  app::certify_request r;
  r.front = app::front_end::python;
  r.spec_text = kSpec;
  r.files = {dir / "trace.safetensors"};
  r.layers = "0:3";
  r.progress = false;
  const certify::certificate c = app::certify(r);
  EXPECT_EQ(c.exit_code(), 0) << certify::to_text(c);
  EXPECT_EQ(c.certification->layers.size(), 3u);
  // --layers naming a layer the trace lacks, and --layer-type: refused, named as Python names them.
  r.layers = "0:4";
  EXPECT_THROW((void)app::certify(r), error);
  r.layers.clear();
  r.layer_type = "sliding_attention";
  EXPECT_EQ(refusal([&] { (void)app::certify(r); }).rfind("layer_type: ", 0), 0u);
}

TEST(CertifyProgress, TheEngineReportsTheRowsItCompared) {
  const io::tensor_file tf = table(40000, 300);
  certify::dump d;
  d.tensors = tf.tensors;
  certify::options o;
  o.threads = 2;
  std::map<std::string, std::vector<std::pair<std::size_t, std::size_t>>> seen;
  o.progress = [&](std::string_view what, std::size_t done, std::size_t total) {
    seen[std::string(what)].push_back({done, total});
  };
  const spec::encoding e = spec::parse_spec(kSpec);
  const certify::certificate with = certify::certify_dump(e, d, o);
  for (const auto& [what, want] :
       {std::pair<std::string, std::size_t>{"table rows", 40000}, {"q_out tokens", 300}}) {
    ASSERT_TRUE(seen.count(what)) << what << "\n" << certify::to_text(with);
    const auto& calls = seen[what];
    for (std::size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].second, want) << what;
      if (i > 0) {
        EXPECT_GT(calls[i].first, calls[i - 1].first) << what;
      }
    }
    EXPECT_EQ(calls.back().first, want) << what;
  }
  EXPECT_GT(seen["table rows"].size(), 1u);  // more than the last call
  // The progress changes nothing in the certificate.
  o.progress = nullptr;
  EXPECT_EQ(json_of(with), json_of(certify::certify_dump(e, d, o)));
}

TEST(CertifyProgress, ALineIsRedrawnAFewTimesASecond) {
  using clock = app::redraw_gate::clock;
  const clock::time_point t0{};
  // 2^19 steps over one second (`pev reference` redrew every 256: 2048 times).
  app::redraw_gate gate(t0);
  const std::size_t steps = std::size_t{1} << 19;
  std::size_t drawn = 0;
  for (std::size_t i = 1; i <= steps; ++i) {
    const auto now = t0 + std::chrono::microseconds(i * 1000000 / steps);
    drawn += gate.due(now, i == steps) ? 1 : 0;
  }
  EXPECT_GE(drawn, 4u);  // 250 ms, 500 ms, 750 ms, 1 s, and the last
  EXPECT_LE(drawn, 5u);
  // A request done within the first period draws nothing, not even its last step.
  app::redraw_gate quick(t0);
  std::size_t quick_drawn = 0;
  for (int i = 1; i <= 1000; ++i) {
    quick_drawn += quick.due(t0 + std::chrono::microseconds(i), i == 1000) ? 1 : 0;
  }
  EXPECT_EQ(quick_drawn, 0u);
}

}  // namespace
}  // namespace pev

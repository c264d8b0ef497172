// Exhaustive certification at scale (ctest label `exhaustive`; issue figure, printed, never
// asserted on time): an fp32 cos/sin table of every position 0 … 2^20 − 1 (head_dim 128, the hf
// strategy, 512 MiB of safetensors) through `pev certify --exhaustive`.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "pev/io/array.h"
#include "pev/io/safetensors.h"
#include "pev/kernel/rope.h"
#include "pev/spec/parse.h"

namespace pev {
namespace {

TEST(CertifyExhaustive, MillionPositionFp32Table) {
  const std::string text = "rope:head_dim=128,rope_theta=500000";
  const auto s = std::get<spec::rope>(spec::parse_spec(text));
  const std::int64_t P = std::int64_t{1} << 20, n = s.pairs();
  std::vector<std::int64_t> pos(static_cast<std::size_t>(P));
  for (std::int64_t p = 0; p < P; ++p) pos[static_cast<std::size_t>(p)] = p;
  std::vector<float> c(static_cast<std::size_t>(P * n)), sn(c.size());
  kernel::rope_kernel(s, kernel::strategy::hf).table<float>(pos, c, sn);
  io::tensor_file tf;
  tf.add("cos", io::array::from_floats({P, n}, c));
  tf.add("sin", io::array::from_floats({P, n}, sn));
  c = {};
  sn = {};
  const auto dir = std::filesystem::path(testing::TempDir()) /
                   ("pev_certify_million_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "hf.safetensors";
  io::write_safetensors(file, tf);
  tf = {};
  // The certificate beside the input, not around it (certify replaces its --out).
  const std::string cmd = std::string(PEV_BINARY) + " certify --spec " + text + " --impl " +
                          file.string() + " --exhaustive --out " + (dir / "cert").string() + " > " +
                          (dir / "out.txt").string() + " 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(cmd.c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream in(dir / "out.txt");
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::cout << out << "pev certify --exhaustive, 1048576 positions x 64 pairs fp32: " << seconds
            << " s wall (file reading and hashing included)\n";
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("grade     recipe:hf"), std::string::npos) << out;
  EXPECT_NE(out.find("every position 0 … 1048575 (exhaustive)"), std::string::npos) << out;
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace pev

// End to end against in process (docs/performance.md): `pev reference` and `pev compute` writing a
// RoPE table (fp32, head_dim 128: 64 pairs, positions 0 … P − 1, npy) against the fast reference's
// and the kernels' own table() on the same rows in the same process, interleaved round by round.
//
// Per round: the fast exact reference's table<float> (4096-row chunks, thread CPU time), the hf
// and accurate kernels' table<float> likewise, then the three commands as child processes (CPU
// time user + system from wait4, wall time, peak RSS). Every figure counts values the same way:
// two per (cos, sin) pair. Printed: medians over the rounds, and the ratios end to end / in
// process (CPU and wall). Then the accurate kernel against hf on positions 0 … 65535 and on random
// positions < 2^31 (seeded, printed). With --certify DIR: the hf kernel's table of the same rows
// is dumped to DIR (safetensors) and `pev certify --exhaustive` of it, with 1 and with 2 threads,
// joins each round; printed against the fast reference's in-process rate. Not run by ctest.
//
// Usage: bench_stream [--pev PATH] [--positions P] [--rounds N] [--out FILE] [--certify DIR]
//   PATH defaults to ../verify/pev beside this program, P to 2^20, N to 5, FILE to /dev/null.

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "pev/kernel/rope.h"
#include "pev/kernel/strategy.h"
#include "pev/ref/fast.h"
#include "pev/spec/spec.h"

extern char** environ;

namespace {

double now(clockid_t c) {
  timespec t{};
  clock_gettime(c, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct timing {
  double cpu = 0, wall = 0;
  long rss_kb = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <class Table>
timing in_process(const std::vector<std::int64_t>& pos, std::size_t pairs, Table&& table) {
  constexpr std::size_t kChunk = 4096;
  std::vector<float> c(kChunk * pairs), s(kChunk * pairs);
  const double c0 = now(CLOCK_THREAD_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
  for (std::size_t r0 = 0; r0 < pos.size(); r0 += kChunk) {
    const std::size_t r1 = std::min(pos.size(), r0 + kChunk);
    const std::size_t n = (r1 - r0) * pairs;
    table(std::span(pos).subspan(r0, r1 - r0), std::span(c).first(n), std::span(s).first(n));
  }
  return {now(CLOCK_THREAD_CPUTIME_ID) - c0, now(CLOCK_MONOTONIC) - w0, 0};
}

timing run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const double w0 = now(CLOCK_MONOTONIC);
  pid_t pid = 0;
  // The children's summaries (certify prints one) are not the benchmark's output.
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  const int spawned = posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (spawned != 0) {
    std::fprintf(stderr, "bench_stream: cannot run %s\n", argv[0]);
    std::exit(2);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  const double wall = now(CLOCK_MONOTONIC) - w0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench_stream: %s failed\n", argv[0]);
    std::exit(2);
  }
  const double cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  return {cpu, wall, ru.ru_maxrss};
}

}  // namespace

int main(int argc, char** argv) {
  std::string pev = (std::filesystem::path(argv[0]).parent_path() / "../verify/pev").string();
  std::int64_t P = std::int64_t{1} << 20;
  int rounds = 5;
  std::string out = "/dev/null", certify_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--pev") {
      pev = v;
    } else if (k == "--positions") {
      P = std::stoll(v);
    } else if (k == "--rounds") {
      rounds = std::stoi(v);
    } else if (k == "--out") {
      out = v;
    } else if (k == "--certify") {
      certify_dir = v;
    } else {
      std::fprintf(stderr, "bench_stream: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  pev::spec::rope s;
  s.head_dim = 128;
  s.rotary_dim = 128;
  const std::size_t pairs = 64;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(P));
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
  const double values = 2.0 * double(P) * double(pairs);
  const pev::ref::fast_rope_reference fast(s);
  const pev::kernel::rope_kernel hf(s, pev::kernel::strategy::hf);
  const pev::kernel::rope_kernel acc(s, pev::kernel::strategy::accurate);
  const std::string range = "0:" + std::to_string(P);
  const std::vector<std::string> common = {
      "--spec", "rope:head_dim=128", "--positions", range,   "--dtype",
      "fp32",   "--format",          "npy",         "--out", out};
  auto cmd = [&](std::vector<std::string> head) {
    head.insert(head.begin(), pev);
    head.insert(head.end(), common.begin(), common.end());
    return head;
  };
  // certify: the hf table of the same rows, certified exhaustively with 1 and 2 threads.
  const std::string dump = certify_dir + "/table.safetensors";
  auto certify = [&](const char* threads) {
    return run({pev, "certify", "--impl", dump, "--spec", "rope:head_dim=128", "--exhaustive",
                "--threads", threads, "--out", certify_dir + "/certificate"});
  };
  if (!certify_dir.empty()) {
    std::filesystem::create_directories(certify_dir);
    run({pev, "compute", "--strategy", "hf", "--spec", "rope:head_dim=128", "--positions", range,
         "--dtype", "fp32", "--format", "safetensors", "--out", dump});
  }
  std::vector<double> cert_cpu[2], cert_wall[2];
  long cert_rss = 0;
  const char* names[6] = {"fast reference table()",    "hf kernel table()",
                          "accurate kernel table()",   "pev reference",
                          "pev compute --strategy hf", "pev compute --strategy accurate"};
  std::vector<double> cpu[6], wall[6];
  long rss[6] = {0, 0, 0, 0, 0, 0};
  for (int r = 0; r < rounds; ++r) {
    timing t[6];
    t[0] = in_process(pos, pairs, [&](auto p, auto c, auto sn) { fast.table<float>(p, c, sn); });
    t[1] = in_process(pos, pairs, [&](auto p, auto c, auto sn) { hf.table<float>(p, c, sn); });
    t[2] = in_process(pos, pairs, [&](auto p, auto c, auto sn) { acc.table<float>(p, c, sn); });
    t[3] = run(cmd({"reference"}));
    t[4] = run(cmd({"compute", "--strategy", "hf"}));
    t[5] = run(cmd({"compute", "--strategy", "accurate"}));
    for (int k = 0; k < 6; ++k) {
      cpu[k].push_back(t[k].cpu);
      wall[k].push_back(t[k].wall);
      rss[k] = std::max(rss[k], t[k].rss_kb);
    }
    if (!certify_dir.empty()) {
      for (int th = 0; th < 2; ++th) {
        const timing c = certify(th == 0 ? "1" : "2");
        cert_cpu[th].push_back(c.cpu);
        cert_wall[th].push_back(c.wall);
        cert_rss = std::max(cert_rss, c.rss_kb);
      }
    }
  }
  std::printf(
      "RoPE fp32, %lld positions x 64 pairs (%.4g values), npy to %s, %d rounds "
      "(medians):\n",
      static_cast<long long>(P), values, out.c_str(), rounds);
  std::printf("%-34s %12s %12s %10s\n", "", "values/s CPU", "values/s wall", "peak RSS");
  for (int k = 0; k < 6; ++k) {
    std::printf("%-34s %12.4g %12.4g", names[k], values / median(cpu[k]), values / median(wall[k]));
    if (k >= 3) {
      std::printf(" %7.1f MB", double(rss[k]) / 1024.0);
    }
    std::printf("\n");
  }
  std::printf("\nend to end / in process (target >= 0.5):\n");
  for (int k = 0; k < 3; ++k) {
    std::printf("%-34s CPU %.3f   wall %.3f\n", names[k + 3], median(cpu[k]) / median(cpu[k + 3]),
                median(wall[k]) / median(wall[k + 3]));
  }
  if (!certify_dir.empty()) {
    const double ref_cpu = values / median(cpu[0]);
    std::printf(
        "\npev certify --exhaustive of the hf table (%.4g values compared; peak RSS %.1f MB):\n",
        values, double(cert_rss) / 1024.0);
    for (int th = 0; th < 2; ++th) {
      std::printf(
          "%d thread%s  values/s CPU %.4g  wall %.4g  / fast reference (CPU, in process) "
          "%.3f (wall %.3f)\n",
          th + 1, th ? "s" : " ", values / median(cert_cpu[th]), values / median(cert_wall[th]),
          values / median(cert_cpu[th]) / ref_cpu, values / median(cert_wall[th]) / ref_cpu);
    }
    std::printf("2 threads / 1 thread, wall: %.2fx\n", median(cert_wall[0]) / median(cert_wall[1]));
  }
  // The kernels on their own: accurate against hf on positions 0 … 65535 and on 65536 random
  // positions < 2^31, interleaved rounds, thread CPU time.
  constexpr std::uint64_t kSeed = 20240611;
  std::mt19937_64 rng(kSeed);
  std::vector<std::int64_t> sweep(65536), random(65536);
  for (std::size_t i = 0; i < sweep.size(); ++i) sweep[i] = static_cast<std::int64_t>(i);
  for (auto& p : random) p = static_cast<std::int64_t>(rng() >> 33);
  std::printf("\naccurate / hf, fp32, 64 pairs (seed %llu; values/s, thread CPU, medians):\n",
              static_cast<unsigned long long>(kSeed));
  for (const auto* set : {&sweep, &random}) {
    std::vector<double> th, ta;
    for (int r = 0; r < 3 * rounds; ++r) {
      th.push_back(
          in_process(*set, pairs, [&](auto p, auto c, auto sn) { hf.table<float>(p, c, sn); }).cpu);
      ta.push_back(in_process(*set, pairs, [&](auto p, auto c, auto sn) {
                     acc.table<float>(p, c, sn);
                   }).cpu);
    }
    const double v = 2.0 * double(set->size()) * double(pairs);
    std::printf("%-24s hf %.4g  accurate %.4g  ratio %.2f (target >= 1.5)\n",
                set == &sweep ? "positions 0..65535" : "random < 2^31", v / median(th),
                v / median(ta), median(th) / median(ta));
  }
  return 0;
}

#include "run.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace pev::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int spawn_pev(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {PEV_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> p;
  for (auto& a : argv) p.push_back(a.data());
  p.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execv(p[0], p.data());
    _exit(127);
  }
  return pid;
}

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::path(testing::TempDir()) /
                   ("pev_cli_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

namespace {

// Runs PEV_BINARY with `args`, stdout to `out_path`, stderr to `err_path`; its exit code.
int run_into(const std::vector<std::string>& args, const std::string& out_path,
             const std::string& err_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = open("/dev/null", O_RDONLY);
    dup2(o, 1);
    dup2(e, 2);
    dup2(in, 0);
    std::vector<char*> argv;
    std::string bin = PEV_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

run_result run_pev(const std::vector<std::string>& args) {
  const std::string dir = temp_dir("run");
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  run_result r;
  r.exit_code = run_into(args, out_path, err_path);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

run_result run_pev_with_stdout(const std::vector<std::string>& args, const std::string& out) {
  const std::string err_path = temp_dir("run_with_stdout") + "/stderr";
  run_result r;
  r.exit_code = run_into(args, out, err_path);
  r.err = slurp(err_path);
  return r;
}

}  // namespace pev::test

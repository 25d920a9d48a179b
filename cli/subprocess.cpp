// run_subprocess: posix_spawnp with stdout and stderr on one pipe, read to the end, then waitpid.
#include "cli/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace qgrad::cli {

SubprocessResult run_subprocess(const std::vector<std::string>& argv) {
  QGRAD_CHECK(!argv.empty(), ValueError, "run_subprocess: no program given");
  int fds[2];
  // O_CLOEXEC: the read end must not leak into the child, or the read below never sees EOF.
  QGRAD_CHECK(pipe2(fds, O_CLOEXEC) == 0, Error, "run_subprocess: pipe: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  SubprocessResult result;
  if (spawn_error != 0) {
    close(fds[0]);
    result.status = 127;
    result.output = "cannot run '" + argv[0] + "': " + std::strerror(spawn_error) + "\n";
    return result;
  }
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      result.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    QGRAD_CHECK(errno == EINTR, Error, "run_subprocess: waitpid: ", std::strerror(errno));
  }
  result.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return result;
}

}  // namespace qgrad::cli

// run_subprocess: posix_spawnp with stdout and stderr on one pipe, read until EOF or the
// deadline (poll), bounded, then waitpid.
#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace qgrad {

SubprocessResult run_subprocess(const std::vector<std::string>& argv,
                                const SubprocessLimits& limits) {
  QGRAD_CHECK(!argv.empty(), ValueError, "run_subprocess: no program given");
  QGRAD_CHECK(limits.timeout_s > 0 && std::isfinite(limits.timeout_s), ValueError,
              "run_subprocess: timeout_s must be a positive number of seconds, got ",
              limits.timeout_s);
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
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.timeout_s));
  std::size_t dropped = 0;
  char buffer[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // a poll error re-checks the deadline; the read below reports EOF
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      const std::size_t keep =
          std::min(static_cast<std::size_t>(n), limits.max_output - result.output.size());
      result.output.append(buffer, keep);
      dropped += static_cast<std::size_t>(n) - keep;
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  // The program may close its output and go on running: its exit is awaited to the same deadline.
  int wstatus = 0;
  while (!result.timed_out) {
    const pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) break;
    QGRAD_CHECK(r >= 0 || errno == EINTR, Error, "run_subprocess: waitpid: ", std::strerror(errno));
    if (Clock::now() >= deadline)
      result.timed_out = true;
    else
      usleep(5000);
  }
  if (result.timed_out) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &wstatus, 0) < 0) {
      QGRAD_CHECK(errno == EINTR, Error, "run_subprocess: waitpid: ", std::strerror(errno));
    }
  }
  if (dropped > 0)
    result.output +=
        "\n[run_subprocess: " + std::to_string(dropped) + " more bytes of output were dropped]\n";
  if (result.timed_out) {
    result.status = kSubprocessTimeoutStatus;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", limits.timeout_s);
    result.output += "\n[run_subprocess: '" + argv[0] + "' was killed after " + seconds + " s]\n";
    return result;
  }
  result.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return result;
}

}  // namespace qgrad

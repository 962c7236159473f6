// A rank that hangs, exits or is killed ends the whole job, non-zero and well within a minute,
// and a rank left waiting says which rank it waited for and on what. Each test starts
// loom_mpi_failure_probe under `mpiexec -np 2` (3 for a group smaller than the job) with a rank
// timeout of 3 s.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

struct JobOutcome {
  bool ended = false;  // false: still running at the limit, then killed
  int exit_code = -1;  // mpiexec's status, or 128 + the signal that ended it
  double seconds = 0;  // from start to end (or to the limit)
  std::string output;  // stdout and stderr of every rank and of mpiexec
};

// Runs `mpiexec --oversubscribe -np <ranks> <probe> <mode>` with LOOM_RANK_TIMEOUT=<rank_timeout>,
// in a process group of its own so that a job still running at `limit` is killed whole.
JobOutcome run_probe(const std::string& mode, const std::string& rank_timeout, const char* ranks = "2",
                     std::chrono::seconds limit = std::chrono::seconds(60)) {
  char output_path[] = "/tmp/loom_mpi_failure_XXXXXX";
  const int output_fd = ::mkstemp(output_path);
  if (output_fd < 0) {
    ADD_FAILURE() << "cannot create a file for the job's output";
    return {};
  }
  std::fflush(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(output_fd, STDOUT_FILENO);
    ::dup2(output_fd, STDERR_FILENO);
    ::setenv("LOOM_RANK_TIMEOUT", rank_timeout.c_str(), 1);
    ::execl(LOOM_MPIEXEC, LOOM_MPIEXEC, "--oversubscribe", "-np", ranks, LOOM_MPI_FAILURE_PROBE, mode.c_str(), static_cast<char*>(nullptr));
    std::perror("exec " LOOM_MPIEXEC);
    ::_exit(127);
  }
  ::close(output_fd);
  JobOutcome outcome;
  int status = 0;
  while (!outcome.ended && std::chrono::steady_clock::now() - start < limit) {
    outcome.ended = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!outcome.ended) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!outcome.ended) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream file(output_path);
  std::stringstream text;
  text << file.rdbuf();
  outcome.output = text.str();
  ::unlink(output_path);
  return outcome;
}

void expect_job_ended_in_failure(const JobOutcome& job) {
  EXPECT_TRUE(job.ended) << "the job was still running after " << job.seconds << " s:\n" << job.output;
  EXPECT_NE(job.exit_code, 0) << job.output;
}

TEST(MpiFailures, ProbeRunsCleanlyWhenNoRankFails) {
  const JobOutcome job = run_probe("ok", "3");
  ASSERT_TRUE(job.ended) << job.output;
  EXPECT_EQ(job.exit_code, 0) << job.output;
  EXPECT_NE(job.output.find("rank 0: done"), std::string::npos) << job.output;
  EXPECT_NE(job.output.find("rank 1: done"), std::string::npos) << job.output;
}

TEST(MpiFailures, HangingRankEndsTheJobAfterTheTimeout) {
  const JobOutcome job = run_probe("hang", "3");
  expect_job_ended_in_failure(job);
  EXPECT_GE(job.seconds, 3.0) << "ended before the rank timeout:\n" << job.output;
  EXPECT_NE(job.output.find("loom: rank 0: no message from rank 1 after 3 s (exchange of 2 messages); a rank died or hung, ending the job"),
            std::string::npos)
      << job.output;
}

TEST(MpiFailures, RankThatExitsEndsTheJob) {
  const JobOutcome job = run_probe("die", "3");
  expect_job_ended_in_failure(job);
}

TEST(MpiFailures, KilledRankEndsTheJob) {
  const JobOutcome job = run_probe("killed", "3");
  expect_job_ended_in_failure(job);
}

TEST(MpiFailures, RankHangingBeforeASumEndsTheJob) {
  const JobOutcome job = run_probe("hang-sum", "3");
  expect_job_ended_in_failure(job);
  EXPECT_NE(job.output.find("loom: rank 0: sum of 1 value over all 2 ranks not done after 3 s; a rank died or hung"), std::string::npos)
      << job.output;
}

TEST(MpiFailures, RankHangingBeforeAGroupSumEndsTheJob) {
  const JobOutcome job = run_probe("hang-group-sum", "3", "3");
  expect_job_ended_in_failure(job);
  EXPECT_NE(job.output.find("loom: rank 0: no message from rank 1 after 3 s (forming the group {0, 1} for a sum); a rank died or hung"),
            std::string::npos)
      << job.output;
}

TEST(MpiFailures, RankHangingBeforeAStartedSumEndsTheJobWhereItIsFinished) {
  const JobOutcome job = run_probe("hang-started-sum", "3");
  expect_job_ended_in_failure(job);
  EXPECT_NE(job.output.find("loom: rank 0: sum of 1 value over the group {0, 1} not done after 3 s (2 of 2 started sums pending); "
                            "a rank died or hung"),
            std::string::npos)
      << job.output;
}

TEST(MpiFailures, MalformedTimeoutIsReported) {
  const JobOutcome job = run_probe("ok", "soon");
  expect_job_ended_in_failure(job);
  EXPECT_NE(job.output.find("LOOM_RANK_TIMEOUT='soon': expected a positive number of seconds"), std::string::npos) << job.output;
}

}  // namespace

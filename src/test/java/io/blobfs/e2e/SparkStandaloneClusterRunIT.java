package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How {@link SparkStandaloneCluster} runs spark-cluster.sh, on stand-in scripts: a script
 * that hangs is killed at the timeout with what it started (the fixture used to read stdout
 * to its end before its 3-minute wait, so a hung script was never timed out: this case ran
 * into its 3-minute bound on that code), a script that exits while a process it started
 * still holds its stdout returns its output at once, and a failing one is reported with
 * its exit code and stderr.
 */
class SparkStandaloneClusterRunIT {
  /** Far above what either case needs, below a forgotten test's hang. */
  private static final Duration BOUND = Duration.ofMinutes(3);

  @TempDir Path dir;

  @AfterEach
  void killLeftovers() throws IOException {
    Path pid = dir.resolve("child.pid");
    if (Files.exists(pid)) {
      processOf(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  @Test
  void aHungScriptIsKilledWithItsChildrenAtTheTimeout() throws Exception {
    Path script = script("sleep 600 &\necho $! > child.pid\necho 'SPARK MASTER spark://x:1'\n"
        + "wait\n");
    IOException e = assertTimeoutPreemptively(BOUND, () -> assertThrows(IOException.class,
        () -> SparkStandaloneCluster.run(script, Duration.ofSeconds(30), dir, "up", "1")));
    assertThat(e).hasMessageContaining("spark-cluster.sh up 1 did not finish within PT30S");
    // The script had 30 s to start its child: it did, and the child is gone with it (or a
    // zombie: PID 1 here may not reap orphans). SIGKILL is delivered asynchronously.
    long child = Long.parseLong(Files.readString(dir.resolve("child.pid")).trim());
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
    while (running(child) && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    assertThat(running(child)).as("the hung script's child %d still runs", child).isFalse();
  }

  @Test
  void aScriptThatExitsReturnsItsOutputWhileAChildStillHoldsItsStdout() throws Exception {
    Path script = script("sleep 600 &\necho $! > child.pid\necho 'SPARK MASTER spark://x:1'\n"
        + "echo 'started' >&2\nexit 0\n");
    String out = assertTimeoutPreemptively(BOUND,
        () -> SparkStandaloneCluster.run(script, BOUND, dir, "up", "1"));
    assertThat(out).isEqualTo("SPARK MASTER spark://x:1\n");
    assertThat(Files.readString(dir.resolve("spark-cluster-up.log"))).isEqualTo("started\n");
    long child = Long.parseLong(Files.readString(dir.resolve("child.pid")).trim());
    assertThat(running(child)).as("the script's child, left running").isTrue();
  }

  @Test
  void aFailingScriptIsReportedWithItsStderr() throws Exception {
    Path script = script("echo 'no Master' >&2\nexit 3\n");
    IOException e = assertThrows(IOException.class,
        () -> SparkStandaloneCluster.run(script, BOUND, dir, "up", "1"));
    assertThat(e).hasMessage("spark-cluster.sh up 1 failed (exit 3):\nno Master\n");
  }

  private Path script(String body) throws IOException {
    return Files.writeString(dir.resolve("stand-in.sh"), "cd '" + dir + "'\n" + body);
  }

  /** Whether PID exists and is not a zombie (/proc/PID/stat's state field). */
  private static boolean running(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      char state = stat.charAt(stat.lastIndexOf(')') + 2);
      return state != 'Z' && state != 'X';
    } catch (IOException gone) {
      return false;
    }
  }

  private static Optional<ProcessHandle> processOf(Path pidFile) throws IOException {
    if (!Files.exists(pidFile)) {
      return Optional.empty();
    }
    return ProcessHandle.of(Long.parseLong(Files.readString(pidFile).trim()));
  }
}

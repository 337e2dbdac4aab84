package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review of ring-epoch2 (M1): a transaction record whose directory force FAILS (EIO) on a
 * directory that synced before must not be acknowledged: the decision record (.commit) is
 * empty, its name is all it holds. Only a directory whose very first force is refused
 * (EINVAL: a file system that cannot sync directories) is tolerated.
 *
 * <p>Needs the LD_PRELOAD shim src/test/resources/failsync.c (a directory's fsync fails
 * with EIO / EINVAL while $FAILSYNC_DIR/EIO / EINVAL exists). The test builds it with the
 * system {@code cc} and runs the scenarios in a child JVM started with LD_PRELOAD; it is
 * skipped (assumption) only where no cc can build it (or not on Linux). Run under an
 * LD_PRELOAD that already holds the shim, it runs them in this JVM.
 */
class TxRecordsDirSyncFailureTest {
  @TempDir Path dir;

  @Test
  void aDecisionWhoseDirectoryForceFailsIsNotAcknowledged() throws Exception {
    if (String.valueOf(System.getenv("LD_PRELOAD")).contains("failsync")
        && System.getenv("FAILSYNC_DIR") != null) {
      scenarios(dir, Path.of(System.getenv("FAILSYNC_DIR")));
      return;
    }
    Assumptions.assumeTrue(System.getProperty("os.name").startsWith("Linux"),
        "the LD_PRELOAD shim needs Linux");
    Path shim = build(dir);
    Path markers = Files.createDirectory(dir.resolve("markers"));
    Path work = Files.createDirectory(dir.resolve("work"));
    ProcessBuilder pb = new ProcessBuilder(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"),
        TxRecordsDirSyncFailureTest.class.getName(), work.toString(), markers.toString());
    pb.environment().put("LD_PRELOAD", shim.toString());
    pb.environment().put("FAILSYNC_DIR", markers.toString());
    ChildProcess child = ChildProcess.run(pb, dir.resolve("child.log"), Duration.ofMinutes(2));
    assertThat(child.exitValue()).as("child JVM under the shim:%n%s", child.output()).isZero();
    assertThat(child.output()).contains("SCENARIOS PASSED");
  }

  /** Child JVM (started with the shim preloaded): args work-dir marker-dir. */
  public static void main(String[] args) {
    try {
      scenarios(Path.of(args[0]), Path.of(args[1]));
      System.out.println("SCENARIOS PASSED");
      System.exit(0);
    } catch (Throwable t) {
      t.printStackTrace(System.out);
      System.exit(1);
    }
  }

  static void scenarios(Path work, Path markers) throws Exception {
    Path eio = markers.resolve("EIO");
    Path einval = markers.resolve("EINVAL");
    // The shim must be in force: a directory force under the EIO marker fails.
    Files.createDirectories(work.resolve("probe"));
    Files.createFile(eio);
    try {
      assertThatThrownBy(() -> io.blobfs.tyr.engine.Durable.forceDirectory(work.resolve("probe")))
          .as("the failsync shim is not preloaded").isInstanceOf(IOException.class);
    } finally {
      Files.deleteIfExists(eio);
    }

    // 1. A directory that synced, then fails (EIO): nothing is acknowledged.
    TxRecords records = new TxRecords(Files.createDirectories(work.resolve("a")));
    records.writePrepared("t-0", new byte[] {1}); // the directory syncs: fine
    Files.createFile(eio); // now its force fails with EIO
    try {
      assertThatThrownBy(() -> records.writeDecision("t-1", true))
          .as("a commit decision acknowledged though its name may not survive a crash")
          .isInstanceOf(IOException.class);
      assertThatThrownBy(() -> records.writePrepared("t-2", new byte[] {1}))
          .as("a prepare acknowledged though its record's name may not survive a crash")
          .isInstanceOf(IOException.class);
      // The same for the ring-epoch record (issue 13's guard) once its directory synced.
      Path node = Files.createDirectories(work.resolve("node"));
      Files.deleteIfExists(eio);
      io.blobfs.tyr.engine.Durable.replace(node.resolve("ring-epoch"),
          "1\n".getBytes(StandardCharsets.UTF_8), true);
      Files.createFile(eio);
      assertThatThrownBy(() -> io.blobfs.tyr.engine.Durable.replace(
          node.resolve("ring-epoch"), "2\n".getBytes(StandardCharsets.UTF_8), true))
          .isInstanceOf(IOException.class).hasMessageContaining("synced before");
    } finally {
      Files.deleteIfExists(eio);
    }

    // 2. A first force that fails with EIO is an I/O error, not a refusal: thrown.
    TxRecords fresh = new TxRecords(Files.createDirectories(work.resolve("b")));
    Files.createFile(eio);
    try {
      assertThatThrownBy(() -> fresh.writeDecision("t-3", true))
          .isInstanceOf(IOException.class);
    } finally {
      Files.deleteIfExists(eio);
    }
    fresh.writeDecision("t-4", true); // and checked again: it syncs now
    assertThat(fresh.decision("t-4")).isTrue();

    // 3. A directory whose first force is refused (EINVAL: cannot sync directories) is
    // tolerated, and remembered: written, with one warning, even under a later EIO.
    TxRecords unsyncable = new TxRecords(Files.createDirectories(work.resolve("c")));
    Files.createFile(einval);
    try {
      unsyncable.writeDecision("t-5", true);
    } finally {
      Files.deleteIfExists(einval);
    }
    Files.createFile(eio);
    try {
      unsyncable.writeDecision("t-6", false);
    } finally {
      Files.deleteIfExists(eio);
    }
    assertThat(unsyncable.decision("t-5")).isTrue();
    assertThat(unsyncable.decision("t-6")).isFalse();
  }

  /** Builds the shim with the system cc, or skips the test (saying why) if it cannot. */
  private static Path build(Path dir) throws Exception {
    Path src = dir.resolve("failsync.c");
    try (InputStream in = TxRecordsDirSyncFailureTest.class.getResourceAsStream(
        "/failsync.c")) {
      Files.copy(in, src);
    }
    Path lib = dir.resolve("libfailsync.so");
    ChildProcess cc;
    try {
      cc = ChildProcess.run(new ProcessBuilder(List.of("cc", "-shared", "-fPIC", "-o",
          lib.toString(), src.toString(), "-ldl")), dir.resolve("cc.log"),
          Duration.ofSeconds(60));
    } catch (IOException e) {
      Assumptions.abort("no system cc to build the LD_PRELOAD shim: " + e.getMessage());
      throw e;
    }
    Assumptions.assumeTrue(cc.exitValue() == 0,
        () -> "cc could not build the LD_PRELOAD shim: " + cc.output());
    return lib;
  }
}

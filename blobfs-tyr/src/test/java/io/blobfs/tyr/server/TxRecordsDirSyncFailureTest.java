package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review of ring-epoch2 (S1): a transaction record whose directory force FAILS (EIO) on a
 * directory that synced before must not be acknowledged: the decision record (.commit) is
 * empty, its name is all it holds. Needs LD_PRELOAD=/tmp/rev-re2/libfailsync.so (fsync of
 * a directory fd fails with EIO while /tmp/rev-re2/FAIL_DIR_FSYNC exists).
 */
class TxRecordsDirSyncFailureTest {
  @TempDir Path dir;

  @Test
  void aDecisionWhoseDirectoryForceFailsIsNotAcknowledged() throws Exception {
    Assumptions.assumeTrue(String.valueOf(System.getenv("LD_PRELOAD")).contains("failsync"));
    Path marker = Path.of("/tmp/rev-re2/FAIL_DIR_FSYNC");
    Files.deleteIfExists(marker);
    TxRecords records = new TxRecords(dir);
    records.writePrepared("t-0", new byte[] {1}); // the directory syncs: fine
    Files.createFile(marker); // now its force fails with EIO
    try {
      assertThatThrownBy(() -> records.writeDecision("t-1", true))
          .as("a commit decision acknowledged though its name may not survive a crash")
          .isInstanceOf(java.io.IOException.class);
      assertThatThrownBy(() -> records.writePrepared("t-2", new byte[] {1}))
          .as("a prepare acknowledged though its record's name may not survive a crash")
          .isInstanceOf(java.io.IOException.class);
    } finally {
      Files.deleteIfExists(marker);
    }
  }
}

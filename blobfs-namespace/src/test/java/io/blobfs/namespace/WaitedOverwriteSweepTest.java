package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The soak's DATA LOSS of seed 5151810870002 (NamespaceSoakTest, transactional=false),
 * made deterministic: an overwrite whose publish waits for the replaced file's lock longer
 * than its own writer lease, while the replaced file is deleted and a sweeper takes the
 * writer's unnamed data. In the soak the replaced file's lock was left by an overwrite whose
 * PUT of it applied with its answer lost, and four clients queued on it; here the writer's
 * read of that lock is paused instead.
 */
class WaitedOverwriteSweepTest extends StalledMoveFixture {
  private static final FsPath F = FsPath.parse("/a/f");

  /**
   * Before, the publish renewed the writer's lease only when it went on under the replaced
   * file's lock; a wait that ended with the name deleted went round again and put the record
   * unrenewed: close() returned normally and /a/f named data the sweeper had deleted
   * (reading it failed). Now every attempt after a wait renews first: the renewal finds the
   * sweeper took the data, and close() fails, publishing nothing.
   */
  @Test
  void anOverwriteThatWaitedPastItsLeaseWhileTheNameWasDeletedDoesNotPublishSweptData()
      throws Exception {
    write(F, 2 * 4096 + 9);
    String oldId = reader.probe(F).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    BlobNamespace writerNs = namespace(m);
    byte[] bytes = new byte[3 * 4096 + 17];
    new Random(7).nextBytes(bytes);
    FileWriter writer = writerNs.create(F, true);
    writer.write(bytes, 0, bytes.length);
    String newId = writer.fileId();
    // The publish reads the replaced file's lock in takeForRename: held there, it waits.
    Fault wait = m.on(Op.READ).keys(KeyLayout.DATA + oldId + "/" + KeyLayout.LOCK).nth(1)
        .pause();
    Future<Object> close = threads.submit(() -> {
      try {
        writer.close();
        return "closed";
      } catch (IOException e) {
        return e;
      }
    });
    wait.awaitReached();
    // While it waits: another client deletes /a/f, and the writer's lease runs out, so a
    // sweep finds its data unnamed with an expired lock, takes the lock and deletes it.
    assertTrue(reader.delete(F, false));
    awaitLeaseOver();
    OrphanSweeper.Report swept = new OrphanSweeper(reader, LEASE).sweep(Duration.ZERO, false);
    assertEquals(List.of(newId), swept.orphanFileIds(), swept.toString());
    assertEquals(4, swept.deletedBlobs(), swept.toString());
    wait.release();
    Object outcome = close.get(30, TimeUnit.SECONDS);
    String state = "close(): " + outcome + "; /a/f: " + reader.probe(F);
    if ("closed".equals(outcome)) {
      // the only correct success would be the whole file readable; its blobs are gone
      byte[] got;
      try {
        got = readAll(F);
      } catch (Exception e) {
        throw new AssertionError("DATA LOSS: " + state + "; reading it: " + e, e);
      }
      assertArrayEquals(bytes, got, state);
    }
    IOException failed = assertInstanceOf(IOException.class, outcome, state);
    assertTrue(String.valueOf(failed.getCause()).contains("lease"), state);
    assertTrue(reader.probe(F).isEmpty(), state);
  }
}

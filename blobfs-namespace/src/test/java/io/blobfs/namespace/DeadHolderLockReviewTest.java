package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Review of takeover-it (c1d668b), session 18. */
class DeadHolderLockReviewTest extends DeadHolderFixture {
  /** The BOUNDED half of the rule for a directory rename (review of takeover-it). */
  @Test
  void reviewADirectoryRenameKeepsTheFixedWaitUnderItsIntent() throws Exception {
    write(FsPath.parse("/d/f"), 3 * 4096 + 5);
    diedHoldingTheLockOf(FsPath.parse("/d/f"), Duration.ofMinutes(1));
    long start = System.nanoTime();
    assertThrows(IOException.class,
        () -> client(SHORT).rename(FsPath.parse("/d"), FsPath.parse("/e")));
    long took = millisSince(start);
    assertTrue(took < 1500, took + " ms: a directory rename outwaited its own 2 s intent");
  }

  /** The BOUNDED half of the rule for a recursive delete (review of takeover-it). */
  @Test
  void reviewARecursiveDeleteKeepsTheFixedWaitUnderItsIntent() throws Exception {
    write(FsPath.parse("/d/f"), 3 * 4096 + 5);
    diedHoldingTheLockOf(FsPath.parse("/d/f"), Duration.ofMinutes(1));
    long start = System.nanoTime();
    assertThrows(IOException.class, () -> client(SHORT).delete(FsPath.parse("/d"), true));
    long took = millisSince(start);
    assertTrue(took < 1500, took + " ms: a recursive delete outwaited its own 2 s intent");
  }

  /**
   * A rename over a file kept in its record (no lock taken for it) whose id sorts first:
   * the source's lock is the only one taken, so it holds nothing, yet it gets BOUNDED
   * and failed "retry" on a dead holder's lock before review S1 (now OUTWAIT when the
   * target took no lock).
   */
  @Test
  void reviewARenameOverAnInlineFileWaitsOutTheSourcesDeadHolder() throws Exception {
    FsPath src = FsPath.parse("/a/src");
    FsPath dst = FsPath.parse("/a/dst");
    byte[] bytes = null;
    FileInfo target = null;
    for (int i = 0; i < 64; i++) { // an inline target whose id sorts before the source's
      // a fresh pair each try: a source with a very low id would leave no target below it
      bytes = write(src, 3 * 4096 + 5);
      String srcId = reader.probe(src).get().record().fileId();
      write(dst, 10);
      FileInfo t = reader.probe(dst).get();
      if (t.record().fileId().compareTo(srcId) < 0) {
        target = t;
        break;
      }
      reader.delete(dst, false);
      reader.delete(src, false);
    }
    assertTrue(target != null && target.record().stripeCount() == 0);
    diedHoldingTheLockOf(src, Duration.ofSeconds(2));

    client(SHORT).renameOver(src, target); // failed "... for over 0 s; retry" before S1

    assertArrayEquals(bytes, readAll(dst));
    assertTrue(reader.probe(src).isEmpty());
  }

  /** The CrashIT case itself: a version (TakeoverCommit step 2) over a dead holder's lock. */
  @Test
  void reviewATakeoverPublicationWaitsOutTheLockOfADeadHolder() throws Exception {
    FsPath f = FsPath.parse("/a/f");
    byte[] bytes = write(f, 3 * 4096 + 5);
    diedHoldingTheLockOf(f, Duration.ofSeconds(2));
    BlobNamespace live = client(SHORT);
    byte[] want = bytes.clone();
    byte[] fresh = new byte[4096];
    new java.util.Random(3).nextBytes(fresh);
    System.arraycopy(fresh, 0, want, 4096, 4096);
    long start = System.nanoTime();
    try (FileWriter w = live.createVersion(f, live.getFileInfo(f))) {
      w.setLength(want.length);
      java.util.BitSet take = new java.util.BitSet();
      take.set(0);
      take.set(2);
      take.set(3);
      w.takeOver(take);
      w.seek(4096);
      w.write(fresh, 0, fresh.length);
    }
    assertTrue(millisSince(start) > WAIT.toMillis(), "it waited past the fixed wait");
    assertArrayEquals(want, readAll(f));
  }
}

package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Takeovers whose cleanup is over maxCommitBytes, with transactions (review of
 * stripes-writer, M1 and S3). Before the fix, B's dues were never dropped after its
 * cleanup (TakeoverCommit.cleanUp, no dropDues): the next oversized version copied them
 * (duesFor: base's own id + map ids + base's dues ids), one id more per version, until the
 * header passed 4 KiB (version 92 here) and every later version failed with
 * RecordTooLargeException; each version also re-deleted every dead key of every listed id.
 * And a head alone over the limit was handled as an unknown outcome, not refused typed.
 */
class OversizedTakeoverDuesTest extends SharedStripesFixture {
  private static final FsPath F = FsPath.parse("/d/f");

  @Test
  void oversizedTakeoversWithTransactionsKeepTheFileVersionable() throws Exception {
    openWithCommitLimit(8192);
    int n = 200;
    byte[] content = new byte[n * S];
    new Random(5).nextBytes(content);
    try (FileWriter w = ns.create(F, true)) {
      w.write(content, 0, content.length);
    }
    List<Integer> dueCounts = new ArrayList<>();
    IOException stuck = null;
    for (int v = 0; v < 150 && stuck == null; v++) {
      // rewrite half of the stripes (alternating halves): 100 deletes, over 8192 bytes; the record (<= 4 KiB) fits
      BitSet take = new BitSet();
      byte[] next = content.clone();
      Random r = new Random(100 + v);
      for (int s = 0; s < n; s++) {
        if ((s < n / 2) == (v % 2 == 0)) { // contiguous halves: a map of 1-2 runs
          take.set(s);
        } else {
          byte[] fresh = new byte[S];
          r.nextBytes(fresh);
          System.arraycopy(fresh, 0, next, s * S, S);
        }
      }
      try {
        version(F, next, take);
        content = next;
        dueCounts.add(ns.getFileInfo(F).record().dues().size());
      } catch (IOException e) {
        stuck = e;
        System.out.println("[review] version " + v + " failed: " + e);
      }
    }
    System.out.println("[review] dues per version: " + dueCounts);
    IOException plain = null;
    try (FileWriter w = ns.create(F, true)) {
      w.write(content, 0, 10);
    } catch (IOException e) {
      plain = e;
      System.out.println("[review] plain overwrite failed: " + e);
    }
    assertNull(stuck, "a version failed after " + dueCounts.size() + " versions");
    assertEquals(150, dueCounts.size());
    assertTrue(dueCounts.stream().allMatch(c -> c == 0),
        "each cleanup done, its dues dropped: " + dueCounts);
    assertNull(plain, "a plain overwrite (today's writer) failed");
  }

  /**
   * Review S3: a record whose head alone (its map, with the dues an oversized cleanup
   * adds) passes maxCommitBytes is refused typed before the commit, its data discarded,
   * not handled as an unknown outcome.
   */
  @Test
  void aHeadOverTheCommitLimitIsRefusedTypedBeforeTheCommit() throws Exception {
    InMemoryBlobStore small = openWithCommitLimit(1500);
    int n = 400;
    byte[] content = new byte[n * S];
    new Random(9).nextBytes(content);
    try (FileWriter w = ns.create(F, true)) {
      w.write(content, 0, content.length);
    }
    Set<String> before = keys(small, "");
    BitSet take = new BitSet();
    for (int s = 0; s < n; s += 2) {
      take.set(s); // 200 runs: a header of about 2 KiB, over 1500 bytes
    }
    byte[] next = content.clone();
    for (int s = 1; s < n; s += 2) {
      next[s * S] ^= 1;
    }
    FileWriter w = ns.createVersion(F, ns.getFileInfo(F));
    w.setLength(next.length);
    assertEquals(take, w.takeOver(take));
    writeUntaken(w, next, take);
    assertThrows(RecordTooLargeException.class, w::close);
    assertEquals(before, keys(small, ""), "nothing published, the version's data discarded");
    assertArrayEquals(content, read(F.toString()), "the name still holds the base");
  }

  /** A memory store (with transactions) whose commits are limited to {@code bytes}. */
  private InMemoryBlobStore openWithCommitLimit(long bytes) {
    InMemoryBlobStore small = new InMemoryBlobStore("small",
        new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE).withMaxCommitBytes(bytes));
    faults = FaultInjectingBlobStore.over(small);
    ns = new BlobNamespace(faults.store(),
        new NamespaceOptions(S, S, 64 << 10, 1024, false, 100), StoreCallCounters.NONE);
    return small;
  }
}

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
import org.junit.jupiter.api.Test;

/**
 * Review of stripes-writer: with transactions, a takeover whose cleanup is over
 * maxCommitBytes publishes B with dues that are never dropped (TakeoverCommit.commit,
 * cleanupAfter: no dropDues). The next oversized version copies them (duesFor: base's own
 * id + map ids + base's dues ids), so the dues grow by one id per version until the header
 * passes 4 KiB (at version 92 here; 71 with a map of 100 runs): from then on every version
 * of the file fails with RecordTooLargeException (a plain overwrite still works, and resets
 * them). Each version also re-deletes every dead key of every id in its dues.
 */
class ReviewWriterDuesTest extends SharedStripesFixture {
  private static final FsPath F = FsPath.parse("/d/f");

  @Test
  void oversizedTakeoversWithTransactionsKeepTheFileVersionable() throws Exception {
    InMemoryBlobStore small = new InMemoryBlobStore("small",
        new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE).withMaxCommitBytes(8192));
    faults = FaultInjectingBlobStore.over(small);
    ns = new BlobNamespace(faults.store(),
        new NamespaceOptions(S, S, 64 << 10, 1024, false, 100), StoreCallCounters.NONE);
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
    assertNull(plain, "a plain overwrite (today's writer) failed");
  }
}

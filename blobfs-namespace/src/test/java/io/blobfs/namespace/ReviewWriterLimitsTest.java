package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.BitSet;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Review of stripes-writer: limits the writer rules do not see. */
class ReviewWriterLimitsTest extends SharedStripesFixture {
  private static final FsPath F = FsPath.parse("/d/f");

  /**
   * takeOver checks the map against the 4 KiB header without the cleanup dues that every
   * RADOS commit (step 5) adds: a map that takeOver accepted cannot be committed.
   */
  @Test
  void aMapTakeOverAcceptedCommitsWithoutTransactions() throws Exception {
    open(false);
    int n = 900;
    byte[] content = new byte[n * S];
    new Random(3).nextBytes(content);
    try (FileWriter w = ns.create(F, true)) {
      w.write(content, 0, content.length);
    }
    int last = -1;
    for (int runs = 430; runs <= 450; runs++) {
      BitSet take = new BitSet();
      for (int r = 0; r < runs; r++) {
        take.set(2 * r);
      }
      FileWriter w = ns.createVersion(F, ns.getFileInfo(F));
      w.setLength(content.length);
      BitSet got = w.takeOver(take);
      if (!got.equals(take)) {
        w.abort();
        System.out.println("[review] takeOver refused " + runs + " runs");
        break;
      }
      byte[] next = content.clone();
      for (int s = 0; s < n; s++) {
        if (!take.get(s)) {
          next[s * S] ^= 1;
        }
      }
      writeUntaken(w, next, take);
      try {
        w.close();
        content = next;
        last = runs;
      } catch (IOException e) {
        System.out.println("[review] " + runs + " runs accepted by takeOver, commit: " + e);
        fail("takeOver accepted " + runs + " runs, the commit refused them: " + e);
      }
    }
    System.out.println("[review] last committed: " + last);
  }

  /** setLength on a plain writer (not createVersion) publishes a name without data. */
  @Test
  void setLengthOnAPlainWriterNeverPublishesMissingStripes() throws Exception {
    open(true);
    FileWriter w = ns.create(F, true);
    w.write(bytes, 0, 10);
    w.setLength(3L * S);
    try {
      w.close();
    } catch (IOException refused) {
      return; // refused before any put: fine
    }
    IOException unreadable = assertThrows(IOException.class, () -> read(F.toString()));
    fail(unreadable + ": published " + F + " (3 stripes) with stripes 1-2 never written: "
        + keys("d/"));
  }

  /** I4 "every other stripe written whole": close checks only that it was touched. */
  @Test
  void aVersionWithAStripeWrittenInPartIsRefusedBeforeAnyPut() throws Exception {
    open(false);
    try (FileWriter w = ns.create(F, true)) {
      w.write(bytes, 0, LENGTH);
    }
    FileWriter w = ns.createVersion(F, ns.getFileInfo(F));
    w.setLength(LENGTH);
    assertEquals(stripes(0, 1, 3), w.takeOver(stripes(0, 1, 3)));
    w.seek(2L * S);
    w.write(bytes, 2 * S, 10); // 10 of stripe 2's 4096 bytes
    try {
      w.close();
    } catch (IOException refused) {
      return; // refused before any put: fine
    }
    IOException unreadable = assertThrows(IOException.class, () -> read(F.toString()));
    fail(unreadable + ": published a version whose stripe 2 holds 10 of 4096 bytes");
  }
}

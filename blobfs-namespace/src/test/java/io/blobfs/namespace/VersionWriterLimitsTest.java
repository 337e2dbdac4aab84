package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.Arrays;
import java.util.Set;
import java.util.BitSet;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The limits a version writer checks before any put (review of stripes-writer). */
class VersionWriterLimitsTest extends SharedStripesFixture {
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
        fail("takeOver accepted " + runs + " runs, the commit refused them: " + e);
      }
    }
    // The limit lies in the range tried: some maps commit, and takeOver refuses the rest
    // (it must not pass by refusing every map; second review, SF2).
    assertTrue(last >= 430, "the last map committed had " + last + " runs");
  }

  /**
   * setLength is for versions only (review S1: on a plain writer it published a name
   * whose stripes were never written): refused, and the writer still publishes its bytes.
   */
  @Test
  void setLengthIsRefusedOnAPlainWriter() throws Exception {
    open(true);
    FileWriter w = ns.create(F, true);
    w.write(bytes, 0, 10);
    assertThrows(IllegalStateException.class, () -> w.setLength(3L * S));
    w.close();
    assertArrayEquals(Arrays.copyOf(bytes, 10), read(F.toString()));
    assertEquals(Set.of(), keys("d/"), "10 bytes: inline, no data blob");
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
    Set<String> before = keys("");
    IOException refused = assertThrows(IOException.class, w::close);
    assertTrue(refused.getMessage().contains("its bytes from 10 of 4096 were never written"),
        refused.toString());
    assertEquals(before.stream().filter(k -> !k.contains(w.fileId())).toList(),
        keys("").stream().toList(), "the version's own keys discarded, nothing else changed");
    assertArrayEquals(bytes, read(F.toString()), "the name still holds the base");
  }
}

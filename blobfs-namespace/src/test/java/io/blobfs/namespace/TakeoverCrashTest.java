package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Shared stripes, step 3 without transactions (RADOS, DESIGN §2.3 steps 1-7): a takeover
 * publication, and a plain overwrite of a mapped version, cut at every store call in turn, as {@link CrashLoopTest} cuts its worker
 * (that call fails unapplied, or is applied with its answer lost, and every later call
 * fails: the client is dead). After each cut, the dead client's leases out and a sweep,
 * the name reads the base or the new version, whole; after the next publication over what
 * is there (or a delete) and sweeps, no data key is left that no record names, and no lock
 * but the ADOPTED lock of an id a record borrows from.
 */
class TakeoverCrashTest extends SharedStripesFixture {
  private static final Duration LEASE = Duration.ofMillis(40);

  private void sweepTwice() throws Exception {
    Thread.sleep(LEASE.toMillis() + 30); // the dead client's leases and untils run out
    // Twice: an ADOPTED lock whose last keys a sweep's dues removed goes the sweep after.
    new OrphanSweeper(ns, LEASE).sweep(Duration.ZERO, false);
    new OrphanSweeper(ns, LEASE).sweep(Duration.ZERO, false);
  }

  /** Data keys no record names, records naming missing keys, locks that should be gone. */
  private List<String> leaks() throws IOException {
    Set<String> named = new TreeSet<>();
    Set<String> borrowed = new HashSet<>();
    EntryIterator<FileInfo> all = ns.listFilesRecursively(FsPath.ROOT);
    while (all.hasNext()) {
      FileRecord r = all.next().record();
      for (long s = 0; s < r.stripeCount(); s++) {
        named.add(r.stripeKey(ns.layout(), s));
      }
      borrowed.addAll(r.map().ids());
    }
    List<String> problems = new ArrayList<>();
    Set<String> data = new TreeSet<>();
    for (String key : keys("d/")) {
      if (!KeyLayout.isLock(key)) {
        data.add(key);
      } else if (!borrowed.contains(KeyLayout.fileIdOf(key))) {
        problems.add("lock left: " + key);
      } else if (ns.locks().read(KeyLayout.fileIdOf(key)).get().owner()
          != DataLocks.Owner.ADOPTED) {
        problems.add("a borrowed id's lock is not ADOPTED: " + key);
      }
    }
    for (String key : data) {
      if (!named.contains(key)) {
        problems.add("no record names " + key);
      }
    }
    for (String key : named) {
      if (!data.contains(key)) {
        problems.add("a record names the missing " + key);
      }
    }
    for (String id : borrowed) {
      if (!keys("d/").contains("d/" + id + "/lock")) {
        problems.add("borrowed id " + id + " has no ADOPTED lock");
      }
    }
    return problems;
  }

  /** The publication cut: writes the version after {@code base} at {@code p}. */
  private interface Publication {
    void publish(FsPath p, byte[] next) throws IOException;
  }

  @Test
  void aTakeoverCutAtEveryStoreCallLeavesOneVersionWholeAndNothingUnnamed() throws Exception {
    // keeps A's 1, the older one's 3; drops its 0 and the older id's 2
    cutAtEveryCall((p, next) -> version(p, next, stripes(1, 3)));
  }

  /**
   * A plain overwrite (no takeover) of a mapped version: its record carries the replaced
   * one's keys as dues, so that a cut cleanup leaves them findable (DESIGN §2.3 step 7).
   */
  @Test
  void aPlainOverwriteOfAMappedVersionCutAtEveryStoreCallLeavesNothingUnnamed()
      throws Exception {
    cutAtEveryCall((p, next) -> {
      try (FileWriter w = ns.create(p, true)) {
        w.write(next, 0, next.length);
      }
    });
  }

  private void cutAtEveryCall(Publication cutOne) throws Exception {
    open(false);
    ns = new BlobNamespace(faults.store(), ns.options().withWriterLease(LEASE),
        StoreCallCounters.NONE);
    List<String> problems = new ArrayList<>();
    int cuts = 0;
    boolean reachedEnd = false;
    for (int cut = 1; !reachedEnd && cut < 200; cut++) {
      reachedEnd = true;
      for (boolean applied : new boolean[] {false, true}) {
        String at = "cut " + cut + (applied ? " (applied, answer lost)" : " (not applied)");
        FsPath p = FsPath.parse("/c" + cut + (applied ? "a" : "n") + "/f");
        // The base is a mapped version itself (it borrows stripes 0 and 3 of an older
        // one), so that the publication also drops a borrowed id and moves the others.
        try (FileWriter w = ns.create(p, false)) {
          w.write(bytes, 0, LENGTH);
        }
        byte[] base = rewritten(bytes, 1, cut);
        version(p, base, stripes(0, 2, 3));
        byte[] next = rewritten(base, 2, 1000 + cut);
        Op[] ops = Op.values();
        Fault first = applied ? faults.on(ops[0], ops).nth(cut).applyThenFail()
            : faults.on(ops[0], ops).nth(cut).always().failBefore();
        if (applied) {
          faults.on(ops[0], ops).nth(cut + 1).always().failBefore();
        }
        try {
          cutOne.publish(p, next);
        } catch (IOException | RuntimeException dead) {
          // the client died at the cut: every later call failed
        }
        boolean fired = first.fired() > 0;
        faults.clear();
        reachedEnd &= !fired;
        cuts += fired ? 1 : 0;
        sweepTwice();
        byte[] now = read(p.toString());
        if (!Arrays.equals(now, base) && !Arrays.equals(now, next)) {
          problems.add(at + ": the name reads neither version whole");
        }
        // The next publication over what is there (a takeover), or a delete.
        if (cut % 2 == 0) {
          version(p, rewritten(now, 0, 2000 + cut), stripes(1, 2, 3));
        } else {
          assertTrue(ns.delete(p, false));
        }
        sweepTwice();
        for (String leak : leaks()) {
          problems.add(at + ", then " + (cut % 2 == 0 ? "a version" : "a delete") + ": "
              + leak);
        }
      }
    }
    System.out.printf("[takeover crash] %d cuts%n", cuts);
    assertTrue(reachedEnd, "the publication never completed without reaching the cut");
    assertTrue(cuts > 20, "cuts: " + cuts);
    assertEquals(List.of(), problems);
  }
}

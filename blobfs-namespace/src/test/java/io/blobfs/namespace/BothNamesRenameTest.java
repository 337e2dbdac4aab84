package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Leftover A of issue 14: a plain rename without transactions that finds both names
 * holding one file settles the file's lock first, and must then answer what the names
 * hold: false only if nothing changed (Hadoop's contract).
 */
class BothNamesRenameTest extends StalledMoveFixture {
  private static final FsPath A = FsPath.parse("/a/a");
  private static final FsPath B = FsPath.parse("/a/b");

  /**
   * A rename of /a/b over /a/a commits (its file F put over /a/a) and stalls past its
   * lease before it removes /a/b: both names hold F. rename(/a/a, /a/b) sees one file
   * under both names and takes its lock, which settles the rename over: rolled forward,
   * /a/b removed. Before, it then answered false ("nothing changed") with /a/b gone and F
   * under /a/a only; now the rename is decided again on the settled names, and F moves to
   * /a/b as asked: true.
   */
  @Test
  void aRenameWhoseSettlingRemovedItsDestinationIsDecidedAgain() throws Exception {
    byte[] fBytes = write(B, 2 * 4096 + 9);
    write(A, 4096 + 3);
    String fId = reader.probe(B).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    Fault removeSource = m.on(Op.DELETE).keys("n/a/b").pause();
    Future<Object> over = renameOverInThread(m, B, A);
    removeSource.awaitReached(); // committed: F at /a/a, /a/b still marked (visible), F
    assertEquals(List.of(A, B), namesOf(fId, A, B), "both names hold F");
    awaitLeaseOver(); // the rename over stalled past its lease
    boolean renamed = reader.rename(A, B);
    String state = "rename(/a/a, /a/b): " + renamed + "; F at " + namesOf(fId, A, B);
    removeSource.release();
    Object overOutcome = over.get(30, TimeUnit.SECONDS);
    state += "; the rename over: " + overOutcome;
    assertEquals(List.of(B), namesOf(fId, A, B), state);
    assertArrayEquals(fBytes, readAll(B), state);
    assertTrue(renamed, "the names changed: not 'false, nothing changed'; " + state);
    assertEquals("renamed", overOutcome, state);
  }
}

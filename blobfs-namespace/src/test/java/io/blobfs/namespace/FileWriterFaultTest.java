package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.Futures;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What {@link FileWriter#close()} leaves when the store fails around the publication of
 * the record: the name reads back exactly the last file published there (never a record
 * whose data is gone), and what no name refers to is the orphan sweeper's, which removes
 * it and nothing else. Each case runs on a store with transactions (Týr, the in-memory
 * store) and on one without (RADOS).
 */
class FileWriterFaultTest {
  private static final int STRIPE = 64 << 10;
  private static final FsPath F = FsPath.parse("/f");
  /** Short, so that a sweep can run after the lease of a writer whose close failed. */
  private static final Duration LEASE = Duration.ofMillis(100);

  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("close", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private FaultInjectingBlobStore faults;
  private BlobNamespace ns;

  private void open(boolean transactional, boolean createPerformance) {
    faults = transactional ? FaultInjectingBlobStore.over(memory)
        : FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
    ns = new BlobNamespace(faults.store(), new NamespaceOptions(STRIPE, 16 << 10, 64 << 10,
        1024, false, 100, createPerformance, LEASE), StoreCallCounters.NONE);
    assertEquals(transactional, ns.hasAtomicRename());
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  /** A writer with all of {@code data} sent, not yet closed: faults armed now hit close. */
  private FileWriter started(byte[] data, boolean overwrite) throws IOException {
    FileWriter w = ns.create(F, overwrite);
    w.write(data, 0, data.length);
    return w;
  }

  /** Closes; what close() threw is checked after the bytes, which matter more. */
  private static IOException closeFailure(FileWriter w) {
    try {
      w.close();
      return null;
    } catch (IOException e) {
      return e;
    }
  }

  /** Writes a file and returns its file id. */
  private String published(byte[] data) throws IOException {
    started(data, true).close();
    return ns.getFileInfo(F).record().fileId();
  }

  private void assertReads(byte[] expected) throws IOException {
    FileReader r = ns.open(F);
    assertEquals(expected.length, r.length());
    ByteBuffer back = ByteBuffer.allocate(expected.length);
    while (back.hasRemaining()) {
      assertTrue(Futures.await(r.read(back.position(), back)) > 0, "ended early");
    }
    assertArrayEquals(expected, back.array());
  }

  private Set<String> dataKeys() throws IOException {
    return new HashSet<>(memory.scan("d/", null, 10_000).keys());
  }

  private Set<String> dataKeysOf(String fileId) throws IOException {
    return new HashSet<>(memory.scan("d/" + fileId + "/", null, 10_000).keys());
  }

  /** Sweeps with no minimum age, once the writers are done and the faults disarmed. */
  private OrphanSweeper.Report sweep() throws Exception {
    faults.clear();
    // The sweeper takes only blobs modified strictly before now - minAge, and leaves a
    // writer's data alone while its lease runs (kept by a close whose outcome is unknown).
    Thread.sleep(LEASE.toMillis() + 20);
    return new OrphanSweeper(ns).sweep(Duration.ZERO, false);
  }

  private String fileIdAtF() throws IOException {
    return ns.getFileInfo(F).record().fileId();
  }

  /** Issue item 1 (a): the new record is put, then removing the old file's data fails. */
  @ParameterizedTest(name = "transactional={0}, delete applied={1}")
  @CsvSource({"true,false", "true,true", "false,false", "false,true"})
  void anOverwriteWhoseOldDataCannotBeDeletedStillClosesAndKeepsTheNewFile(
      boolean transactional, boolean deleteApplied) throws Exception {
    open(transactional, false);
    byte[] before = random(3 * STRIPE, 1);
    byte[] after = random(2 * STRIPE + 5, 2);
    String oldId = published(before);
    FileWriter w = started(after, true);
    Fault f = faults.on(Op.DELETE).keys("d/" + oldId + "/.*");
    if (deleteApplied) {
      f.applyThenFail();
    } else {
      f.failBefore();
    }

    IOException failure = closeFailure(w);
    assertEquals(1, f.fired());
    assertReads(after);
    assertNull(failure, () -> "the new file is published, cleanup is not the caller's: "
        + failure);
    String newId = fileIdAtF();
    assertEquals(deleteApplied ? 2 : 3, dataKeysOf(oldId).size(), "one try, then orphans");

    OrphanSweeper.Report r = sweep();
    assertEquals(List.of(oldId), r.orphanFileIds());
    assertEquals(dataKeysOf(newId), dataKeys(), "the new file's stripes are all kept");
    assertEquals(3, dataKeys().size());
    assertReads(after);
  }

  /** Issue item 1 (b): the record put is applied but its answer is lost. */
  @ParameterizedTest(name = "transactional={0}, overwrite={1}")
  @CsvSource({"true,false", "true,true", "false,false", "false,true"})
  void aRecordPutAppliedButUnansweredIsReadBackAndTheFileKept(boolean transactional,
      boolean overwrite) throws Exception {
    open(transactional, false);
    byte[] before = random(3 * STRIPE, 1);
    byte[] after = random(2 * STRIPE + 5, 2);
    String oldId = overwrite ? published(before) : null;
    FileWriter w = started(after, overwrite);
    Fault lost = faults.on(Op.PUT).keys("n/f").applyThenFail();

    IOException failure = closeFailure(w);
    assertEquals(1, lost.fired());
    assertReads(after);
    assertNull(failure, () -> "the record read back is this writer's, it is published: "
        + failure);
    String newId = fileIdAtF();
    assertEquals(dataKeysOf(newId), dataKeys(), "the old file's data is removed as usual");

    OrphanSweeper.Report r = sweep();
    assertEquals(List.of(), r.orphanFileIds());
    assertEquals(3, dataKeysOf(newId).size());
    assertReads(after);
    if (overwrite) {
      assertEquals(Set.of(), dataKeysOf(oldId));
    }
  }

  /** The put's answer is lost and reading the record back fails too: nothing is deleted. */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aPutWhoseOutcomeCannotBeLearnedDeletesNothing(boolean transactional) throws Exception {
    open(transactional, false);
    byte[] before = random(3 * STRIPE, 1);
    byte[] after = random(2 * STRIPE + 5, 2);
    String oldId = published(before);
    FileWriter w = started(after, true);
    faults.on(Op.PUT).keys("n/f").applyThenFail();
    // The first read of the record is the old file's (before the put), without
    // transactions read again under the old file's lock, then the read-back.
    Fault readBack = faults.on(Op.READ).keys("n/f").nth(transactional ? 2 : 3).always()
        .failBefore();

    IOException failure = closeFailure(w);
    faults.clear();
    assertReads(after); // it was applied, whatever close() could tell
    assertTrue(readBack.fired() > 0, "the outcome was asked for");
    assertNotNull(failure, "close() cannot know the file is published");
    assertTrue(failure.getMessage().contains("/f"), failure.getMessage());
    assertEquals(3, dataKeysOf(oldId).size(), "the old data may have been still named");

    OrphanSweeper.Report r = sweep();
    assertEquals(List.of(oldId), r.orphanFileIds());
    assertEquals(dataKeysOf(fileIdAtF()), dataKeys());
    assertReads(after);
  }

  /** The put fails unapplied; the writer cannot tell that from a lost answer. */
  @ParameterizedTest(name = "transactional={0}, overwrite={1}")
  @CsvSource({"true,false", "true,true", "false,false", "false,true"})
  void aPutThatFailsUnappliedLeavesTheOldFile(boolean transactional, boolean overwrite)
      throws Exception {
    open(transactional, false);
    byte[] before = random(3 * STRIPE, 1);
    String oldId = overwrite ? published(before) : null;
    FileWriter w = started(random(2 * STRIPE + 5, 2), overwrite);
    faults.on(Op.PUT).keys("n/f").failBefore();

    assertThrows(IOException.class, w::close);
    faults.clear();
    if (overwrite) {
      assertReads(before);
    } else {
      assertEquals(Optional.empty(), ns.probe(F));
    }

    sweep();
    assertEquals(overwrite ? dataKeysOf(oldId) : Set.of(), dataKeys(),
        "the writer's stripes are gone, the old file's kept");
    if (overwrite) {
      assertReads(before);
    }
  }

  /** Before the put nothing can be published: the writer removes its own stripes. */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aFailureBeforeThePutDeletesTheWritersOwnData(boolean transactional) throws Exception {
    open(transactional, false);
    byte[] before = random(3 * STRIPE, 1);
    String oldId = published(before);
    FileWriter w = started(random(2 * STRIPE + 5, 2), true);
    // An overwrite reads the old record before it puts the new one.
    Fault f = faults.on(Op.READ).keys("n/f").failBefore();

    assertThrows(IOException.class, w::close);
    assertEquals(1, f.fired());
    faults.clear();
    assertReads(before);
    assertEquals(dataKeysOf(oldId), dataKeys(), "no sweep needed");
    assertEquals(List.of(), sweep().orphanFileIds());
    assertReads(before);
  }

  /** A create refused because the name was taken meanwhile is known unpublished too. */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void anExclusiveCreateThatFindsTheNameTakenDeletesItsOwnData(boolean transactional)
      throws Exception {
    open(transactional, true);
    byte[] before = random(3 * STRIPE, 1);
    String oldId = published(before);
    FileWriter w = started(random(2 * STRIPE + 5, 2), false);

    assertThrows(FileAlreadyExistsException.class, w::close);
    assertReads(before);
    assertEquals(dataKeysOf(oldId), dataKeys());
    assertEquals(List.of(), sweep().orphanFileIds());
  }
}

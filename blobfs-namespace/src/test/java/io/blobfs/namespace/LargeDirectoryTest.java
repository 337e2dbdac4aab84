package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.Futures;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 10, item 4: a directory rename or recursive delete on a transactional store whose
 * transactions are bounded (Týr: one frame) works at any size. The in-memory store is
 * given a commit limit of 16 KiB, so 1000 files take about a dozen transactions: within
 * the limit nothing changes (one atomic transaction), beyond it the work is chunked, a
 * rename cut off between chunks is finished by whoever meets its intent, and racing
 * writers and renamers lose no file and leave no two names on one file's data.
 */
class LargeDirectoryTest {
  private static final long COMMIT_LIMIT = 16 << 10;
  private static final int FILES = 1000;
  private static final FsPath SRC = FsPath.parse("/src");
  private static final FsPath DST = FsPath.parse("/dst");

  private final InMemoryBlobStore memory = new InMemoryBlobStore("big",
      new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE, COMMIT_LIMIT));
  private final FaultInjectingBlobStore faults = FaultInjectingBlobStore.over(memory);
  private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
  private ExecutorService racers;

  @AfterEach
  void tearDown() {
    faults.clear();
    if (racers != null) {
      racers.shutdownNow();
    }
  }

  private BlobNamespace namespace(boolean keepMarkers) {
    return namespace(faults.store(), keepMarkers);
  }

  private BlobNamespace namespace(BlobStore store, boolean keepMarkers) {
    // Inline threshold 64: the longer half of the files have data blobs.
    return new BlobNamespace(store, new NamespaceOptions(64 << 10, 16 << 10, 64 << 10, 64,
        keepMarkers, 100), (c, d) -> counts.computeIfAbsent(c, k -> new AtomicLong())
        .addAndGet(d));
  }

  private long commits() {
    AtomicLong c = counts.get(StoreCallCounters.COMMIT);
    return c == null ? 0 : c.get();
  }

  /** Bytes that say whose they are: a tag, padded to 40 (inline) or 200 (striped) bytes. */
  private static byte[] content(String tag, int i) {
    StringBuilder b = new StringBuilder(tag).append('|');
    int size = i % 2 == 0 ? 40 : 200;
    while (b.length() < size) {
      b.append((char) ('a' + b.length() % 26));
    }
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static void write(BlobNamespace ns, FsPath path, byte[] data) throws IOException {
    try (FileWriter w = ns.create(path, true)) {
      w.write(data, 0, data.length);
    }
  }

  private static byte[] read(BlobNamespace ns, FsPath path) throws IOException {
    FileReader r = ns.open(path);
    ByteBuffer dst = ByteBuffer.allocate((int) r.length());
    Futures.await(r.read(0, dst));
    return dst.array();
  }

  /** {@code FILES} files under {@code dir}, in five subdirectories; tag to bytes. */
  private static Map<String, byte[]> populate(BlobNamespace ns, FsPath dir, int files)
      throws IOException {
    Map<String, byte[]> written = new HashMap<>();
    for (int i = 0; i < files; i++) {
      String rel = "d" + (i % 5) + "/f" + String.format("%04d", i);
      byte[] data = content("orig:" + rel, i);
      write(ns, FsPath.parse(dir + "/" + rel), data);
      written.put("orig:" + rel, data);
    }
    return written;
  }

  /** Every file in the namespace: path to bytes, read back through the namespace. */
  private static Map<FsPath, byte[]> everyFile(BlobNamespace ns) throws IOException {
    Map<FsPath, byte[]> files = new TreeMap<>();
    EntryIterator<FileInfo> all = ns.listFilesRecursively(FsPath.ROOT);
    while (all.hasNext()) {
      FileInfo f = all.next();
      files.put(f.path(), read(ns, f.path()));
    }
    return files;
  }

  private static String tagOf(byte[] data) {
    String s = new String(data, StandardCharsets.UTF_8);
    return s.substring(0, s.indexOf('|'));
  }

  /**
   * No file lost, none twice: each expected file is under exactly one name with its exact
   * bytes, no two names share a file id, and every name reads back whole (its data blobs
   * exist). Returns where each tag is.
   */
  private static Map<String, FsPath> assertEachFileOnce(BlobNamespace ns,
      Map<String, byte[]> expected) throws IOException {
    Map<String, FsPath> where = new HashMap<>();
    Map<String, FsPath> byFileId = new HashMap<>();
    EntryIterator<FileInfo> all = ns.listFilesRecursively(FsPath.ROOT);
    while (all.hasNext()) {
      FileInfo f = all.next();
      FsPath other = byFileId.put(f.record().fileId(), f.path());
      assertEquals(null, other, "two names share file id " + f.record().fileId() + ": "
          + other + " and " + f.path());
      byte[] data = read(ns, f.path());
      FsPath twice = where.put(tagOf(data), f.path());
      assertEquals(null, twice, tagOf(data) + " is under two names: " + twice + " and "
          + f.path());
      if (expected.containsKey(tagOf(data))) {
        assertArrayEquals(expected.get(tagOf(data)), data, "bytes of " + f.path());
      }
    }
    for (String tag : expected.keySet()) {
      assertTrue(where.containsKey(tag), "lost: " + tag);
    }
    return where;
  }

  private void assertAllUnder(Map<String, FsPath> where, Map<String, byte[]> expected,
      FsPath dir) {
    for (String tag : expected.keySet()) {
      assertEquals(FsPath.parse(dir + "/" + tag.substring("orig:".length())), where.get(tag));
    }
  }

  private boolean intentExists(FsPath src) throws IOException {
    return memory.stat("r" + src).exists();
  }

  private long dataBlobs() {
    return memory.scan("d/", null, 1_000_000).keys().size();
  }

  // ---------------------------------------------------------------- within the limit

  @Test
  void aDirectoryWithinTheLimitIsStillRenamedAndDeletedInOneTransaction() throws IOException {
    BlobNamespace ns = namespace(false);
    Map<String, byte[]> files = populate(ns, SRC, 40);
    long before = commits();
    assertTrue(ns.rename(SRC, DST));
    assertEquals(1, commits() - before);
    assertAllUnder(assertEachFileOnce(ns, files), files, DST);
    assertFalse(intentExists(SRC));

    before = commits();
    assertTrue(ns.delete(DST, true));
    assertEquals(1, commits() - before);
    assertEquals(Map.of(), everyFile(ns));
    assertEquals(0, dataBlobs());
  }

  // ---------------------------------------------------------------- beyond it

  @ParameterizedTest(name = "markers kept: {0}")
  @ValueSource(booleans = {false, true})
  void aDirectoryBeyondTheLimitIsRenamedInChunksAndEveryFileArrivesWhole(boolean markers)
      throws IOException {
    BlobNamespace ns = namespace(markers);
    Map<String, byte[]> files = populate(ns, SRC, FILES);
    if (markers) {
      assertTrue(ns.mkdirs(FsPath.parse("/src/empty")));
    }
    long before = commits();

    assertTrue(ns.rename(SRC, DST));

    assertTrue(commits() - before > 5, "chunks: " + (commits() - before));
    assertAllUnder(assertEachFileOnce(ns, files), files, DST);
    assertFalse(ns.probe(SRC).isPresent(), "the source is gone");
    assertEquals(List.of(), memory.scan("n/src/", null, 10).keys());
    assertFalse(intentExists(SRC));
    if (markers) {
      assertTrue(ns.getFileInfo(FsPath.parse("/dst/empty")).isDirectory());
    }
  }

  @Test
  void aDirectoryBeyondTheLimitIsDeletedInChunksWithItsData() throws IOException {
    BlobNamespace ns = namespace(true);
    populate(ns, SRC, FILES);
    write(ns, FsPath.parse("/keep"), content("keep", 1));
    long before = commits();

    assertTrue(ns.delete(SRC, true));

    assertTrue(commits() - before > 2, "chunks: " + (commits() - before));
    assertEquals(List.of(FsPath.parse("/keep")), new ArrayList<>(everyFile(ns).keySet()));
    assertEquals(List.of(), memory.scan("n/src", null, 10).keys());
    assertEquals(1, dataBlobs(), "only /keep's stripe is left");
  }

  @Test
  void aTooLongTargetFoundAfterTheFirstChunkIsFullStillChangesNothing() throws IOException {
    BlobNamespace ns = namespace(false);
    Map<String, byte[]> files = populate(ns, SRC, FILES);
    // Sorts after every other name, so it is met only once chunks have begun to fill.
    String deep = "/src/z/" + "x".repeat(1010);
    write(ns, FsPath.parse(deep), content("deep", 1));
    files.put("deep", content("deep", 1));

    assertThrows(IllegalPathException.class, () -> ns.rename(SRC, FsPath.parse("/a-longer-name")));

    Map<String, FsPath> where = assertEachFileOnce(ns, files);
    assertEquals(FsPath.parse(deep), where.get("deep"));
    where.remove("deep");
    files.remove("deep");
    assertAllUnder(where, files, SRC);
    assertFalse(intentExists(SRC));
  }

  // ---------------------------------------------------------------- cut off part-way

  /** How a rename cut off part-way is finished, and by whom. */
  enum Recovery { SAME_RENAME_AGAIN, EXPLICIT_CALL, RENAME_OF_PARENT, DELETE_OF_SOURCE }

  @ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.EnumSource(Recovery.class)
  void aRenameCutOffBetweenChunksIsFinishedByWhoeverMeetsItsIntent(Recovery how)
      throws IOException {
    FsPath src = FsPath.parse("/job/src");
    FsPath dst = FsPath.parse("/out/dst");
    BlobNamespace writer = namespace(false);
    Map<String, byte[]> files = populate(writer, src, FILES);
    write(writer, FsPath.parse("/out/other"), content("other", 1));
    // The fourth transaction fails as a lost server would: chunks 1 to 3 are applied.
    faults.on(Op.COMMIT).nth(4).always().failBefore();

    assertThrows(StoreUnavailableException.class, () -> writer.rename(src, dst));

    faults.clear();
    BlobNamespace after = namespace(memory, false); // as another process would
    Map<String, FsPath> where = assertEachFileOnce(after, files);
    long moved = where.values().stream().filter(p -> p.isAtOrUnder(dst)).count();
    assertTrue(moved > 0 && moved < FILES, "moved part-way: " + moved);
    assertTrue(intentExists(src));

    switch (how) {
      case SAME_RENAME_AGAIN -> assertTrue(after.rename(src, dst));
      case EXPLICIT_CALL -> assertEquals(List.of("rename /job/src to /out/dst"),
          after.finishInterruptedRenames());
      case RENAME_OF_PARENT -> {
        // Finishes the rename below first, then renames what is left of /job.
        write(after, FsPath.parse("/job/log"), content("log", 1));
        assertTrue(after.rename(FsPath.parse("/job"), FsPath.parse("/job2")));
        assertArrayEquals(content("log", 1), read(after, FsPath.parse("/job2/log")));
      }
      case DELETE_OF_SOURCE -> assertTrue(after.delete(FsPath.parse("/job"), true));
    }
    assertFalse(intentExists(src));
    files.put("other", content("other", 1));
    where = assertEachFileOnce(after, files);
    where.remove("other");
    files.remove("other");
    assertAllUnder(where, files, dst);
    assertEquals(List.of(), after.finishInterruptedRenames());
  }

  @Test
  void aRenameIntoTheParentAgainIsTheSameRename() throws IOException {
    BlobNamespace ns = namespace(false);
    Map<String, byte[]> files = populate(ns, SRC, FILES);
    assertTrue(ns.mkdirs(FsPath.parse("/into")));
    write(ns, FsPath.parse("/into/x"), content("x", 1));
    faults.on(Op.COMMIT).nth(3).failBefore();
    assertThrows(StoreUnavailableException.class, () -> ns.rename(SRC, FsPath.parse("/into")));

    // /into/src exists now (part of it), which would make a fresh rename return false.
    assertTrue(ns.rename(SRC, FsPath.parse("/into")));

    files.put("x", content("x", 1));
    Map<String, FsPath> where = assertEachFileOnce(ns, files);
    where.remove("x");
    files.remove("x");
    assertAllUnder(where, files, FsPath.parse("/into/src"));
  }

  @Test
  void aFirstChunkThatFailsChangesNothingAndLeavesNoIntent() throws IOException {
    BlobNamespace ns = namespace(false);
    Map<String, byte[]> files = populate(ns, SRC, FILES);
    faults.on(Op.COMMIT).failBefore();
    assertThrows(StoreUnavailableException.class, () -> ns.rename(SRC, DST));
    assertAllUnder(assertEachFileOnce(ns, files), files, SRC);
    assertFalse(intentExists(SRC));
  }

  @Test
  void aChunkAppliedWhoseAnswerWasLostIsFinishedAsWell() throws IOException {
    BlobNamespace ns = namespace(false);
    Map<String, byte[]> files = populate(ns, SRC, FILES);
    // The last chunk, which removes the intent, is applied; the answer is lost.
    faults.on(Op.COMMIT).keys("r/src").nth(2).applyThenFail();
    assertThrows(StoreUnavailableException.class, () -> ns.rename(SRC, DST));
    assertFalse(intentExists(SRC));
    assertAllUnder(assertEachFileOnce(ns, files), files, DST);
  }

  @Test
  void aRecursiveDeleteCutOffPartWayIsFinishedByDeletingAgain() throws IOException {
    BlobNamespace ns = namespace(false);
    populate(ns, SRC, FILES);
    faults.on(Op.COMMIT).nth(3).failBefore();
    assertThrows(StoreUnavailableException.class, () -> ns.delete(SRC, true));
    faults.clear();
    Map<FsPath, byte[]> left = everyFile(ns);
    assertTrue(left.size() > 0 && left.size() < FILES, "deleted part-way: " + left.size());
    for (Map.Entry<FsPath, byte[]> e : left.entrySet()) {
      assertTrue(tagOf(e.getValue()).startsWith("orig:"), "whole: " + e.getKey());
    }
    assertTrue(ns.delete(SRC, true));
    assertEquals(Map.of(), everyFile(ns));
    assertEquals(0, dataBlobs(), "each chunk's data goes right after it");
  }

  // ---------------------------------------------------------------- racing

  /**
   * Held at its second chunk's commit, with that chunk read: a file of it is replaced, one
   * is renamed away, another's destination is taken, and files are created behind and
   * ahead of the scan. The chunk conflicts and is moved file by file: the replaced file
   * moves as it is now, the one renamed away stays where it went, the one whose
   * destination is taken stays at the source (and the rename says so), and no file is
   * lost or named twice.
   */
  @Test
  void aChunkThatLosesRacesIsMovedFileByFile() throws Exception {
    BlobNamespace ns = namespace(false);
    Map<String, byte[]> files = populate(ns, SRC, FILES);
    Fault held = faults.on(Op.COMMIT).keys("n/dst/.*").nth(2).pause();
    racers = Executors.newSingleThreadExecutor();
    Future<?> rename = racers.submit(() -> ns.rename(SRC, DST));
    held.awaitReached();

    // Chunk 2 holds names in scan order after chunk 1's: find three of its files.
    List<String> atSource = memory.scan("n/src/", null, 1000).keys();
    String replaced = atSource.get(0).substring(1);
    String renamedAway = atSource.get(1).substring(1);
    String blocked = atSource.get(2).substring(1);
    BlobNamespace other = namespace(memory, false);
    write(other, FsPath.parse(replaced), content("new:" + replaced, 1));
    files.put("new:" + replaced, content("new:" + replaced, 1));
    files.remove("orig:" + replaced.substring("/src/".length()));
    assertTrue(other.rename(FsPath.parse(renamedAway), FsPath.parse("/away")));
    FsPath taken = FsPath.parse(blocked).rebase(SRC, DST);
    write(other, taken, content("taken", 1));
    files.put("taken", content("taken", 1));
    write(other, FsPath.parse("/src/a-behind"), content("behind", 1));
    write(other, FsPath.parse("/src/zz-ahead"), content("ahead", 1));
    files.put("behind", content("behind", 1));
    files.put("ahead", content("ahead", 1));
    held.release();

    java.util.concurrent.ExecutionException e =
        assertThrows(java.util.concurrent.ExecutionException.class, rename::get);
    assertTrue(e.getCause() instanceof IOException
        && e.getCause().getMessage().contains("but 1 under /src")
        && e.getCause().getMessage().contains(blocked), String.valueOf(e.getCause()));
    Map<String, FsPath> where = assertEachFileOnce(ns, files);
    assertEquals(FsPath.parse(replaced).rebase(SRC, DST), where.get("new:" + replaced));
    assertEquals(FsPath.parse("/away"),
        where.get("orig:" + renamedAway.substring("/src/".length())));
    assertEquals(FsPath.parse(blocked), where.get("orig:" + blocked.substring("/src/".length())));
    assertEquals(taken, where.get("taken"));
    assertEquals(FsPath.parse("/src/a-behind"), where.get("behind"));
    assertEquals(FsPath.parse("/dst/zz-ahead"), where.get("ahead"));
    assertFalse(intentExists(SRC));
  }

  /**
   * Threads racing the chunked rename for real: a writer creating files under the source
   * and the destination, a renamer moving the source's files out one by one, and a second
   * client renaming the same directory to the same place. Whatever each call answers, every
   * file ends under exactly one name with its bytes, and the source holds only files
   * created after the scan passed them.
   */
  @Test
  void racingWritersAndRenamersLoseNoFileAndShareNoData() throws Exception {
    BlobNamespace ns = namespace(false);
    Map<String, byte[]> files = new ConcurrentHashMap<>(populate(ns, SRC, FILES));
    racers = Executors.newFixedThreadPool(3);
    AtomicBoolean done = new AtomicBoolean();
    BlobNamespace writerNs = namespace(memory, false);
    Future<?> writer = racers.submit(() -> {
      for (int i = 0; !done.get(); i++) {
        String rel = (i % 2 == 0 ? "/src/new/" : "/dst/new/") + "w" + i;
        byte[] data = content("w:" + i, i);
        write(writerNs, FsPath.parse(rel), data);
        files.put("w:" + i, data);
      }
      return null;
    });
    BlobNamespace moverNs = namespace(memory, false);
    Future<Integer> mover = racers.submit(() -> {
      int movedOut = 0;
      for (int i = FILES - 1; i >= 0 && !done.get(); i -= 7) {
        String rel = "d" + (i % 5) + "/f" + String.format("%04d", i);
        try {
          if (moverNs.rename(FsPath.parse("/src/" + rel), FsPath.parse("/out/" + rel))) {
            movedOut++;
          }
        } catch (IOException lostRace) {
          // a conflict: the file is wherever the winner put it
        }
      }
      return movedOut;
    });
    BlobNamespace secondNs = namespace(memory, false);
    Future<Boolean> second = racers.submit(() -> renameAsAUserWould(secondNs));
    boolean first = renameAsAUserWould(ns);
    boolean secondDone = second.get();
    done.set(true);
    writer.get();
    int movedOut = mover.get();

    assertTrue(first || secondDone, "one of the two renames of /src went through");
    assertEquals(List.of(), ns.finishInterruptedRenames());
    Map<String, FsPath> where = assertEachFileOnce(ns, files);
    int atDst = 0;
    for (Map.Entry<String, FsPath> e : where.entrySet()) {
      if (e.getKey().startsWith("orig:")) {
        FsPath p = e.getValue();
        assertTrue(p.isAtOrUnder(DST) || p.isAtOrUnder(FsPath.parse("/out")), "stray " + p);
        atDst += p.isAtOrUnder(DST) ? 1 : 0;
      }
    }
    assertEquals(FILES - movedOut, atDst);
    System.out.println("racing: " + movedOut + " moved out, " + atDst + " renamed, "
        + (files.size() - FILES) + " written meanwhile, " + commits() + " commits");
  }

  /**
   * Renames /src to /dst, retrying while the answer is "conflicted ... retry": a first
   * chunk that loses a race changes nothing and says so.
   */
  private static boolean renameAsAUserWould(BlobNamespace ns) throws IOException {
    for (int attempt = 1; ; attempt++) {
      try {
        return ns.rename(SRC, DST);
      } catch (IOException e) {
        if (attempt == 50 || !e.getMessage().contains("retry")) {
          throw e;
        }
      }
    }
  }

  @Test
  void anIntentLeftByNobodyStopsNothingAndIsRemovedWhenItsSourceIsGone() throws IOException {
    BlobNamespace ns = namespace(false);
    populate(ns, SRC, FILES);
    faults.on(Op.COMMIT).nth(3).failBefore();
    assertThrows(StoreUnavailableException.class, () -> ns.rename(SRC, DST));
    faults.clear();
    // A later client that never heard of the rename can still read every file where it is.
    BlobNamespace later = namespace(memory, false);
    for (FsPath p : everyFile(later).keySet()) {
      assertTrue(p.isAtOrUnder(SRC) || p.isAtOrUnder(DST), p.toString());
    }
    assertThrows(FileNotFoundException.class, () -> later.open(FsPath.parse("/src/none")));
    assertEquals(List.of("rename /src to /dst"), later.finishInterruptedRenames());
    assertFalse(intentExists(SRC));
  }
}

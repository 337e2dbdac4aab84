package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.FileRecord.Due;
import io.blobfs.namespace.StripeMap.Run;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The read side of shared stripes (issue 16, step 1): a version B that names stripes of
 * version A through its stripe map, fabricated by hand (no writer makes maps yet), is read,
 * listed, located, renamed, swept and deleted through the keys its map names, on a store
 * with transactions (Týr, memory) and on one without (RADOS).
 */
class MappedRecordReadTest extends SharedStripesFixture {
  /**
   * B at {@code n/a/f}: stripes 0, 1, 3 are A's ({@code d/A/*}), stripe 2 its own. With
   * {@code cutCleanup}, A's old stripe 2 and a replaced version Z's stripes are still
   * there, as a replace cut before its cleanup leaves them, and B's dues list them.
   */
  private FileRecord fabricate(boolean cutCleanup) throws IOException {
    putStripe("A", 0);
    putStripe("A", 1);
    putStripe("A", 3);
    putStripe("B", 2);
    List<Due> dues = List.of();
    if (cutCleanup) {
      byte[] stale = new byte[S];
      putBlob("d/A/2", stale, 0, S);
      putBlob("d/Z/0", stale, 0, S);
      putBlob("d/Z/1", stale, 0, 10);
      dues = List.of(new Due("A", 4, Due.Scope.UNNAMED), new Due("Z", 2, Due.Scope.ALL));
    }
    FileRecord r = FileRecord.striped("B", LENGTH, 1234, S).withStripes(
        new StripeMap(List.of("A"), List.of(new Run(0, 2, 0), new Run(3, 1, 0))), dues);
    store.put("n/a/f", r.encode(), PutMode.CREATE);
    return r;
  }

  private FileRecord fabricate() throws IOException {
    return fabricate(true);
  }

  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void openReadsTheBorrowedStripesExactly(boolean transactional) throws Exception {
    open(transactional);
    fabricate();
    assertArrayEquals(bytes, read("/a/f"));
    // A read across stripes 1 (A's), 2 (B's) and 3 (A's).
    FileReader r = ns.open(FsPath.parse("/a/f"));
    ByteBuffer part = ByteBuffer.allocate(2 * S + 50);
    assertEquals(part.capacity(), Futures.await(r.read(S - 20, part)));
    assertArrayEquals(Arrays.copyOfRange(bytes, S - 20, 3 * S + 30), part.array());
  }

  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void listingsAndBlockLocationsNameTheBorrowedKeys(boolean transactional) throws Exception {
    open(transactional);
    FileRecord r = fabricate();
    List<FileInfo> listed = ns.list(FsPath.parse("/a"));
    assertEquals(1, listed.size());
    assertEquals(r.map(), listed.get(0).record().map());
    assertEquals(r.dues(), listed.get(0).record().dues());
    FaultInjectingBlobStore.Fault borrowed =
        faults.on(Op.HOSTS_OF).keys("d/A/[013]").always().delay(Duration.ZERO);
    FaultInjectingBlobStore.Fault own =
        faults.on(Op.HOSTS_OF).keys("d/B/2").always().delay(Duration.ZERO);
    FaultInjectingBlobStore.Fault other =
        faults.on(Op.HOSTS_OF).keys("d/(?!A/[013]$|B/2$).*").always().delay(Duration.ZERO);
    List<BlockInfo> blocks = ns.locate(listed.get(0), 0, Long.MAX_VALUE);
    assertEquals(4, blocks.size());
    assertEquals(3 * S, blocks.get(3).offset());
    assertEquals(LENGTH - 3 * S, blocks.get(3).length());
    assertEquals(3, borrowed.fired());
    assertEquals(1, own.fired());
    assertEquals(0, other.fired());
    assertEquals(r.map(), ns.getFileInfo(FsPath.parse("/a/f")).record().map());
  }

  /** A delete removes the borrowed keys and its own: no d/ key left. */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void deleteLeavesNoDataKey(boolean transactional) throws Exception {
    open(transactional);
    fabricate(false);
    assertEquals(4, keys("d/").size());
    assertTrue(ns.delete(FsPath.parse("/a/f"), false));
    assertEquals(Set.of(), keys("d/"));
    assertEquals(Set.of(), keys("n/"));
  }

  /** ... and what its dues list (a replace's cut cleanup). */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void deleteRunsTheDues(boolean transactional) throws Exception {
    open(transactional);
    fabricate(true);
    assertEquals(7, keys("d/").size());
    assertTrue(ns.delete(FsPath.parse("/a/f"), false));
    assertEquals(Set.of(), keys("d/"));
  }

  /**
   * An inline version carrying dues (a plain overwrite of a mapped file), its header longer
   * than a stat's first read: read exactly, and its delete runs the dues.
   */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void anInlineVersionWithDuesReadsAndDeletesThem(boolean transactional) throws Exception {
    open(transactional);
    byte[] small = Arrays.copyOf(bytes, 1000);
    List<Due> dues = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      dues.add(new Due("Z" + i, 1, Due.Scope.ALL));
      putBlob("d/Z" + i + "/0", bytes, 0, 10);
    }
    FileRecord r = FileRecord.inline("I", small, 1, S).withStripes(StripeMap.NONE, dues);
    assertTrue(r.headerSize() > FileRecord.MAX_HEADER);
    store.put("n/a/i", r.encode(), PutMode.CREATE);
    assertArrayEquals(small, read("/a/i"));
    assertEquals(dues, ns.list(FsPath.parse("/a")).get(0).record().dues());
    assertTrue(ns.delete(FsPath.parse("/a/i"), false));
    assertEquals(Set.of(), keys("d/"));
  }

  /** A rename copies the map with the record (marked records too, without transactions). */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aRenamedMappedFileReadsTheSameBytes(boolean transactional) throws Exception {
    open(transactional);
    FileRecord r = fabricate(false);
    assertTrue(ns.rename(FsPath.parse("/a/f"), FsPath.parse("/b/g")));
    assertArrayEquals(bytes, read("/b/g"));
    assertEquals(r.map(), ns.getFileInfo(FsPath.parse("/b/g")).record().map());
    assertTrue(ns.delete(FsPath.parse("/b/g"), false));
    assertEquals(Set.of(), keys("d/"));
  }

  /** A directory rename and a recursive delete carry and honour the map too. */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aDirectoryRenameAndARecursiveDeleteGoThroughTheMap(boolean transactional)
      throws Exception {
    open(transactional);
    FileRecord r = fabricate(false);
    assertTrue(ns.rename(FsPath.parse("/a"), FsPath.parse("/c")));
    assertArrayEquals(bytes, read("/c/f"));
    assertEquals(r.map(), ns.getFileInfo(FsPath.parse("/c/f")).record().map());
    assertTrue(ns.delete(FsPath.parse("/c"), true));
    assertEquals(Set.of(), keys("d/"));
  }

  /** The ids a map borrows are named: the orphan sweeper leaves their keys. */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void theSweeperLeavesBorrowedKeys(boolean transactional) throws Exception {
    open(transactional);
    fabricate();
    Thread.sleep(5); // older than the sweep's cutoff
    new OrphanSweeper(ns).sweep(Duration.ZERO, false);
    assertArrayEquals(bytes, read("/a/f"));
  }

  /**
   * A map of 300 runs (a header of about 2.7 KiB, past what a listing reads per entry)
   * is listed with its whole map, and so is a stat of it.
   */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aLongMapIsListedWhole(boolean transactional) throws Exception {
    open(transactional);
    List<Run> runs = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      runs.add(new Run(2L * i, 1, i % 3));
    }
    FileRecord r = FileRecord.striped("own", 600L * S, 1, S).withStripes(
        new StripeMap(List.of("A", "B", "C"), runs), List.of());
    assertTrue(r.headerSize() > 2048);
    store.put("n/d/long", r.encode(), PutMode.CREATE);
    store.put("n/d/plain", FileRecord.striped("p", 10, 1, S).encode(), PutMode.CREATE);
    List<FileInfo> listed = ns.list(FsPath.parse("/d"));
    assertEquals(2, listed.size());
    FileInfo info = listed.get(0).path().toString().equals("/d/long") ? listed.get(0)
        : listed.get(1);
    assertEquals(r.map(), info.record().map());
    assertEquals("d/C/598", info.record().stripeKey(ns.layout(), 598));
    assertEquals("d/own/599", info.record().stripeKey(ns.layout(), 599));
    assertEquals(r.map(), ns.getFileInfo(FsPath.parse("/d/long")).record().map());
    List<FileInfo> recursive = new ArrayList<>();
    EntryIterator<FileInfo> it = ns.listFilesRecursively(FsPath.parse("/"));
    while (it.hasNext()) {
      recursive.add(it.next());
    }
    assertEquals(2, recursive.size());
  }
}

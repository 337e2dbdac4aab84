package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryNotEmptyException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class BlobNamespaceTest {
  private static final int STRIPE = 64 << 10;

  private final InMemoryBlobStore store =
      new InMemoryBlobStore("ns", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
  private final StoreCallCounters counters =
      (c, d) -> counts.computeIfAbsent(c, k -> new AtomicLong()).addAndGet(d);

  private BlobNamespace namespace(boolean keepMarkers) {
    return new BlobNamespace(store, new NamespaceOptions(STRIPE, 16 << 10, 64 << 10, 1024,
        keepMarkers, 100), counters);
  }

  private long count(String counter) {
    AtomicLong c = counts.get(counter);
    return c == null ? 0 : c.get();
  }

  private long totalCalls() {
    return counts.entrySet().stream().filter(e -> !e.getKey().contains("bytes"))
        .mapToLong(e -> e.getValue().get()).sum();
  }

  private static FsPath p(String s) {
    return FsPath.parse(s);
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static void write(BlobNamespace ns, String path, byte[] data) throws IOException {
    try (FileWriter w = ns.create(p(path), true)) {
      // Odd-sized writes, so buffering and stripe splits are exercised.
      for (int off = 0; off < data.length; off += 7001) {
        w.write(data, off, Math.min(7001, data.length - off));
      }
    }
  }

  private static byte[] read(BlobNamespace ns, String path) throws IOException {
    FileReader r = ns.open(p(path));
    ByteBuffer dst = ByteBuffer.allocate((int) r.length());
    Futures.await(r.read(0, dst));
    return dst.array();
  }

  private Set<String> keys(String prefix) throws IOException {
    Set<String> all = new HashSet<>();
    String cursor = null;
    do {
      ScanPage page = store.scan(prefix, cursor, 1000);
      all.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null);
    return all;
  }

  @Test
  void aWriterMayPublishWithAGivenModificationTime() throws IOException {
    BlobNamespace ns = namespace(false);
    for (int size : new int[] {10, 3 * STRIPE}) { // inline and striped records
      FileWriter w = ns.create(p("/t" + size), false);
      w.write(random(size, 2), 0, size);
      w.setModificationTime(1_234_567_000L);
      w.close();
      assertEquals(1_234_567_000L, ns.getFileInfo(p("/t" + size)).modificationTime());
    }
    FileWriter closed = ns.create(p("/c"), false);
    closed.close();
    assertThrows(IOException.class, () -> closed.setModificationTime(1));
  }

  @Test
  void smallFileIsExactlyOneBlob() throws IOException {
    BlobNamespace ns = namespace(false);
    byte[] data = random(1000, 1);
    write(ns, "/a/small", data);
    assertEquals(Set.of("n/a/small"), keys(""));
    assertArrayEquals(data, read(ns, "/a/small"));
  }

  @Test
  void largeFileIsStripedAndReadsBackAtAnyOffset() throws IOException {
    BlobNamespace ns = namespace(false);
    byte[] data = random(3 * STRIPE + 8192, 2);
    write(ns, "/big", data);
    Set<String> dataKeys = keys("d/");
    assertEquals(4, dataKeys.size(), "one data blob per stripe: " + dataKeys);
    assertArrayEquals(data, read(ns, "/big"));
    FileReader r = ns.open(p("/big"));
    Random rnd = new Random(3);
    for (int i = 0; i < 200; i++) {
      int off = rnd.nextInt(data.length);
      int len = Math.min(rnd.nextInt(3 * STRIPE), data.length - off);
      ByteBuffer dst = ByteBuffer.allocate(len);
      assertEquals(len, Futures.await(r.read(off, dst)));
      assertArrayEquals(Arrays.copyOfRange(data, off, off + len), dst.array(),
          "range " + off + "+" + len);
    }
    assertEquals(-1, Futures.await(r.read(data.length, ByteBuffer.allocate(1))));
  }

  @Test
  void createPerformanceSkipsTheProbesButKeepsExclusiveCreate() throws IOException {
    BlobNamespace fast = new BlobNamespace(store,
        new NamespaceOptions(STRIPE, 16 << 10, 64 << 10, 1024, false, 100, true), counters);
    write(fast, "/f", random(10, 1));
    counts.clear();
    FileWriter w = fast.create(p("/f"), false);
    assertEquals(0, totalCalls(), "no probe at create");
    w.write(random(5, 2), 0, 5);
    java.nio.file.FileAlreadyExistsException e =
        assertThrows(java.nio.file.FileAlreadyExistsException.class, w::close);
    assertTrue(e.getMessage().contains("/f"));
    assertArrayEquals(random(10, 1), read(fast, "/f"), "the existing file is untouched");
    assertEquals(Set.of("n/f"), keys(""), "and the loser's data is gone");
  }

  @Test
  void fileIsInvisibleUntilClose() throws IOException {
    BlobNamespace ns = namespace(false);
    FileWriter w = ns.create(p("/dir/f"), false);
    w.write(random(5 * STRIPE, 4), 0, 5 * STRIPE);
    assertTrue(ns.probe(p("/dir/f")).isEmpty());
    assertTrue(ns.probe(p("/dir")).isEmpty(), "no name under /dir yet");
    w.close();
    assertEquals(5L * STRIPE, ns.getFileInfo(p("/dir/f")).length());
    assertTrue(ns.getFileInfo(p("/dir")).isDirectory());
  }

  @Test
  void abortedWriterLeavesNoData() throws IOException {
    BlobNamespace ns = namespace(false);
    FileWriter w = ns.create(p("/f"), false);
    w.write(random(3 * STRIPE, 5), 0, 3 * STRIPE);
    assertFalse(keys("d/").isEmpty());
    w.abort();
    assertEquals(Set.of(), keys(""));
  }

  @Test
  void renameCostsTheSameStoreCallsWhateverTheFileSize() throws IOException {
    BlobNamespace ns = namespace(false);
    write(ns, "/one", random(STRIPE, 6));
    write(ns, "/many", random(20 * STRIPE, 7));
    Set<String> dataBefore = keys("d/");

    counts.clear();
    assertTrue(ns.rename(p("/one"), p("/one2")));
    long small = totalCalls();
    long smallBytes = count(StoreCallCounters.BYTES_WRITTEN);
    counts.clear();
    assertTrue(ns.rename(p("/many"), p("/many2")));
    assertEquals(small, totalCalls());
    assertTrue(count(StoreCallCounters.BYTES_WRITTEN) <= FileRecord.MAX_HEADER);
    assertEquals(smallBytes, count(StoreCallCounters.BYTES_WRITTEN));
    assertEquals(0, count(StoreCallCounters.WRITE), "no data blob written by rename");
    assertEquals(dataBefore, keys("d/"), "data blobs untouched by rename");
    assertEquals(Set.of("n/one2", "n/many2"), keys("n/"));
    assertArrayEquals(random(20 * STRIPE, 7), read(ns, "/many2"));
  }

  @Test
  void directoryRenameMovesEveryNameAndNoData() throws IOException {
    BlobNamespace ns = namespace(false);
    Map<String, byte[]> files = Map.of("/src/a", random(10, 1), "/src/b/c", random(STRIPE * 2, 2),
        "/src/b/d/e", random(100, 3));
    for (var e : files.entrySet()) {
      write(ns, e.getKey(), e.getValue());
    }
    write(ns, "/srcfile", random(5, 9)); // shares the prefix "src" but is no child
    Set<String> dataBefore = keys("d/");
    assertTrue(ns.rename(p("/src"), p("/dst")));
    assertEquals(Set.of("n/dst/a", "n/dst/b/c", "n/dst/b/d/e", "n/srcfile"), keys("n/"));
    for (var e : files.entrySet()) {
      assertArrayEquals(e.getValue(), read(ns, e.getKey().replace("/src/", "/dst/")));
    }
    assertEquals(dataBefore, keys("d/"));
  }

  @Test
  void renameFollowsHdfsRules() throws IOException {
    BlobNamespace ns = namespace(true);
    write(ns, "/a/f", random(10, 1));
    write(ns, "/b/g", random(10, 2));
    assertFalse(ns.rename(p("/missing"), p("/x")), "missing source");
    assertFalse(ns.rename(p("/a/f"), p("/b/g")), "destination file exists");
    assertFalse(ns.rename(p("/a"), p("/a/sub")), "into itself");
    assertFalse(ns.rename(p("/a/f"), p("/nodir/f")), "missing parent (markers kept)");
    assertTrue(ns.rename(p("/a/f"), p("/b")), "into an existing directory");
    assertArrayEquals(random(10, 1), read(ns, "/b/f"));
    assertTrue(ns.getFileInfo(p("/a")).isDirectory(), "emptied source parent stays (markers)");
  }

  @Test
  void overwriteRemovesTheOldData() throws IOException {
    BlobNamespace ns = namespace(false);
    write(ns, "/f", random(4 * STRIPE, 1));
    Set<String> first = keys("d/");
    write(ns, "/f", random(2 * STRIPE, 2));
    Set<String> second = keys("d/");
    assertEquals(2, second.size());
    assertTrue(second.stream().noneMatch(first::contains));
    assertArrayEquals(random(2 * STRIPE, 2), read(ns, "/f"));
  }

  @Test
  void paperModeDropsMkdirAndDirectoriesAreImplicit() throws IOException {
    BlobNamespace ns = namespace(false);
    BlobNamespace otherProcess = namespace(false);
    counts.clear();
    assertTrue(ns.mkdirs(p("/x/y/z")));
    assertEquals(0, count(StoreCallCounters.PUT) + count(StoreCallCounters.WRITE),
        "mkdirs writes nothing");
    assertEquals(3, count(StoreCallCounters.READ), "one record read per level, for a file");
    assertEquals(3, totalCalls(), "and nothing else");
    assertEquals(Set.of(), keys(""));
    assertTrue(otherProcess.probe(p("/x")).isEmpty(), "nothing in the store");
    write(ns, "/x/y/file", random(10, 1));
    assertTrue(otherProcess.getFileInfo(p("/x")).isDirectory());
    assertTrue(otherProcess.getFileInfo(p("/x/y")).isDirectory());
    assertTrue(otherProcess.delete(p("/x/y/file"), false));
    assertTrue(otherProcess.probe(p("/x")).isEmpty(), "the last name gone, the directory is gone");
    assertEquals(Set.of(), keys(""));
  }

  /**
   * Dropping mkdir means writing nothing, not answering wrongly: a file at the path or
   * above it is refused as with markers kept, found by reads alone.
   */
  @Test
  void paperModeMkdirsRefusesAFileOnThePathWithReadsOnly() throws IOException {
    for (boolean keep : new boolean[] {false, true}) {
      store.clear();
      BlobNamespace ns = namespace(keep);
      write(ns, "/a/f", random(10, 1));
      Set<String> before = keys("");
      counts.clear();
      assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> ns.mkdirs(p("/a/f")));
      assertThrows(java.nio.file.NotDirectoryException.class, () -> ns.mkdirs(p("/a/f/b")));
      assertThrows(java.nio.file.NotDirectoryException.class, () -> ns.mkdirs(p("/a/f/b/c")));
      assertEquals(0, count(StoreCallCounters.PUT) + count(StoreCallCounters.WRITE)
          + count(StoreCallCounters.DELETE), "markers " + keep + ": nothing written");
      assertEquals(before, keys(""));
      assertTrue(ns.probe(p("/a/f/b")).isEmpty(), "not remembered as a directory either");
      assertTrue(ns.getFileInfo(p("/a/f")).isFile());
      assertTrue(ns.mkdirs(p("/a")), "over a directory: fine");
    }
  }

  @Test
  void paperModeEmptyDirectoriesAreVisibleToTheInstanceThatMadeThem() throws IOException {
    BlobNamespace ns = namespace(false);
    assertTrue(ns.mkdirs(p("/job/_temporary/0/task1")));
    assertTrue(ns.mkdirs(p("/job/_temporary/0/task2")));
    write(ns, "/job/_temporary/0/task2/part-0", random(5, 1));
    counts.clear();
    assertTrue(ns.getFileInfo(p("/job/_temporary/0/task1")).isDirectory());
    assertEquals(List.of(), ns.list(p("/job/_temporary/0/task1")), "empty, not missing");
    assertEquals(List.of("task1", "task2"), ns.list(p("/job/_temporary/0")).stream()
        .map(f -> f.path().name()).toList());
    assertThrows(DirectoryNotEmptyException.class, () -> ns.delete(p("/job/_temporary/0"), false));
    assertTrue(ns.rename(p("/job/_temporary/0/task1"), p("/job/_temporary/0/task1-done")));
    assertTrue(ns.getFileInfo(p("/job/_temporary/0/task1-done")).isDirectory());
    assertTrue(ns.probe(p("/job/_temporary/0/task1")).isEmpty());
    assertTrue(ns.delete(p("/job/_temporary"), true));
    assertTrue(ns.probe(p("/job/_temporary/0/task1-done")).isEmpty());
    assertTrue(ns.probe(p("/job")).isEmpty());
    assertEquals(Set.of(), keys(""));
  }

  @Test
  void keepModeMarkersBehaveLikeHdfs() throws IOException {
    BlobNamespace ns = namespace(true);
    assertTrue(ns.mkdirs(p("/x/y")));
    assertTrue(ns.getFileInfo(p("/x/y")).isDirectory());
    assertEquals(List.of(), ns.list(p("/x/y")));
    write(ns, "/x/y/f", random(3, 1));
    assertThrows(DirectoryNotEmptyException.class, () -> ns.delete(p("/x/y"), false));
    assertTrue(ns.delete(p("/x/y/f"), false));
    assertTrue(ns.getFileInfo(p("/x/y")).isDirectory(), "parent kept after its last child");
    assertTrue(ns.delete(p("/x"), true));
    assertTrue(ns.probe(p("/x")).isEmpty());
  }

  @Test
  void listingIsPagedSortedAndRecursiveListingIsOneFlatScan() throws IOException {
    BlobNamespace ns = namespace(false);
    Set<String> expected = new HashSet<>();
    for (int i = 0; i < 250; i++) {
      write(ns, "/d/f" + i, random(3, i));
      expected.add("/d/f" + i);
      write(ns, "/d/sub" + (i % 5) + "/g" + i, random(3, i));
    }
    List<FileInfo> top = ns.list(p("/d"));
    assertEquals(255, top.size());
    List<FsPath> names = top.stream().map(FileInfo::path).collect(Collectors.toList());
    List<FsPath> sorted = new ArrayList<>(names);
    sorted.sort(null);
    assertEquals(sorted, names);
    assertEquals(expected, top.stream().filter(FileInfo::isFile)
        .map(f -> f.path().toString()).collect(Collectors.toSet()));
    assertEquals(5, top.stream().filter(FileInfo::isDirectory).count());

    counts.clear();
    List<FileInfo> all = ns.listFilesRecursively(p("/d")).drain();
    assertEquals(500, all.size());
    assertTrue(all.stream().allMatch(FileInfo::isFile));
    assertEquals(5, count(StoreCallCounters.SCAN), "500 names in pages of 100: 5 scans");
  }

  @Test
  void listingAFileGivesTheFileAndAMissingPathFails() throws IOException {
    BlobNamespace ns = namespace(false);
    write(ns, "/f", random(3, 1));
    assertEquals(List.of(p("/f")), ns.list(p("/f")).stream().map(FileInfo::path).toList());
    assertThrows(FileNotFoundException.class, () -> ns.list(p("/nope")));
    assertEquals(List.of(), ns.list(FsPath.ROOT).stream().filter(FileInfo::isDirectory).toList());
  }

  @Test
  void blockLocationsCoverExactlyTheRequestedRange() throws IOException {
    BlobNamespace ns = namespace(false);
    int len = 3 * STRIPE + 100;
    write(ns, "/f", random(len, 1));
    FileInfo f = ns.getFileInfo(p("/f"));
    List<BlockInfo> all = ns.locate(f, 0, len);
    assertEquals(List.of(0L, (long) STRIPE, 2L * STRIPE, 3L * STRIPE),
        all.stream().map(BlockInfo::offset).toList());
    assertEquals(List.of((long) STRIPE, (long) STRIPE, (long) STRIPE, 100L),
        all.stream().map(BlockInfo::length).toList());
    assertTrue(all.stream().allMatch(b -> b.hosts().equals(List.of("localhost"))));
    List<BlockInfo> mid = ns.locate(f, STRIPE + 10, 20);
    assertEquals(1, mid.size());
    assertEquals(STRIPE, mid.get(0).offset());
    assertEquals(List.of(), ns.locate(f, len, 10));
    assertEquals(List.of((long) STRIPE, 2L * STRIPE, 3L * STRIPE),
        ns.locate(f, STRIPE + 10, Long.MAX_VALUE).stream().map(BlockInfo::offset).toList(),
        "start + len overflows: to the end");
  }

  /**
   * A damaged record's inline length is checked before anything is allocated for it:
   * against the hard maximum, and against the bytes the record has.
   */
  @Test
  void corruptInlineLengthIsRefusedBeforeAllocating() throws IOException {
    BlobNamespace ns = namespace(false);
    write(ns, "/f", random(10, 1));
    byte[] good = store.readFully("n/f", 0, (int) store.stat("n/f").size());
    for (int claimed : new int[] {Integer.MAX_VALUE - 16, FileRecord.MAX_INLINE + 1, 5000, 11}) {
      ByteBuffer bad = ByteBuffer.wrap(good.clone());
      bad.putLong(5, claimed); // length
      bad.putInt(good.length - 10 - 4, claimed); // inline length, just before the bytes
      store.put("n/f", bad, PutMode.OVERWRITE);
      assertThrows(CorruptRecordException.class, () -> ns.open(p("/f")), "claims " + claimed);
      if (claimed > FileRecord.MAX_INLINE) {
        assertThrows(CorruptRecordException.class, () -> ns.getFileInfo(p("/f")));
      }
    }
  }

  @Test
  void failedDataWriteLeavesNoFileAndNoData() throws IOException {
    FaultInjectingBlobStore failing = FaultInjectingBlobStore.over(store);
    failing.on(Op.WRITE).nth(4).always().failBefore();
    BlobNamespace ns = new BlobNamespace(failing.store(),
        new NamespaceOptions(STRIPE, 16 << 10, 64 << 10, 1024, false, 100), counters);
    FileWriter w = ns.create(p("/f"), false);
    byte[] data = random(10 * STRIPE, 1);
    IOException e = assertThrows(IOException.class, () -> {
      w.write(data, 0, data.length);
      w.close();
    });
    assertTrue(e.getMessage().contains("/f"), e.getMessage());
    w.abort();
    assertTrue(ns.probe(p("/f")).isEmpty());
    assertEquals(Set.of(), keys(""));
  }

  @Test
  void concurrentMixedOperationsLoseNothing() throws Exception {
    BlobNamespace ns = namespace(false);
    int threads = 8;
    int files = 40;
    List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
    Map<String, byte[]> kept = new ConcurrentHashMap<>();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int id = t;
      workers.add(new Thread(() -> {
        try {
          Random r = new Random(id);
          for (int i = 0; i < files; i++) {
            byte[] data = random(r.nextInt(3 * STRIPE), id * 1000L + i);
            String name = "/t" + id + "/f" + i;
            write(ns, name, data);
            assertTrue(ns.rename(p(name), p(name + ".renamed")));
            assertArrayEquals(data, read(ns, name + ".renamed"));
            if (i % 2 == 0) {
              assertTrue(ns.delete(p(name + ".renamed"), false));
            } else {
              kept.put(name + ".renamed", data);
            }
          }
        } catch (Throwable e) {
          errors.add(e);
        }
      }));
    }
    workers.forEach(Thread::start);
    for (Thread w : workers) {
      w.join();
    }
    assertEquals(List.of(), errors);
    for (int t = 0; t < threads; t++) {
      List<String> left = ns.list(p("/t" + t)).stream().map(f -> f.path().name()).sorted().toList();
      List<String> expected = new ArrayList<>();
      for (int i = 1; i < files; i += 2) {
        expected.add("f" + i + ".renamed");
      }
      expected.sort(null);
      assertEquals(expected, left);
    }
    assertEquals(threads * files / 2, kept.size());
    for (var e : kept.entrySet()) {
      assertArrayEquals(e.getValue(), read(ns, e.getKey()), e.getKey());
    }
  }

  @Test
  void createNonRecursiveNeedsADirectoryAsParent() throws IOException {
    for (boolean keepMarkers : new boolean[] {false, true}) {
      BlobNamespace ns = namespace(keepMarkers);
      String top = "/cnr-" + keepMarkers;
      write(ns, top + "/file", random(10, 1));
      // A file as parent is refused in both modes, and the file is untouched.
      assertThrows(java.nio.file.NotDirectoryException.class,
          () -> ns.createNonRecursive(p(top + "/file/child"), false));
      assertArrayEquals(random(10, 1), read(ns, top + "/file"));
      // A missing parent is refused only where directories exist on their own.
      if (keepMarkers) {
        assertThrows(FileNotFoundException.class,
            () -> ns.createNonRecursive(p(top + "/missing/child"), false));
      } else {
        try (FileWriter w = ns.createNonRecursive(p(top + "/missing/child"), false)) {
          w.write(new byte[] {7}, 0, 1);
        }
        assertArrayEquals(new byte[] {7}, read(ns, top + "/missing/child"));
      }
      // An existing directory as parent works, and the root's children always do.
      try (FileWriter w = ns.createNonRecursive(p(top + "/sibling"), false)) {
        w.write(new byte[] {1, 2}, 0, 2);
      }
      assertArrayEquals(new byte[] {1, 2}, read(ns, top + "/sibling"));
      ns.createNonRecursive(p("/at-root-" + keepMarkers), true).close();
      assertTrue(ns.probe(p("/at-root-" + keepMarkers)).orElseThrow().isFile());
    }
  }
}

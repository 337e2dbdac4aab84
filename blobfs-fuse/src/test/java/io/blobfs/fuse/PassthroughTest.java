package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.kernel.Entry;
import io.blobfs.fuse.kernel.FuseSession;
import io.blobfs.fuse.kernel.LowLevelFs;
import io.blobfs.fuse.kernel.Opened;
import io.blobfs.fuse.kernel.Passthrough;
import io.blobfs.fuse.kernel.SetAttr;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * FUSE passthrough's side in the mount, with no kernel: a {@link Passthrough} that records
 * the registered files, and writes into them as the kernel would (straight to the staged
 * file, with no {@code write} call on the file system).
 */
class PassthroughTest {
  private static final int RW = FuseSession.O_RDWR;

  @TempDir
  Path staging;
  private BlobNamespace ns;
  private FaultInjectingBlobStore store;
  private BlobFuseFs fs;
  private final Kernel kernel = new Kernel();

  /** The kernel's side: backing ids of registered files. */
  private static final class Kernel implements Passthrough {
    final Map<Integer, Path> files = new HashMap<>();
    final List<Integer> closed = new ArrayList<>();
    int next = 1;

    @Override
    public synchronized int open(Path file) {
      files.put(next, file);
      return next++;
    }

    @Override
    public synchronized void close(int backingId) {
      closed.add(backingId);
    }

    /** A write through a passthrough handle: to the backing file, not to the mount. */
    void write(Opened h, long offset, String s) throws IOException {
      assertTrue(h.backingId() > 0, "a passthrough handle");
      try (FileChannel c = FileChannel.open(files.get(h.backingId()), StandardOpenOption.WRITE)) {
        c.write(ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)), offset);
      }
    }
  }

  @BeforeEach
  void setUp() throws Exception {
    store = FaultInjectingBlobStore.over(new InMemoryBlobStore("pt", new StoreLimits(200,
        1L << 30, Integer.MAX_VALUE)));
    ns = new BlobNamespace(store.store(), new NamespaceOptions(4096, 4096, 16384, 0, false, 100),
        StoreCallCounters.NONE);
    fs = new BlobFuseFs(ns, new BlobFuseFs.Settings(false, 0755, 4096, staging));
    fs.initialized(kernel);
  }

  private String published(String path) throws Exception {
    FileReader r = ns.open(FsPath.parse(path));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return new String(b.array(), StandardCharsets.UTF_8);
  }

  private Entry create(String name, Opened[] h) throws Exception {
    return fs.create(LowLevelFs.ROOT, name, RW, h);
  }

  @Test
  void theKernelsWritesAreSeenByStatAndPublishedAtClose() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("f", h);
    assertEquals(1, h[0].backingId());
    kernel.write(h[0], 100, "hello");
    assertEquals(105, fs.getattr(e.node()).size(), "the staged file's size, not the mount's");
    assertEquals("", published("/f"), "not before close");
    fs.flush(e.node(), h[0].fh());
    assertEquals("\0".repeat(100) + "hello", published("/f"));
    assertEquals(List.of(), kernel.closed, "still open");
    fs.release(e.node(), h[0].fh());
    assertEquals(List.of(1), kernel.closed, "the backing id is given back with the staged file");
  }

  @Test
  void everyHandleOfAStagedFileSharesItsBackingFile() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("s", h);
    Opened reader = fs.open(e.node(), 0);
    Opened writer = fs.open(e.node(), RW);
    assertEquals(h[0].backingId(), reader.backingId());
    assertEquals(h[0].backingId(), writer.backingId());
    assertEquals(1, kernel.files.size(), "registered once");
    kernel.write(writer, 0, "abc");
    fs.release(e.node(), writer.fh()); // its close (flush) and release
    fs.release(e.node(), h[0].fh());
    fs.release(e.node(), reader.fh());
    assertEquals("abc", published("/s"), "published by the last release at the latest");
    assertEquals(List.of(1), kernel.closed);
  }

  @Test
  void aCloseOfAWriterPublishesAWriteThatChangedNeitherSizeNorTime() throws Exception {
    // a write in place within one tick of a coarse clock leaves the staged file's size and
    // time as they were: only the close of a descriptor open for writing tells of it
    Opened[] h = new Opened[1];
    Entry e = create("t", h);
    kernel.write(h[0], 0, "aaaa");
    fs.flush(e.node(), h[0].fh());
    assertEquals("aaaa", published("/t"));
    Path local = kernel.files.get(h[0].backingId());
    FileTime time = Files.getLastModifiedTime(local);
    fs.getattr(e.node()); // the mount looked at it after the publication
    kernel.write(h[0], 0, "bbbb");
    Files.setLastModifiedTime(local, time);
    fs.flush(e.node(), h[0].fh());
    assertEquals("bbbb", published("/t"));
    fs.release(e.node(), h[0].fh());
  }

  /** Counts the store's writes from now on (data, records, commits), failing none. */
  private FaultInjectingBlobStore.Fault countStoreWrites() {
    return store.on(Op.WRITE, Op.PUT, Op.COMMIT).always().delay(Duration.ZERO);
  }

  @Test
  void aCloseRightAfterAnFsyncPublishesNothing() throws Exception {
    // fio's end_fsync, then its close: the kernel wrote the file, the fsync published it;
    // the close found the file as the fsync stamped it, and used to upload it again
    Opened[] h = new Opened[1];
    Entry e = create("c", h);
    kernel.write(h[0], 0, "x".repeat(20_000)); // striped: several data blobs
    fs.fsync(e.node(), h[0].fh(), false);
    assertEquals("x".repeat(20_000), published("/c"));
    FaultInjectingBlobStore.Fault writes = countStoreWrites();
    fs.flush(e.node(), h[0].fh());
    fs.release(e.node(), h[0].fh());
    assertEquals(0, writes.fired(), "nothing written since the fsync: no store write");
    assertEquals("x".repeat(20_000), published("/c"));
  }

  /**
   * fio's verify pass (session 14, the cause of PassthroughEarlyIT's "4 publications, 3
   * whole"): it opens its file O_RDWR again after the write pass's close, reads it and
   * closes it. The fresh staged copy had no published record, so that close uploaded the
   * whole file again, unchanged.
   */
  @Test
  void aWriterThatOpensAPublishedFileAndWritesNothingPublishesNothing() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("v", h);
    kernel.write(h[0], 0, "v".repeat(20_000)); // striped: several data blobs
    fs.release(e.node(), h[0].fh());
    assertEquals("v".repeat(20_000), published("/v"));
    Opened w = fs.open(e.node(), RW); // a fresh copy of the published file
    assertTrue(w.backingId() > 0, "passed through");
    FaultInjectingBlobStore.Fault writes = countStoreWrites();
    fs.flush(e.node(), w.fh());
    fs.release(e.node(), w.fh());
    assertEquals(0, writes.fired(), "nothing written: no store write");
    Opened again = fs.open(e.node(), RW); // the record still guards a real change
    kernel.write(again, 0, "w");
    fs.flush(e.node(), again.fh());
    fs.release(e.node(), again.fh());
    assertEquals("w" + "v".repeat(19_999), published("/v"));
  }

  /** fio's layout open: a create, a fallocate the mount refuses, a close: one publication. */
  @Test
  void aCreateClosedWithoutAWritePublishesOnlyAtTheCreate() throws Exception {
    Opened[] h = new Opened[1];
    FaultInjectingBlobStore.Fault writes = countStoreWrites();
    Entry e = create("empty", h);
    int atCreate = writes.fired();
    assertTrue(atCreate > 0, "create publishes the empty file");
    fs.flush(e.node(), h[0].fh());
    fs.release(e.node(), h[0].fh());
    assertEquals(atCreate, writes.fired(), "the close and release publish nothing more");
    assertEquals("", published("/empty"));
  }

  @Test
  void aSecondFsyncAndTheCloseAfterItPublishNothingNew() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("d", h);
    kernel.write(h[0], 0, "abc");
    fs.fsync(e.node(), h[0].fh(), false);
    kernel.write(h[0], 3, "def");
    fs.fsync(e.node(), h[0].fh(), true);
    assertEquals("abcdef", published("/d"));
    FaultInjectingBlobStore.Fault writes = countStoreWrites();
    fs.fsync(e.node(), h[0].fh(), false);
    fs.getattr(e.node());
    fs.flush(e.node(), h[0].fh());
    fs.release(e.node(), h[0].fh());
    assertEquals(0, writes.fired());
  }

  @Test
  void aWriteInPlaceAfterAnFsyncIsPublishedAtClose() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("w", h);
    kernel.write(h[0], 0, "aaaa");
    fs.fsync(e.node(), h[0].fh(), false);
    FaultInjectingBlobStore.Fault writes = countStoreWrites();
    kernel.write(h[0], 0, "bbbb"); // same size; the kernel moves mtime and ctime
    fs.flush(e.node(), h[0].fh());
    assertTrue(writes.fired() > 0);
    assertEquals("bbbb", published("/w"));
    fs.release(e.node(), h[0].fh());
  }

  @Test
  void aWriteThroughASharedMappingAfterAnFsyncIsPublishedAtClose() throws Exception {
    // A page written through a shared mapping stays dirty and writable after the fsync's
    // publication, so a second write through it faults nowhere and moves no time: the
    // stat matches the fsync's stamp, and only the bytes (their checksums) tell
    Opened[] h = new Opened[1];
    Entry e = create("mm", h);
    kernel.write(h[0], 0, "0".repeat(8192));
    Path local = kernel.files.get(h[0].backingId());
    try (FileChannel c = FileChannel.open(local, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      MappedByteBuffer map = c.map(FileChannel.MapMode.READ_WRITE, 0, 8192);
      map.put(0, "one".getBytes(StandardCharsets.UTF_8));
      fs.fsync(e.node(), h[0].fh(), false);
      assertEquals("one", published("/mm").substring(0, 3));
      fs.getattr(e.node()); // the mount looks at it after the publication
      map.put(0, "two".getBytes(StandardCharsets.UTF_8));
      fs.flush(e.node(), h[0].fh());
      assertEquals("two", published("/mm").substring(0, 3));
      map.put(4096, "three".getBytes(StandardCharsets.UTF_8)); // after the close, as
      fs.fsync(e.node(), h[0].fh(), false);                   // sync(1) does, read-only
      assertEquals("three", published("/mm").substring(4096, 4101));
    }
    fs.release(e.node(), h[0].fh());
  }

  @Test
  void aWriteThroughASharedMappingAfterTheCloseIsPublishedAtTheLastRelease() throws Exception {
    // open, write through a shared mapping, close(fd), write through the mapping again,
    // munmap: the last release comes after the munmap. The page is dirty and writable
    // since before the close's publication, so the second write moves no time.
    Opened[] h = new Opened[1];
    Entry e = create("mr", h);
    kernel.write(h[0], 0, "0".repeat(8192));
    Path local = kernel.files.get(h[0].backingId());
    try (FileChannel c = FileChannel.open(local, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      MappedByteBuffer map = c.map(FileChannel.MapMode.READ_WRITE, 0, 8192);
      map.put(0, "one".getBytes(StandardCharsets.UTF_8));
      fs.flush(e.node(), h[0].fh());
      assertEquals("one", published("/mr").substring(0, 3));
      map.put(0, "two".getBytes(StandardCharsets.UTF_8));
    }
    fs.release(e.node(), h[0].fh());
    assertEquals("two", published("/mr").substring(0, 3), "README: the last release looks too");
  }

  /**
   * Review must-fix 1 (rev-fuse-early2), the copy path: a writer that opens a published
   * file (a fresh staged copy, recorded as the version it copies) and changes a piece
   * keeping its CRC32C publishes the change at its close: the copy's record is checked by
   * SHA-256 per piece, so a change in the copy's tick that keeps the stamp (a kernel
   * without multigrain times, simulated: the record is stamped again after the write) is
   * still seen. A copy closed without a write publishes nothing (fio's verify pass).
   */
  @Test
  void aChangeToACopyKeepingAPiecesCrc32cIsPublishedAtItsClose() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("copied", h);
    kernel.write(h[0], 0, "0".repeat(8192));
    fs.release(e.node(), h[0].fh());
    assertEquals("0".repeat(8192), published("/copied"));
    Opened idle = fs.open(e.node(), RW); // a copy whose writer writes nothing
    long before = fs.writeStats().publications();
    fs.flush(e.node(), idle.fh());
    fs.release(e.node(), idle.fh());
    assertEquals(before, fs.writeStats().publications(), "an unchanged copy's close");
    Opened w = fs.open(e.node(), RW); // a fresh copy of the published file
    assertTrue(w.backingId() > 0, "passed through");
    Path local = kernel.files.get(w.backingId());
    byte[] want = sameCrc32c(Files.readAllBytes(local), 100,
        "CHANGED".getBytes(StandardCharsets.UTF_8), 200);
    try (FileChannel c = FileChannel.open(local, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      c.map(FileChannel.MapMode.READ_WRITE, 0, 8192).put(0, want, 0, 4096);
    }
    assertArrayEquals(want, Files.readAllBytes(local));
    // this kernel moved ctime at the mapped write's fault; one without multigrain times
    // may not, if it came in the copy's tick: then only the bytes tell
    fs.passedThrough(e.node()).restampRecord();
    fs.flush(e.node(), w.fh());
    fs.release(e.node(), w.fh()); // the last release
    assertArrayEquals(want, bytesOf(ns, "/copied"), "the change is published");
  }

  /**
   * The close-after-fsync check (review of fuse-early2, its reviewer's test): a change
   * through a dirty, writable mapped page after a writer's close moves no time, so the
   * bytes decide, and one that keeps a 1 MiB piece's CRC32C passed a CRC32C check. At the
   * last release no publication follows: the staged copy was discarded and the write lost.
   */
  @Test
  void aMappedChangeKeepingAPiecesCrc32cIsPublishedAtTheLastRelease() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("lost", h);
    kernel.write(h[0], 0, "0".repeat(8192));
    Path local = kernel.files.get(h[0].backingId());
    byte[] want;
    try (FileChannel c = FileChannel.open(local, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      MappedByteBuffer map = c.map(FileChannel.MapMode.READ_WRITE, 0, 8192);
      map.put(0, "one".getBytes(StandardCharsets.UTF_8)); // page 0 dirty and writable
      fs.flush(e.node(), h[0].fh()); // a writer's close: published, recorded
      byte[] was = Files.readAllBytes(local);
      want = sameCrc32c(was, 100, "CHANGED".getBytes(StandardCharsets.UTF_8), 200);
      map.put(0, want, 0, 4096); // page 0 only: no fault, no time moves
    }
    assertArrayEquals(want, Files.readAllBytes(local));
    fs.release(e.node(), h[0].fh()); // the last release: no publication after it
    assertArrayEquals(want, bytesOf(ns, "/lost"), "the change is published, or lost");
  }

  @Test
  void aLookThatReadTheFileNeverPutsBackTheSizeItSawBeforeTheRead() throws Exception {
    // A forced look stats, then reads the whole file to compare it with the last
    // publication; another look (a getattr, a publication's stamp) records a newer size
    // meanwhile. The forced look must not apply its older stat over it.
    StagedFile s = StagedFile.empty(staging);
    s.passThrough(kernel);
    Path local = kernel.files.get(s.backingId());
    Files.write(local, "0123".getBytes(StandardCharsets.UTF_8));
    s.publish(ns, FsPath.parse("/s2"));
    assertEquals("0123", published("/s2"));
    s.afterCheck = () -> {
      try {
        Files.write(local, "4567".getBytes(StandardCharsets.UTF_8),
            StandardOpenOption.APPEND);
        s.observe(false);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    };
    try {
      s.observe(true);
      assertEquals(8, s.length(), "the size recorded during the read, not the one before it");
    } finally {
      s.discard();
    }
  }

  @Test
  void aWriteSeenOnlyAtTheLastReleaseIsPublished() throws Exception {
    // writes through a shared mapping reach the backing file after the descriptor's close
    Opened[] h = new Opened[1];
    Entry e = create("m", h);
    kernel.write(h[0], 0, "one");
    fs.flush(e.node(), h[0].fh());
    kernel.write(h[0], 3, "two");
    fs.release(e.node(), h[0].fh());
    assertEquals("onetwo", published("/m"));
  }

  @Test
  void truncateAndUtimensatOfAPassedThroughFileArePublished() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("u", h);
    kernel.write(h[0], 0, "0123456789");
    assertEquals(4, fs.setattr(e.node(), new SetAttr(h[0].fh(), 4, -1, false)).size());
    kernel.write(h[0], 4, "ab");
    fs.setattr(e.node(), new SetAttr(h[0].fh(), -1, 1_000_000_000L, false));
    assertEquals(6, fs.getattr(e.node()).size());
    assertEquals(1_000_000_000L, fs.getattr(e.node()).mtimeMillis(), "the time set, kept");
    fs.release(e.node(), h[0].fh());
    assertEquals("0123ab", published("/u"));
    assertEquals(1_000_000_000L, ns.getFileInfo(FsPath.parse("/u")).modificationTime());
  }

  @Test
  void aFileOpenThroughThePageCacheIsStagedWithoutPassthrough() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("p", h);
    kernel.write(h[0], 0, "old");
    fs.release(e.node(), h[0].fh());
    Opened cached = fs.open(e.node(), 0); // the published file, through the page cache
    assertEquals(0, cached.backingId());
    Opened w = fs.open(e.node(), RW);
    assertEquals(0, w.backingId(), "the kernel refuses passthrough beside cached handles");
    Opened r = fs.open(e.node(), 0);
    assertEquals(0, r.backingId(), "nor for later handles of that staged copy");
    fs.write(e.node(), w.fh(), 0, ByteBuffer.wrap("new".getBytes(StandardCharsets.UTF_8)));
    fs.release(e.node(), w.fh());
    fs.release(e.node(), r.fh());
    fs.release(e.node(), cached.fh());
    assertEquals("new", published("/p"));
    Opened again = fs.open(e.node(), RW);
    assertTrue(again.backingId() > 0, "with no cached handle left, a new staged copy passes through");
    fs.release(e.node(), again.fh());
  }

  @Test
  void withoutTheKernelsPassthroughNothingPassesThrough() throws Exception {
    fs.initialized(null);
    Opened[] h = new Opened[1];
    Entry e = create("n", h);
    assertEquals(0, h[0].backingId());
    fs.write(e.node(), h[0].fh(), 0, ByteBuffer.wrap("x".getBytes(StandardCharsets.UTF_8)));
    fs.release(e.node(), h[0].fh());
    assertEquals("x", published("/n"));
    assertEquals(0, kernel.files.size());
  }
  // ------------------------------------------------ early upload of passed-through files

  private static final int CHUNK = 16384;

  /**
   * A mount over {@code over} whose passed-through files upload early every 16 KiB, their
   * growth polled by the test ({@link BlobFuseFs#pollGrowth}), not by the timer.
   */
  private BlobFuseFs earlyFs(BlobNamespace over) throws IOException {
    BlobFuseFs f = new BlobFuseFs(over, new BlobFuseFs.Settings(false, 0755, 4096, staging,
        CHUNK));
    f.growthPollMillis = 0;
    f.initialized(kernel);
    return f;
  }

  private static byte[] bytesOf(BlobNamespace from, String path) throws Exception {
    FileReader r = from.open(FsPath.parse(path));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return b.array();
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new java.util.Random(seed).nextBytes(b);
    return b;
  }

  /** The kernel writing {@code b} at {@code offset} through a passthrough handle. */
  private void kernelWrite(Opened h, long offset, byte[] b) throws IOException {
    try (FileChannel c = FileChannel.open(kernel.files.get(h.backingId()),
        StandardOpenOption.WRITE)) {
      ByteBuffer src = ByteBuffer.wrap(b);
      while (src.hasRemaining()) {
        c.write(src, offset + src.position());
      }
    }
  }

  private static void awaitUntil(java.util.function.BooleanSupplier done)
      throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
    while (!done.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertTrue(done.getAsBoolean(), "not within a minute");
  }

  /**
   * A passed-through file growing front to back goes up in the background (its growth
   * polled), so the fsync sends only the rest; a write through a shared mapping into a
   * chunk already sent (no request, no time moved) is found by the fsync's check of the
   * sent chunks, and that chunk alone is sent again: the version is the staged bytes.
   */
  @Test
  void aMappedWriteIntoAChunkSentEarlyIsSentAgainAndPublished() throws Exception {
    fs = earlyFs(ns);
    Opened[] h = new Opened[1];
    Entry e = create("early", h);
    byte[] data = random(4 * CHUNK + 100, 31);
    kernelWrite(h[0], 0, data);
    fs.pollGrowth();
    awaitUntil(() -> fs.writeStats().earlyBytes() == 4L * CHUNK);
    assertEquals("", published("/early"), "nothing visible before the fsync");
    byte[] mapped = "MAPPED".getBytes(StandardCharsets.UTF_8);
    try (FileChannel c = FileChannel.open(kernel.files.get(h[0].backingId()),
        StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      MappedByteBuffer map = c.map(FileChannel.MapMode.READ_WRITE, 0, data.length);
      map.put(CHUNK + 5, mapped); // chunk 1, sent
      System.arraycopy(mapped, 0, data, CHUNK + 5, mapped.length);
      fs.fsync(e.node(), h[0].fh(), false);
    }
    assertArrayEquals(data, bytesOf(ns, "/early"));
    assertEquals(CHUNK, fs.writeStats().resentBytes(), "chunk 1 only, sent again");
    assertEquals(CHUNK + 100, fs.writeStats().publishBytes(),
        "the fsync sent the changed chunk and the tail; the other three went up before");
    long before = fs.writeStats().publishBytes();
    fs.release(e.node(), h[0].fh());
    assertEquals(before, fs.writeStats().publishBytes(), "the close found the version whole");
    assertArrayEquals(data, bytesOf(ns, "/early"));
  }

  /**
   * {@code chunk} with {@code change} put at {@code at} and 4 bytes at {@code fixAt}
   * chosen so that the whole keeps its CRC32C: a CRC is affine over GF(2), so the bits
   * to flip at {@code fixAt} solve a 32 x 32 linear system.
   */
  private static byte[] sameCrc32c(byte[] chunk, int at, byte[] change, int fixAt) {
    byte[] forged = chunk.clone();
    System.arraycopy(change, 0, forged, at, change.length);
    int zero = crc32c(new byte[chunk.length]);
    int target = crc32c(forged) ^ crc32c(chunk); // the CRC of the difference, less zero's
    // basis[b]: a combination (mask over the 32 bits at fixAt) whose CRC effect has top bit b
    int[] vec = new int[32];
    int[] mask = new int[32];
    boolean[] has = new boolean[32];
    for (int k = 0; k < 32; k++) {
      byte[] e = new byte[chunk.length];
      e[fixAt + k / 8] = (byte) (1 << (k % 8));
      int v = crc32c(e) ^ zero;
      int m = 1 << k;
      for (int b = 31; b >= 0 && v != 0; b--) {
        if ((v >>> b & 1) == 0) {
          continue;
        }
        if (!has[b]) {
          has[b] = true;
          vec[b] = v;
          mask[b] = m;
          break;
        }
        v ^= vec[b];
        m ^= mask[b];
      }
    }
    int flip = 0;
    for (int b = 31; b >= 0; b--) {
      if ((target >>> b & 1) != 0) {
        assertTrue(has[b], "4 consecutive bytes can always fix a CRC32C");
        target ^= vec[b];
        flip ^= mask[b];
      }
    }
    for (int k = 0; k < 32; k++) {
      if ((flip >>> k & 1) != 0) {
        forged[fixAt + k / 8] ^= (byte) (1 << (k % 8));
      }
    }
    assertEquals(crc32c(chunk), crc32c(forged), "forged");
    return forged;
  }

  private static int crc32c(byte[] b) {
    java.util.zip.CRC32C c = new java.util.zip.CRC32C();
    c.update(b);
    return (int) c.getValue();
  }

  /**
   * Review (rev-fuse-early, should-fix): a sent chunk was kept when its CRC32C was the one
   * sent, so a change that keeps the CRC32C (a chance of 2^-32 for any change, certain
   * for one made to) was published stale. Now its SHA-256 decides: sent again.
   */
  @Test
  void aChangedChunkWithTheSentCrc32cIsStillSentAgain() throws Exception {
    fs = earlyFs(ns);
    Opened[] h = new Opened[1];
    Entry e = create("collide", h);
    byte[] data = random(2 * CHUNK, 35);
    kernelWrite(h[0], 0, data);
    fs.pollGrowth();
    awaitUntil(() -> fs.writeStats().earlyBytes() == 2L * CHUNK);
    byte[] chunk0 = java.util.Arrays.copyOf(data, CHUNK);
    byte[] forged = sameCrc32c(chunk0, 100, "CHANGED, SAME CRC32C".getBytes(
        StandardCharsets.UTF_8), 200);
    assertTrue(!java.util.Arrays.equals(chunk0, forged));
    kernelWrite(h[0], 0, forged);
    System.arraycopy(forged, 0, data, 0, CHUNK);
    fs.fsync(e.node(), h[0].fh(), false);
    assertArrayEquals(data, bytesOf(ns, "/collide"), "the staged bytes, not the chunk as sent");
    assertEquals(CHUNK, fs.writeStats().resentBytes(), "chunk 0 sent again");
    fs.release(e.node(), h[0].fh());
    assertArrayEquals(data, bytesOf(ns, "/collide"));
  }

  /**
   * A chunk changed while its first send is still in flight (the store applies it late):
   * the fsync's second send goes out only once the first is acknowledged, so the store
   * ends with the second bytes. (Sent at once, the late first send landed over it.)
   */
  @Test
  void aChunkChangedWhileItsFirstSendIsInFlightEndsWithTheStagedBytes() throws Exception {
    java.util.concurrent.atomic.AtomicBoolean slow = new java.util.concurrent.atomic.AtomicBoolean(true);
    InMemoryBlobStore mem = new InMemoryBlobStore("late", new StoreLimits(200, 1L << 30,
        Integer.MAX_VALUE));
    io.blobfs.store.BlobStore late = (io.blobfs.store.BlobStore) java.lang.reflect.Proxy
        .newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {io.blobfs.store.BlobStore.class}, (proxy, m, args) -> {
              if (m.getName().equals("write") && ((String) args[0]).startsWith("d/")
                  && slow.get()) {
                return java.util.concurrent.CompletableFuture.runAsync(() -> {
                  try {
                    Thread.sleep(300);
                  } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                  }
                  mem.write((String) args[0], (Long) args[1], (ByteBuffer) args[2]).join();
                });
              }
              try {
                return m.invoke(mem, args);
              } catch (java.lang.reflect.InvocationTargetException ex) {
                throw ex.getCause();
              }
            });
    BlobNamespace lateNs = new BlobNamespace(late, new NamespaceOptions(4096, 4096, 1 << 20,
        0, false, 100), StoreCallCounters.NONE);
    fs = earlyFs(lateNs);
    Opened[] h = new Opened[1];
    Entry e = create("inflight", h);
    byte[] data = random(2 * CHUNK, 32);
    kernelWrite(h[0], 0, data);
    fs.pollGrowth();
    awaitUntil(() -> fs.writeStats().earlyBytes() == 2L * CHUNK); // sent, not yet applied
    slow.set(false);
    byte[] changed = "changed while in flight".getBytes(StandardCharsets.UTF_8);
    kernelWrite(h[0], 100, changed);
    System.arraycopy(changed, 0, data, 100, changed.length);
    fs.fsync(e.node(), h[0].fh(), false);
    assertArrayEquals(data, bytesOf(lateNs, "/inflight"));
    assertEquals(CHUNK, fs.writeStats().resentBytes());
    fs.release(e.node(), h[0].fh());
  }

  /**
   * Starts a thread writing 8 random bytes at a time at random places of {@code [0,
   * bound)} of the file {@code c}, mapped to {@code end}, half through the shared mapping,
   * half with write(2) ({@code mappedOnly}: all mapped), until {@code stop}; counts its
   * writes in {@code writes} (null: not counted).
   */
  private static Thread racer(FileChannel c, long end, int bound, long seed, boolean mappedOnly,
      java.util.concurrent.atomic.AtomicBoolean stop,
      java.util.concurrent.atomic.AtomicLong writes) throws IOException {
    MappedByteBuffer map = c.map(FileChannel.MapMode.READ_WRITE, 0, end);
    Thread racer = new Thread(() -> {
      java.util.Random r = new java.util.Random(seed);
      while (!stop.get()) {
        int at = r.nextInt(bound - 8);
        if (mappedOnly || r.nextBoolean()) {
          map.putLong(at, r.nextLong());
        } else {
          try {
            c.write(ByteBuffer.wrap(random(8, r.nextLong())), at);
          } catch (IOException ex) {
            throw new java.io.UncheckedIOException(ex);
          }
        }
        if (writes != null) {
          writes.incrementAndGet();
        }
      }
    });
    racer.start();
    return racer;
  }

  /**
   * Writes through a shared mapping and write(2) racing the background upload, the polls
   * and an fsync, at random places: after each fsync the store holds exactly the staged
   * bytes (nothing writes during the fsync: the kernel holds the inode lock then), and at
   * the close too.
   */
  @Test
  void writesRacingTheEarlyUploadNeverLeaveTheStoreWithOtherBytes() throws Exception {
    fs = earlyFs(ns);
    Opened[] h = new Opened[1];
    Entry e = create("race", h);
    int size = 12 * CHUNK;
    java.util.Random rnd = new java.util.Random(33);
    Path local = kernel.files.get(h[0].backingId());
    try (FileChannel c = FileChannel.open(local, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      for (int round = 0; round < 8; round++) {
        // grows by a chunk and a half a round, front to back, while a racer scribbles
        long end = Math.min(size, (round + 1) * (CHUNK + CHUNK / 2));
        kernelWrite(h[0], c.size(), random((int) (end - c.size()), round));
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        Thread racer = racer(c, end, (int) end, rnd.nextLong(), false, stop, null);
        for (int poll = 0; poll < 20; poll++) {
          fs.pollGrowth();
          Thread.sleep(2);
        }
        stop.set(true);
        racer.join();
        fs.fsync(e.node(), h[0].fh(), false);
        byte[] staged = new byte[(int) end];
        c.read(ByteBuffer.wrap(staged), 0);
        assertArrayEquals(staged, bytesOf(ns, "/race"), "round " + round);
      }
      fs.release(e.node(), h[0].fh());
    }
    assertTrue(fs.writeStats().earlyBytes() > 0, "the background upload took part");
  }

  /**
   * Review (rev-fuse-early, should-fix): the racer above stops before each fsync, so no
   * write races the check-to-commit window. Here write(2) and mapped writes (in every
   * other round mapped writes only, which move no time once their pages are dirty) into
   * the first half of the file go on through the polls, the background sends and the fsync, and
   * stop only after it: the fsync's version holds the half nobody wrote exactly, and the
   * close after it (a writer's close) finds what the racer changed and republishes
   * exactly the final bytes, in every round.
   */
  @Test
  void writesRacingThroughTheFsyncArePublishedExactlyByTheCloseAfterIt() throws Exception {
    fs = earlyFs(ns);
    Opened[] h = new Opened[1];
    Entry e = create("through", h);
    int size = 12 * CHUNK;
    java.util.Random rnd = new java.util.Random(38);
    Path local = kernel.files.get(h[0].backingId());
    try (FileChannel c = FileChannel.open(local, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      for (int round = 0; round < 8; round++) {
        long end = Math.min(size, (round + 1) * (CHUNK + CHUNK / 2));
        kernelWrite(h[0], c.size(), random((int) (end - c.size()), 100 + round));
        int raced = (int) end / 2; // the racer writes [0, raced) only
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicLong writes = new java.util.concurrent.atomic.AtomicLong();
        // in odd rounds mapped writes only: they move no time once their pages are dirty
        Thread racer = racer(c, end, raced, rnd.nextLong(), round % 2 == 1, stop, writes);
        for (int poll = 0; poll < 10; poll++) {
          fs.pollGrowth();
          Thread.sleep(2);
        }
        long before = writes.get();
        fs.fsync(e.node(), h[0].fh(), false); // the racer still writes
        for (int poll = 0; poll < 5; poll++) {
          fs.pollGrowth();
          Thread.sleep(2);
        }
        stop.set(true);
        racer.join();
        assertTrue(writes.get() > before, "round " + round + ": the racer wrote through the fsync");
        byte[] staged = new byte[(int) end];
        c.read(ByteBuffer.wrap(staged), 0);
        byte[] synced = bytesOf(ns, "/through");
        assertEquals(end, synced.length, "round " + round);
        assertArrayEquals(java.util.Arrays.copyOfRange(staged, raced, (int) end),
            java.util.Arrays.copyOfRange(synced, raced, (int) end),
            "round " + round + ": the fsync's version, where nobody wrote during it");
        fs.flush(e.node(), h[0].fh()); // the writer's close
        assertArrayEquals(staged, bytesOf(ns, "/through"),
            "round " + round + ": the close republished exactly the final bytes");
      }
      fs.release(e.node(), h[0].fh());
      byte[] staged = new byte[size];
      c.read(ByteBuffer.wrap(staged), 0);
      assertArrayEquals(staged, bytesOf(ns, "/through"));
    }
    assertTrue(fs.writeStats().earlyBytes() > 0, "the background upload took part");
  }

  /**
   * Review (rev-fuse-early): growth the poll had not seen yet when an fsync published it
   * (a file written and fsynced within one 50 ms tick, then kept open) is handed to the
   * early upload after the publication, which starts a background upload of the whole file
   * again, with a fresh writer, though nothing changed since the committed version. Its
   * bytes are aborted at the close: a second full upload of every such file.
   */
  @Test
  void growthAlreadyPublishedStartsNoSecondUpload() throws Exception {
    fs = earlyFs(ns);
    Opened[] h = new Opened[1];
    Entry e = create("stale", h);
    byte[] data = random(4 * CHUNK, 41);
    kernelWrite(h[0], 0, data);
    fs.fsync(e.node(), h[0].fh(), false); // before any poll: the publication sends it all
    assertArrayEquals(data, bytesOf(ns, "/stale"));
    long published = fs.writeStats().publishBytes();
    fs.pollGrowth(); // the next tick: nothing was written since the committed version
    Thread.sleep(500);
    assertEquals(0L, fs.writeStats().earlyBytes(),
        "already-published bytes uploaded again in the background");
    fs.release(e.node(), h[0].fh());
    assertEquals(published, fs.writeStats().publishBytes(), "the close found the version whole");
  }

  /**
   * Review (rev-fuse-early, should-fix): a poll between a publication's stamp and its
   * stopAt (another process appending during an fsync) let the background upload claim
   * and send chunks past the version's length; the publication then found the early
   * upload unusable, aborted every chunk it had sent and uploaded the whole file. Now the
   * version grows over those chunks and keeps them all.
   */
  @Test
  void chunksSentPastTheSnapshotDuringAPublicationKeepTheEarlyUpload() throws Exception {
    byte[] data = random(6 * CHUNK, 36);
    appendedDuringAPublication(data, c -> { }, (s, stats) -> {
      assertEquals(0L, stats.wholeUploads(), "the early upload was used");
      assertEquals(0L, stats.publishBytes(), "every chunk went up before, and was kept");
      assertEquals(0L, stats.resentBytes());
      assertArrayEquals(data, bytesOf(ns, "/appended"), "the version grew over them");
    });
  }

  /**
   * Review S2 (rev-fuse-early2): a chunk sent past the snapshot's length, then written
   * again (inside the publication, after its send), is sent again: the check reads it as
   * it reads the others.
   */
  @Test
  void aChunkSentPastTheSnapshotAndWrittenAfterItsSendIsSentAgain() throws Exception {
    byte[] data = random(6 * CHUNK, 38);
    appendedDuringAPublication(data, c -> {
      byte[] change = "CHANGED AFTER ITS SEND".getBytes(StandardCharsets.UTF_8);
      c.write(ByteBuffer.wrap(change), 5L * CHUNK + 100);
      System.arraycopy(change, 0, data, 5 * CHUNK + 100, change.length);
    }, (s, stats) -> {
      assertEquals(0L, stats.wholeUploads(), "the early upload was used");
      assertEquals((long) CHUNK, stats.resentBytes(), "exactly the changed chunk again");
      assertArrayEquals(data, bytesOf(ns, "/appended"), "the version holds the change");
    });
  }

  /**
   * Review S2 (rev-fuse-early2): README says the next close after such a publication
   * publishes again (its record, the stamp of 4 chunks and sums of 6, never matches).
   */
  @Test
  void aCloseAfterChunksSentPastTheSnapshotPublishesAgain() throws Exception {
    byte[] data = random(6 * CHUNK, 39);
    appendedDuringAPublication(data, c -> { }, (s, stats) -> {
      assertEquals(1L, stats.publications());
      s.observe(true); // a writer's close (flush) looks, forced
      assertTrue(s.dirty(), "the close publishes again");
      s.publish(ns, FsPath.parse("/appended"));
      assertEquals(2L, stats.publications());
      assertArrayEquals(data, bytesOf(ns, "/appended"));
      s.observe(true); // the next close finds that version
      assertFalse(s.dirty(), "and then nothing more");
    });
  }

  interface ChannelAction {
    void run(FileChannel c) throws IOException;
  }

  interface PublishedCheck {
    void check(StagedFile s, WriteStats stats) throws Exception;
  }

  /**
   * Writes and sends 4 of {@code data}'s 6 chunks; an fsync publishes, and between its
   * stamp and its stopAt another process appends the last 2, which are polled and sent,
   * then {@code afterSend} runs; {@code then} checks the outcome.
   */
  private void appendedDuringAPublication(byte[] data, ChannelAction afterSend,
      PublishedCheck then) throws Exception {
    WriteStats stats = new WriteStats();
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
    StagedFile s = StagedFile.empty(staging).uploadEarly(ns, pool, CHUNK, stats);
    FsPath path = FsPath.parse("/appended");
    try {
      s.passThrough(kernel);
      Path local = kernel.files.get(s.backingId());
      try (FileChannel c = FileChannel.open(local, StandardOpenOption.WRITE)) {
        c.write(ByteBuffer.wrap(data, 0, 4 * CHUNK), 0);
        s.pollGrowth(path);
        awaitUntil(() -> stats.earlyBytes() == 4L * CHUNK);
        s.afterStamp = () -> { // the fsync stamped 4 chunks; another process appends 2
          try {
            c.write(ByteBuffer.wrap(data, 4 * CHUNK, 2 * CHUNK), 4 * CHUNK);
            s.pollGrowth(path);
            awaitUntil(() -> stats.earlyBytes() == 6L * CHUNK);
            afterSend.run(c);
          } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
          }
        };
        s.publish(ns, path);
        s.afterStamp = null;
      }
      then.check(s, stats);
    } finally {
      s.discard();
      pool.shutdown();
    }
  }

  /**
   * Review (rev-fuse-early, should-fix): the 50 ms growth poll copied the mount's whole map
   * of staged files under its monitor, which every read, write, open and release takes.
   * Now it reads a concurrent map of the passed-through files only: a poll runs, and
   * starts the early upload, while another thread holds the monitor.
   */
  @Test
  void theGrowthPollNeitherTakesTheMountsMonitorNorLooksAtOtherFiles() throws Exception {
    fs = earlyFs(ns);
    Opened[] h = new Opened[1];
    Entry e = create("polled", h);
    kernelWrite(h[0], 0, random(2 * CHUNK, 37));
    java.lang.reflect.Field f = BlobFuseFs.class.getDeclaredField("staged");
    f.setAccessible(true);
    Object monitor = f.get(fs);
    java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
    Thread holder = new Thread(() -> {
      synchronized (monitor) {
        held.countDown();
        try {
          done.await(60, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException ex) {
          Thread.currentThread().interrupt();
        }
      }
    });
    holder.start();
    held.await();
    try {
      java.util.concurrent.CompletableFuture.runAsync(fs::pollGrowth)
          .get(10, java.util.concurrent.TimeUnit.SECONDS);
      awaitUntil(() -> fs.writeStats().earlyBytes() == 2L * CHUNK);
    } finally {
      done.countDown();
      holder.join();
    }
    fs.release(e.node(), h[0].fh());
    assertEquals(0, fs.polledFiles(), "a released file leaves the poll's map");
    Opened[] p = new Opened[1];
    Entry pe = create("page-cached", p);
    fs.release(pe.node(), p[0].fh());
    Opened cached = fs.open(pe.node(), 0); // through the page cache: no passthrough beside it
    Opened w = fs.open(pe.node(), RW);
    assertEquals(0, w.backingId());
    assertEquals(0, fs.polledFiles(), "a staged file served here is not polled");
    fs.release(pe.node(), w.fh());
    fs.release(pe.node(), cached.fh());
  }
}

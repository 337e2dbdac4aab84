package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.kernel.Entry;
import io.blobfs.fuse.kernel.Errno;
import io.blobfs.fuse.kernel.FuseException;
import io.blobfs.fuse.kernel.FuseSession;
import io.blobfs.fuse.kernel.LowLevelFs;
import io.blobfs.fuse.kernel.Opened;
import io.blobfs.fuse.kernel.SetAttr;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The mount's semantics, called as the kernel would, over an in-memory store: no kernel. */
class BlobFuseFsTest {
  private static final int RW = FuseSession.O_RDWR;

  @TempDir
  Path staging;
  private FaultInjectingBlobStore faults;
  private BlobNamespace ns;
  private BlobFuseFs fs;

  @BeforeEach
  void setUp() throws Exception {
    faults = FaultInjectingBlobStore.over(new InMemoryBlobStore("fuse",
        new StoreLimits(200, 1L << 30, Integer.MAX_VALUE)));
    // small stripes and no inline bytes, so that files span several data blobs
    ns = new BlobNamespace(faults.store(), new NamespaceOptions(4096, 4096, 16384, 0, false, 100),
        StoreCallCounters.NONE);
    fs = mount(false);
  }

  private BlobFuseFs mount(boolean paper) throws Exception {
    return new BlobFuseFs(ns, new BlobFuseFs.Settings(paper, 0755, 4096, staging));
  }

  private static ByteBuffer bytes(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private byte[] published(String path) throws Exception {
    FileReader r = ns.open(FsPath.parse(path));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return b.array();
  }

  private byte[] read(long node, long fh, long off, int len) throws Exception {
    ByteBuffer b = ByteBuffer.allocate(len);
    fs.read(node, fh, off, b);
    return Arrays.copyOf(b.array(), b.position());
  }

  private Entry create(String name, int flags, Opened[] h) throws Exception {
    return fs.create(LowLevelFs.ROOT, name, flags, h);
  }

  @Test
  void writesAtAnyOffsetLeaveHolesOfZerosAndPublishAtClose() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("f", RW, h);
    fs.write(e.node(), h[0].fh(), 10000, bytes("end"));
    fs.write(e.node(), h[0].fh(), 0, bytes("start"));
    assertEquals(0, published("/f").length, "created empty, not yet the new bytes");
    assertEquals(10003, fs.getattr(e.node()).size());
    fs.flush(e.node(), h[0].fh());
    byte[] want = new byte[10003];
    System.arraycopy("start".getBytes(), 0, want, 0, 5);
    System.arraycopy("end".getBytes(), 0, want, 10000, 3);
    assertArrayEquals(want, published("/f"));
    assertArrayEquals(want, read(e.node(), h[0].fh(), 0, 20000));
    fs.release(e.node(), h[0].fh());
    Opened r = fs.open(e.node(), 0);
    assertArrayEquals(Arrays.copyOfRange(want, 4000, 10003), read(e.node(), r.fh(), 4000, 8000));
  }

  @Test
  void anOpenFileShowsTheTimeItsRecordWasPublishedWith() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("m", RW, h);
    assertEquals(ns.getFileInfo(FsPath.parse("/m")).modificationTime(), e.attr().mtimeMillis());
    Thread.sleep(5);
    fs.write(e.node(), h[0].fh(), 0, bytes("x"));
    Thread.sleep(5);
    fs.flush(e.node(), h[0].fh());
    long published = ns.getFileInfo(FsPath.parse("/m")).modificationTime();
    assertEquals(published, fs.getattr(e.node()).mtimeMillis(), "while still open");
    fs.release(e.node(), h[0].fh());
    assertEquals(published, fs.getattr(e.node()).mtimeMillis(), "after release");
  }

  @Test
  void utimensatSetsTheTimeOfOpenAndClosedFiles() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("ut", RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes("abc"));
    fs.setattr(e.node(), new SetAttr(h[0].fh(), -1, 1_000_000_000L, false));
    fs.release(e.node(), h[0].fh());
    assertEquals(1_000_000_000L, ns.getFileInfo(FsPath.parse("/ut")).modificationTime());
    assertEquals(2_000_000_000L,
        fs.setattr(e.node(), new SetAttr(-1, -1, 2_000_000_000L, false)).mtimeMillis());
    assertEquals(2_000_000_000L, ns.getFileInfo(FsPath.parse("/ut")).modificationTime());
    assertEquals("abc", new String(published("/ut")));
  }

  @Test
  void appendWritesAtTheEndWhateverTheOffset() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("log", RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes("one,"));
    fs.release(e.node(), h[0].fh());
    Opened a = fs.open(e.node(), FuseSession.O_WRONLY | FuseSession.O_APPEND);
    fs.write(e.node(), a.fh(), 0, bytes("two"));
    fs.release(e.node(), a.fh());
    assertEquals("one,two", new String(published("/log")));
  }

  @Test
  void aCloseWhoseWritesAnotherPublicationCarriedCallsNoStore() throws Exception {
    // MPI-IO's N-to-1: several descriptors write one file; one fsyncs, which publishes
    // everything written so far; the others' closes then have nothing of theirs to publish
    Opened[] h = new Opened[1];
    Entry e = create("shared", RW, h);
    Opened a = fs.open(e.node(), RW);
    Opened b = fs.open(e.node(), RW);
    fs.write(e.node(), a.fh(), 0, bytes("aaaa"));
    fs.write(e.node(), b.fh(), 4, bytes("bbbb"));
    fs.fsync(e.node(), a.fh(), false);
    assertArrayEquals("aaaabbbb".getBytes(), published("/shared"));
    FaultInjectingBlobStore.Fault down = faults.on(FaultInjectingBlobStore.Op.WRITE,
        FaultInjectingBlobStore.Op.PUT, FaultInjectingBlobStore.Op.COMMIT).always()
        .failBefore();
    fs.flush(e.node(), b.fh()); // b's writes are published: no store call, no error
    fs.flush(e.node(), h[0].fh()); // wrote nothing
    // a write after the publication is b's own: its close must publish, and fails here
    fs.write(e.node(), b.fh(), 8, bytes("cc"));
    FuseException err = assertThrows(FuseException.class, () -> fs.flush(e.node(), b.fh()));
    assertEquals(Errno.EIO, err.errno());
    assertTrue(down.fired() > 0);
    faults.clear();
    fs.flush(e.node(), a.fh()); // a's writes are published, but b's are not: b's close is
    assertArrayEquals("aaaabbbb".getBytes(), published("/shared"));
    fs.flush(e.node(), b.fh());
    assertArrayEquals("aaaabbbbcc".getBytes(), published("/shared"));
    // a truncate belongs to no descriptor: any close publishes it
    fs.setattr(e.node(), new SetAttr(a.fh(), 2, -1, false));
    fs.flush(e.node(), h[0].fh());
    assertArrayEquals("aa".getBytes(), published("/shared"));
    for (Opened o : new Opened[] {a, b, h[0]}) {
      fs.release(e.node(), o.fh());
    }
  }

  @Test
  void anFsyncPublishesEveryChangeOfTheFileWhicheverDescriptorMadeIt() throws Exception {
    // POSIX fsync(fd) flushes the file, not the descriptor: fsync on a descriptor that
    // wrote nothing (sync FILE opens it read-only; a shared mmap's writes may come in under
    // another descriptor's handle) must still publish what the others wrote
    Opened[] h = new Opened[1];
    Entry e = create("synced", RW, h);
    Opened other = fs.open(e.node(), RW);
    Opened ro = fs.open(e.node(), 0); // O_RDONLY
    fs.write(e.node(), h[0].fh(), 0, bytes("one"));
    fs.fsync(e.node(), ro.fh(), false);
    assertArrayEquals("one".getBytes(), published("/synced"), "fsync of a read-only fd");
    fs.write(e.node(), h[0].fh(), 3, bytes("two"));
    fs.fsync(e.node(), other.fh(), true);
    assertArrayEquals("onetwo".getBytes(), published("/synced"), "fdatasync of another fd");
    // a close still publishes only its own descriptor's changes
    fs.write(e.node(), h[0].fh(), 6, bytes("three"));
    fs.flush(e.node(), other.fh());
    assertArrayEquals("onetwo".getBytes(), published("/synced"), "close of an fd that wrote nothing");
    for (Opened o : new Opened[] {ro, other, h[0]}) {
      fs.release(e.node(), o.fh());
    }
    assertArrayEquals("onetwothree".getBytes(), published("/synced"));
  }

  @Test
  void exclusiveCreateOfAnExistingNameIsEexist() throws Exception {
    Opened[] h = new Opened[1];
    create("x", RW, h);
    FuseException err = assertThrows(FuseException.class,
        () -> create("x", RW | FuseSession.O_EXCL, new Opened[1]));
    assertEquals(Errno.EEXIST, err.errno());
  }

  @Test
  void openWithTruncEmptiesTheFile() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("t", RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes("0123456789"));
    fs.release(e.node(), h[0].fh());
    Opened t = fs.open(e.node(), FuseSession.O_WRONLY | FuseSession.O_TRUNC);
    fs.write(e.node(), t.fh(), 0, bytes("ab"));
    fs.release(e.node(), t.fh());
    assertEquals("ab", new String(published("/t")));
  }

  @Test
  void truncateOfAClosedFileShrinksAndGrowsWithZeros() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("g", RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes("abcdef"));
    fs.release(e.node(), h[0].fh());
    fs.setattr(e.node(), new SetAttr(-1, 3, -1, false));
    assertEquals("abc", new String(published("/g")));
    assertEquals(5000, fs.setattr(e.node(), new SetAttr(-1, 5000, -1, false)).size());
    byte[] got = published("/g");
    assertEquals(5000, got.length);
    assertEquals("abc", new String(got, 0, 3));
    assertTrue(Arrays.equals(new byte[4997], Arrays.copyOfRange(got, 3, 5000)));
  }

  @Test
  void renameReplacesTheTargetAndCarriesUnflushedWrites() throws Exception {
    Opened[] h = new Opened[1];
    Entry a = create("a", RW, h);
    fs.write(a.node(), h[0].fh(), 0, bytes("new"));
    Opened[] h2 = new Opened[1];
    Entry b = create("b", RW, h2);
    fs.write(b.node(), h2[0].fh(), 0, bytes("old"));
    fs.release(b.node(), h2[0].fh());
    fs.rename(LowLevelFs.ROOT, "a", LowLevelFs.ROOT, "b", false);
    assertEquals("new", new String(published("/b")));
    assertFalse(ns.probe(FsPath.parse("/a")).isPresent());
    fs.write(a.node(), h[0].fh(), 3, bytes("er"));
    fs.release(a.node(), h[0].fh());
    assertEquals("newer", new String(published("/b")), "the open file follows its new name");
    FuseException err = assertThrows(FuseException.class,
        () -> fs.rename(LowLevelFs.ROOT, "a", LowLevelFs.ROOT, "x", false));
    assertEquals(Errno.ENOENT, err.errno(), "a was renamed away");
  }

  /**
   * Two names on one file (a record copied by hand): rename(2) of one over the other is
   * EIO with a message that says so, not EAGAIN, which told the caller to retry something
   * no retry changes. Both names keep their bytes.
   */
  @Test
  void renameOverASecondNameOfTheSameFileIsEio() throws Exception {
    closedFile("a", "same");
    BlobStore raw = faults.store();
    byte[] record = raw.readFully("n/a", 0, (int) raw.stat("n/a").size());
    raw.put("n/b", ByteBuffer.wrap(record), PutMode.CREATE);
    FuseException err = assertThrows(FuseException.class,
        () -> fs.rename(LowLevelFs.ROOT, "a", LowLevelFs.ROOT, "b", false));
    assertEquals(Errno.EIO, err.errno(), err.getMessage());
    assertTrue(err.getMessage().contains("both hold one file"), err.getMessage());
    assertEquals("same", new String(published("/a")));
    assertEquals("same", new String(published("/b")));
  }

  /** Writes {@code text} as a closed file {@code name} through the mount. */
  /**
   * FOPEN_KEEP_CACHE: a read-only open keeps the kernel's pages only when they can hold
   * nothing but the version it reads (close-to-open otherwise: the pages are dropped).
   */
  @Test
  void anOpenKeepsThePagesOnlyOfTheVersionItReads() throws Exception {
    closedFile("k", "one");
    long node = fs.lookup(LowLevelFs.ROOT, "k").node();
    Opened first = fs.open(node, 0);
    assertFalse(first.keepCache(), "first open: the pages are of no known version");
    fs.release(node, first.fh());
    Opened again = fs.open(node, 0);
    assertTrue(again.keepCache(), "unchanged since the last open");
    assertEquals("one", new String(read(node, again.fh(), 0, 10)));

    // another client publishes while `again` is open: the next open drops the pages, and
    // so does the one after (`again` may fill pages with "one" meanwhile)
    try (io.blobfs.namespace.FileWriter w = ns.create(FsPath.parse("/k"), true)) {
      w.write("two!".getBytes(), 0, 4);
    }
    Opened fresh = fs.open(node, 0);
    assertFalse(fresh.keepCache(), "another client changed the file");
    assertEquals("two!", new String(read(node, fresh.fh(), 0, 10)));
    fs.release(node, fresh.fh());
    Opened whileOld = fs.open(node, 0);
    assertFalse(whileOld.keepCache(), "a handle of the old version is still open");
    fs.release(node, whileOld.fh());
    fs.release(node, again.fh());

    // this mount's own writes: an open on the staged copy, then the new version
    Opened w = fs.open(node, RW);
    assertFalse(w.keepCache());
    fs.write(node, w.fh(), 0, bytes("three"));
    fs.release(node, w.fh());
    Opened after = fs.open(node, 0);
    assertFalse(after.keepCache(), "the pages may hold bytes written before publication");
    assertEquals("three", new String(read(node, after.fh(), 0, 10)));
    fs.release(node, after.fh());
    Opened kept = fs.open(node, 0);
    assertTrue(kept.keepCache(), "dropped with no other handle open: the version is known");
    assertEquals("three", new String(read(node, kept.fh(), 0, 10)));
  }

  /**
   * An open for writing copies the published file; a publication by another client during
   * that copy deletes the data blobs being copied. The open copies the new version instead
   * of failing.
   */
  @Test
  void anOpenForWritingWhoseCopyMeetsAPublicationCopiesTheNewVersion() throws Exception {
    closedFile("c", "x".repeat(10000)); // three 4 KiB stripes
    String fileId = ns.getFileInfo(FsPath.parse("/c")).record().fileId();
    String stripe1 = new io.blobfs.namespace.KeyLayout(
        new StoreLimits(200, 1L << 30, Integer.MAX_VALUE)).dataKey(fileId, 1);
    FaultInjectingBlobStore.Fault held =
        faults.on(FaultInjectingBlobStore.Op.READ).keys(stripe1).nth(1).pause();
    long node = fs.lookup(LowLevelFs.ROOT, "c").node();
    Opened[] opened = new Opened[1];
    int[] errno = {0};
    Thread t = new Thread(() -> {
      try {
        opened[0] = fs.open(node, RW);
      } catch (io.blobfs.fuse.kernel.FuseException e) {
        errno[0] = e.errno();
      }
    });
    t.start();
    held.awaitReached();
    try (io.blobfs.namespace.FileWriter w = ns.create(FsPath.parse("/c"), true)) {
      w.write("y".repeat(10000).getBytes(), 0, 10000);
    }
    held.release();
    t.join(60_000);
    assertFalse(t.isAlive());
    assertEquals(0, errno[0], "the open failed");
    assertEquals("y".repeat(10000), new String(read(node, opened[0].fh(), 0, 20000)));
    fs.release(node, opened[0].fh());
    assertEquals("y".repeat(10000), new String(published("/c")));
  }

  private void closedFile(String name, String text) throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create(name, RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes(text));
    fs.release(e.node(), h[0].fh());
  }

  /**
   * Runs {@code rename} and, while it is held before its {@code nth} read of the target's
   * record (the first: the mount's probe), {@code otherClient}: what another mount or a
   * blob:// job may do then.
   */
  private void renameWhileAnotherClient(Runnable rename, String targetKey, int nth,
      java.util.concurrent.Callable<?> otherClient) throws Exception {
    FaultInjectingBlobStore.Fault held =
        faults.on(FaultInjectingBlobStore.Op.READ).keys(targetKey).nth(nth).pause();
    Thread t = new Thread(rename);
    t.start();
    held.awaitReached();
    BlobNamespace other = new BlobNamespace(faults.store(),
        new NamespaceOptions(4096, 4096, 16384, 0, false, 100), StoreCallCounters.NONE);
    otherClientNs = other;
    otherClient.call();
    held.release();
    t.join(60_000);
    assertFalse(t.isAlive());
  }

  /**
   * Waits until {@code t} has run into something that holds it (a lock, the paused store
   * call) or has finished, so that the pause it races with is released only after: a fixed
   * sleep of 200 ms let a loaded machine release it before the thread even started, and
   * the test then passed without the race it is about. Bounded by a minute.
   */
  private static void awaitBlockedOrDone(Thread t) throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      Thread.State state = t.getState();
      if (state == Thread.State.BLOCKED || state == Thread.State.WAITING
          || state == Thread.State.TIMED_WAITING || state == Thread.State.TERMINATED) {
        return;
      }
      Thread.sleep(5);
    }
    throw new AssertionError(t.getName() + " neither blocked nor finished within 60 s");
  }

  private BlobNamespace otherClientNs;

  /**
   * Another client renames the source away after the mount probed the target: the rename
   * fails with ENOENT and the target keeps its bytes. Before, the mount had deleted the
   * target and then found no source: the target's file was lost.
   */
  @Test
  void aSourceRenamedAwayAfterTheProbeLeavesTheTarget() throws Exception {
    closedFile("a", "source");
    closedFile("b", "target");
    int[] errno = {0};
    renameWhileAnotherClient(() -> {
      try {
        fs.rename(LowLevelFs.ROOT, "a", LowLevelFs.ROOT, "b", false);
      } catch (FuseException e) {
        errno[0] = e.errno();
      }
    }, "n/b", 1, () -> otherClientNs.rename(FsPath.parse("/a"), FsPath.parse("/c")));
    assertEquals(Errno.ENOENT, errno[0]);
    assertEquals("target", new String(published("/b")), "the target is kept");
    assertEquals("source", new String(published("/c")));
  }

  /**
   * Another client creates the target after the mount found none: rename(2) replaces it.
   * Before, the namespace's rename refused the existing target and the mount answered EIO.
   */
  @Test
  void aTargetCreatedAfterTheProbeIsReplaced() throws Exception {
    closedFile("a", "source");
    int[] errno = {0};
    renameWhileAnotherClient(() -> {
      try {
        fs.rename(LowLevelFs.ROOT, "a", LowLevelFs.ROOT, "b", false);
      } catch (FuseException e) {
        errno[0] = e.errno();
      }
    }, "n/b", 2, () -> { // after the mount's probe found none
      try (io.blobfs.namespace.FileWriter w = otherClientNs.create(FsPath.parse("/b"), false)) {
        w.write("other".getBytes(), 0, 5);
      }
      return null;
    });
    assertEquals(0, errno[0]);
    assertEquals("source", new String(published("/b")));
    assertFalse(ns.probe(FsPath.parse("/a")).isPresent());
  }

  /**
   * Another client creates the target after the namespace's rename checked it but before
   * its commit: the commit conflicts until the rename gives up, and the mount takes that
   * as the refusal it is, probes again and replaces the new file. Before, it was EIO.
   */
  @Test
  void aTargetCreatedBeforeTheRenamesCommitIsReplaced() throws Exception {
    closedFile("a", "source");
    FaultInjectingBlobStore.Fault held =
        faults.on(FaultInjectingBlobStore.Op.COMMIT).keys("n/b").pause();
    int[] errno = {0};
    Thread t = new Thread(() -> {
      try {
        fs.rename(LowLevelFs.ROOT, "a", LowLevelFs.ROOT, "b", false);
      } catch (FuseException e) {
        errno[0] = e.errno();
      }
    });
    t.start();
    held.awaitReached();
    BlobNamespace other = new BlobNamespace(faults.store(),
        new NamespaceOptions(4096, 4096, 16384, 0, false, 100), StoreCallCounters.NONE);
    try (io.blobfs.namespace.FileWriter w = other.create(FsPath.parse("/b"), false)) {
      w.write("other".getBytes(), 0, 5);
    }
    held.release();
    t.join(60_000);
    assertFalse(t.isAlive());
    assertEquals(0, errno[0]);
    assertEquals("source", new String(published("/b")));
    assertFalse(ns.probe(FsPath.parse("/a")).isPresent());
  }

  /**
   * Another client replaces the target after the mount probed it: the namespace refuses
   * to replace a file it was not shown, the mount probes again and replaces the newer one
   * (the other client's write came first), leaving none of its data behind.
   */
  @Test
  void aTargetReplacedAfterTheProbeIsProbedAgain() throws Exception {
    closedFile("a", "source");
    closedFile("b", "target");
    renameWhileAnotherClient(() -> {
      try {
        fs.rename(LowLevelFs.ROOT, "a", LowLevelFs.ROOT, "b", false);
      } catch (FuseException e) {
        throw new AssertionError(e);
      }
    }, "n/b", 2, () -> { // after the mount's probe found "target"
      try (io.blobfs.namespace.FileWriter w = otherClientNs.create(FsPath.parse("/b"), true)) {
        w.write(new byte[10000], 0, 10000);
      }
      return null;
    });
    assertEquals("source", new String(published("/b")));
    assertEquals(1, faults.store().scan("d/", null, 100).keys().stream()
        .map(k -> k.split("/")[1]).distinct().count(), "only the renamed file's data is left");
  }

  @Test
  void aDirectoryReplacesAnEmptyDirectoryOnly() throws Exception {
    fs.mkdir(LowLevelFs.ROOT, "empty");
    closedFile("full", "x");
    ns.rename(FsPath.parse("/full"), FsPath.parse("/d2/full"));
    closedFile("y", "y");
    ns.rename(FsPath.parse("/y"), FsPath.parse("/d1/y"));
    FuseException err = assertThrows(FuseException.class,
        () -> fs.rename(LowLevelFs.ROOT, "d1", LowLevelFs.ROOT, "d2", false));
    assertEquals(Errno.ENOTEMPTY, err.errno());
    fs.rename(LowLevelFs.ROOT, "d1", LowLevelFs.ROOT, "empty", false);
    assertEquals("y", new String(published("/empty/y")));
    assertFalse(ns.probe(FsPath.parse("/d1")).isPresent());
  }

  /**
   * rsync's pattern: close, utimes, rename, with the kernel's RELEASE arriving during the
   * rename. The publication at release must not commit the record under the old name after
   * the rename moved it (that left rsync's temp files behind).
   */
  @Test
  void aPublicationAtReleaseNeverRecreatesANameARenameMovedAway() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("tmp", RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes("body"));
    fs.flush(e.node(), h[0].fh());
    fs.setattr(e.node(), new SetAttr(-1, -1, 5_000_000L, false)); // staged again
    FaultInjectingBlobStore.Fault paused = faults.on(FaultInjectingBlobStore.Op.PUT,
        FaultInjectingBlobStore.Op.COMMIT).keys("n/tmp").pause();
    Thread release = new Thread(() -> {
      try {
        fs.release(e.node(), h[0].fh());
      } catch (FuseException ex) {
        throw new AssertionError(ex);
      }
    });
    release.start();
    paused.awaitReached();
    Thread rename = new Thread(() -> {
      try {
        fs.rename(LowLevelFs.ROOT, "tmp", LowLevelFs.ROOT, "final", false);
      } catch (FuseException ex) {
        throw new AssertionError(ex);
      }
    });
    rename.start();
    awaitBlockedOrDone(rename);
    paused.release();
    release.join(60_000);
    rename.join(60_000);
    assertFalse(release.isAlive() || rename.isAlive(), "both finished");
    assertFalse(ns.probe(FsPath.parse("/tmp")).isPresent(), "the old name came back");
    assertEquals("body", new String(published("/final")));
    assertEquals(5_000_000L, ns.getFileInfo(FsPath.parse("/final")).modificationTime());
  }

  /** rsync and tar set the time after close, while the kernel's RELEASE may be publishing. */
  @Test
  void aTimeSetWhileTheLastReleasePublishesIsPublishedToo() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("late", RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes("abc"));
    FaultInjectingBlobStore.Fault paused = faults.on(FaultInjectingBlobStore.Op.PUT,
        FaultInjectingBlobStore.Op.COMMIT).keys("n/late").pause();
    Thread release = new Thread(() -> {
      try {
        fs.release(e.node(), h[0].fh());
      } catch (FuseException ex) {
        throw new AssertionError(ex);
      }
    });
    release.start();
    paused.awaitReached();
    Thread touch = new Thread(() -> {
      try {
        fs.setattr(e.node(), new SetAttr(-1, -1, 7_000_000L, false));
      } catch (FuseException ex) {
        throw new AssertionError(ex);
      }
    });
    touch.start();
    awaitBlockedOrDone(touch);
    paused.release();
    release.join(60_000);
    touch.join(60_000);
    assertFalse(release.isAlive() || touch.isAlive(), "both finished");
    assertEquals(7_000_000L, ns.getFileInfo(FsPath.parse("/late")).modificationTime());
    assertEquals("abc", new String(published("/late")));
  }

  @Test
  void renameNoReplaceOfAnExistingTargetIsEexist() throws Exception {
    create("p", RW, new Opened[1]);
    create("q", RW, new Opened[1]);
    FuseException err = assertThrows(FuseException.class,
        () -> fs.rename(LowLevelFs.ROOT, "p", LowLevelFs.ROOT, "q", true));
    assertEquals(Errno.EEXIST, err.errno());
  }

  @Test
  void aFileUnlinkedWhileOpenStaysReadableAndIsNotPublishedAgain() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("u", RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes("data"));
    fs.unlink(LowLevelFs.ROOT, "u");
    assertArrayEquals("data".getBytes(), read(e.node(), h[0].fh(), 0, 10));
    fs.flush(e.node(), h[0].fh());
    fs.release(e.node(), h[0].fh());
    assertFalse(ns.probe(FsPath.parse("/u")).isPresent());
  }

  @Test
  void directoriesAreTheNamespacesImplicitOnes() throws Exception {
    Entry d = fs.mkdir(LowLevelFs.ROOT, "d");
    assertTrue(fs.getattr(d.node()).isDirectory());
    Opened[] h = new Opened[1];
    Entry f = fs.create(d.node(), "f", RW, h);
    fs.release(f.node(), h[0].fh());
    Opened dir = fs.opendir(d.node());
    var out = io.blobfs.fuse.kernel.DirBufferAccess.newBuffer(4096);
    fs.readdir(d.node(), dir.fh(), 0, out);
    assertEquals(java.util.List.of(".", "..", "f"), io.blobfs.fuse.kernel.DirBufferAccess.names(out));
    FuseException notEmpty = assertThrows(FuseException.class, () -> fs.rmdir(LowLevelFs.ROOT, "d"));
    assertEquals(Errno.ENOTEMPTY, notEmpty.errno());
    fs.unlink(d.node(), "f");
    fs.rmdir(LowLevelFs.ROOT, "d");
    assertFalse(ns.probe(FsPath.parse("/d")).isPresent());
  }

  @Test
  void paperModeRefusesDirectoryCalls() throws Exception {
    BlobFuseFs paper = mount(true);
    assertEquals(Errno.EOPNOTSUPP, assertThrows(FuseException.class,
        () -> paper.mkdir(LowLevelFs.ROOT, "d")).errno());
    assertEquals(Errno.EOPNOTSUPP, assertThrows(FuseException.class,
        () -> paper.opendir(LowLevelFs.ROOT)).errno());
    assertEquals(Errno.EOPNOTSUPP, assertThrows(FuseException.class,
        () -> paper.rmdir(LowLevelFs.ROOT, "d")).errno());
    Opened[] h = new Opened[1];
    Entry f = paper.create(LowLevelFs.ROOT, "file", RW, h);
    paper.write(f.node(), h[0].fh(), 0, bytes("ok"));
    paper.release(f.node(), h[0].fh());
    assertEquals("ok", new String(published("/file")));
  }

  @Test
  void namesTheStoreCannotHoldAreRefusedBeforeAnyStoreCall() throws Exception {
    // the store takes keys of 200 bytes: a 230-byte name fits FUSE but not the store
    assertEquals(Errno.ENAMETOOLONG, assertThrows(FuseException.class,
        () -> create("n".repeat(230), RW, new Opened[1])).errno());
    assertEquals(Errno.ENAMETOOLONG, assertThrows(FuseException.class,
        () -> fs.lookup(LowLevelFs.ROOT, "n".repeat(230))).errno());
  }

  @Test
  void aLostStoreIsEio() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("s", RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes("payload"));
    faults.on(FaultInjectingBlobStore.Op.PUT, FaultInjectingBlobStore.Op.WRITE,
        FaultInjectingBlobStore.Op.READ, FaultInjectingBlobStore.Op.STAT,
        FaultInjectingBlobStore.Op.SCAN, FaultInjectingBlobStore.Op.COMMIT).always().failBefore();
    assertEquals(Errno.EIO, assertThrows(FuseException.class,
        () -> fs.flush(e.node(), h[0].fh())).errno());
    assertEquals(Errno.EIO, assertThrows(FuseException.class,
        () -> fs.lookup(LowLevelFs.ROOT, "other")).errno());
    faults.clear();
    fs.flush(e.node(), h[0].fh()); // still staged: the retry publishes it
    assertEquals("payload", new String(published("/s")));
  }

  /**
   * A write the unmount lets through (a process in another mount namespace, served for
   * the session's grace, whose connection is then aborted: no FLUSH or RELEASE follows)
   * is published before the store closes. Before, the mount published its files only
   * before the unmount, and that write was dropped without a word.
   */
  @Test
  void aWriteServedDuringTheUnmountIsPublishedBeforeTheStoreCloses() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = fs.create(LowLevelFs.ROOT, "late", RW, h);
    fs.write(e.node(), h[0].fh(), 0, bytes("early"));
    AtomicReference<String> atStoreClose = new AtomicReference<>();
    BlobStore store = faults.store();
    BlobStore closing = (BlobStore) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {BlobStore.class}, (proxy, m, args) -> {
          if (m.getName().equals("close")) {
            atStoreClose.set(new String(published("/late"), StandardCharsets.UTF_8));
          }
          try {
            return m.invoke(store, args);
          } catch (InvocationTargetException ex) {
            throw ex.getCause();
          }
        });
    BlobMount.close(fs, () -> {
      try {
        fs.write(e.node(), h[0].fh(), 5, bytes(" and late")); // its descriptor stays open
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    }, closing);
    assertEquals("early and late", atStoreClose.get());
  }

  @Test
  void publishAllNamesTheFilesItFoundChanged() throws Exception {
    Opened[] a = new Opened[1];
    Opened[] b = new Opened[1];
    Entry changed = fs.create(LowLevelFs.ROOT, "changed", RW, a);
    Entry same = fs.create(LowLevelFs.ROOT, "same", RW, b);
    fs.write(changed.node(), a[0].fh(), 0, bytes("x"));
    fs.write(same.node(), b[0].fh(), 0, bytes("y"));
    fs.flush(same.node(), b[0].fh());
    assertEquals(List.of(FsPath.parse("/changed")), fs.publishAll());
    assertEquals(List.of(), fs.publishAll());
    assertEquals("x", new String(published("/changed")));
  }
}

package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.fuse.kernel.Passthrough;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Writes, truncates and publications racing the re-read of a passthrough file's check
 * (which runs outside the file's locks): none is ever skipped against an older record.
 */
class CheckRaceTest {
  @TempDir Path staging;
  BlobNamespace ns;
  final Map<Integer, Path> files = new HashMap<>();
  final Passthrough kernel = new Passthrough() {
    int next = 1;
    @Override public synchronized int open(Path f) { files.put(next, f); return next++; }
    @Override public synchronized void close(int id) { }
  };

  @BeforeEach void setUp() {
    ns = new BlobNamespace(new InMemoryBlobStore("pt", new StoreLimits(200, 1L << 30,
        Integer.MAX_VALUE)), new NamespaceOptions(4096, 4096, 16384, 0, false, 100),
        StoreCallCounters.NONE);
  }

  String published(String p) throws Exception {
    FileReader r = ns.open(FsPath.parse(p));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return new String(b.array(), StandardCharsets.UTF_8);
  }

  interface Io { void run() throws Exception; }
  static Runnable once(Io io) {
    boolean[] done = {false};
    return () -> {
      if (done[0]) return;
      done[0] = true;
      try { io.run(); } catch (Exception e) { throw new RuntimeException(e); }
    };
  }

  /** close's look = observe(true) then publish(needed = unowned); release = the same, needed MAX. */
  void closeAndRelease(StagedFile s, FsPath p) throws Exception {
    s.observe(true);
    s.publish(ns, p, s.unownedChanges());
    System.out.println("CheckRaceTest after close: " + published(p.toString()).substring(0, 2));
    s.afterCheck = null;
    s.observe(true);
    s.publish(ns, p);
  }

  StagedFile staged(FsPath p, String content) throws Exception {
    StagedFile s = StagedFile.empty(staging);
    s.passThrough(kernel);
    Files.write(files.get(s.backingId()), content.getBytes(StandardCharsets.UTF_8));
    s.publish(ns, p);
    assertEquals(content, published(p.toString()));
    return s;
  }

  @Test void anMmapWriteAfterTheReReadIsPublishedByTheNextLookAtTheLatest() throws Exception {
    FsPath p = FsPath.parse("/m");
    StagedFile s = staged(p, "0".repeat(8192));
    Path local = files.get(s.backingId());
    try (FileChannel c = FileChannel.open(local, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      MappedByteBuffer map = c.map(FileChannel.MapMode.READ_WRITE, 0, 8192);
      map.put(0, "aa".getBytes(StandardCharsets.UTF_8)); // page dirty and writable from now on
      s.observe(true);
      s.publish(ns, p);
      assertEquals("aa", published("/m").substring(0, 2));
      s.afterCheck = once(() -> map.put(0, "zz".getBytes(StandardCharsets.UTF_8)));
      closeAndRelease(s, p);
      assertEquals("zz", published("/m").substring(0, 2));
    } finally {
      s.discard();
    }
  }

  @Test void aPublicationThenARestoreDuringTheReReadIsNeverSkippedAgainstTheOlderRecord()
      throws Exception {
    FsPath p = FsPath.parse("/p");
    StagedFile s = staged(p, "0123");
    Path local = files.get(s.backingId());
    s.afterCheck = once(() -> {
      Files.write(local, "abcd".getBytes(StandardCharsets.UTF_8));
      s.observe(true);
      s.publish(ns, p); // another descriptor's fsync: B committed, record B
      assertEquals("abcd", published("/p"));
      Files.write(local, "0123".getBytes(StandardCharsets.UTF_8)); // back to A's bytes
    });
    try {
      s.observe(true);
      s.publish(ns, p, s.unownedChanges());
      assertEquals("0123", published("/p"), "close returned: the store must hold the staged bytes");
    } finally {
      s.discard();
    }
  }

  @Test void aTruncateAndRewriteDuringTheReReadIsPublished() throws Exception {
    FsPath p = FsPath.parse("/t");
    StagedFile s = staged(p, "01234567");
    Path local = files.get(s.backingId());
    s.afterCheck = once(() -> {
      s.truncate(4);
      try (FileChannel c = FileChannel.open(local, StandardOpenOption.WRITE)) {
        c.write(ByteBuffer.wrap("45xx".getBytes(StandardCharsets.UTF_8)), 4);
      }
    });
    try {
      s.observe(true);
      s.publish(ns, p, s.unownedChanges());
      assertEquals("012345xx", published("/t"));
    } finally {
      s.discard();
    }
  }
}

package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

/**
 * What the shared-stripes tests ({@link MappedRecordReadTest}, {@link AdoptedStripesTest})
 * share: a memory store seen with transactions (Týr, memory) or without (RADOS), a file of
 * four 4 KiB stripes whose bytes are written under any id by hand (no writer makes
 * stripe maps yet), and reads of what the store holds.
 */
abstract class SharedStripesFixture {
  static final int S = 4096;
  static final int LENGTH = 4 * S - 100;
  /**
   * The store under test: a memory store, or (RADOS's IT of the takeover commit, which
   * sets it before {@link #open}) a store on a real cluster.
   */
  BlobStore store =
      new InMemoryBlobStore("stripes", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  final byte[] bytes = new byte[LENGTH];
  FaultInjectingBlobStore faults;
  BlobNamespace ns;

  void open(boolean transactional) {
    open(transactional, 100);
  }

  /** With {@code scanPage} keys per scan call: with 1, every scan call is a step. */
  void open(boolean transactional, int scanPage) {
    faults = transactional ? FaultInjectingBlobStore.over(store)
        : FaultInjectingBlobStore.over(store, TransactionalBlobStore.class);
    ns = new BlobNamespace(faults.store(),
        new NamespaceOptions(S, S, 64 << 10, 1024, false, scanPage), StoreCallCounters.NONE);
    assertEquals(transactional, ns.hasAtomicRename());
    new Random(7).nextBytes(bytes);
  }

  void putBlob(String key, byte[] b, int from, int to) throws IOException {
    store.put(key, ByteBuffer.wrap(Arrays.copyOfRange(b, from, to)), PutMode.CREATE);
  }

  /** Stripe {@code s} of the file's bytes, under {@code d/id/s}. */
  void putStripe(String id, int s) throws IOException {
    putBlob("d/" + id + "/" + s, bytes, s * S, Math.min(LENGTH, (s + 1) * S));
  }

  byte[] read(String path) throws IOException {
    return read(ns, path);
  }

  static byte[] read(BlobNamespace ns, String path) throws IOException {
    FileReader r = ns.open(FsPath.parse(path));
    ByteBuffer back = ByteBuffer.allocate((int) r.length());
    while (back.hasRemaining()) {
      assertTrue(Futures.await(r.read(back.position(), back)) > 0);
    }
    return back.array();
  }

  Set<String> keys(String prefix) throws IOException {
    return keys(store, prefix);
  }

  /** Every key under {@code prefix} in {@code store}, sorted. */
  static Set<String> keys(BlobStore store, String prefix) throws IOException {
    Set<String> all = new TreeSet<>();
    String cursor = null;
    do {
      ScanPage page = store.scan(prefix, cursor, 1000);
      all.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null);
    return all;
  }

  static BitSet stripes(int... s) {
    BitSet b = new BitSet();
    Arrays.stream(s).forEach(b::set);
    return b;
  }

  /** {@code from} with stripe {@code s} rewritten (other random bytes). */
  static byte[] rewritten(byte[] from, int s, int seed) {
    byte[] out = from.clone();
    byte[] fresh = new byte[S];
    new Random(seed).nextBytes(fresh);
    System.arraycopy(fresh, 0, out, s * S, Math.min(S, out.length - s * S));
    return out;
  }

  /**
   * A new version of the file at {@code p} as it is now ({@link BlobNamespace#createVersion},
   * shared stripes step 3), {@code content} long, taking over {@code take} and writing
   * every other stripe from {@code content}: returns its file id.
   */
  String version(FsPath p, byte[] content, BitSet take) throws IOException {
    FileWriter w = ns.createVersion(p, ns.getFileInfo(p));
    w.setLength(content.length);
    assertEquals(take, w.takeOver(take));
    writeUntaken(w, content, take);
    w.close();
    return w.fileId();
  }

  static void writeUntaken(FileWriter w, byte[] content, BitSet take) throws IOException {
    for (int s = 0; s * S < content.length; s++) {
      if (!take.get(s)) {
        w.seek((long) s * S);
        w.write(content, s * S, Math.min(S, content.length - s * S));
      }
    }
  }
}

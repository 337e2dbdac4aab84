package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.StoreOptions;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A file rename on RADOS is atomic to readers on other clients: while one client renames a
 * file back and forth, readers on their own clients probe and open both names, and never
 * find both or neither.
 *
 * <p>Two checks are made one after the other, so a rename may commit between them; each
 * order rules out one failure only. With the file moving from X to Y: Y then X, both found,
 * means X came back after the commit; X then Y, neither found, means Y was missing after
 * X had gone. A check counts only if no rename completed while it ran (the renamer counts
 * the renames it finished), so at most the one rename from X to Y was under way.
 */
@ExtendWith(CephClusterExtension.class)
class RadosAtomicRenameIT {
  private static final int RENAMES = 150;
  private static final FsPath A = FsPath.parse("/obs/a");
  private static final FsPath B = FsPath.parse("/obs/b");
  private static CephTestCluster.Env env;

  @BeforeAll
  static void cluster(CephTestCluster.Env cluster) {
    env = cluster;
  }

  private static RadosBlobStore open(String namespace) throws IOException {
    Map<String, String> o = CephTestCluster.storeOptions(env, env.pool(), namespace);
    return (RadosBlobStore) new RadosBlobStoreProvider().open("t",
        new StoreOptions("fs.blob.store.t.", o));
  }

  private static BlobNamespace namespace(RadosBlobStore store, int inlineThreshold) {
    return new BlobNamespace(store, new NamespaceOptions(4096, 4096, 1 << 20, inlineThreshold,
        false, 100), StoreCallCounters.NONE);
  }

  /** The file at {@code path} as a reader finds it: its bytes, or null if not there. */
  private static byte[] read(BlobNamespace ns, FsPath path, boolean byOpen) throws Exception {
    if (!byOpen) {
      return ns.probe(path).isPresent() ? new byte[0] : null;
    }
    FileReader r;
    try {
      r = ns.open(path);
    } catch (FileNotFoundException e) {
      return null;
    }
    ByteBuffer back = ByteBuffer.allocate((int) r.length());
    while (back.hasRemaining()) {
      if (r.read(back.position(), back).get(60, TimeUnit.SECONDS) < 0) {
        throw new IOException(path + " ended early");
      }
    }
    return back.array();
  }

  @Test
  void readersOnOtherClientsNeverSeeBothNamesOrNeither() throws Exception {
    for (int inlineThreshold : new int[] {0, 1 << 16}) { // data blobs, and bytes in the record
      observe("atomic-rename-" + inlineThreshold + "-" + System.nanoTime(), inlineThreshold);
    }
  }

  private void observe(String namespace, int inlineThreshold) throws Exception {
    byte[] content = new byte[3 * 4096 + 17];
    new Random(inlineThreshold).nextBytes(content);
    List<RadosBlobStore> stores = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      RadosBlobStore writerStore = open(namespace);
      stores.add(writerStore);
      BlobNamespace writer = namespace(writerStore, inlineThreshold);
      try (FileWriter w = writer.create(A, false)) {
        w.write(content, 0, content.length);
      }
      AtomicInteger finished = new AtomicInteger();
      AtomicBoolean done = new AtomicBoolean();
      AtomicLong counted = new AtomicLong();
      List<String> violations = java.util.Collections.synchronizedList(new ArrayList<>());
      List<Future<?>> readers = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        RadosBlobStore readerStore = open(namespace);
        stores.add(readerStore);
        BlobNamespace reader = namespace(readerStore, inlineThreshold);
        int seed = r;
        readers.add(pool.submit(() -> {
          for (long i = seed; !done.get(); i++) {
            int before = finished.get();
            FsPath from = before % 2 == 0 ? A : B;
            FsPath to = before % 2 == 0 ? B : A;
            boolean byOpen = (i / 2) % 2 == 0;
            boolean toFirst = i % 2 == 0;
            byte[] first = read(reader, toFirst ? to : from, byOpen);
            byte[] second = read(reader, toFirst ? from : to, byOpen);
            if (finished.get() != before) {
              continue; // a rename completed meanwhile: the check proves nothing
            }
            counted.incrementAndGet();
            if (toFirst && first != null && second != null) {
              violations.add("both " + to + " and then " + from + " during rename " + (before + 1));
            } else if (!toFirst && first == null && second == null) {
              violations.add("neither " + from + " nor then " + to + " during rename "
                  + (before + 1));
            }
            for (byte[] got : new byte[][] {first, second}) {
              if (byOpen && got != null && !java.util.Arrays.equals(content, got)) {
                violations.add("other bytes read during rename " + (before + 1));
              }
            }
          }
          return null;
        }));
      }
      for (int i = 0; i < RENAMES; i++) {
        assertTrue(writer.rename(i % 2 == 0 ? A : B, i % 2 == 0 ? B : A), "rename " + i);
        finished.incrementAndGet();
      }
      done.set(true);
      for (Future<?> f : readers) {
        f.get(5, TimeUnit.MINUTES);
      }
      System.out.println("[atomic-rename] inline threshold " + inlineThreshold + ": "
          + RENAMES + " renames, " + counted.get() + " checks counted");
      assertEquals(List.of(), violations.subList(0, Math.min(10, violations.size())));
      assertTrue(counted.get() >= 100, "checks counted: " + counted.get());
      assertArrayEquals(content, read(writer, RENAMES % 2 == 0 ? A : B, true));
    } finally {
      pool.shutdownNow();
      for (RadosBlobStore s : stores) {
        s.close();
      }
    }
  }
}

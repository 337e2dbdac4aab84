package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreFullException;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A store that refuses a file's record for want of space (a RADOS pool at its quota:
 * EDQUOT, before anything is applied): the close fails with the store's
 * StoreFullException and the writer's data blobs are removed at once. Before, the refusal
 * was taken for an unknown outcome ("may not have been published ... left to the orphan
 * sweeper"), and the data stayed in the full pool until a sweep.
 */
class StoreFullPublishTest {
  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("full", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final AtomicBoolean full = new AtomicBoolean();
  /** Refuses after applying: RADOS's index step, refused once the record object exists. */
  private final AtomicBoolean fullAfterApplying = new AtomicBoolean();

  /** The memory store, without transactions, refusing puts of records while full. */
  private BlobStore store() {
    return (BlobStore) Proxy.newProxyInstance(BlobStore.class.getClassLoader(),
        new Class<?>[] {BlobStore.class}, (proxy, m, args) -> {
          if (full.get() && m.getName().startsWith("put") && ((String) args[0]).startsWith("n/")) {
            throw new StoreFullException("pool at its quota (test)");
          }
          Object result;
          try {
            result = m.invoke(memory, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          if (fullAfterApplying.get() && m.getName().startsWith("put")
              && ((String) args[0]).startsWith("n/")) {
            throw new StoreFullException("pool at its quota after the record's object (test)");
          }
          return result;
        });
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aRecordRefusedForSpaceFailsTheCloseAndRemovesTheData(boolean overwrite)
      throws Exception {
    BlobNamespace ns = new BlobNamespace(store(),
        new NamespaceOptions(4096, 1024, 4096, 256, false, 100), StoreCallCounters.NONE);
    FsPath f = FsPath.parse("/f");
    if (overwrite) {
      try (FileWriter w = ns.create(f, true)) {
        w.write(new byte[5000], 0, 5000);
      }
    }
    long before = memory.blobCount();
    FileWriter w = ns.create(f, true);
    w.write(new byte[3 * 4096 + 1], 0, 3 * 4096 + 1);
    full.set(true);
    assertThrows(StoreFullException.class, w::close);
    full.set(false);
    assertEquals(before, memory.blobCount(), "no data blob and no lock of the refused file left");
    assertTrue(ns.probe(f).isPresent() == overwrite, "the old file, if any, is still there");
  }

  /**
   * The put applies and then is refused (RADOS: the record object is written, the index
   * update meets the full flag). The record names the writer's data, so the data must stay:
   * the file is published and reads back whole. Before, the refusal removed the data under
   * a published name.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aRecordRefusedAfterItWasAppliedKeepsItsData(boolean overwrite) throws Exception {
    BlobNamespace ns = new BlobNamespace(store(),
        new NamespaceOptions(4096, 1024, 4096, 256, false, 100), StoreCallCounters.NONE);
    FsPath f = FsPath.parse("/f");
    if (overwrite) {
      try (FileWriter w = ns.create(f, true)) {
        w.write(new byte[5000], 0, 5000);
      }
    }
    byte[] data = new byte[3 * 4096 + 1];
    new java.util.Random(7).nextBytes(data);
    FileWriter w = ns.create(f, overwrite);
    w.write(data, 0, data.length);
    fullAfterApplying.set(true);
    w.close();
    fullAfterApplying.set(false);
    FileInfo info = ns.getFileInfo(f);
    assertEquals(w.fileId(), info.record().fileId(), "the name holds the refused-but-applied file");
    assertArrayEquals(data, NamespaceSoak.readWhole(ns, info), "its data is all there");
  }
}

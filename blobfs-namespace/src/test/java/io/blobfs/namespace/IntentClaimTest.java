package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Without transactions a directory operation writes a claim under a key of its own, and
 * acts only once it has found no other intent of its directory ({@link DirectoryMove#begin}).
 * A claim that did nothing never turns into an operation: expired, it is removed.
 */
class IntentClaimTest {
  private static final Duration LEASE = Duration.ofMillis(40);
  private InMemoryBlobStore memory;
  private BlobNamespace ns;

  @BeforeEach
  void store() throws IOException {
    memory = new InMemoryBlobStore("claims", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    ns = new BlobNamespace(FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class)
        .store(), new NamespaceOptions(4096, 1024, 4096, 256, false, 3).withWriterLease(LEASE),
        StoreCallCounters.NONE);
    assertFalse(ns.calls().transactional());
    for (String f : List.of("/a/f", "/a/g")) {
      try (FileWriter w = ns.create(FsPath.parse(f), false)) {
        w.write(f.getBytes(StandardCharsets.UTF_8), 0, f.length());
      }
    }
  }

  /** Another client's claim to rename /a to /b, its lease ending at {@code expires}. */
  private void otherClaim(long expires) throws IOException {
    RenameIntent claim = RenameIntent.startLeased(FsPath.parse("/a"), FsPath.parse("/b"),
        expires);
    memory.put(ns.layout().leasedIntentKey(claim.src(), claim.id()), claim.encode(),
        PutMode.CREATE);
  }

  private List<String> keys(String prefix) throws IOException {
    ScanPage p = memory.scan(prefix, null, 1000);
    return p.keys();
  }

  private List<String> names() throws IOException {
    return ns.list(FsPath.ROOT).stream().map(i -> i.path().toString()).toList();
  }

  @Test
  void aRenameOfADirectoryAnotherOperationClaimsLosesAndChangesNothing() throws IOException {
    otherClaim(System.currentTimeMillis() + 60_000);
    assertThrows(IOException.class, () -> ns.rename(FsPath.parse("/a"), FsPath.parse("/c")));
    assertThrows(IOException.class, () -> ns.delete(FsPath.parse("/a"), true));
    assertEquals(List.of("/a"), names());
    assertEquals(2, ns.list(FsPath.parse("/a")).size());
    assertEquals(1, keys("r/").size(), "only the other claim: this one's was withdrawn");
  }

  @Test
  void anExpiredClaimIsRemovedNotCarriedOut() throws IOException {
    otherClaim(System.currentTimeMillis() - 1);
    assertTrue(ns.rename(FsPath.parse("/a"), FsPath.parse("/c")));
    assertEquals(List.of("/c"), names()); // nothing went to the claim's /b
    assertEquals(List.of(), keys("r/"));

    otherClaim(System.currentTimeMillis() - 1);
    ns.finishInterruptedRenames();
    assertEquals(List.of(), keys("r/"));
    assertEquals(List.of("/c"), names());
  }

  @Test
  void aFinishedOperationLeavesNoIntentAndItsKeyIsItsOwn() throws IOException {
    FsPath a = FsPath.parse("/a");
    RenameIntent one = RenameIntent.startLeased(a, FsPath.parse("/b"), 0);
    RenameIntent two = RenameIntent.startLeased(a, FsPath.parse("/b"), 0);
    String k1 = ns.layout().leasedIntentKey(a, one.id());
    assertFalse(k1.equals(ns.layout().leasedIntentKey(a, two.id())));
    assertTrue(ns.layout().isIntentOf(k1, a));
    assertFalse(ns.layout().isIntentOf(ns.layout().leasedIntentKey(FsPath.parse("/a/x"),
        one.id()), a));
    assertTrue(ns.rename(a, FsPath.parse("/b")));
    assertTrue(ns.delete(FsPath.parse("/b"), true));
    assertEquals(List.of(), keys("r/"));
  }
}

package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.NamespaceOptions;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The mount reads the rename lease as blob:// does (the review of rados-move5, S-d, S-e). */
class MountConfigTest {
  private static MountConfig parse(Map<String, String> conf) {
    return MountConfig.parse(conf, "m", Map.of());
  }

  @Test
  void theRenameLeaseIsReadFromTheStoreProfileAndTheFileSystemKeys() {
    assertEquals(Duration.ofSeconds(20), parse(Map.of("fs.blob.store.m.type", "memory",
        "fs.blob.store.m.rename.lease", "20s")).namespace().renameLease());
    assertEquals(Duration.ofSeconds(30), parse(Map.of("fs.blob.store.m.type", "memory",
        "fs.blob.rename.lease", "30s")).namespace().renameLease());
    assertEquals(NamespaceOptions.DEFAULT_RENAME_LEASE,
        parse(Map.of("fs.blob.store.m.type", "memory")).namespace().renameLease());
  }

  @Test
  void aRenameLeaseSetAboveTheWriterLeaseIsAConfigurationErrorNamingBothKeys() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
        parse(Map.of("fs.blob.store.m.type", "memory", "fs.blob.writer.lease", "1m",
            "fs.blob.rename.lease", "2m")));
    assertTrue(e.getMessage().contains("rename.lease") && e.getMessage().contains("writer.lease"),
        e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> parse(Map.of(
        "fs.blob.store.m.type", "memory", "fs.blob.rename.lease", "500ms")));
    // the default, not asked for, is capped as before rather than refused
    assertEquals(Duration.ofMinutes(1), parse(Map.of("fs.blob.store.m.type", "memory",
        "fs.blob.writer.lease", "1m")).namespace().writerLease());
  }

  /**
   * Shared stripes are off unless asked for (old clients cannot read the records they
   * make); with them on, the mount's new files get 8 MiB stripes unless a stripe size was
   * chosen (fs.blob.fuse.stripe.size first, then the store's or blob://'s key), and not
   * on a passthrough mount, which uploads whole.
   */
  @Test
  void takeoverIsOffByDefaultAndBringsTheMountsOwnStripeSize() {
    MountConfig plain = parse(Map.of("fs.blob.store.m.type", "memory"));
    assertEquals(false, plain.takeover());
    assertEquals(NamespaceOptions.DEFAULT_STRIPE_SIZE, plain.namespace().stripeSize());
    MountConfig on = parse(Map.of("fs.blob.store.m.type", "memory",
        "fs.blob.fuse.takeover", "true"));
    assertEquals(true, on.takeover());
    assertEquals(8L << 20, on.namespace().stripeSize());
    assertEquals(32L << 20, parse(Map.of("fs.blob.store.m.type", "memory",
        "fs.blob.fuse.takeover", "true", "fs.blob.stripe.size", "32m"))
        .namespace().stripeSize());
    assertEquals(16L << 20, parse(Map.of("fs.blob.store.m.type", "memory",
        "fs.blob.fuse.takeover", "true", "fs.blob.store.m.stripe.size", "16m"))
        .namespace().stripeSize());
    assertEquals(NamespaceOptions.DEFAULT_STRIPE_SIZE, parse(Map.of("fs.blob.store.m.type",
        "memory", "fs.blob.fuse.takeover", "true", "fs.blob.fuse.passthrough", "true"))
        .namespace().stripeSize());
    assertEquals(4L << 20, parse(Map.of("fs.blob.store.m.type", "memory",
        "fs.blob.fuse.takeover", "true", "fs.blob.fuse.stripe.size", "4m"))
        .namespace().stripeSize());
    assertEquals(32L << 20, parse(Map.of("fs.blob.store.m.type", "memory",
        "fs.blob.stripe.size", "32m")).namespace().stripeSize());
    assertEquals(2L << 20, parse(Map.of("fs.blob.store.m.type", "memory",
        "fs.blob.fuse.stripe.size", "2m")).namespace().stripeSize());
  }
}

package io.blobfs.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/** {@code fs.blob.rename.lease}: parsed, per store profile too, and held to a second. */
class RenameLeaseConfigTest {
  @Test
  void theRenameLeaseReachesTheNamespace() {
    Configuration conf = new Configuration(false);
    assertEquals(Duration.ofSeconds(90), lease("a", conf));
    conf.set("fs.blob.rename.lease", "2m");
    assertEquals(Duration.ofMinutes(2), lease("a", conf));
    conf.set("fs.blob.store.b.rename.lease", "3m");
    assertEquals(Duration.ofMinutes(3), lease("b", conf));
  }

  @Test
  void aLeaseUnderASecondIsRefusedNamingTheKey() {
    Configuration conf = new Configuration(false);
    conf.set("fs.blob.rename.lease", "100ms");
    Exception e = assertThrows(Exception.class, () -> lease("a", conf));
    assertTrue(e.getMessage().contains("fs.blob.rename.lease"), e.getMessage());
  }

  private static Duration lease(String store, Configuration conf) {
    return BlobFsConfiguration.parse(store, conf, Map.of()).namespace().renameLease();
  }
}

package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.hadoop.BlobFsConfiguration;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/** The file-system settings a Týr store gets when the user sets none (see the provider). */
class TyrFileSystemDefaultsTest {
  private static BlobFsConfiguration.Settings settings(Configuration conf) {
    conf.set("fs.blob.store.t.type", TyrBlobStoreProvider.TYPE);
    return BlobFsConfiguration.parse("t", conf, new TyrBlobStoreProvider().fileSystemDefaults());
  }

  @Test
  void writersSendOneMebibyteWrites() {
    assertThat(settings(new Configuration(false)).namespace().writeBufferSize())
        .isEqualTo(1 << 20);
  }

  @Test
  void theUsersWriteBufferWins() {
    Configuration global = new Configuration(false);
    global.set("fs.blob.write.buffer.size", "8m");
    assertThat(settings(global).namespace().writeBufferSize()).isEqualTo(8 << 20);
    Configuration profile = new Configuration(false);
    profile.set("fs.blob.store.t.write.buffer.size", "4m");
    assertThat(settings(profile).namespace().writeBufferSize()).isEqualTo(4 << 20);
  }

  @Test
  void theWriteWindowIsUnchanged() {
    // Smaller writes, as many bytes in flight: 64 writes of 1 MiB instead of 8 of 8 MiB.
    assertThat(settings(new Configuration(false)).namespace().maxWriteBytesInFlight())
        .isEqualTo(BlobFsConfiguration.WRITE_MAX_INFLIGHT_DEFAULT);
  }
}

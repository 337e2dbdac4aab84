package io.blobfs.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * hflush/hsync cannot publish or persist a file before close, so no stream may claim them,
 * and, as with S3A, they are a logged no-op by default or an error when asked to be.
 */
public class SyncableTest {
  private static final String STORE = "syncable-test";

  @AfterEach
  void drop() {
    InMemoryBlobStoreProvider.drop(STORE);
  }

  private static FileSystem fs(Boolean downgrade) throws IOException {
    Configuration conf = new Configuration();
    conf.set("fs.blob.impl", BlobFileSystem.class.getName());
    if (downgrade != null) {
      conf.setBoolean("fs.blob.downgrade.syncable.exceptions", downgrade);
    }
    return FileSystem.newInstance(URI.create("blob://" + STORE + "/"), conf);
  }

  @Test
  void streamsDeclareNeitherCapabilityAndByDefaultIgnoreTheCalls() throws IOException {
    try (FileSystem fs = fs(null); FSDataOutputStream out = fs.create(new Path("/a"))) {
      for (String c : new String[] {StreamCapabilities.HSYNC, StreamCapabilities.HFLUSH}) {
        assertFalse(out.hasCapability(c), c);
        assertFalse(((StreamCapabilities) out.getWrappedStream()).hasCapability(c), c);
      }
      out.write(1);
      out.hflush();
      out.hsync();
    }
  }

  @Test
  void withDowngradeOffTheCallsThrowAndTheFileStillPublishesAtClose() throws IOException {
    try (FileSystem fs = fs(false)) {
      try (FSDataOutputStream out = fs.create(new Path("/b"))) {
        out.write(7);
        assertThrows(UnsupportedOperationException.class, out::hsync);
        assertThrows(UnsupportedOperationException.class, out::hflush);
      }
      try (FSDataInputStream in = fs.open(new Path("/b"))) {
        assertArrayEquals(new byte[] {7}, in.readAllBytes());
      }
    }
  }

  @Test
  void theContractOptionsDeclareNoSync() {
    assertSyncNotDeclared("contract/blob.xml");
    assertSyncNotDeclared("contract/blob-paper.xml");
  }

  /** For every backend's contract options: the suites must not expect hflush/hsync. */
  public static void assertSyncNotDeclared(String resource) {
    Configuration c = new Configuration(false);
    assertNotNull(SyncableTest.class.getClassLoader().getResource(resource), resource);
    c.addResource(resource);
    assertFalse(c.getBoolean("fs.contract.supports-hflush", true), resource);
    assertFalse(c.getBoolean("fs.contract.supports-hsync", true), resource);
  }
}

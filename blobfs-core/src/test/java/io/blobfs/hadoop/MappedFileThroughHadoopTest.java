package io.blobfs.hadoop;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.namespace.FileRecord;
import io.blobfs.namespace.StripeMap;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.memory.InMemoryBlobStore;
import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A file whose record borrows stripes of another version (shared stripes, issue 16; made
 * by hand, no writer makes such records yet) through blob://: read exactly, located and
 * listed with its blocks, deleted with every data key it names.
 */
class MappedFileThroughHadoopTest {
  private static final int S = 4096;
  private final String name = "mapped-" + UUID.randomUUID().toString().substring(0, 8);
  private FileSystem fs;

  @AfterEach
  void tearDown() throws IOException {
    if (fs != null) {
      fs.close();
    }
    InMemoryBlobStoreProvider.drop(name);
  }

  private static List<String> keys(InMemoryBlobStore store, String prefix) throws IOException {
    List<String> all = new ArrayList<>();
    String cursor = null;
    do {
      ScanPage page = store.scan(prefix, cursor, 1000);
      all.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null);
    return all;
  }

  @Test
  void aMappedFileReadsListsAndDeletesThroughItsMap() throws Exception {
    InMemoryBlobStore store = InMemoryBlobStoreProvider.named(name);
    byte[] bytes = new byte[4 * S - 100];
    new Random(3).nextBytes(bytes);
    for (int s = 0; s < 4; s++) {
      String id = s == 2 ? "B" : "A"; // stripe 2 is B's own, the others borrowed from A
      store.put("d/" + id + "/" + s, ByteBuffer.wrap(Arrays.copyOfRange(bytes, s * S,
          Math.min(bytes.length, (s + 1) * S))), PutMode.CREATE);
    }
    FileRecord b = FileRecord.striped("B", bytes.length, 1, S).withStripes(
        new StripeMap(List.of("A"), List.of(new StripeMap.Run(0, 2, 0),
            new StripeMap.Run(3, 1, 0))), List.of());
    store.put("n/dir/f", b.encode(), PutMode.CREATE);
    Configuration conf = new Configuration();
    conf.set("fs.blob.impl", BlobFileSystem.class.getName());
    fs = FileSystem.newInstance(URI.create("blob://" + name + "/"), conf);
    Path f = new Path("blob://" + name + "/dir/f");

    byte[] back = new byte[bytes.length];
    try (FSDataInputStream in = fs.open(f)) {
      in.readFully(0, back);
    }
    assertThat(back).isEqualTo(bytes);

    BlockLocation[] blocks = fs.getFileBlockLocations(fs.getFileStatus(f), 0, bytes.length);
    assertThat(blocks).hasSize(4);
    assertThat(blocks[3].getOffset()).isEqualTo(3L * S);
    assertThat(blocks[3].getLength()).isEqualTo(bytes.length - 3L * S);
    RemoteIterator<LocatedFileStatus> listed = fs.listLocatedStatus(f.getParent());
    LocatedFileStatus status = listed.next();
    assertThat(listed.hasNext()).isFalse();
    assertThat(status.getBlockLocations()).hasSize(4);

    assertThat(fs.delete(f, false)).isTrue();
    assertThat(keys(store, "d/")).isEmpty();
  }
}

package io.blobfs.tyr.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.FileNotFoundException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code supports-atomic-rename} claims, shown under load: while one thread renames a
 * directory of 40 files back and forth, readers listing both names always see all 40
 * files under one name and none under the other, never a part; and every file's bytes
 * are intact after 200 renames (no data is copied, so none can be lost).
 */
class TyrAtomicRenameIT {
  private static final int FILES = 40;
  @TempDir
  java.nio.file.Path dir;

  @Test
  void directoryRenameIsAllOrNothingToConcurrentReaders() throws Exception {
    try (TyrServer server = TyrServer.start(ServerConfig.local(EngineConfig.defaults(dir)))) {
      Configuration conf = new Configuration();
      conf.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
      conf.set("fs.blob.store.ren.type", "tyr");
      conf.set("fs.blob.store.ren.address", "127.0.0.1:" + server.port());
      conf.set("fs.blob.store.ren.directory.markers", "keep");
      try (FileSystem fs = FileSystem.newInstance(URI.create("blob://ren/"), conf)) {
        Path a = new Path("/a");
        Path b = new Path("/b");
        for (int i = 0; i < FILES; i++) {
          try (FSDataOutputStream out = fs.create(new Path(a, "f" + i))) {
            out.write(("file " + i).getBytes(StandardCharsets.UTF_8));
          }
        }
        AtomicBoolean done = new AtomicBoolean();
        Map<Integer, Integer> seen = new ConcurrentHashMap<>();
        AtomicInteger listings = new AtomicInteger();
        Runnable reader = () -> {
          while (!done.get()) {
            for (Path p : new Path[] {a, b}) {
              int n;
              try {
                FileStatus[] st = fs.listStatus(p);
                n = st.length;
              } catch (FileNotFoundException gone) {
                n = 0;
              } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
              }
              seen.merge(n, 1, Integer::sum);
              listings.incrementAndGet();
            }
          }
        };
        Thread r1 = new Thread(reader);
        Thread r2 = new Thread(reader);
        r1.start();
        r2.start();
        for (int i = 0; i < 100; i++) {
          assertTrue(fs.rename(a, b), "rename a to b, round " + i);
          assertTrue(fs.rename(b, a), "rename b to a, round " + i);
        }
        done.set(true);
        r1.join();
        r2.join();
        System.out.println("listings by entry count: " + seen + " of " + listings.get());
        assertThat(seen.keySet()).as("a listing saw part of a renamed directory")
            .isSubsetOf(0, FILES);
        assertThat(seen.getOrDefault(FILES, 0)).isPositive();
        for (int i = 0; i < FILES; i++) {
          try (var in = fs.open(new Path(a, "f" + i))) {
            assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8))
                .isEqualTo("file " + i);
          }
        }
      }
    }
  }
}

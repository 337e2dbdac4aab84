package io.blobfs.tyr.blobfs;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileInfo;
import io.blobfs.namespace.FileRecord;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.KeyLayout;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.namespace.StripeMap;
import io.blobfs.store.BlobStore;
import io.blobfs.store.HeadScanning;
import io.blobfs.store.PutMode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Týr listing (names and record heads from one scan, {@link HeadScanning}) of a record
 * whose stripe map (BFS3, issue 16) makes its header longer than the head a scan carries:
 * listed with its whole map, never decoded from the head alone.
 */
class TyrMappedListingTest {
  @TempDir
  Path dir;

  @Test
  void aLongStripeMapIsListedWhole() throws Exception {
    try (LocalTyrNode node = new LocalTyrNode(dir); BlobStore store = node.store("t")) {
      assertTrue(store instanceof HeadScanning);
      long s = 4096;
      List<StripeMap.Run> runs = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        runs.add(new StripeMap.Run(2L * i, 1, i % 3));
      }
      FileRecord mapped = FileRecord.striped("own", 600 * s, 1, s).withStripes(
          new StripeMap(List.of("A", "B", "C"), runs), List.of());
      store.put("n/d/long", mapped.encode(), PutMode.CREATE);
      store.put("n/d/plain", FileRecord.striped("p", 10, 1, s).encode(), PutMode.CREATE);
      BlobNamespace ns = new BlobNamespace(store,
          new NamespaceOptions(s, 4096, 64 << 10, 1024, false, 100), StoreCallCounters.NONE);
      Map<String, FileInfo> listed = new HashMap<>();
      for (FileInfo info : ns.list(FsPath.parse("/d"))) {
        listed.put(info.path().toString(), info);
      }
      assertEquals(2, listed.size());
      FileRecord back = listed.get("/d/long").record();
      assertEquals(mapped.map(), back.map());
      KeyLayout layout = new KeyLayout(store.limits());
      assertEquals("d/C/598", back.stripeKey(layout, 598));
      assertEquals("d/own/599", back.stripeKey(layout, 599));
      assertEquals(StripeMap.NONE, listed.get("/d/plain").record().map());
    }
  }
}

package io.blobfs.tyr.blobfs;

import io.blobfs.namespace.ReadThenActRaceTest;
import io.blobfs.store.BlobStore;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/**
 * The namespace's read-then-act races on a Týr node in this JVM: with its transactions,
 * and with them hidden (conditional single-blob calls only).
 */
class TyrReadThenActRaceTest extends ReadThenActRaceTest {
  @TempDir
  Path dir;
  private LocalTyrNode node;

  @Override
  protected BlobStore openStore() throws IOException {
    node = new LocalTyrNode(dir);
    return node.store("race");
  }

  @Override
  protected void closeStore(BlobStore s) throws IOException {
    s.close();
    node.close();
  }
}

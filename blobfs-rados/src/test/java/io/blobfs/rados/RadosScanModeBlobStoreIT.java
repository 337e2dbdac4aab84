package io.blobfs.rados;

import io.blobfs.store.BlobStore;
import java.io.IOException;
import java.util.Map;

/**
 * The SPI contract and RADOS' own cases again in the paper's pure-scan mode
 * ({@code index=scan}): every scan a filtered listing of the pool, no name index kept.
 */
class RadosScanModeBlobStoreIT extends RadosBlobStoreIT {
  @Override
  protected BlobStore openStore() throws IOException {
    namespace = "spi-scan-" + System.nanoTime();
    Map<String, String> o = options(env.pool(), namespace);
    o.put("index", "scan");
    return open(o);
  }
}

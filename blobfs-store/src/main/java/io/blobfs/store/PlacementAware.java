package io.blobfs.store;

import java.io.IOException;
import java.util.List;

/**
 * Optional power: tell where a blob is stored, so that schedulers can run tasks there.
 * RADOS answers with CRUSH, Týr with its ring; the answer lists host names, primary first.
 */
public interface PlacementAware extends BlobStore {

  List<String> hostsOf(String key) throws IOException;
}

package io.blobfs.rados;

import io.blobfs.namespace.CrashLoop;
import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreOptions;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * The child process of {@link RadosCrashIT}: runs {@link CrashLoop#work} on a RADOS store
 * until it is killed. Args: seed, lease in ms, then the store's options as key=value.
 */
public final class CrashWorker {
  private CrashWorker() {}

  public static void main(String[] args) throws Exception {
    long seed = Long.parseLong(args[0]);
    Duration lease = Duration.ofMillis(Long.parseLong(args[1]));
    Map<String, String> options = new HashMap<>();
    for (int i = 2; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      options.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    try (BlobStore store = new RadosBlobStoreProvider().open("crash",
        new StoreOptions("fs.blob.store.crash.", options))) {
      CrashLoop.work(store, lease, seed, System.out);
    }
  }
}

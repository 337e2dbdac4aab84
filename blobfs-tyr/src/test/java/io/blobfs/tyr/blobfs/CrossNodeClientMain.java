package io.blobfs.tyr.blobfs;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A client JVM for tests that kill it with SIGKILL in the middle of cross-node commits.
 * {@code NODES prepare KEY...}: prepares "killed" on every key's node, prints PREPARED and
 * waits to be killed. {@code NODES loop KEY...}: commits "1", "2", ... to all the keys, one
 * transaction each, printing each number once its commit returned, and
 * {@code UNAVAILABLE n: message} for one whose outcome it was not told (it goes on with
 * the next number: the test kills a running client, never one that gave up).
 */
public final class CrossNodeClientMain {
  private CrossNodeClientMain() {}

  public static void main(String[] args) throws Exception {
    List<String> keys = List.of(args).subList(2, args.length);
    try (TyrClusterBlobStore store = (TyrClusterBlobStore) new TyrBlobStoreProvider().open(
        "client", new StoreOptions("fs.blob.store.client.", Map.of("nodes", args[0],
            "connect-timeout", "2s", "op-timeout", "10s")))) {
      if (args[1].equals("prepare")) {
        store.commit(puts(keys, "killed"), CrossNodeCommit.StopAfter.PREPARE);
        System.out.println("PREPARED");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
      }
      for (long i = 1; ; i++) {
        try {
          store.commit(puts(keys, Long.toString(i)));
          System.out.println(i);
          System.out.flush();
        } catch (io.blobfs.store.TransactionConflictException e) {
          i--; // a retryable conflict: again
        } catch (io.blobfs.store.StoreUnavailableException e) {
          // Committed or not, the nodes settle it; a later number overwrites it either way.
          System.out.println("UNAVAILABLE " + i + ": " + e.getMessage());
          System.out.flush();
        }
      }
    }
  }

  static List<BlobMutation> puts(List<String> keys, String value) {
    List<BlobMutation> out = new ArrayList<>();
    for (String k : keys) {
      out.add(new BlobMutation.Put(k, ByteBuffer.wrap(value.getBytes(StandardCharsets.UTF_8)),
          PutMode.OVERWRITE));
    }
    return out;
  }
}

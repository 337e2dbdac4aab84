package io.blobfs.tyr.blobfs;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.VersionedBytes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The bank-transfer workload of the serializability tests: balances are decimal text
 * blobs; a transfer and an audit are read-then-commit transactions validated by the
 * versions they read, so a lost check shows up as a total that changed.
 */
final class BankAccounts {
  private BankAccounts() {}

  /** Moves {@code amount} from one account to another, or throws a conflict. */
  static void transfer(TransactionalBlobStore store, String from, String to, long amount)
      throws IOException {
    VersionedBytes f = store.readWithVersion(from, 64);
    VersionedBytes g = store.readWithVersion(to, 64);
    store.commit(List.of(new BlobMutation.Check(from, f.version()),
        new BlobMutation.Check(to, g.version()),
        new BlobMutation.Put(from, balance(balanceOf(f) - amount), PutMode.OVERWRITE),
        new BlobMutation.Put(to, balance(balanceOf(g) + amount), PutMode.OVERWRITE)));
  }

  /**
   * The total of every account, as read by a transaction that commits only checks: when
   * it returns, that total was one state of all accounts at once; else it throws a
   * conflict.
   */
  static long audit(TransactionalBlobStore store, List<String> accounts) throws IOException {
    long sum = 0;
    List<BlobMutation> checks = new ArrayList<>();
    for (String a : accounts) {
      VersionedBytes v = store.readWithVersion(a, 64);
      sum += balanceOf(v);
      checks.add(new BlobMutation.Check(a, v.version()));
    }
    store.commit(checks);
    return sum;
  }

  private static long balanceOf(VersionedBytes v) {
    return Long.parseLong(new String(v.bytes(), StandardCharsets.UTF_8));
  }

  private static ByteBuffer balance(long value) {
    return ByteBuffer.wrap(Long.toString(value).getBytes(StandardCharsets.UTF_8));
  }
}

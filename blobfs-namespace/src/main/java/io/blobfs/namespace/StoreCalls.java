package io.blobfs.namespace;

import io.blobfs.store.BlobInfo;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobStore;
import io.blobfs.store.HeadScanning;
import io.blobfs.store.LendsReads;
import io.blobfs.store.PlacementAware;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.SnapshotReads;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.VersionedBytes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The namespace's one door to the store: every call is counted here, by type, so the
 * adapter can report the paper's storage-call distribution without touching each site.
 */
final class StoreCalls {
  private final BlobStore store;
  private final StoreCallCounters counters;

  StoreCalls(BlobStore store, StoreCallCounters counters) {
    this.store = store;
    this.counters = counters;
  }

  BlobStore store() {
    return store;
  }

  boolean transactional() {
    return store instanceof TransactionalBlobStore;
  }

  BlobInfo stat(String key) throws IOException {
    counters.increment(StoreCallCounters.STAT, 1);
    return store.stat(key);
  }

  CompletableFuture<Integer> read(String key, long offset, ByteBuffer dst) {
    counters.increment(StoreCallCounters.READ, 1);
    return store.read(key, offset, dst).thenApply(n -> {
      if (n > 0) {
        counters.increment(StoreCallCounters.BYTES_READ, n);
      }
      return n;
    });
  }

  boolean snapshotReads() {
    return store instanceof SnapshotReads;
  }

  /** Not counted: the reads from it are, one READ each, as the store's reads they replace. */
  CompletableFuture<SnapshotReads.Snapshot> openSnapshot(String key, long length) {
    return ((SnapshotReads) store).openSnapshot(key, length);
  }

  CompletableFuture<Integer> read(SnapshotReads.Snapshot snapshot, long offset,
      ByteBuffer dst) {
    counters.increment(StoreCallCounters.READ, 1);
    return snapshot.read(offset, dst).thenApply(n -> {
      counters.increment(StoreCallCounters.BYTES_READ, n);
      return n;
    });
  }

  boolean lendsReads() {
    return store instanceof LendsReads l && l.lendsReads();
  }

  CompletableFuture<LendsReads.ReadLoan> lendRead(String key, long offset, int length) {
    counters.increment(StoreCallCounters.READ, 1);
    return ((LendsReads) store).lendRead(key, offset, length).thenApply(loan -> {
      counters.increment(StoreCallCounters.BYTES_READ, loan.length());
      return loan;
    });
  }

  VersionedBytes readWithVersion(String key, int maxBytes) throws IOException {
    counters.increment(StoreCallCounters.READ, 1);
    VersionedBytes got = store.readWithVersion(key, maxBytes);
    counters.increment(StoreCallCounters.BYTES_READ, got.bytes().length);
    return got;
  }

  CompletableFuture<Void> write(String key, long offset, ByteBuffer src) {
    counters.increment(StoreCallCounters.WRITE, 1);
    counters.increment(StoreCallCounters.BYTES_WRITTEN, src.remaining());
    return store.write(key, offset, src);
  }

  void put(String key, ByteBuffer content, PutMode mode) throws IOException {
    counters.increment(StoreCallCounters.PUT, 1);
    counters.increment(StoreCallCounters.BYTES_WRITTEN, content.remaining());
    store.put(key, content, mode);
  }

  void putIfVersion(String key, ByteBuffer content, long version) throws IOException {
    counters.increment(StoreCallCounters.PUT, 1);
    counters.increment(StoreCallCounters.BYTES_WRITTEN, content.remaining());
    store.putIfVersion(key, content, version);
  }

  boolean delete(String key) throws IOException {
    counters.increment(StoreCallCounters.DELETE, 1);
    return store.delete(key);
  }

  void deleteIfVersion(String key, long version) throws IOException {
    counters.increment(StoreCallCounters.DELETE, 1);
    store.deleteIfVersion(key, version);
  }

  ScanPage scan(String prefix, String cursor, int limit) throws IOException {
    counters.increment(StoreCallCounters.SCAN, 1);
    return store.scan(prefix, cursor, limit);
  }

  /** Up to {@code limit} keys under the prefix, for a probe that wants no more pages. */
  List<String> firstKeys(String prefix, int limit) throws IOException {
    ScanPage page = scan(prefix, null, limit);
    if (page.nextCursor() != null) {
      store.closeScan(page.nextCursor());
    }
    return page.keys();
  }

  boolean scansHeads() {
    return store instanceof HeadScanning;
  }

  HeadScanning.HeadPage scanWithHeads(String prefix, String cursor, int limit, int headBytes)
      throws IOException {
    counters.increment(StoreCallCounters.SCAN, 1);
    return ((HeadScanning) store).scanWithHeads(prefix, cursor, limit, headBytes);
  }

  /** The store's transactions, for sizing them; only where {@link #transactional()}. */
  TransactionalBlobStore transactions() {
    return (TransactionalBlobStore) store;
  }

  void commit(List<BlobMutation> mutations) throws IOException {
    counters.increment(StoreCallCounters.COMMIT, 1);
    ((TransactionalBlobStore) store).commit(mutations);
  }

  List<String> hostsOf(String key) throws IOException {
    if (store instanceof PlacementAware p) {
      counters.increment(StoreCallCounters.LOCATE, 1);
      List<String> hosts = p.hostsOf(key);
      if (!hosts.isEmpty()) {
        return hosts;
      }
    }
    return List.of("localhost");
  }
}

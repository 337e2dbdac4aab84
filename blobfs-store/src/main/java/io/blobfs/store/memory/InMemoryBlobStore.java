package io.blobfs.store.memory;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobInfo;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.InProcess;
import io.blobfs.store.PlacementAware;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.VersionedBytes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A thread-safe store held in this JVM's heap: the embedded default behind
 * {@code blob://} and the fake that the namespace and adapter tests run on.
 *
 * <p>Single-blob calls share a lock that a transaction takes exclusively, so a
 * transaction's mutations become visible together. Whole-blob puts swap in a new blob,
 * so a reader sees the old or the new bytes, never a mix. Versions come from one counter
 * per store, so a key deleted and re-created never gets an old version back.
 */
public final class InMemoryBlobStore
    implements TransactionalBlobStore, PlacementAware, InProcess {
  private final String name;
  private final StoreLimits limits;
  private final ConcurrentSkipListMap<String, Blob> blobs = new ConcurrentSkipListMap<>();
  private final ReadWriteLock txLock = new ReentrantReadWriteLock();
  private final AtomicLong versions = new AtomicLong();

  public InMemoryBlobStore(String name, StoreLimits limits) {
    this.name = name;
    this.limits = limits;
  }

  public String name() {
    return name;
  }

  @Override
  public StoreLimits limits() {
    return limits;
  }

  @Override
  public BlobInfo stat(String key) {
    Blob b = blobs.get(key);
    if (b == null) {
      return BlobInfo.missing(key);
    }
    synchronized (b) {
      return BlobInfo.of(key, b.bytes.size(), b.modified, b.version);
    }
  }

  @Override
  public VersionedBytes readWithVersion(String key, int maxBytes) throws IOException {
    Blob b = blobs.get(key);
    if (b == null) {
      throw new BlobNotFoundException(key);
    }
    synchronized (b) {
      ByteBuffer dst = ByteBuffer.allocate((int) Math.min(maxBytes, b.bytes.size()));
      b.bytes.read(0, dst);
      return new VersionedBytes(dst.array(), b.version);
    }
  }

  @Override
  public CompletableFuture<Integer> read(String key, long offset, ByteBuffer dst) {
    if (offset < 0) {
      return CompletableFuture.failedFuture(new IllegalArgumentException("negative offset"));
    }
    Blob b = blobs.get(key);
    if (b == null) {
      return CompletableFuture.failedFuture(new BlobNotFoundException(key));
    }
    synchronized (b) {
      return CompletableFuture.completedFuture(b.bytes.read(offset, dst));
    }
  }

  @Override
  public CompletableFuture<Void> write(String key, long offset, ByteBuffer src) {
    if (offset < 0) {
      return CompletableFuture.failedFuture(new IllegalArgumentException("negative offset"));
    }
    if (offset + src.remaining() > limits.maxObjectBytes()) {
      return CompletableFuture.failedFuture(new IOException(
          "write past the largest object size " + limits.maxObjectBytes() + ": " + key));
    }
    txLock.readLock().lock();
    try {
      Blob b = blobs.computeIfAbsent(key, k -> new Blob(versions.incrementAndGet()));
      synchronized (b) {
        b.bytes.write(offset, src.duplicate());
        b.modified = System.currentTimeMillis();
        b.version = versions.incrementAndGet();
      }
      return CompletableFuture.completedFuture(null);
    } finally {
      txLock.readLock().unlock();
    }
  }

  @Override
  public void put(String key, ByteBuffer content, PutMode mode) throws IOException {
    checkSize(key, content.remaining());
    Blob fresh = Blob.of(content, versions.incrementAndGet());
    txLock.readLock().lock();
    try {
      if (mode == PutMode.CREATE) {
        if (blobs.putIfAbsent(key, fresh) != null) {
          throw new BlobAlreadyExistsException(key);
        }
      } else {
        blobs.put(key, fresh);
      }
    } finally {
      txLock.readLock().unlock();
    }
  }

  @Override
  public void putIfVersion(String key, ByteBuffer content, long version) throws IOException {
    checkSize(key, content.remaining());
    Blob fresh = Blob.of(content, versions.incrementAndGet());
    actIfVersion(key, version, b -> blobs.replace(key, b, fresh));
  }

  @Override
  public void truncate(String key, long size) throws IOException {
    if (size < 0) {
      throw new IllegalArgumentException("negative size " + size);
    }
    checkSize(key, size);
    Blob b = blobs.get(key);
    if (b == null) {
      throw new BlobNotFoundException(key);
    }
    synchronized (b) {
      b.bytes.truncate(size);
      b.modified = System.currentTimeMillis();
      b.version = versions.incrementAndGet();
    }
  }

  @Override
  public boolean delete(String key) {
    txLock.readLock().lock();
    try {
      return blobs.remove(key) != null;
    } finally {
      txLock.readLock().unlock();
    }
  }

  @Override
  public void deleteIfVersion(String key, long version) throws IOException {
    actIfVersion(key, version, b -> blobs.remove(key, b));
  }

  /** {@code act} swaps or removes the blob; false if it was no longer in the map. */
  private void actIfVersion(String key, long version, Predicate<Blob> act)
      throws TransactionConflictException {
    txLock.readLock().lock();
    try {
      Blob b = blobs.get(key);
      if (b == null) {
        throw changed(key, version);
      }
      // Under the blob's lock no write can slip in between the check and the act.
      synchronized (b) {
        if (b.version != version || !act.test(b)) {
          throw changed(key, version);
        }
      }
    } finally {
      txLock.readLock().unlock();
    }
  }

  private static TransactionConflictException changed(String key, long version) {
    return new TransactionConflictException(key + " is no longer at version " + version);
  }

  @Override
  public ScanPage scan(String prefix, String cursor, int limit) {
    if (limit <= 0) {
      throw new IllegalArgumentException("scan limit must be positive: " + limit);
    }
    ConcurrentNavigableMap<String, Blob> view = cursor == null
        ? blobs.tailMap(prefix, true)
        : blobs.tailMap(cursor, false);
    List<String> keys = new ArrayList<>(Math.min(limit, 1024));
    for (String k : view.keySet()) {
      if (!k.startsWith(prefix)) {
        break;
      }
      if (keys.size() == limit) {
        return new ScanPage(keys, keys.get(keys.size() - 1));
      }
      keys.add(k);
    }
    return new ScanPage(keys, null);
  }

  @Override
  public void commit(List<BlobMutation> mutations) throws IOException {
    long bytes = commitBytes(mutations);
    if (bytes > limits.maxCommitBytes()) {
      // As Týr refuses a transaction over its frame limit: tests of the layers above can
      // give this store a small limit and see what a large directory does on Týr.
      throw new IOException("a transaction of " + mutations.size() + " mutations ("
          + bytes + " bytes) is over this store's limit of " + limits.maxCommitBytes());
    }
    Set<String> seen = new HashSet<>();
    Set<String> checked = new HashSet<>();
    for (BlobMutation m : mutations) {
      // A check may name the key one change names too (a put conditional on a version):
      // every check is taken against the state before the transaction, as Týr's reads.
      if (m instanceof BlobMutation.Check ? !checked.add(m.key()) : !seen.add(m.key())) {
        throw new IllegalArgumentException("a transaction names a key twice: " + m.key());
      }
      if (m instanceof BlobMutation.Put p) {
        checkSize(p.key(), p.content().remaining());
      }
    }
    txLock.writeLock().lock();
    try {
      for (BlobMutation m : mutations) {
        boolean exists = blobs.containsKey(m.key());
        if (m instanceof BlobMutation.Put p && p.mode() == PutMode.CREATE && exists) {
          throw new TransactionConflictException("key exists: " + m.key());
        }
        if (m instanceof BlobMutation.Delete d && d.ifVersion() != BlobMutation.ANY_VERSION
            && (!exists || blobs.get(m.key()).version != d.ifVersion())) {
          throw changed(m.key(), d.ifVersion());
        }
        if (m instanceof BlobMutation.Check c && (c.version() == BlobMutation.ABSENT ? exists
            : !exists || blobs.get(m.key()).version != c.version())) {
          throw changed(m.key(), c.version());
        }
      }
      for (BlobMutation m : mutations) {
        if (m instanceof BlobMutation.Put p) {
          blobs.put(p.key(), Blob.of(p.content(), versions.incrementAndGet()));
        } else if (m instanceof BlobMutation.Delete) {
          blobs.remove(m.key());
        }
      }
    } finally {
      txLock.writeLock().unlock();
    }
  }

  @Override
  public List<String> hostsOf(String key) {
    return List.of("localhost");
  }

  /** Bytes held, for tests and the benchmark's memory report. */
  public long totalBytes() {
    long total = 0;
    for (Map.Entry<String, Blob> e : blobs.entrySet()) {
      synchronized (e.getValue()) {
        total += e.getValue().bytes.size();
      }
    }
    return total;
  }

  public int blobCount() {
    return blobs.size();
  }

  /** Drops every blob. */
  public void clear() {
    blobs.clear();
  }

  @Override
  public void close() {
    // The store outlives file system instances: several may share it in one JVM.
  }

  private void checkSize(String key, long size) throws IOException {
    if (size > limits.maxObjectBytes()) {
      throw new IOException("blob " + key + " of " + size
          + " bytes is over the largest object size " + limits.maxObjectBytes());
    }
  }

  private static final class Blob {
    final ChunkedBytes bytes = new ChunkedBytes();
    long modified = System.currentTimeMillis();
    long version;

    Blob(long version) {
      this.version = version;
    }

    static Blob of(ByteBuffer content, long version) {
      Blob b = new Blob(version);
      b.bytes.write(0, content.duplicate());
      return b;
    }
  }
}

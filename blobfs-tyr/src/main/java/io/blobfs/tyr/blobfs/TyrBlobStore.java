package io.blobfs.tyr.blobfs;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobInfo;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.CopiesOnWrite;
import io.blobfs.store.HeadScanning;
import io.blobfs.store.PlacementAware;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.SnapshotReads;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.VersionedBytes;
import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.ReadResult;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.protocol.Messages;
import java.io.IOException;
import io.blobfs.store.LendsReads;
import io.blobfs.store.LendsReads.ReadLoan;
import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * BlobFS's store SPI on a Týr node. Every mutation is a Týr transaction, so
 * {@link #commit} makes a file or directory rename one atomic step with no data copied;
 * reads see one committed version per call. A blob's version is the commit number of the
 * transaction that last changed it, and a conditional call is a transaction whose read
 * set holds the version the caller read.
 */
public final class TyrBlobStore implements TransactionalBlobStore, PlacementAware,
    CopiesOnWrite, HeadScanning, LendsReads, SnapshotReads {
  private final String name;
  private final TyrClient client;
  private final StoreLimits limits;
  private final List<String> hosts;
  private final Runnable onClose;
  private final java.util.concurrent.atomic.AtomicBoolean closed =
      new java.util.concurrent.atomic.AtomicBoolean();

  TyrBlobStore(String name, TyrClient client, StoreLimits limits, List<String> hosts,
      Runnable onClose) {
    this.name = name;
    this.client = client;
    this.limits = limits;
    this.hosts = List.copyOf(hosts);
    this.onClose = onClose;
  }

  @Override
  public BlobInfo stat(String key) throws IOException {
    BlobStat s = await(client.stat(key), key);
    return s.exists() ? BlobInfo.of(key, s.size(), s.modifiedMillis(), s.version())
        : BlobInfo.missing(key);
  }

  @Override
  public VersionedBytes readWithVersion(String key, int maxBytes) throws IOException {
    ReadResult r = await(client.read(key, 0, maxBytes), key);
    ByteBuffer data = r.data();
    // The client decoded into an array of exactly this size: take it, no second copy.
    byte[] bytes;
    if (data.hasArray() && data.arrayOffset() == 0 && data.position() == 0
        && data.remaining() == data.array().length) {
      bytes = data.array();
    } else {
      bytes = new byte[data.remaining()];
      data.get(bytes);
    }
    return new VersionedBytes(bytes, r.version());
  }

  @Override
  public CompletableFuture<Integer> read(String key, long offset, ByteBuffer dst) {
    if (!dst.hasRemaining()) {
      return CompletableFuture.completedFuture(0);
    }
    int before = dst.position();
    return translate(client.read(key, offset, dst), key).thenApply(s -> {
      int n = dst.position() - before;
      return n == 0 && offset >= s.size() ? -1 : n;
    });
  }

  /** Over TCP only: a local read lands in the caller's buffer straight from the file. */
  @Override
  public boolean lendsReads() {
    return !client.config().localReads();
  }

  /**
   * With local reads: one grant for the whole range, its files opened and the grant
   * released at once, then reads from those files (see {@code LocalReads#snapshot} for why
   * each step is safe). Null otherwise, and for a range longer than the server grants at
   * once (checked by {@code LocalReads#snapshot}, from what the server said of it: its
   * frame limit, 80 MiB by default, so a 64 MiB stripe fits). Not bounded by this
   * client's frame: a grant's answer names pieces of files, not bytes, and the server
   * refuses one whose answer would not fit any client's frame
   * ({@code TyrService#MAX_GRANT_ANSWER_BYTES}). Bounding it by the frame (17 MiB with
   * the default max-op-bytes) made every 64 MiB stripe read without a snapshot, a grant
   * per read.
   */
  @Override
  public CompletableFuture<Snapshot> openSnapshot(String key, long length) {
    if (length <= 0 || length > Integer.MAX_VALUE) {
      return CompletableFuture.completedFuture(null);
    }
    return client.localSnapshot(key, (int) length).thenApply(s -> s == null ? null
        : new Snapshot() {
          @Override
          public CompletableFuture<Integer> read(long offset, ByteBuffer dst) {
            return s.read(offset, dst);
          }

          @Override
          public void close() {
            s.close();
          }

          @Override
          public boolean isClosed() {
            return s.isClosed();
          }
        });
  }

  @Override
  public CompletableFuture<ReadLoan> lendRead(String key, long offset, int length) {
    return translate(client.readLent(key, offset, length), key)
        .thenApply(r -> new NettyLoan(r.data()));
  }

  /** A read's bytes in the buffers Netty received them in. */
  private static final class NettyLoan implements ReadLoan {
    private final ByteBuf data;
    private final java.util.concurrent.atomic.AtomicBoolean released =
        new java.util.concurrent.atomic.AtomicBoolean();

    NettyLoan(ByteBuf data) {
      this.data = data;
    }

    @Override
    public int length() {
      return data.readableBytes();
    }

    @Override
    public void copyTo(int at, byte[] dst, int off, int len) {
      data.getBytes(data.readerIndex() + at, dst, off, len);
    }

    @Override
    public void copyTo(int at, java.nio.ByteBuffer dst, int len) {
      // one copy, from Netty's buffer straight into the caller's (no heap array between)
      int limit = dst.limit();
      dst.limit(dst.position() + len);
      data.getBytes(data.readerIndex() + at, dst);
      dst.limit(limit);
    }

    @Override
    public void release() {
      if (released.compareAndSet(false, true)) {
        data.release();
      }
    }
  }

  @Override
  public CompletableFuture<Void> write(String key, long offset, ByteBuffer src) {
    return translate(client.write(key, offset, src), key).thenApply(r -> null);
  }

  /**
   * A write at an offset made only if the key is at {@code version} there, else a
   * {@link TransactionConflictException} with nothing written: the cluster store's next
   * attempt of a write its primary applied unconfirmed ({@code TyrClusterBlobStore#write}).
   */
  CompletableFuture<Void> writeIfVersion(String key, long offset, ByteBuffer src,
      long version) {
    return translate(client.commit(new TxRequest(List.of(new ReadCheck(key, version)),
            List.of(new TxOp.Write(key, offset, src))))
        .<Void>thenApply(r -> null), key, TyrBlobStore::conflictOrIo);
  }

  /**
   * Whether the write of {@code key} this node applied unconfirmed at {@code version} is
   * held by every backup now ({@code Request.Confirm}'s answers); fails with the server's
   * own {@code TyrException} (BAD_REQUEST from an older node, WRONG_EPOCH), untranslated.
   */
  CompletableFuture<Long> confirm(String key, long version) {
    return client.confirm(key, version);
  }

  /** Up to {@code length} bytes of {@code key} at {@code offset}, with their version. */
  CompletableFuture<ReadResult> readRange(String key, long offset, int length) {
    return translate(client.read(key, offset, length), key);
  }

  @Override
  public void put(String key, ByteBuffer content, PutMode mode) throws IOException {
    await(client.commit(TxRequest.of(new TxOp.Put(key, content, mode == PutMode.CREATE))),
        key);
  }

  @Override
  public void putIfVersion(String key, ByteBuffer content, long version) throws IOException {
    conditional(key, version, new TxOp.Put(key, content, false));
  }

  @Override
  public void deleteIfVersion(String key, long version) throws IOException {
    conditional(key, version, new TxOp.Delete(key, true));
  }

  private void conditional(String key, long version, TxOp op) throws IOException {
    try {
      TyrClient.await(client.commit(new TxRequest(List.of(new ReadCheck(key, version)),
          List.of(op))));
    } catch (TyrException e) {
      throw conflictOrIo(e, key);
    }
  }

  @Override
  public void truncate(String key, long size) throws IOException {
    await(client.commit(TxRequest.of(new TxOp.Truncate(key, size))), key);
  }

  @Override
  public boolean delete(String key) throws IOException {
    return await(client.delete(key), key);
  }

  @Override
  public ScanPage scan(String prefix, String cursor, int limit) throws IOException {
    ScanResult r = await(client.scan(prefix, cursor, Math.min(limit, 10_000)), prefix);
    return new ScanPage(r.keys(), r.nextCursor());
  }

  @Override
  public HeadPage scanWithHeads(String prefix, String cursor, int limit, int headBytes)
      throws IOException {
    ScanResult r = await(client.scan(prefix, cursor, Math.min(limit, 10_000), headBytes),
        prefix);
    return new HeadPage(r.keys(), r.heads(), r.nextCursor());
  }

  @Override
  public StoreLimits limits() {
    return limits;
  }

  /** Every mutation in one Týr transaction; a broken precondition is a conflict. */
  @Override
  public void commit(List<BlobMutation> mutations) throws IOException {
    if (mutations.isEmpty()) {
      return; // e.g. deleting a directory that exists only implicitly
    }
    try {
      TyrClient.await(client.commit(txOf(mutations)));
    } catch (TyrException e) {
      throw conflictOrIo(e, mutations.get(0).key());
    }
  }

  /** The Týr transaction the mutations are sent as. */
  static TxRequest txOf(List<BlobMutation> mutations) {
    List<ReadCheck> reads = new ArrayList<>();
    List<TxOp> ops = new ArrayList<>(mutations.size());
    for (BlobMutation m : mutations) {
      translate(m, reads, ops);
    }
    return new TxRequest(reads, ops);
  }

  /** The read checks and ops a mutation is sent as. */
  private static void translate(BlobMutation m, List<ReadCheck> reads, List<TxOp> ops) {
    if (m instanceof BlobMutation.Put p) {
      ops.add(new TxOp.Put(p.key(), p.content(), p.mode() == PutMode.CREATE));
    } else if (m instanceof BlobMutation.Delete d) {
      boolean conditional = d.ifVersion() != BlobMutation.ANY_VERSION;
      if (conditional) {
        reads.add(new ReadCheck(d.key(), d.ifVersion()));
      }
      ops.add(new TxOp.Delete(d.key(), conditional));
    } else if (m instanceof BlobMutation.Check c) {
      reads.add(new ReadCheck(c.key(), c.version()));
    }
  }

  /**
   * Exactly the bytes a mutation adds to a commit's frame, so that a directory that fits
   * one frame is renamed in one transaction, as it was before transactions were sized.
   */
  @Override
  public long commitBytes(BlobMutation m) {
    return exactCommitBytes(m);
  }

  static long exactCommitBytes(BlobMutation m) {
    List<ReadCheck> reads = new ArrayList<>(1);
    List<TxOp> ops = new ArrayList<>(1);
    translate(m, reads, ops);
    if (ops.isEmpty() && reads.isEmpty()) {
      // A kind this store does not send: the interface's bound.
      return 2L * m.key().getBytes(java.nio.charset.StandardCharsets.UTF_8).length
          + TransactionalBlobStore.MUTATION_OVERHEAD_BYTES;
    }
    long bytes = 0;
    for (ReadCheck r : reads) {
      bytes += Messages.encodedBytes(r);
    }
    for (TxOp op : ops) {
      bytes += Messages.encodedBytes(op);
    }
    return bytes;
  }

  /** A broken precondition of a transaction, whichever check caught it, is a conflict. */
  static IOException conflictOrIo(TyrException e, String key) {
    if (e.code() == ErrorCode.CONFLICT || e.code() == ErrorCode.EXISTS
        || e.code() == ErrorCode.NOT_FOUND) {
      TransactionConflictException c = new TransactionConflictException(e.getMessage());
      c.initCause(e);
      return c;
    }
    return toIo(e, key);
  }

  @Override
  public List<String> hostsOf(String key) {
    return hosts;
  }

  @Override
  public void close() {
    // Twice would release the shared client for another store's sake.
    if (closed.compareAndSet(false, true)) {
      onClose.run();
    }
  }

  @Override
  public String toString() {
    return "TyrBlobStore[" + name + " at " + client.config().address() + "]";
  }

  private static <T> T await(CompletableFuture<T> f, String key) throws IOException {
    try {
      return TyrClient.await(f);
    } catch (TyrException e) {
      throw toIo(e, key);
    }
  }

  private static <T> CompletableFuture<T> translate(CompletableFuture<T> f, String key) {
    return translate(f, key, TyrBlobStore::toIo);
  }

  /** {@code f}, its {@link TyrException} failures turned into {@code how}'s exceptions. */
  private static <T> CompletableFuture<T> translate(CompletableFuture<T> f, String key,
      java.util.function.BiFunction<TyrException, String, IOException> how) {
    return f.exceptionallyCompose(err -> {
      Throwable e = err;
      while (e instanceof CompletionException && e.getCause() != null) {
        e = e.getCause();
      }
      return CompletableFuture.failedFuture(
          e instanceof TyrException t ? how.apply(t, key) : e);
    });
  }

  /** The SPI's typed exceptions for Týr's error codes. */
  static IOException toIo(TyrException e, String key) {
    IOException io = switch (e.code()) {
      case NOT_FOUND -> new BlobNotFoundException(key);
      case EXISTS -> new BlobAlreadyExistsException(key);
      case CONFLICT -> new TransactionConflictException(e.getMessage());
      case UNAVAILABLE -> new StoreUnavailableException(e.getMessage(), e);
      default -> new IOException(e.getMessage(), e);
    };
    if (io.getCause() == null) {
      io.initCause(e);
    }
    return io;
  }
}

package io.blobfs.tyr.client;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.CasFailedException;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadResult;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.protocol.Frame;
import io.blobfs.tyr.protocol.FrameDecoder;
import io.blobfs.tyr.protocol.FrameEncoder;
import io.blobfs.tyr.protocol.Messages;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.protocol.Tls;
import io.blobfs.tyr.protocol.Transport;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Týr client: asynchronous calls over a few multiplexed connections, each bounded by
 * the request timeout. A dropped connection is replaced on the next call.
 *
 * <p>Every call's request is encoded before the method returns. Data in heap buffers is
 * copied then, so the caller may reuse those at once; data in direct buffers of 64 KiB or
 * more is sent in place and must not change until the call completes (as
 * {@code BlobStore.write} requires of its callers anyway).
 *
 * <p>With {@link ClientConfig#localReads}, reads of a node whose files this process sees
 * are served from those files, and go over the connection otherwise ({@link LocalReads}).
 */
public final class TyrClient implements Closeable {
  private final ClientConfig config;
  private final SslContext tls;
  private final EventLoopGroup group;
  private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
  private final Connection[] slots;
  private final AtomicInteger next = new AtomicInteger();
  private final LocalReads local;
  /** Cluster: the ring epoch keyed requests are made under; null for a lone node. */
  private volatile java.util.function.LongSupplier epoch;
  private volatile boolean closed;

  /**
   * @throws UncheckedIOException if TLS is asked for and its certificates cannot be read
   */
  public TyrClient(ClientConfig config) {
    this.config = config;
    try {
      this.tls = config.tlsTrust() == null ? null : Tls.client(config.tlsTrust());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    this.group = new NioEventLoopGroup(Math.min(config.connections(), 4),
        new DefaultThreadFactory("tyr-client", true));
    this.slots = new Connection[config.connections()];
    this.local = config.localReads() ? new LocalReads(new LocalCalls(), config.address(),
        config.localReadFds(), config.localReadIdle()) : null;
  }

  public ClientConfig config() {
    return config;
  }

  /**
   * Makes every keyed request (stat, read, commit, scan, grant) under the ring epoch
   * {@code epoch} gives at the time it is sent: a cluster node then refuses it with
   * {@link io.blobfs.tyr.ring.WrongEpochException} unless that is its epoch and it holds
   * the keys. For a client talking to one member of a cluster.
   */
  public void routeUnder(java.util.function.LongSupplier epoch) {
    this.epoch = epoch;
  }

  /** Node to node: a primary's writes for a backup (see {@code Replicator}). */
  public CompletableFuture<CommitResult> replicate(Request.Replicate r) {
    return call(r, f -> Messages.decodeCommit(f.payload()));
  }

  /** Cross-node transaction: this node's part, to prepare (routed like a commit). */
  public CompletableFuture<CommitResult> prepare(Request.Prepare p) {
    return call(p, f -> Messages.decodeCommit(f.payload()));
  }

  /**
   * Cross-node transaction: a decision step ({@link io.blobfs.tyr.protocol.TxDecision}'s
   * actions); completes with its outcome.
   */
  public CompletableFuture<Integer> decide(String txId, int action) {
    return call(new Request.Decide(txId, action),
        f -> (int) Messages.decodeCommit(f.payload()).version());
  }

  /**
   * Cluster, routed to {@code key}'s primary: whether its write of the key applied
   * unconfirmed at {@code version} is held by every backup now; one of
   * {@link Request.Confirm}'s answers. BAD_REQUEST from a node older than session 14.
   */
  public CompletableFuture<Long> confirm(String key, long version) {
    return call(new Request.Confirm(key, version),
        f -> Messages.decodeCommit(f.payload()).values()[0]);
  }

  /** The node's ring; BAD_REQUEST from a node that is not in a cluster. */
  public CompletableFuture<io.blobfs.tyr.ring.Ring> ring() {
    return call(new Request.RingInfo(), f -> Messages.decodeRing(f.payload()));
  }

  // ------------------------------------------------------------------ calls

  public CompletableFuture<BlobStat> stat(String key) {
    return call(new Request.Stat(key), f -> Messages.decodeStat(key, f.payload()));
  }

  /** Reads up to {@code length} bytes of one committed version. */
  public CompletableFuture<ReadResult> read(String key, long offset, int length) {
    return call(new Request.Read(key, offset, length), f -> {
      ByteBuf p = f.payload();
      long version = p.readLong();
      long size = p.readLong();
      ByteBuffer data = ByteBuffer.allocate(p.readableBytes());
      p.readBytes(data);
      return new ReadResult(version, size, data.flip());
    });
  }

  /**
   * Reads into {@code dst} from {@code offset}, advancing its position by the bytes read
   * (fewer than it has room for only at the blob's end); completes with the version read.
   */
  public CompletableFuture<BlobStat> read(String key, long offset, ByteBuffer dst) {
    if (local != null && dst.hasRemaining()) {
      return local.read(key, offset, dst, () -> readRemote(key, offset, dst));
    }
    return readRemote(key, offset, dst);
  }

  /**
   * The first {@code length} bytes of the newest version of {@code key}, as a snapshot
   * read from the node's files until closed: for a caller that knows the blob does not
   * change while it reads (see {@link LocalReads#snapshot}). Completes with null where
   * local reads are off or fail; never exceptionally.
   */
  public CompletableFuture<LocalSnapshot> localSnapshot(String key, int length) {
    if (local == null || length <= 0) {
      return CompletableFuture.completedFuture(null);
    }
    return local.snapshot(key, length);
  }

  /** The local reader threads (null until local reads are on): for tests. */
  java.util.concurrent.ExecutorService localReaders() {
    return local == null ? null : local.readers();
  }

  /** Segment files held open by this client's local snapshots now: for tests. */
  int localFdsHeld() {
    return local == null ? 0 : local.fdsHeld();
  }

  /** What local reads did (all zeros, off, if the config does not ask for them). */
  public LocalReadStats localReadStats() {
    return local == null ? new LocalReadStats(0, 0, 0, 0, false) : local.stats();
  }

  private CompletableFuture<BlobStat> readRemote(String key, long offset, ByteBuffer dst) {
    return call(new Request.Read(key, offset, dst.remaining()), f -> {
      ByteBuf p = f.payload();
      long version = p.readLong();
      long size = p.readLong();
      int n = p.readableBytes();
      p.readBytes(dst.slice(dst.position(), n));
      dst.position(dst.position() + n);
      return new BlobStat(key, true, size, version, 0);
    });
  }

  /**
   * Reads up to {@code length} bytes of one committed version over the connection (never
   * locally) and lends the buffer they arrived in instead of copying them out: the caller
   * must release {@link LentRead#data}.
   */
  public CompletableFuture<LentRead> readLent(String key, long offset, int length) {
    return call(new Request.Read(key, offset, length), f -> {
      ByteBuf p = f.payload();
      long version = p.readLong();
      long size = p.readLong();
      return new LentRead(new BlobStat(key, true, size, version, 0),
          p.readRetainedSlice(p.readableBytes()));
    });
  }

  /** A read's version and its bytes, in the buffers they arrived in (the caller's to release). */
  public record LentRead(BlobStat stat, ByteBuf data) {}

  public CompletableFuture<CommitResult> commit(TxRequest tx) {
    return call(new Request.Commit(tx), f -> Messages.decodeCommit(f.payload()));
  }

  public CompletableFuture<ScanResult> scan(String prefix, String cursor, int limit) {
    return scan(prefix, cursor, limit, 0);
  }

  /** A scan page with the first {@code headBytes} of each blob, from one committed state. */
  public CompletableFuture<ScanResult> scan(String prefix, String cursor, int limit,
      int headBytes) {
    return call(new Request.Scan(prefix, cursor, limit, headBytes),
        f -> Messages.decodeScan(f.payload()));
  }

  /**
   * Node to node: completes with the node's ring once it is at {@code epoch} (or later)
   * and runs no commit admitted under an older ring ({@code WRONG_EPOCH} while it is
   * behind). What a recovering node waits for before it copies from a peer.
   */
  public CompletableFuture<io.blobfs.tyr.ring.Ring> settled(long epoch) {
    return call(new Request.Routed(epoch, new Request.Ping()),
        f -> Messages.decodeRing(f.payload()));
  }

  /**
   * Node to node: as {@link #settled}, but held prepared cross-node parts are not waited
   * for, only commits admitted under an older ring. What a node handing over waits for.
   */
  public CompletableFuture<io.blobfs.tyr.ring.Ring> commitsSettled(long epoch) {
    return call(new Request.Routed(epoch, new Request.RingInfo()),
        f -> Messages.decodeRing(f.payload()));
  }

  public CompletableFuture<Void> ping() {
    return call(new Request.Ping(), f -> null);
  }

  public CompletableFuture<CommitResult> write(String key, long offset, ByteBuffer data) {
    return commit(TxRequest.of(new TxOp.Write(key, offset, data)));
  }

  /** Completes with the offset the data landed at. */
  public CompletableFuture<Long> append(String key, ByteBuffer data) {
    return commit(TxRequest.of(new TxOp.Append(key, data))).thenApply(r -> r.values()[0]);
  }

  public CompletableFuture<Boolean> delete(String key) {
    return commit(TxRequest.of(new TxOp.Delete(key, false)))
        .thenApply(r -> r.values()[0] == 1);
  }

  public CompletableFuture<Long> add(String key, long offset, long delta) {
    return commit(TxRequest.of(new TxOp.Add(key, offset, delta)))
        .thenApply(r -> r.values()[0]);
  }

  /** Completes with false, not an error, when the value was not {@code expect}. */
  public CompletableFuture<Boolean> compareAndSet(String key, long offset, long expect,
      long update) {
    return commit(TxRequest.of(new TxOp.Cas(key, offset, expect, update)))
        .handle((r, err) -> {
          Throwable e = unwrap(err);
          if (e == null) {
            return true;
          }
          if (e instanceof CasFailedException) {
            return false;
          }
          throw new CompletionException(e);
        });
  }

  /** A transaction executed against committed versions, validated at commit. */
  public TyrTransaction begin() {
    return new TyrTransaction(this);
  }

  /**
   * Runs {@code body} in a fresh transaction and commits it, again while the commit
   * conflicts (up to {@code attempts} times, with a short randomised back-off).
   */
  public <T> T inTransaction(int attempts, TransactionBody<T> body) throws IOException {
    for (int attempt = 1; ; attempt++) {
      TyrTransaction tx = begin();
      try {
        T result = body.run(tx);
        tx.commit();
        return result;
      } catch (TyrException e) {
        if (e.code() != ErrorCode.CONFLICT || attempt >= attempts) {
          throw e;
        }
        try {
          // Randomised and capped at 64 ms: colliding transactions spread out.
          Thread.sleep(java.util.concurrent.ThreadLocalRandom.current()
              .nextInt(1 << Math.min(attempt, 6)));
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("interrupted between transaction attempts");
        }
      }
    }
  }

  /** The work of one transaction attempt. */
  @FunctionalInterface
  public interface TransactionBody<T> {
    T run(TyrTransaction tx) throws IOException;
  }

  /** Waits for a call and unwraps its typed error. */
  public static <T> T await(CompletableFuture<T> f) throws IOException {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted waiting for Týr");
    } catch (ExecutionException e) {
      Throwable c = unwrap(e.getCause());
      if (c instanceof IOException io) {
        throw io;
      }
      throw new IOException(c);
    }
  }

  static Throwable unwrap(Throwable e) {
    while (e instanceof CompletionException && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  // ------------------------------------------------------------------ plumbing

  private <T> CompletableFuture<T> call(Request request, Decoder<T> decoder) {
    return call(null, request, decoder);
  }

  /** A call on {@code target} (null: the next connection in turn). */
  private <T> CompletableFuture<T> call(CompletableFuture<Connection> target, Request request,
      Decoder<T> decoder) {
    java.util.function.LongSupplier routing = epoch;
    if (routing != null && (request instanceof Request.Stat || request instanceof Request.Read
        || request instanceof Request.Commit || request instanceof Request.Scan
        || request instanceof Request.Grant || request instanceof Request.Prepare
        || request instanceof Request.Confirm)) {
      request = new Request.Routed(routing.getAsLong(), request);
    }
    if (closed) {
      return CompletableFuture.failedFuture(new TyrException(ErrorCode.UNAVAILABLE,
          "the Týr client is closed"));
    }
    ByteBuf payload;
    try {
      payload = Messages.encode(request, alloc);
    } catch (IllegalArgumentException e) {
      return CompletableFuture.failedFuture(new TyrException(ErrorCode.BAD_REQUEST,
          e.getMessage()));
    }
    if (payload.readableBytes() > config.maxFrameBytes() - Frame.HEADER_BYTES) {
      int n = payload.readableBytes();
      payload.release();
      return CompletableFuture.failedFuture(new TyrException(ErrorCode.TOO_LARGE, "request of "
          + n + " bytes is over the " + config.maxFrameBytes() + "-byte frame limit"));
    }
    int opcode = Messages.opcodeOf(request);
    CompletableFuture<T> result = new CompletableFuture<>();
    (target == null ? connection() : target).whenComplete((conn, err) -> {
      if (err != null) {
        payload.release();
        result.completeExceptionally(unwrap(err));
        return;
      }
      // The answer is decoded and released here whatever became of the caller's future
      // (a cancelled call must not keep its answer's buffers).
      conn.send(opcode, payload).whenComplete((frame, failed) -> {
        if (failed != null) {
          result.completeExceptionally(unwrap(failed));
          return;
        }
        try {
          if (!result.isDone()) {
            T value = decoder.decode(frame);
            if (!result.complete(value) && value instanceof LentRead lent) {
              lent.data().release(); // the call was cancelled meanwhile: nobody will
            }
          }
        } catch (Exception e) {
          result.completeExceptionally(new TyrException(ErrorCode.SERVER_ERROR,
              "malformed answer from " + config.address() + ": " + e, e));
        } finally {
          frame.release();
        }
      });
    });
    return result;
  }

  @FunctionalInterface
  private interface Decoder<T> {
    T decode(Frame frame) throws Exception;
  }

  private CompletableFuture<Connection> connection() {
    int slot = Math.floorMod(next.getAndIncrement(), slots.length);
    Connection c;
    synchronized (slots) {
      c = slots[slot];
      if (c != null && (c.isUsable() || !c.ready.isDone())) {
        return c.ready;
      }
      c = connect();
      slots[slot] = c;
    }
    if (local != null) {
      // The first connection asks where the node's files are (once), off the caller's
      // path: the first read then starts reading at once (see LocalReads.prepare).
      local.prepare();
    }
    return c.ready;
  }

  /** Where local reads stand: null until asked (for tests). */
  CompletableFuture<io.blobfs.tyr.api.LocalIdentity> localIdentityAsked() {
    return local == null ? null : local.asked();
  }

  private Connection connect() {
    Connection conn = new Connection(config);
    long timeoutMs = config.connectTimeout().toMillis();
    Bootstrap b = new Bootstrap().group(group).channel(Transport.channel(config.host()));
    SslContext tls = this.tls;
    if (!Transport.inJvm(config.host())) {
      b.option(ChannelOption.TCP_NODELAY, true)
          .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(timeoutMs, 600_000));
    }
    ChannelFuture cf = b.handler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            if (tls != null) {
              ch.pipeline().addLast(Tls.clientHandler(tls, ch.alloc(), config.host(),
                  config.port()));
            }
            ch.pipeline().addLast(new FrameDecoder(config.maxFrameBytes(), true, true),
                FrameEncoder.INSTANCE, conn);
          }
        })
        .connect(Transport.address(config.host(), config.port()));
    cf.addListener(f -> {
      if (!f.isSuccess()) {
        conn.ready.completeExceptionally(new io.blobfs.tyr.api.NotSentException(
            "cannot connect to Týr server " + config.address() + " "
                + TyrException.NOT_CONNECTED + ": " + f.cause(),
            f.cause()));
      }
    });
    // The handshake is bounded too: a server that accepts but never answers is lost.
    group.schedule(() -> {
      if (conn.ready.completeExceptionally(new io.blobfs.tyr.api.NotSentException(
          "Týr server " + config.address() + " did not complete the handshake within "
              + timeoutMs + " ms " + TyrException.NOT_CONNECTED, null))) {
        conn.close();
        cf.channel().close();
      }
    }, timeoutMs, TimeUnit.MILLISECONDS);
    return conn;
  }

  /** Local reads' calls: a grant is released on the connection that holds it. */
  private final class LocalCalls implements LocalReads.Calls {
    @Override
    public CompletableFuture<io.blobfs.tyr.api.LocalIdentity> localInfo() {
      return call(new Request.LocalInfo(), f -> Messages.decodeLocalInfo(f.payload()));
    }

    @Override
    public CompletableFuture<LocalReads.Granted> grant(String key, long offset, int length) {
      CompletableFuture<Connection> on = connection();
      return call(on, new Request.Grant(key, offset, length),
          f -> new LocalReads.Granted(Messages.decodeGrant(key, f.payload()), on));
    }

    @Override
    public void release(LocalReads.Granted g) {
      // Unanswered is fine: a connection that is gone has released its grants already.
      call(g.connection(), new Request.Release(g.grant().id()), f -> null);
    }
  }

  @Override
  public void close() {
    if (local != null) {
      local.close();
    }
    closed = true;
    synchronized (slots) {
      for (Connection c : slots) {
        if (c != null) {
          c.close();
        }
      }
    }
    group.shutdownGracefully(Transport.shutdownQuietMillis(config.host()), 2000,
        TimeUnit.MILLISECONDS).syncUninterruptibly();
  }
}

package io.blobfs.tyr.server;

import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.FrameBuffers;
import io.blobfs.tyr.protocol.FrameDecoder;
import io.blobfs.tyr.protocol.FrameEncoder;
import io.blobfs.tyr.protocol.Tls;
import io.blobfs.tyr.protocol.Transport;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Týr node: the storage engine behind a Netty server. Standalone through
 * {@link TyrServerMain}, or embedded in any JVM with {@link #start}.
 */
public final class TyrServer implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(TyrServer.class);

  private final ServerConfig config;
  private final TyrEngine engine;
  private final EventLoopGroup boss;
  private final EventLoopGroup io;
  private final ExecutorService workers;
  private final Channel listener;
  private final RequestMemory memory;
  /** The buffers large frames are read into in place, kept for later frames. */
  private final FrameBuffers frameBuffers;
  private final Membership membership;
  private final Replicator replicator;
  /** Cross-node transactions' prepares and decisions; null for a lone node. */
  private final Transactions transactions;
  /** Catch-up when the ring names this node RECOVERING; null for a lone node. */
  private final Recovery recovery;
  /** Drops the ranges this node handed to a joined member once it is UP; null alone. */
  private final RangeDrop rangeDrop;

  private TyrServer(ServerConfig config, Membership membership) throws IOException {
    config.checkPeerTls(membership != null);
    if (membership != null) {
      config.peerAccess().check("tls-peer-trust"); // before anything opens
    }
    this.config = config;
    this.membership = membership;
    this.engine = TyrEngine.open(config.engine());
    if (membership != null) {
      // Before anything acts on the ring (issue 13): a ring older than one this node
      // installed is refused, and the ring's epoch is recorded in the data directory.
      try {
        membership.recordEpochs(config.engine().directory());
      } catch (IOException | RuntimeException e) {
        engine.close();
        throw e;
      }
    }
    this.boss = new NioEventLoopGroup(1, new DefaultThreadFactory("tyr-accept", true));
    this.io = new NioEventLoopGroup(0, new DefaultThreadFactory("tyr-io", true));
    this.workers = Executors.newFixedThreadPool(config.threads(),
        new DefaultThreadFactory("tyr-worker", true));
    this.replicator = membership == null ? null
        : new Replicator(membership, engine, config.peerAccess(), config.maxFrameBytes());
    Transactions txs = null;
    if (membership != null) {
      try {
        txs = new Transactions(engine, membership, replicator, config.peerAccess(),
            config.maxFrameBytes());
      } catch (IOException | RuntimeException e) {
        shutdownThreads();
        replicator.close();
        engine.close();
        throw e;
      }
    }
    this.transactions = txs;
    TyrService service = new TyrService(engine, config.maxFrameBytes() - 64, membership,
        replicator, transactions);
    memory = new RequestMemory(config.maxRequestMemory());
    // Buffers of frames read in place: an eighth of the request budget (64 MiB by default,
    // one stream's window of 1 MiB writes) kept for later frames, and an eighth out at
    // once, so frames read in place add at most a quarter to what the budget bounds.
    frameBuffers = new FrameBuffers(config.maxRequestMemory() / 8,
        config.maxRequestMemory() / 8);
    Authenticator auth = new Authenticator(config.secret());
    SslContext tls;
    try {
      tls = config.tls() == null ? null
          : Tls.server(config.tls().keystore(), config.tls().passwordFile());
    } catch (IOException e) {
      shutdownThreads();
      engine.close();
      throw e;
    }
    try {
      ServerBootstrap b = new ServerBootstrap().group(boss, io)
          .channel(Transport.serverChannel(config.bind()));
      if (!config.inJvm()) {
        b.childOption(ChannelOption.TCP_NODELAY, true);
      }
      listener = b.childHandler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
              FrameDecoder decoder = decoderFor(config);
              if (tls != null) {
                ch.pipeline().addLast(tls.newHandler(ch.alloc()));
              } else if (!config.inJvm()) {
                // The socket's bytes are the frames' own: a large frame is read straight
                // into its buffer (under TLS they are records to decrypt first).
                decoder.readInPlace(ch, frameBuffers);
              }
              ch.pipeline().addLast(
                  // Observing output: a slow reader making progress is not idle.
                  new IdleStateHandler(true, config.idleTimeout().toMillis(),
                      config.writeIdleTimeout().toMillis(), 0, TimeUnit.MILLISECONDS),
                  decoder, FrameEncoder.INSTANCE,
                  new ServerHandler(service, workers, auth, config.maxInFlight(),
                      config.maxConnectionMemory(), decoder, memory));
            }
          })
          .bind(Transport.address(config.bind(), config.port())).syncUninterruptibly()
          .channel();
    } catch (RuntimeException e) {
      shutdownThreads();
      engine.close();
      throw new IOException("cannot listen on " + config.bind() + ":" + config.port()
          + ": " + e.getMessage(), e);
    }
    LOG.info("Týr server listening on {} (data in {})", address(), config.engine().directory());
    // Last: it may start copying from the peers at once.
    recovery = membership == null ? null
        : new Recovery(membership, engine, config.peerAccess(), config.maxFrameBytes());
    rangeDrop = membership == null ? null
        : new RangeDrop(membership, engine, config.peerAccess(), config.maxFrameBytes());
  }

  /**
   * A connection's decoder. Over TCP a large frame is read into one buffer of its own
   * (in place over plain TCP; under TLS gathered and copied once into it), so that a write's
   * data reaches the log in one piece. In the JVM
   * (an embedded node) it arrives as the client's own buffers, the data in one piece
   * already: the frame is kept in place, and the log writes straight from the writer's
   * buffer, which the writer does not reuse before the commit is acknowledged.
   */
  static FrameDecoder decoderFor(ServerConfig config) {
    return new FrameDecoder(config.maxFrameBytes(), false, config.inJvm());
  }

  /** Opens the engine (replaying its log) and starts listening. */
  public static TyrServer start(ServerConfig config) throws IOException {
    return new TyrServer(config, null);
  }

  /** A cluster member: keyed requests are checked against {@code membership}'s ring. */
  public static TyrServer start(ServerConfig config, Membership membership)
      throws IOException {
    return new TyrServer(config, membership);
  }

  /**
   * The ring epoch under which this node last finished catching up as a RECOVERING member
   * (0 if never): the operator marks it UP once this reaches the recovering epoch.
   */
  public long caughtUpEpoch() {
    return Recovery.caughtUpEpoch(config.engine().directory());
  }

  /** Its catch-up, or null for a lone node (tests: a failure between pieces). */
  Recovery recovery() {
    return recovery;
  }

  /** Ids of the cross-node transactions prepared on this node and not yet resolved. */
  public java.util.List<String> preparedTransactions() {
    return transactions == null ? java.util.List.of() : transactions.prepared();
  }

  /** Its place in the cluster; null for a lone node. */
  /** Cross-node transactions' parts here, or null (tests: a decision without a network). */
  Transactions transactions() {
    return transactions;
  }

  /** The replication of this node's commits (tests: a commit past the request's check). */
  Replicator replicator() {
    return replicator;
  }

  public Membership membership() {
    return membership;
  }

  /** Where it listens: an {@code InetSocketAddress}, or a {@code LocalAddress} in-JVM. */
  public SocketAddress address() {
    return listener.localAddress();
  }

  public int port() {
    if (address() instanceof InetSocketAddress a) {
      return a.getPort();
    }
    throw new IllegalStateException("the Týr node at " + address() + " has no TCP port");
  }

  public TyrEngine engine() {
    return engine;
  }

  public ServerConfig config() {
    return config;
  }

  /** The most request and answer bytes held at once since start (bounded by the budget). */
  public long peakRequestMemory() {
    return memory.peak();
  }

  /** Request and answer bytes held now, across all connections. */
  public long heldRequestMemory() {
    return memory.held();
  }

  /** Stops listening, lets running requests finish, then closes the engine cleanly. */
  @Override
  public void close() throws IOException {
    listener.close().syncUninterruptibly();
    if (membership != null) {
      membership.close();
    }
    if (rangeDrop != null) {
      rangeDrop.close();
    }
    if (recovery != null) {
      recovery.close();
    }
    if (transactions != null) {
      transactions.close();
    }
    shutdownThreads();
    // after the event loops and workers: every frame read in place has been released
    frameBuffers.close();
    if (replicator != null) {
      replicator.close(); // after the workers: running requests may still be forwarding
    }
    engine.close();
  }

  /**
   * Bytes of the buffers frames are read into in place, kept for later frames or still
   * out; zero once closed.
   */
  public long heldFrameBufferBytes() {
    return frameBuffers.keptBytes() + frameBuffers.takenBytes();
  }

  private void shutdownThreads() {
    long quiet = Transport.shutdownQuietMillis(config.bind());
    boss.shutdownGracefully(quiet, 1000, TimeUnit.MILLISECONDS);
    io.shutdownGracefully(quiet, 1000, TimeUnit.MILLISECONDS).syncUninterruptibly();
    workers.shutdown();
    try {
      workers.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

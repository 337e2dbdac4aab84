package io.blobfs.tyr.client;

import io.blobfs.tyr.api.CasFailedException;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.protocol.Frame;
import io.blobfs.tyr.protocol.Messages;
import io.blobfs.tyr.protocol.Opcode;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.server.Authenticator;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.concurrent.ScheduledFuture;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLException;

/**
 * One client connection: the handshake, and the requests in flight on it, matched to
 * their answers by request id. Every request has a timer; when the connection drops,
 * every request on it fails at once with {@link ErrorCode#UNAVAILABLE}.
 */
final class Connection extends ChannelInboundHandlerAdapter {
  private static final SecureRandom RANDOM = new SecureRandom();
  private final ClientConfig config;
  private final AtomicLong ids = new AtomicLong();
  private final Map<Long, Call> calls = new ConcurrentHashMap<>();
  /** Completes once the server has accepted the HELLO. */
  final CompletableFuture<Connection> ready = new CompletableFuture<>();
  private volatile Channel channel;

  private record Call(CompletableFuture<Frame> future, ScheduledFuture<?> timer) {}

  Connection(ClientConfig config) {
    this.config = config;
  }

  boolean isUsable() {
    Channel ch = channel;
    return ready.isDone() && !ready.isCompletedExceptionally() && ch != null && ch.isActive();
  }

  /** Sends a request whose payload is already encoded; the call owns {@code payload}. */
  CompletableFuture<Frame> send(int opcode, ByteBuf payload) {
    long id = ids.incrementAndGet();
    CompletableFuture<Frame> future = new CompletableFuture<>();
    Channel ch = channel;
    long timeoutMs = config.requestTimeout().toMillis();
    // A server that does not answer in time is presumed lost: the connection is closed,
    // which also drops any of the request still queued (so a caller's buffer, sent in
    // place, is never read after the call has failed).
    ScheduledFuture<?> timer = ch.eventLoop().schedule(() -> {
      fail(id, new TyrException(ErrorCode.UNAVAILABLE, "Týr server " + config.address()
          + " did not answer within " + timeoutMs + " ms"));
      ch.close();
    }, timeoutMs, TimeUnit.MILLISECONDS);
    calls.put(id, new Call(future, timer));
    ch.writeAndFlush(new Frame(opcode, id, payload)).addListener(w -> {
      if (!w.isSuccess()) {
        fail(id, new TyrException(ErrorCode.UNAVAILABLE, "cannot send to Týr server "
            + config.address() + ": " + w.cause(), w.cause()));
      }
    });
    return future;
  }

  private void fail(long id, Throwable error) {
    Call call = calls.remove(id);
    if (call != null) {
      call.timer().cancel(false);
      call.future().completeExceptionally(error);
    }
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) {
    channel = ctx.channel();
    ctx.fireChannelActive();
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    Frame frame = (Frame) msg;
    if (frame.opcode() == Opcode.CHALLENGE) {
      try {
        handshake(ctx, Messages.decodeChallenge(frame.payload()));
      } finally {
        frame.release();
      }
      return;
    }
    Call call = calls.remove(frame.requestId());
    if (call == null) {
      frame.release(); // answered after its timeout
      if (frame.opcode() == Opcode.ERROR && !ready.isDone()) {
        ready.completeExceptionally(new TyrException(ErrorCode.UNAVAILABLE,
            "Týr server refused the connection"));
      }
      return;
    }
    call.timer().cancel(false);
    if (frame.opcode() == Opcode.ERROR) {
      Messages.ErrorReply e;
      io.blobfs.tyr.ring.Ring ring = null;
      try {
        e = Messages.decodeError(frame.payload());
        if (e.code() == ErrorCode.WRONG_EPOCH || e.code() == ErrorCode.HANDING_OVER) {
          ring = Messages.decodeRing(frame.payload()); // the refusing node's ring
        }
      } catch (RuntimeException malformed) {
        call.future().completeExceptionally(new TyrException(ErrorCode.SERVER_ERROR,
            "malformed error reply from " + config.address() + ": " + malformed, malformed));
        return;
      } finally {
        frame.release();
      }
      call.future().completeExceptionally(e.code() == ErrorCode.CAS_FAILED
          ? new CasFailedException(e.message(), e.detail())
          : e.code() == ErrorCode.UNAVAILABLE && e.detail() > 0
              ? new io.blobfs.tyr.api.BackupUnconfirmedException("Týr server "
                  + config.address() + ": " + e.message(), e.detail(), null)
          : ring != null && e.code() == ErrorCode.HANDING_OVER
              ? new io.blobfs.tyr.ring.HandingOverException("Týr server "
                  + config.address() + ": " + e.message(), ring)
          : ring != null ? new io.blobfs.tyr.ring.WrongEpochException("Týr server "
              + config.address() + ": " + e.message(), ring)
          : new TyrException(e.code(), "Týr server " + config.address() + ": "
              + e.message()));
    } else {
      call.future().complete(frame);
    }
  }

  /**
   * Proves the secret to the server and, with a secret, demands the server's proof in
   * return: a client that has a secret talks only to a server that knows it, never to
   * whoever answers "no authentication required".
   */
  private void handshake(ChannelHandlerContext ctx, Messages.Challenge challenge) {
    byte[] secret = config.secret();
    byte[] proof = new byte[0];
    byte[] clientNonce = new byte[0];
    if (secret != null) {
      if (!challenge.authRequired()) {
        refuse(ctx, "Týr server " + config.address() + " says it requires no secret, but "
            + "this client has one: refusing a server that cannot prove it knows it");
        return;
      }
      clientNonce = new byte[32];
      RANDOM.nextBytes(clientNonce);
      proof = Authenticator.clientProof(secret, challenge.nonce());
    } else if (challenge.authRequired()) {
      refuse(ctx, "Týr server " + config.address() + " requires a shared secret and none "
          + "is set");
      return;
    }
    byte[] expected = secret == null ? null
        : Authenticator.serverProof(secret, challenge.nonce(), clientNonce);
    Request hello = new Request.Hello(proof, clientNonce);
    send(Opcode.HELLO, Messages.encode(hello, ctx.alloc())).whenComplete((f, err) -> {
      if (err != null) {
        ready.completeExceptionally(err);
        ctx.close();
        return;
      }
      byte[] answer;
      try {
        answer = Messages.decodeHelloAnswer(f.payload());
      } catch (RuntimeException malformed) {
        answer = new byte[0];
      } finally {
        f.release();
      }
      if (expected != null && !MessageDigest.isEqual(expected, answer)) {
        refuse(ctx, "Týr server " + config.address() + " did not prove it knows the "
            + "shared secret: wrong server, or a wrong secret on one side");
      } else {
        ready.complete(this);
      }
    });
  }

  private void refuse(ChannelHandlerContext ctx, String why) {
    ready.completeExceptionally(new TyrException(ErrorCode.UNAUTHENTICATED, why));
    ctx.close();
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    TyrException closed = new TyrException(ErrorCode.UNAVAILABLE,
        "connection to Týr server " + config.address() + " closed");
    ready.completeExceptionally(closed);
    for (Long id : calls.keySet()) {
      fail(id, closed);
    }
    ctx.fireChannelInactive();
  }

  /** A failed TLS handshake says the server could not be trusted: say so, not "closed". */
  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
    if (evt instanceof SslHandshakeCompletionEvent e && !e.isSuccess()) {
      tlsFailed(ctx, e.cause());
      return;
    }
    ctx.fireUserEventTriggered(evt);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    Throwable root = cause instanceof DecoderException && cause.getCause() != null
        ? cause.getCause() : cause;
    if (root instanceof SSLException) {
      tlsFailed(ctx, root);
    }
    ctx.close();
  }

  private void tlsFailed(ChannelHandlerContext ctx, Throwable cause) {
    ready.completeExceptionally(new TyrException(ErrorCode.UNAUTHENTICATED,
        "TLS with Týr server " + config.address() + " failed: " + cause.getMessage(), cause));
    ctx.close();
  }

  void close() {
    Channel ch = channel;
    if (ch != null) {
      ch.close();
    }
  }
}

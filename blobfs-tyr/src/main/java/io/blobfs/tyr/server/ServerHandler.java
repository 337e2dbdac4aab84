package io.blobfs.tyr.server;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.CasFailedException;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.LocalGrant;
import io.blobfs.tyr.api.LocalIdentity;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.protocol.Frame;
import io.blobfs.tyr.protocol.FrameDecoder;
import io.blobfs.tyr.protocol.MalformedFrameException;
import io.blobfs.tyr.protocol.Messages;
import io.blobfs.tyr.protocol.Opcode;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import java.io.IOException;
import java.util.ArrayDeque;
import java.security.SecureRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection's protocol state: the handshake, then requests handed to
 * {@link TyrService} on the worker executor and answered in completion order. Anything
 * that cannot be parsed is answered with an error; anything after which the byte stream
 * cannot be trusted (an oversized or truncated frame, a failed handshake) also closes the
 * connection.
 *
 * <p>Memory: every request and every answer (reads and scan pages alike) is counted in
 * the server-wide {@link RequestMemory} until its answer has been written to the socket,
 * and also in this connection's share. A connection at its share, or with too many
 * requests in flight, stops being read; requests it had already sent wait in
 * {@link #waiting}. So a client that stops reading its answers pins at most its share and
 * every other connection goes on. A peer that takes none of its answers for the write
 * idle timeout is cut off, which frees its share.
 */
final class ServerHandler extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(ServerHandler.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final TyrService service;
  private final Executor workers;
  private final Authenticator auth;
  private final int maxInFlight;
  private final long maxHeld;
  private final FrameDecoder decoder;
  private final RequestMemory memory;
  private final ConnectionGrants grants;
  private final byte[] nonce = new byte[32];
  /** Requests received while the connection was at a limit, in arrival order. */
  private final ArrayDeque<Waiting> waiting = new ArrayDeque<>();
  private boolean authenticated;
  private int inFlight;
  /** Bytes of this connection's requests and answers in {@link #memory}. */
  private long held;
  private long waitingBytes;
  private ChannelHandlerContext ctx;

  private record Waiting(Frame frame, Request request) {}

  ServerHandler(TyrService service, Executor workers, Authenticator auth, int maxInFlight,
      long maxConnectionMemory, FrameDecoder decoder, RequestMemory memory) {
    this.service = service;
    this.workers = workers;
    this.auth = auth;
    this.maxInFlight = maxInFlight;
    this.maxHeld = maxConnectionMemory;
    this.decoder = decoder;
    this.memory = memory;
    this.grants = service.grantsFor();
  }

  @Override
  public void handlerAdded(ChannelHandlerContext context) {
    this.ctx = context;
  }

  /**
   * Reads on while this connection has room for requests and the server has memory for
   * them; otherwise waits, for answers on this connection or memory anywhere.
   */
  private void updateAutoRead() {
    boolean memoryShort = memory.overBudget();
    ctx.channel().config().setAutoRead(waiting.isEmpty() && roomForMore() && !memoryShort);
    if (memoryShort) {
      memory.waitFor(this);
    }
  }

  private boolean roomForMore() {
    return inFlight < maxInFlight && held < maxHeld;
  }

  private void hold(long bytes) {
    memory.acquire(bytes);
    held += bytes;
  }

  /** Runs on the event loop, as every change of {@link #held} does. */
  private void free(long bytes) {
    held -= bytes;
    memory.release(bytes);
    startWaiting();
    updateAutoRead();
  }

  /**
   * A connection holding nothing but its waiting requests may always start one, however
   * large, so a frame bigger than the share still gets served.
   */
  private void startWaiting() {
    while (!waiting.isEmpty() && ctx.channel().isActive()
        && (roomForMore() || (inFlight == 0 && held == waitingBytes))) {
      Waiting w = waiting.poll();
      waitingBytes -= w.frame().payload().capacity();
      dispatch(ctx, w.frame(), w.request());
    }
  }

  /** Called by {@link RequestMemory} from any thread. */
  void memoryFreed() {
    ctx.executor().execute(this::updateAutoRead);
  }

  /**
   * A peer silent for the idle timeout in the middle of a frame, or before it has
   * authenticated, holds resources for nothing: it is cut off. An authenticated client
   * that is merely idle between requests keeps its connection.
   */
  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
    if (evt instanceof IdleStateEvent e && e.state() == IdleState.WRITER_IDLE) {
      // The idle handler observes output, so this fires only if answers are pending and
      // none of their bytes left for the whole timeout: the peer stopped reading.
      ChannelOutboundBuffer out = ctx.channel().unsafe().outboundBuffer();
      if (out != null && out.totalPendingWriteBytes() > 0) {
        LOG.info("closing {}: it took none of its {} pending answer bytes within the write "
            + "idle timeout", ctx.channel().remoteAddress(), out.totalPendingWriteBytes());
        ctx.close();
      }
      return;
    }
    if (evt instanceof IdleStateEvent && (decoder.midFrame() || !authenticated)) {
      LOG.debug("closing {}: idle {}", ctx.channel().remoteAddress(),
          decoder.midFrame() ? "in the middle of a frame" : "before authenticating");
      ctx.close();
      return;
    }
    ctx.fireUserEventTriggered(evt);
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) {
    RANDOM.nextBytes(nonce);
    ctx.writeAndFlush(new Frame(Opcode.CHALLENGE, 0,
        Messages.encodeChallenge(nonce, auth.required(), ctx.alloc())));
    ctx.fireChannelActive();
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    Frame frame = (Frame) msg;
    boolean handedOff = false;
    try {
      if (frame.version() != Frame.PROTOCOL_VERSION) {
        fatal(ctx, frame.requestId(), ErrorCode.UNSUPPORTED_VERSION, "protocol version "
            + frame.version() + " is not spoken here; this server speaks "
            + Frame.PROTOCOL_VERSION);
        return;
      }
      if (!Opcode.isRequest(frame.opcode())) {
        badRequest(ctx, frame.requestId(), "unknown opcode " + frame.opcode());
        return;
      }
      Request request;
      try {
        request = Messages.decodeRequest(frame.opcode(), frame.payload());
      } catch (MalformedFrameException e) {
        badRequest(ctx, frame.requestId(), e.getMessage());
        return;
      }
      if (request instanceof Request.Hello hello) {
        if (auth.verify(nonce, hello.proof())) {
          authenticated = true;
          decoder.trust();
          ctx.writeAndFlush(new Frame(Opcode.HELLO | Opcode.RESPONSE, frame.requestId(),
              Messages.encodeHelloAnswer(auth.answer(nonce, hello.clientNonce()),
                  ctx.alloc())));
        } else {
          fatal(ctx, frame.requestId(), ErrorCode.UNAUTHENTICATED,
              "wrong or missing shared secret");
        }
        return;
      }
      if (!authenticated) {
        fatal(ctx, frame.requestId(), ErrorCode.UNAUTHENTICATED,
            "a HELLO must come first on a connection");
        return;
      }
      handedOff = true;
      hold(frame.payload().capacity());
      waitingBytes += frame.payload().capacity();
      waiting.add(new Waiting(frame, request));
      startWaiting();
      updateAutoRead();
    } finally {
      if (!handedOff) {
        frame.release();
      }
    }
  }

  /** An authenticated client may go on after a bad request; an anonymous peer may not. */
  private void badRequest(ChannelHandlerContext ctx, long id, String why) {
    if (authenticated) {
      ctx.writeAndFlush(error(ErrorCode.BAD_REQUEST, why, 0, ctx, id));
    } else {
      fatal(ctx, id, ErrorCode.BAD_REQUEST, why);
    }
  }

  /** The frame's payload is already held; a read also reserves the answer it asks for. */
  private void dispatch(ChannelHandlerContext ctx, Frame frame, Request request) {
    Request inner = request instanceof Request.Routed rt ? rt.inner() : request;
    long reserved = inner instanceof Request.Read r ? Math.max(0, r.length()) : 0;
    hold(reserved);
    long bytes = frame.payload().capacity() + reserved;
    inFlight++;
    long id = frame.requestId();
    int opcode = frame.opcode() | Opcode.RESPONSE;
    Runnable work = () -> {
      CompletableFuture<Object> handled;
      try {
        handled = service.handle(request, ctx.alloc(), grants);
      } catch (Throwable t) {
        handled = CompletableFuture.failedFuture(t);
      }
      handled.whenComplete((result, err) -> {
        // The request's data buffers are views of the frame: release only when done.
        frame.release();
        Frame out;
        try {
          out = err == null ? success(opcode, id, result, ctx) : failure(id, err, ctx);
        } catch (Throwable t) {
          out = failure(id, t, ctx);
        }
        Frame answer = out;
        ctx.executor().execute(() -> {
          inFlight--;
          // The answer's real size replaces the reservation; until it is written, it
          // counts, whether it is a read, a scan page or anything else.
          long answerBytes = answer.payload().readableBytes();
          hold(answerBytes);
          free(bytes);
          ctx.writeAndFlush(answer).addListener(w -> free(answerBytes));
        });
      });
    };
    try {
      workers.execute(work);
    } catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
      frame.release();
      inFlight--;
      held -= bytes;
      memory.release(bytes);
      fatal(ctx, id, ErrorCode.SERVER_ERROR, "the server is shutting down");
    }
  }

  /** Requests that never started are dropped with the connection, and their memory freed. */
  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    grants.closeAll(); // a local reader that went away needs its segments no more
    for (Waiting w = waiting.poll(); w != null; w = waiting.poll()) {
      long bytes = w.frame().payload().capacity();
      w.frame().release();
      held -= bytes;
      waitingBytes -= bytes;
      memory.release(bytes);
    }
    ctx.fireChannelInactive();
  }

  private static Frame success(int opcode, long id, Object result, ChannelHandlerContext ctx) {
    ByteBuf payload;
    if (result instanceof BlobStat s) {
      payload = Messages.encodeStat(s, ctx.alloc());
    } else if (result instanceof TyrService.ReadReply r) {
      payload = ctx.alloc().compositeBuffer(2)
          .addComponents(true, Messages.encodeReadHeader(r.stat(), ctx.alloc()), r.data());
    } else if (result instanceof CommitResult c) {
      payload = Messages.encodeCommit(c, ctx.alloc());
    } else if (result instanceof ScanResult s) {
      payload = Messages.encodeScan(s, ctx.alloc());
    } else if (result instanceof LocalGrant g) {
      payload = Messages.encodeGrant(g, ctx.alloc());
    } else if (result instanceof LocalIdentity li) {
      payload = Messages.encodeLocalInfo(li, ctx.alloc());
    } else if (result instanceof Ring ring) {
      payload = Messages.encodeRing(ring, ctx.alloc().buffer());
    } else {
      payload = Unpooled.EMPTY_BUFFER;
    }
    return new Frame(opcode, id, payload);
  }

  private static Frame failure(long id, Throwable err, ChannelHandlerContext ctx) {
    Throwable e = err instanceof CompletionException && err.getCause() != null
        ? err.getCause() : err;
    if (e instanceof WrongEpochException w) {
      // The node's ring rides along, so the client can adopt it and go to the right node.
      return new Frame(Opcode.ERROR, id, Messages.encodeRing(w.ring(),
          Messages.encodeError(w.code(), w.getMessage(), w.ring().epoch(), ctx.alloc())));
    }
    if (e instanceof CasFailedException cas) {
      return error(ErrorCode.CAS_FAILED, cas.getMessage(), cas.actual(), ctx, id);
    }
    if (e instanceof io.blobfs.tyr.api.BackupUnconfirmedException b) {
      // Typed by its detail: the version applied on this primary (Connection reads it).
      return error(ErrorCode.UNAVAILABLE, b.getMessage(), b.appliedVersion(), ctx, id);
    }
    if (e instanceof TyrException t) {
      return error(t.code(), t.getMessage(), 0, ctx, id);
    }
    LOG.error("request {} failed unexpectedly", id, e);
    return error(ErrorCode.SERVER_ERROR, e.toString(), 0, ctx, id);
  }

  private static Frame error(ErrorCode code, String message, long detail,
      ChannelHandlerContext ctx, long id) {
    return new Frame(Opcode.ERROR, id, Messages.encodeError(code, message, detail,
        ctx.alloc()));
  }

  /** Answers with an error and closes: the connection cannot go on. */
  private static void fatal(ChannelHandlerContext ctx, long id, ErrorCode code, String msg) {
    ctx.writeAndFlush(error(code, msg, 0, ctx, id)).addListener(ChannelFutureListener.CLOSE);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    Throwable root = cause instanceof DecoderException && cause.getCause() != null
        ? cause.getCause() : cause;
    if (root instanceof TooLongFrameException) {
      fatal(ctx, 0, ErrorCode.TOO_LARGE, "frame too large: " + root.getMessage());
    } else if (root instanceof MalformedFrameException) {
      fatal(ctx, 0, ErrorCode.BAD_REQUEST, root.getMessage());
    } else if (root instanceof IOException) {
      LOG.debug("connection {} failed: {}", ctx.channel().remoteAddress(), root.toString());
      ctx.close();
    } else {
      LOG.warn("closing connection {} after an unexpected error",
          ctx.channel().remoteAddress(), root);
      ctx.close();
    }
  }
}

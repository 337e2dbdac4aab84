package io.blobfs.tyr.server;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.LocalGrant;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Messages;
import io.blobfs.tyr.protocol.Request;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * What the server does for each request: the business logic between the decoded request
 * and the engine, free of channels and bytes-on-the-wire. Runs on the server's worker
 * threads, never on Netty's event loops (engine calls block on disk and the commit lock).
 */
final class TyrService {
  /** A read's answer: the version read and its bytes (owned by the caller). */
  record ReadReply(BlobStat stat, ByteBuf data) {}

  private final TyrEngine engine;
  private final int maxReadBytes;
  private final int maxGrantAnswerBytes;
  /** Null for a lone node (and then {@link #replicator} too). */
  private final Membership membership;
  private final Replicator replicator;
  private final Transactions transactions;

  TyrService(TyrEngine engine, int maxReadBytes, Membership membership,
      Replicator replicator, Transactions transactions) {
    this(engine, maxReadBytes, MAX_GRANT_ANSWER_BYTES, membership, replicator, transactions);
  }

  /** With {@code maxGrantAnswerBytes} instead of {@link #MAX_GRANT_ANSWER_BYTES}: tests. */
  TyrService(TyrEngine engine, int maxReadBytes, int maxGrantAnswerBytes,
      Membership membership, Replicator replicator, Transactions transactions) {
    this.engine = engine;
    this.maxReadBytes = maxReadBytes;
    this.maxGrantAnswerBytes = maxGrantAnswerBytes;
    this.membership = membership;
    this.replicator = replicator;
    this.transactions = transactions;
  }

  /**
   * How long a local reader's grant pins its segments at most: it needs them only until
   * it has opened the files (an open file outlives its deletion), and releases the grant
   * when done; the lease bounds what a client that never does holds.
   */
  static final Duration LOCAL_READ_LEASE = Duration.ofSeconds(60);

  /**
   * The largest grant answer this node sends: a blob:// client's frame limit is at least
   * this (its max-op-bytes, 4 KiB or more, plus 1 MiB), so an answer never closes such a
   * client's connection for its size, which would fail every call in flight on it (a
   * TyrClient built by hand may set a smaller frame: its grants can still be refused
   * that way, as before this bound). A grant names one piece per extent of the range (~40
   * bytes each); with the default 1 MiB chunks (a chunk past 64 extents is rewritten
   * whole) a range has at most ~129 pieces per chunk, so even an 80 MiB grant answers
   * ~430 KB: only a node with chunk-size 256 KiB or less comes near. Refused TOO_LARGE,
   * the client reads the range over the connection. Why a bound on the answer and not on
   * the range: a client asks for a whole stripe at once (64 MiB by default), far more than
   * its frame, and a stripe's answer is small.
   */
  static final int MAX_GRANT_ANSWER_BYTES = 1 << 20;

  ConnectionGrants grantsFor() {
    return new ConnectionGrants(engine);
  }

  /**
   * Completes with the request's result object, or with a {@link TyrException}; local-read
   * grants are made for, and released only by, {@code grants}' connection.
   */
  CompletableFuture<Object> handle(Request request, ByteBufAllocator alloc,
      ConnectionGrants grants) {
    try {
      if (request instanceof Request.RingInfo) {
        if (membership == null) {
          throw new TyrException(ErrorCode.BAD_REQUEST, "this Týr node is not in a cluster");
        }
        return CompletableFuture.completedFuture(membership.ring());
      }
      if (membership != null && request instanceof Request.Routed routed
          && routed.inner() instanceof Request.Ping) {
        // A recovering peer's barrier: answered once this node is at that epoch or later
        // and no commit admitted under an older ring still runs.
        return membership.settled(routed.epoch()).thenApply(r -> r);
      }
      if (membership != null && request instanceof Request.Routed routed
          && routed.inner() instanceof Request.RingInfo) {
        // A peer's hand-over barrier (TyrClient.commitsSettled): held parts left out.
        return membership.settled(routed.epoch(), true).thenApply(r -> r);
      }
      if (membership != null && request instanceof Request.Replicate rep) {
        replicator.decodeAsAnswered(rep); // a test's older backup refuses what it cannot read
        // Counted before it is checked, under a ring no newer than the check's, so that
        // a recovering peer's barrier waits for a batch let in under an older ring.
        io.blobfs.tyr.ring.Ring admitted = membership.admit();
        boolean handOver = false;
        try {
          try {
            handOver = membership.checkBatch(rep);
          } catch (io.blobfs.tyr.ring.WrongEpochException refused) {
            replicator.refused(rep); // applied on its primary: this copy lags behind it
            throw refused;
          }
          boolean counted = handOver;
          return replicator.apply(rep).whenComplete((x, e) -> {
            if (counted) {
              membership.handOverBatchDone(); // applied before the hand-over ends
            }
            membership.release(admitted);
          });
        } catch (Exception | Error e) {
          if (handOver) {
            membership.handOverBatchDone();
          }
          membership.release(admitted);
          throw e;
        }
      }
      if (membership != null) {
        membership.check(request); // refused unless under our epoch and for our keys
        String read = plainReadKey(request);
        TyrException stale = read == null ? null : replicator.staleHere(read);
        if (stale != null) {
          throw stale;
        }
      } else if (request instanceof Request.Routed || request instanceof Request.Replicate) {
        throw new TyrException(ErrorCode.BAD_REQUEST, "this Týr node is not in a cluster");
      }
      if (request instanceof Request.Routed routed
          && routed.inner() instanceof Request.Confirm c) {
        if (replicator == null) {
          throw new TyrException(ErrorCode.BAD_REQUEST, "this Týr node is not in a cluster");
        }
        return CompletableFuture.completedFuture(replicator.confirm(c.key(), c.version()));
      }
      if (request instanceof Request.Decide d) {
        if (transactions == null) {
          throw new TyrException(ErrorCode.BAD_REQUEST, "this Týr node is not in a cluster");
        }
        return transactions.decide(d);
      }
      // A cluster client's scan (routed) lists only the keys of this node's ranges: a
      // range it handed to a joining node stays here until that node is UP, then is
      // dropped (RangeDrop), and must not be listed meanwhile (a key deleted on its owners
      // would show again from here).
      java.util.function.Predicate<String> listed = k -> true;
      if (request instanceof Request.Routed routed) {
        request = routed.inner();
        if (membership != null) {
          io.blobfs.tyr.ring.Ring ring = membership.ring();
          listed = k -> ring.isReplica(membership.self(), k);
        }
      }
      if (request instanceof Request.Prepare p) {
        if (transactions == null) {
          throw new TyrException(ErrorCode.BAD_REQUEST, "this Týr node is not in a cluster");
        }
        return transactions.prepare(p);
      }
      if (request instanceof Request.LocalInfo) {
        // With the longest grant this node makes: a client's snapshot of a longer range
        // is then refused without a round trip ending in TOO_LARGE (and a warning).
        return CompletableFuture.completedFuture(
            engine.localIdentity().withMaxGrantBytes(maxReadBytes));
      } else if (request instanceof Request.Grant g) {
        if (g.length() < 0 || g.length() > maxReadBytes) {
          throw new TyrException(ErrorCode.TOO_LARGE, "grant of " + g.length()
              + " bytes; at most " + maxReadBytes + " per request");
        }
        LocalGrant granted = engine.grant(g.key(), g.offset(), g.length(), LOCAL_READ_LEASE);
        long answer = Messages.grantAnswerBytes(granted);
        if (answer > maxGrantAnswerBytes) {
          engine.release(granted.id());
          throw new TyrException(ErrorCode.TOO_LARGE, "grant of " + g.length() + " bytes of "
              + g.key() + " in " + granted.pieces().size() + " pieces: an answer of " + answer
              + " bytes, at most " + maxGrantAnswerBytes + "; read it over the connection");
        }
        grants.add(granted.id());
        return CompletableFuture.completedFuture(granted);
      } else if (request instanceof Request.Release r) {
        grants.release(r.grantId());
        return CompletableFuture.completedFuture(Boolean.TRUE);
      }
      if (request instanceof Request.Stat s) {
        return CompletableFuture.completedFuture(engine.stat(s.key()));
      } else if (request instanceof Request.Read r) {
        return CompletableFuture.completedFuture(read(r, alloc));
      } else if (request instanceof Request.Commit c) {
        // A cluster member's writes reach its backups before they are acknowledged.
        return (replicator != null ? replicator.commit(c.tx()) : engine.commit(c.tx()))
            .thenApply(x -> x);
      } else if (request instanceof Request.Scan s) {
        if (s.limit() < 1 || s.limit() > 100_000 || s.headBytes() < 0
            || (long) s.limit() * s.headBytes() > maxReadBytes) {
          throw new TyrException(ErrorCode.BAD_REQUEST, "scan of " + s.limit() + " keys with "
              + s.headBytes() + "-byte heads is out of bounds (limit 1..100000, at most "
              + maxReadBytes + " head bytes in all)");
        }
        return CompletableFuture.completedFuture(engine.scan(s.prefix(), s.cursor(),
            s.limit(), s.headBytes(), listed));
      } else if (request instanceof Request.Ping) {
        // The monitor's liveness probe. A failed engine (TyrEngine.fail: a log that could
        // not be written, a rebase record whose rewrite or delete failed, a transient
        // ENOSPC) refuses every write until restarted, so it must not look alive: answered,
        // the monitor kept it UP, clients and primaries kept choosing it, and every write
        // of a key it holds failed (as primary SERVER_ERROR, as backup UNAVAILABLE). Refused
        // with a typed error, the monitor counts it silent and marks it DOWN after its
        // down-after, and its keys' writes move to their other owners. It stays DOWN (its
        // pings stay refused) until restarted, then catches up as any node back.
        java.io.IOException failed = engine.failure();
        if (failed != null) {
          throw new TyrException(ErrorCode.SERVER_ERROR, "this node's store failed and "
              + "refuses writes until restarted: " + failed, failed);
        }
        return CompletableFuture.completedFuture(Boolean.TRUE);
      }
      throw new TyrException(ErrorCode.BAD_REQUEST, "unexpected request " + request);
    } catch (Exception e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private ReadReply read(Request.Read r, ByteBufAllocator alloc) throws Exception {
    if (r.length() < 0 || r.length() > maxReadBytes) {
      throw new TyrException(ErrorCode.TOO_LARGE, "read of " + r.length()
          + " bytes; at most " + maxReadBytes + " per request");
    }
    ByteBuf[] data = new ByteBuf[1];
    try {
      BlobStat stat = engine.read(r.key(), r.offset(), r.length(), n -> {
        data[0] = alloc.directBuffer(n, n).writerIndex(n);
        return data[0].nioBuffer(0, n);
      });
      return new ReadReply(stat, data[0]);
    } catch (Exception e) {
      if (data[0] != null) {
        data[0].release();
      }
      throw e;
    }
  }

  /** The key a plain read (bytes, stat, local grant) names, routed or not; else null. */
  private static String plainReadKey(Request request) {
    Request inner = request instanceof Request.Routed r ? r.inner() : request;
    if (inner instanceof Request.Read rd) {
      return rd.key();
    } else if (inner instanceof Request.Stat st) {
      return st.key();
    } else if (inner instanceof Request.Grant g) {
      return g.key();
    }
    return null;
  }
}

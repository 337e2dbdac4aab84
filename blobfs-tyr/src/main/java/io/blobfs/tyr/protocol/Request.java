package io.blobfs.tyr.protocol;

import io.blobfs.tyr.api.TxRequest;

/** The requests a client sends, decoded from or encoded to frames by {@link Messages}. */
public sealed interface Request {

  /**
   * Proof of the shared secret over the server's nonce (empty if none), and the client's
   * own nonce, which the server proves the secret over in its answer.
   */
  record Hello(byte[] proof, byte[] clientNonce) implements Request {}

  record Stat(String key) implements Request {}

  record Read(String key, long offset, int length) implements Request {}

  record Commit(TxRequest tx) implements Request {}

  /** {@code cursor} null for the first page; {@code headBytes} 0 for names only. */
  record Scan(String prefix, String cursor, int limit, int headBytes) implements Request {}

  record Ping() implements Request {}

  record LocalInfo() implements Request {}

  /** Leave to read {@code [offset, offset+length)} of the newest version from the files. */
  record Grant(String key, long offset, int length) implements Request {}

  record Release(long grantId) implements Request {}

  /**
   * From primary {@code source} to one of its backups: the physical writes of the
   * primary's commits numbered {@code firstSeq}, {@code firstSeq + 1}, ... in stream
   * {@code incarnation}, in the primary's commit order (an empty one: a commit that
   * failed, sent so that the numbering has no gap), made under ring {@code epoch}.
   * {@code prepares}, by index in {@code txs} (whose entry is then empty): a cross-node
   * part prepared on the primary at that place in its order, its ops on this backup's
   * keys, for the backup to hold until it is resolved (a takeover applies it).
   *
   * <p>{@code readsRefusals}: the primary reads the answer's list of commits its backup
   * refused as fenced ({@code FencedWrites}) and fails them unconfirmed. A primary from
   * before session 13 ignores that list and takes every commit of an answered batch for
   * confirmed, so a backup must not refuse part of a batch from it: it refuses such a batch
   * whole, which every primary takes for unconfirmed and owed (issue 13's review, M2). On
   * the wire it is the prepares count written even when it is 0 (see {@code Messages}),
   * which an older backup reads as no prepares; a batch that carries a prepared share
   * cannot say it, and is taken as not reading the list (the share is then refused with
   * its whole batch, which holds only it). Made here, it is true: this version reads it.
   *
   * <p>{@code pieces}, by index in {@code txs}: the commit is a piece of a repair in pieces
   * of a key too large for one frame (issue 13's review, M4): {@link #PIECE_FIRST}, {@link
   * #PIECE_NEXT} or {@link #PIECE_LAST}, its one op a write at an offset of the key's bytes
   * in order. The backup stages the pieces and applies them, at the last, as one whole
   * write of the key, which lifts its fence; applied as they came, a promotion midway
   * would serve a mix of old and new bytes. Sent only to a backup that said it stages them
   * (its answers' version, {@code Replicator}); an older backup would refuse the frame.
   *
   * <p>{@code rebases}, by index in {@code txs} (issue 13, bug 3): the commit is a
   * prepared part's apply, and these parts (by transaction id) held the listed keys
   * behind it on the primary. A backup applying the commit moves its shares of those
   * parts, for those keys, to the versions the commit gives them, in the same critical
   * section (the engine's commit lock): so a later judge does not take the write for the
   * behind share's own apply. Sent only to a backup that said it reads them (its answers'
   * version, {@code Replicator.REBASES}); an older one would refuse the frame.
   */
  record Replicate(long epoch, String source, long incarnation, long firstSeq,
      java.util.List<TxRequest> txs, java.util.Map<Integer, Prepare> prepares,
      boolean readsRefusals, java.util.Map<Integer, Integer> pieces,
      java.util.Map<Integer, java.util.Map<String, java.util.List<String>>> rebases)
      implements Request {
    public static final int PIECE_FIRST = 1;
    public static final int PIECE_NEXT = 2;
    public static final int PIECE_LAST = 3;

    public Replicate {
      txs = java.util.List.copyOf(txs);
      prepares = java.util.Map.copyOf(prepares);
      pieces = java.util.Map.copyOf(pieces);
      java.util.Map<Integer, java.util.Map<String, java.util.List<String>>> copy =
          new java.util.HashMap<>();
      rebases.forEach((at, parts) -> {
        java.util.Map<String, java.util.List<String>> each = new java.util.LinkedHashMap<>();
        parts.forEach((id, keys) -> each.put(id, java.util.List.copyOf(keys)));
        copy.put(at, java.util.Collections.unmodifiableMap(each));
      });
      rebases = java.util.Map.copyOf(copy);
    }

    /** No rebase in the batch. */
    public Replicate(long epoch, String source, long incarnation, long firstSeq,
        java.util.List<TxRequest> txs, java.util.Map<Integer, Prepare> prepares,
        boolean readsRefusals, java.util.Map<Integer, Integer> pieces) {
      this(epoch, source, incarnation, firstSeq, txs, prepares, readsRefusals, pieces,
          java.util.Map.of());
    }

    /** No piece of a repair in the batch. */
    public Replicate(long epoch, String source, long incarnation, long firstSeq,
        java.util.List<TxRequest> txs, java.util.Map<Integer, Prepare> prepares,
        boolean readsRefusals) {
      this(epoch, source, incarnation, firstSeq, txs, prepares, readsRefusals,
          java.util.Map.of());
    }

    /** From this version's primary, which reads the answer's list of refused commits. */
    public Replicate(long epoch, String source, long incarnation, long firstSeq,
        java.util.List<TxRequest> txs, java.util.Map<Integer, Prepare> prepares) {
      this(epoch, source, incarnation, firstSeq, txs, prepares, true);
    }

    /** Writes only: no prepared part in the batch. */
    public Replicate(long epoch, String source, long incarnation, long firstSeq,
        java.util.List<TxRequest> txs) {
      this(epoch, source, incarnation, firstSeq, txs, java.util.Map.of());
    }
  }

  /**
   * Cross-node transaction {@code txId}'s part on the receiving node: validated, its keys
   * reserved and the whole made durable before the answer. {@code coordinator} is the
   * participant that records the decision; {@code participants} are all of them (ids).
   */
  record Prepare(String txId, String coordinator, java.util.List<String> participants,
      TxRequest tx) implements Request {
    public Prepare {
      participants = java.util.List.copyOf(participants);
    }
  }

  /**
   * A step of a cross-node transaction's decision, {@code action} one of
   * {@code TxDecision}'s: to its coordinator, decide commit or abort (the first decision
   * taken stands, and the answer is it), or ask it; to another participant, apply it.
   */
  record Decide(String txId, int action) implements Request {}

  /** The node's ring. */
  record RingInfo() implements Request {}

  /**
   * To {@code key}'s primary: is the write of it that the primary applied at {@code version}
   * (its answer's {@code BackupUnconfirmedException}) held by every backup now? Answered as a
   * commit's reply: the key's version, and one value, {@link #CONFIRMED}, {@link #REPAIRING}
   * or {@link #NOT_HELD}. Read-only: it writes nothing, so it voids no repair under way.
   */
  record Confirm(String key, long version) implements Request {
    /** Every backup holds the key at that version or a later one: the write is in. */
    public static final long CONFIRMED = 1;
    /** A backup still owes it (a repair is due or runs): ask again, nothing to write. */
    public static final long REPAIRING = 2;
    /** The key is not at that version or later here: the write may be gone; make it again. */
    public static final long NOT_HELD = 3;
  }

  /**
   * {@code inner} made under ring {@code epoch}: served only if that is the node's epoch
   * and the node holds {@code inner}'s keys (see {@code WrongEpochException}).
   */
  record Routed(long epoch, Request inner) implements Request {
    public Routed {
      if (inner instanceof Routed || inner instanceof Hello || inner instanceof Replicate
          || inner instanceof Decide) {
        throw new IllegalArgumentException("cannot route a " + inner);
      }
    }
  }
}

package io.blobfs.tyr.protocol;

/** Frame opcodes. A response's opcode is its request's with {@link #RESPONSE} set. */
public final class Opcode {
  public static final int HELLO = 1;
  public static final int STAT = 2;
  public static final int READ = 3;
  public static final int COMMIT = 4;
  public static final int SCAN = 5;
  public static final int PING = 6;
  /** Local reads: where the node's files are, for a client that may share its host. */
  public static final int LOCAL_INFO = 7;
  /** Local reads: a version's pieces of segment files, pinned until RELEASE. */
  public static final int GRANT = 8;
  public static final int RELEASE = 9;
  /** Cluster: the node's ring (members, virtual nodes, replication, epoch). */
  public static final int RING = 10;
  /**
   * Cluster: another request made under a ring epoch (epoch u64, inner opcode u8, inner
   * payload); the node refuses it with WRONG_EPOCH and its ring unless the epoch is its own
   * and it holds every key the request names.
   */
  public static final int ROUTED = 11;
  /**
   * Cluster, node to node: a primary's committed writes for its backup, numbered in the
   * primary's commit order (see {@code Replicator}).
   */
  public static final int REPLICATE = 12;
  /**
   * Cluster: a participant's part of a cross-node transaction, to validate, reserve and
   * make durable until the decision (see the server's {@code Transactions}).
   */
  public static final int PREPARE = 13;
  /** Cluster: a cross-node transaction's decision, asked for, taken or applied. */
  public static final int DECIDE = 14;
  /**
   * Cluster, routed to a key's primary: whether a write of the key that the primary applied
   * unconfirmed (at a version the client names) is now held by every backup (session 14;
   * see the server's {@code Replicator.confirm}). Read-only. A node older than that answers
   * BAD_REQUEST ("unknown opcode"), and the client makes the write again as before.
   */
  public static final int CONFIRM = 15;

  /** Sent by the server as soon as a connection opens: the nonce to authenticate with. */
  public static final int CHALLENGE = 0x40;
  public static final int ERROR = 0x7f;
  public static final int RESPONSE = 0x80;

  private Opcode() {}

  public static boolean isRequest(int opcode) {
    return opcode >= HELLO && opcode <= CONFIRM;
  }
}

package io.blobfs.tyr.protocol;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.LocalGrant;
import io.blobfs.tyr.api.LocalIdentity;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Payload codec: requests and responses to and from bytes (big-endian; a string is a u16
 * byte count and UTF-8). Knows nothing of channels or of what the server does with them.
 * Decoding never trusts a count: every length is checked against what is there.
 */
public final class Messages {
  private static final int OP_CREATE = 1;
  private static final int OP_PUT = 2;
  private static final int OP_WRITE = 3;
  private static final int OP_APPEND = 4;
  private static final int OP_TRUNCATE = 5;
  private static final int OP_DELETE = 6;
  private static final int OP_ADD = 7;
  private static final int OP_CAS = 8;
  private static final int MAX_MESSAGE_CHARS = 2000;

  private Messages() {}

  // ------------------------------------------------------------------ requests

  public static int opcodeOf(Request r) {
    if (r instanceof Request.Hello) {
      return Opcode.HELLO;
    } else if (r instanceof Request.Stat) {
      return Opcode.STAT;
    } else if (r instanceof Request.Read) {
      return Opcode.READ;
    } else if (r instanceof Request.Commit) {
      return Opcode.COMMIT;
    } else if (r instanceof Request.Scan) {
      return Opcode.SCAN;
    } else if (r instanceof Request.LocalInfo) {
      return Opcode.LOCAL_INFO;
    } else if (r instanceof Request.Grant) {
      return Opcode.GRANT;
    } else if (r instanceof Request.Release) {
      return Opcode.RELEASE;
    } else if (r instanceof Request.RingInfo) {
      return Opcode.RING;
    } else if (r instanceof Request.Routed) {
      return Opcode.ROUTED;
    } else if (r instanceof Request.Replicate) {
      return Opcode.REPLICATE;
    } else if (r instanceof Request.Prepare) {
      return Opcode.PREPARE;
    } else if (r instanceof Request.Decide) {
      return Opcode.DECIDE;
    } else if (r instanceof Request.Confirm) {
      return Opcode.CONFIRM;
    }
    return Opcode.PING;
  }

  /** Data at least this large, in a direct buffer, is sent from it without a copy. */
  static final int ZERO_COPY_BYTES = 64 << 10;

  /**
   * The payload of a request. Commit data in heap buffers is copied, so callers may reuse
   * those at once; large direct buffers are sent in place and must not change until the
   * call completes (as {@code BlobStore.write} already requires).
   */
  public static ByteBuf encode(Request r, ByteBufAllocator alloc) {
    if (r instanceof Request.Hello h) {
      return alloc.buffer(4 + h.proof().length + h.clientNonce().length)
          .writeShort(h.proof().length).writeBytes(h.proof())
          .writeShort(h.clientNonce().length).writeBytes(h.clientNonce());
    } else if (r instanceof Request.Stat s) {
      return writeString(alloc.buffer(), s.key());
    } else if (r instanceof Request.Read rd) {
      return writeString(alloc.buffer(), rd.key()).writeLong(rd.offset())
          .writeInt(rd.length());
    } else if (r instanceof Request.Commit c) {
      return encodeTx(c.tx(), alloc);
    } else if (r instanceof Request.Scan s) {
      ByteBuf b = writeString(alloc.buffer(), s.prefix());
      b.writeBoolean(s.cursor() != null);
      if (s.cursor() != null) {
        writeString(b, s.cursor());
      }
      return b.writeInt(s.limit()).writeInt(s.headBytes());
    } else if (r instanceof Request.Grant g) {
      return writeString(alloc.buffer(), g.key()).writeLong(g.offset()).writeInt(g.length());
    } else if (r instanceof Request.Release rel) {
      return alloc.buffer(8).writeLong(rel.grantId());
    } else if (r instanceof Request.Confirm c) {
      return writeString(alloc.buffer(), c.key()).writeLong(c.version());
    } else if (r instanceof Request.Replicate rp) {
      ByteBuf head = writeString(alloc.buffer().writeLong(rp.epoch()), rp.source())
          .writeLong(rp.incarnation()).writeLong(rp.firstSeq()).writeInt(rp.txs().size());
      CompositeByteBuf out = alloc.compositeBuffer(Integer.MAX_VALUE).addComponent(true, head);
      for (TxRequest tx : rp.txs()) {
        out.addComponent(true, encodeTx(tx, alloc));
      }
      boolean rebases = !rp.rebases().isEmpty();
      if (!rp.prepares().isEmpty() || rp.readsRefusals() || !rp.pieces().isEmpty()
          || rebases) {
        // After the writes. A batch without prepares wrote no count before session 13;
        // now its count, 0, says that the primary reads the answer's list of refused
        // commits (Request.Replicate#readsRefusals): an older backup reads it as no
        // prepares, so the frame stays one that every version decodes.
        out.addComponent(true, alloc.buffer(4).writeInt(rp.prepares().size()));
        for (Map.Entry<Integer, Request.Prepare> e : new java.util.TreeMap<>(rp.prepares())
            .entrySet()) {
          ByteBuf p = encode(e.getValue(), alloc);
          out.addComponent(true, alloc.buffer(8).writeInt(e.getKey())
              .writeInt(p.readableBytes()));
          out.addComponent(true, p);
        }
      }
      if (!rp.pieces().isEmpty() || rebases) {
        // After the prepares, only to a backup that stages repairs in pieces (an older one
        // refuses stray bytes): the count, then each piece's index and kind. Written (0)
        // when rebases follow, so that the rebases' section is always the last.
        ByteBuf pieces = alloc.buffer(4 + 5 * rp.pieces().size())
            .writeInt(rp.pieces().size());
        new java.util.TreeMap<>(rp.pieces()).forEach((at, kind) ->
            pieces.writeInt(at).writeByte(kind));
        out.addComponent(true, pieces);
      }
      if (rebases) {
        // Issue 13, bug 3: last, only to a backup that said it reads them (REBASES in its
        // answers; an older one refuses stray bytes): the count of items, then for each its
        // index, its parts' count and each part's transaction id and keys.
        ByteBuf rb = alloc.buffer().writeInt(rp.rebases().size());
        new java.util.TreeMap<>(rp.rebases()).forEach((at, parts) -> {
          rb.writeInt(at).writeInt(parts.size());
          parts.forEach((id, keys) -> {
            writeString(rb, id).writeInt(keys.size());
            keys.forEach(key -> writeString(rb, key));
          });
        });
        out.addComponent(true, rb);
      }
      return out;
    } else if (r instanceof Request.Prepare pr) {
      ByteBuf head = writeString(writeString(alloc.buffer(), pr.txId()), pr.coordinator())
          .writeInt(pr.participants().size());
      for (String p : pr.participants()) {
        writeString(head, p);
      }
      return alloc.compositeBuffer(Integer.MAX_VALUE).addComponents(true, head,
          encodeTx(pr.tx(), alloc));
    } else if (r instanceof Request.Decide d) {
      return writeString(alloc.buffer(), d.txId()).writeByte(d.action());
    } else if (r instanceof Request.Routed rt) {
      // The inner payload may hold data sent in place: composed, never copied.
      ByteBuf head = alloc.buffer(9).writeLong(rt.epoch()).writeByte(opcodeOf(rt.inner()));
      return alloc.compositeBuffer(Integer.MAX_VALUE).addComponents(true, head,
          encode(rt.inner(), alloc));
    }
    return alloc.buffer(0);
  }

  public static Request decodeRequest(int opcode, ByteBuf in) throws MalformedFrameException {
    try {
      Request r = switch (opcode) {
        case Opcode.HELLO -> new Request.Hello(readBytes(in, in.readUnsignedShort()),
            in.isReadable() ? readBytes(in, in.readUnsignedShort()) : new byte[0]);
        case Opcode.STAT -> new Request.Stat(readString(in));
        case Opcode.READ -> new Request.Read(readString(in), in.readLong(), in.readInt());
        case Opcode.COMMIT -> new Request.Commit(decodeTx(in));
        case Opcode.SCAN -> new Request.Scan(readString(in),
            in.readBoolean() ? readString(in) : null, in.readInt(), in.readInt());
        case Opcode.PING -> new Request.Ping();
        case Opcode.LOCAL_INFO -> new Request.LocalInfo();
        case Opcode.GRANT -> new Request.Grant(readString(in), in.readLong(), in.readInt());
        case Opcode.RELEASE -> new Request.Release(in.readLong());
        case Opcode.RING -> new Request.RingInfo();
        case Opcode.REPLICATE -> {
          long epoch = in.readLong();
          String source = readString(in);
          long incarnation = in.readLong();
          long firstSeq = in.readLong();
          int n = count(in, 8);
          List<TxRequest> txs = new ArrayList<>(n);
          for (int i = 0; i < n; i++) {
            txs.add(decodeTx(in));
          }
          Map<Integer, Request.Prepare> prepares = new java.util.HashMap<>();
          boolean counted = in.isReadable(); // a count of 0: the primary reads refusals
          for (int k = counted ? count(in, 8) : 0; k > 0; k--) {
            int at = in.readInt();
            ByteBuf p = in.readSlice(in.readInt());
            if (at < 0 || at >= n) {
              throw new MalformedFrameException("prepare at " + at + " of " + n);
            }
            prepares.put(at, (Request.Prepare) decodeRequest(Opcode.PREPARE, p));
          }
          Map<Integer, Integer> pieces = new java.util.HashMap<>();
          for (int k = in.isReadable() ? count(in, 5) : 0; k > 0; k--) {
            int at = in.readInt();
            int kind = in.readUnsignedByte();
            if (at < 0 || at >= n || kind < Request.Replicate.PIECE_FIRST
                || kind > Request.Replicate.PIECE_LAST) {
              throw new MalformedFrameException("piece " + kind + " at " + at + " of " + n);
            }
            pieces.put(at, kind);
          }
          Map<Integer, Map<String, List<String>>> rebases = new java.util.HashMap<>();
          for (int k = in.isReadable() ? count(in, 8) : 0; k > 0; k--) {
            int at = in.readInt();
            if (at < 0 || at >= n || rebases.containsKey(at)) {
              throw new MalformedFrameException("rebase at " + at + " of " + n);
            }
            Map<String, List<String>> parts = new java.util.LinkedHashMap<>();
            for (int j = count(in, 6); j > 0; j--) {
              String id = readString(in);
              int m = count(in, 2);
              List<String> keys = new ArrayList<>(m);
              for (int i = 0; i < m; i++) {
                keys.add(readString(in));
              }
              parts.put(id, keys);
            }
            rebases.put(at, parts);
          }
          // With prepares the count is there whatever the primary's version: not a sign.
          yield new Request.Replicate(epoch, source, incarnation, firstSeq, txs, prepares,
              counted && prepares.isEmpty(), pieces, rebases);
        }
        case Opcode.PREPARE -> {
          String txId = readString(in);
          String coordinator = readString(in);
          int n = count(in, 2);
          List<String> participants = new ArrayList<>(n);
          for (int i = 0; i < n; i++) {
            participants.add(readString(in));
          }
          yield new Request.Prepare(txId, coordinator, participants, decodeTx(in));
        }
        case Opcode.DECIDE -> new Request.Decide(readString(in), in.readUnsignedByte());
        case Opcode.CONFIRM -> new Request.Confirm(readString(in), in.readLong());
        case Opcode.ROUTED -> {
          long epoch = in.readLong();
          int inner = in.readUnsignedByte();
          if (inner == Opcode.ROUTED || inner == Opcode.HELLO || inner == Opcode.REPLICATE
              || inner == Opcode.DECIDE) {
            throw new MalformedFrameException("opcode " + inner + " cannot be routed");
          }
          yield new Request.Routed(epoch, decodeRequest(inner, in));
        }
        default -> throw new MalformedFrameException("unknown opcode " + opcode);
      };
      if (in.isReadable()) {
        throw new MalformedFrameException(in.readableBytes() + " stray bytes after a "
            + r.getClass().getSimpleName() + " request");
      }
      return r;
    } catch (IndexOutOfBoundsException | IllegalArgumentException e) {
      throw new MalformedFrameException("malformed request (opcode " + opcode + "): "
          + e.getMessage());
    }
  }

  private static ByteBuf encodeTx(TxRequest tx, ByteBufAllocator alloc) {
    int dataBytes = 0;
    for (TxOp op : tx.ops()) {
      ByteBuffer d = data(op);
      if (d != null && !(d.isDirect() && d.remaining() >= ZERO_COPY_BYTES)) {
        dataBytes += d.remaining();
      }
    }
    CompositeByteBuf frame = alloc.compositeBuffer(Integer.MAX_VALUE);
    ByteBuf b = alloc.buffer(64 + dataBytes);
    b.writeInt(tx.reads().size());
    for (ReadCheck r : tx.reads()) {
      writeString(b, r.key()).writeLong(r.version());
    }
    b.writeInt(tx.ops().size());
    for (TxOp op : tx.ops()) {
      if (op instanceof TxOp.Create c) {
        writeString(b.writeByte(OP_CREATE), c.key());
      } else if (op instanceof TxOp.Put p) {
        writeString(b.writeByte(OP_PUT), p.key()).writeBoolean(p.exclusive());
      } else if (op instanceof TxOp.Write w) {
        writeString(b.writeByte(OP_WRITE), w.key()).writeLong(w.offset());
      } else if (op instanceof TxOp.Append a) {
        writeString(b.writeByte(OP_APPEND), a.key());
      } else if (op instanceof TxOp.Truncate t) {
        writeString(b.writeByte(OP_TRUNCATE), t.key()).writeLong(t.size());
      } else if (op instanceof TxOp.Delete d) {
        writeString(b.writeByte(OP_DELETE), d.key()).writeBoolean(d.mustExist());
      } else if (op instanceof TxOp.Add a) {
        writeString(b.writeByte(OP_ADD), a.key()).writeLong(a.offset()).writeLong(a.delta());
      } else if (op instanceof TxOp.Cas c) {
        writeString(b.writeByte(OP_CAS), c.key()).writeLong(c.offset()).writeLong(c.expect())
            .writeLong(c.update());
      }
      ByteBuffer data = data(op);
      if (data != null) {
        b.writeInt(data.remaining());
        if (data.isDirect() && data.remaining() >= ZERO_COPY_BYTES) {
          frame.addComponent(true, b);
          frame.addComponent(true, Unpooled.wrappedBuffer(data.duplicate()));
          b = alloc.buffer(256);
        } else {
          b.writeBytes(data.duplicate());
        }
      }
    }
    if (frame.numComponents() == 0) {
      frame.release();
      return b;
    }
    frame.addComponent(true, b);
    return frame;
  }

  /** Bytes of a commit's payload before its read checks and ops: their two counts. */
  public static final int TX_HEADER_BYTES = 2 * Integer.BYTES;

  /** What routing a request under an epoch adds to its payload: the epoch and its opcode. */
  public static final int ROUTED_HEADER_BYTES = Long.BYTES + 1;

  /**
   * What a prepare adds to a commit's payload, at most, for a transaction id of up to 64
   * bytes and {@code participants} member ids of up to {@code longestId} bytes each: the
   * id, the coordinator's id, and the participants' ids.
   */
  public static int prepareHeaderBytes(int participants, int longestId) {
    return 2 + 64 + 2 + longestId + Integer.BYTES + participants * (2 + longestId);
  }

  /** Bytes one read check takes in a commit's payload, as {@link #encodeTx} writes it. */
  public static int encodedBytes(ReadCheck r) {
    return stringBytes(r.key()) + Long.BYTES;
  }

  /** Bytes one op takes in a commit's payload, as {@link #encodeTx} writes it. */
  public static int encodedBytes(TxOp op) {
    int fields = 0; // create, append: the key only
    if (op instanceof TxOp.Put || op instanceof TxOp.Delete) {
      fields = 1;
    } else if (op instanceof TxOp.Write || op instanceof TxOp.Truncate) {
      fields = Long.BYTES;
    } else if (op instanceof TxOp.Add) {
      fields = 2 * Long.BYTES;
    } else if (op instanceof TxOp.Cas) {
      fields = 3 * Long.BYTES;
    }
    ByteBuffer data = data(op);
    return 1 + stringBytes(op.key()) + fields
        + (data == null ? 0 : Integer.BYTES + data.remaining());
  }

  private static int stringBytes(String s) {
    return Short.BYTES + s.getBytes(StandardCharsets.UTF_8).length;
  }

  private static ByteBuffer data(TxOp op) {
    if (op instanceof TxOp.Put p) {
      return p.data();
    } else if (op instanceof TxOp.Write w) {
      return w.data();
    } else if (op instanceof TxOp.Append a) {
      return a.data();
    }
    return null;
  }

  /** Decodes a transaction; its data buffers are views of {@code in}, valid while it is. */
  private static TxRequest decodeTx(ByteBuf in) throws MalformedFrameException {
    int nReads = count(in, 10);
    List<ReadCheck> reads = new ArrayList<>(nReads);
    for (int i = 0; i < nReads; i++) {
      reads.add(new ReadCheck(readString(in), in.readLong()));
    }
    int nOps = count(in, 3);
    List<TxOp> ops = new ArrayList<>(nOps);
    for (int i = 0; i < nOps; i++) {
      int type = in.readUnsignedByte();
      String key = readString(in);
      ops.add(switch (type) {
        case OP_CREATE -> new TxOp.Create(key);
        case OP_PUT -> {
          boolean exclusive = in.readBoolean();
          yield new TxOp.Put(key, readData(in), exclusive);
        }
        case OP_WRITE -> {
          long offset = in.readLong();
          yield new TxOp.Write(key, offset, readData(in));
        }
        case OP_APPEND -> new TxOp.Append(key, readData(in));
        case OP_TRUNCATE -> new TxOp.Truncate(key, in.readLong());
        case OP_DELETE -> new TxOp.Delete(key, in.readBoolean());
        case OP_ADD -> new TxOp.Add(key, in.readLong(), in.readLong());
        case OP_CAS -> new TxOp.Cas(key, in.readLong(), in.readLong(), in.readLong());
        default -> throw new MalformedFrameException("unknown transaction op " + type);
      });
    }
    return new TxRequest(reads, ops);
  }

  private static ByteBuffer readData(ByteBuf in) throws MalformedFrameException {
    int n = in.readInt();
    if (n < 0 || n > in.readableBytes()) {
      throw new MalformedFrameException("data of " + n + " bytes in a frame with "
          + in.readableBytes() + " left");
    }
    ByteBuffer view = in.nioBuffer(in.readerIndex(), n);
    in.skipBytes(n);
    return view;
  }

  /** A count of items each at least {@code minBytes} long, checked against what is left. */
  private static int count(ByteBuf in, int minBytes) throws MalformedFrameException {
    int n = in.readInt();
    if (n < 0 || (long) n * minBytes > in.readableBytes()) {
      throw new MalformedFrameException("count " + n + " cannot fit in "
          + in.readableBytes() + " bytes");
    }
    return n;
  }

  // ------------------------------------------------------------------ responses

  public static ByteBuf encodeStat(BlobStat s, ByteBufAllocator alloc) {
    return alloc.buffer(25).writeBoolean(s.exists()).writeLong(s.size())
        .writeLong(s.version()).writeLong(s.modifiedMillis());
  }

  public static BlobStat decodeStat(String key, ByteBuf in) {
    boolean exists = in.readBoolean();
    return new BlobStat(key, exists, in.readLong(), in.readLong(), in.readLong());
  }

  /** A read reply's header; the data follows it in the same frame. */
  public static ByteBuf encodeReadHeader(BlobStat s, ByteBufAllocator alloc) {
    return alloc.buffer(16).writeLong(s.version()).writeLong(s.size());
  }

  public static ByteBuf encodeCommit(CommitResult r, ByteBufAllocator alloc) {
    ByteBuf b = alloc.buffer(12 + 8 * r.values().length).writeLong(r.version())
        .writeInt(r.values().length);
    for (long v : r.values()) {
      b.writeLong(v);
    }
    return b;
  }

  public static CommitResult decodeCommit(ByteBuf in) throws MalformedFrameException {
    long version = in.readLong();
    long[] values = new long[count(in, 8)];
    for (int i = 0; i < values.length; i++) {
      values[i] = in.readLong();
    }
    return new CommitResult(version, values);
  }

  public static ByteBuf encodeScan(ScanResult r, ByteBufAllocator alloc) {
    ByteBuf b = alloc.buffer().writeInt(r.keys().size()).writeBoolean(!r.heads().isEmpty());
    for (int i = 0; i < r.keys().size(); i++) {
      writeString(b, r.keys().get(i));
      if (!r.heads().isEmpty()) {
        b.writeInt(r.heads().get(i).length).writeBytes(r.heads().get(i));
      }
    }
    b.writeBoolean(r.nextCursor() != null);
    if (r.nextCursor() != null) {
      writeString(b, r.nextCursor());
    }
    return b;
  }

  public static ScanResult decodeScan(ByteBuf in) throws MalformedFrameException {
    int n = count(in, 2);
    boolean withHeads = in.readBoolean();
    List<String> keys = new ArrayList<>(n);
    List<byte[]> heads = new ArrayList<>(withHeads ? n : 0);
    for (int i = 0; i < n; i++) {
      keys.add(readString(in));
      if (withHeads) {
        int len = in.readInt();
        if (len < 0 || len > in.readableBytes()) {
          throw new MalformedFrameException("head of " + len + " bytes, " + in.readableBytes()
              + " left");
        }
        heads.add(readBytes(in, len));
      }
    }
    return new ScanResult(keys, heads, in.readBoolean() ? readString(in) : null);
  }

  /**
   * The directory, the token, then the longest grant the node makes: last, so that a client
   * that does not know it reads the first two as before, and one that does reads 0 (not
   * said) from a node that does not send it.
   */
  public static ByteBuf encodeLocalInfo(LocalIdentity id, ByteBufAllocator alloc) {
    return writeString(alloc.buffer(), id.directory().toString()).writeShort(id.token().length)
        .writeBytes(id.token()).writeInt(id.maxGrantBytes());
  }

  public static LocalIdentity decodeLocalInfo(ByteBuf in) {
    String dir = readString(in);
    byte[] token = readBytes(in, in.readUnsignedShort());
    int maxGrant = in.readableBytes() >= 4 ? in.readInt() : 0;
    return new LocalIdentity(java.nio.file.Path.of(dir), token, maxGrant);
  }

  /** A grant: id, version, size, then each piece (a file name, empty for a hole). */
  public static ByteBuf encodeGrant(LocalGrant g, ByteBufAllocator alloc) {
    ByteBuf b = alloc.buffer().writeLong(g.id()).writeLong(g.stat().version())
        .writeLong(g.stat().size()).writeInt(g.pieces().size());
    for (LocalGrant.Piece p : g.pieces()) {
      writeString(b, p.isHole() ? "" : p.file()).writeLong(p.position()).writeInt(p.length());
    }
    return b;
  }

  /** The bytes {@link #encodeGrant} writes for {@code g}, without writing them. */
  public static long grantAnswerBytes(LocalGrant g) {
    long n = 8 + 8 + 8 + 4;
    for (LocalGrant.Piece p : g.pieces()) {
      n += stringBytes(p.isHole() ? "" : p.file()) + 8 + 4;
    }
    return n;
  }

  public static LocalGrant decodeGrant(String key, ByteBuf in) throws MalformedFrameException {
    long id = in.readLong();
    long version = in.readLong();
    long size = in.readLong();
    int n = count(in, 14);
    List<LocalGrant.Piece> pieces = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String file = readString(in);
      long position = in.readLong();
      int length = in.readInt();
      if (length < 0 || position < 0 || file.contains("/") || file.equals("..")) {
        throw new MalformedFrameException("bad piece in a grant: " + file + " @" + position
            + " +" + length);
      }
      pieces.add(new LocalGrant.Piece(file.isEmpty() ? null : file, position, length));
    }
    return new LocalGrant(id, new BlobStat(key, true, size, version, 0), pieces);
  }

  /**
   * A ring: epoch u64, vnodes u16, replication u8, members u16, each host and port u16;
   * then, only if some member is not UP, a count u16 of such members, each its index u16
   * and state u8 (a ring is always last in its frame, so a ring with every member UP
   * encodes as before failover existed).
   */
  public static ByteBuf encodeRing(Ring ring, ByteBuf b) {
    b.writeLong(ring.epoch()).writeShort(ring.vnodes()).writeByte(ring.replication())
        .writeShort(ring.members().size());
    for (Member m : ring.members()) {
      writeString(b, m.host()).writeShort(m.port());
    }
    if (!ring.states().isEmpty()) {
      b.writeShort(ring.states().size());
      for (java.util.Map.Entry<Member, Ring.State> e : ring.states().entrySet()) {
        b.writeShort(ring.members().indexOf(e.getKey())).writeByte(e.getValue().ordinal());
      }
    }
    return b;
  }

  /** @throws IllegalArgumentException (or an index error) for a malformed or bad ring */
  public static Ring decodeRing(ByteBuf in) {
    long epoch = in.readLong();
    int vnodes = in.readUnsignedShort();
    int replication = in.readUnsignedByte();
    int n = in.readUnsignedShort();
    List<Member> members = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      members.add(new Member(readString(in), in.readUnsignedShort()));
    }
    java.util.Map<Member, Ring.State> states = new java.util.HashMap<>();
    if (in.readableBytes() >= 2) {
      int k = in.readUnsignedShort();
      for (int i = 0; i < k; i++) {
        states.put(members.get(in.readUnsignedShort()),
            Ring.State.values()[in.readUnsignedByte()]);
      }
    }
    return new Ring(epoch, members, vnodes, replication, states);
  }

  /** The first frame on a connection: the nonce to prove the secret against. */
  public static ByteBuf encodeChallenge(byte[] nonce, boolean authRequired,
      ByteBufAllocator alloc) {
    return alloc.buffer().writeBoolean(authRequired).writeShort(nonce.length)
        .writeBytes(nonce);
  }

  public record Challenge(boolean authRequired, byte[] nonce) {}

  /** The answer to a HELLO: the server's proof of the secret, empty if it has none. */
  public static ByteBuf encodeHelloAnswer(byte[] proof, ByteBufAllocator alloc) {
    return alloc.buffer(2 + proof.length).writeShort(proof.length).writeBytes(proof);
  }

  public static byte[] decodeHelloAnswer(ByteBuf in) {
    return in.readableBytes() < 2 ? new byte[0] : readBytes(in, in.readUnsignedShort());
  }

  public static Challenge decodeChallenge(ByteBuf in) {
    boolean required = in.readBoolean();
    return new Challenge(required, readBytes(in, in.readUnsignedShort()));
  }

  /** An error reply; {@code detail} carries a number some codes need (CAS: the value). */
  public static ByteBuf encodeError(ErrorCode code, String message, long detail,
      ByteBufAllocator alloc) {
    String m = message == null ? code.name() : message;
    if (m.length() > MAX_MESSAGE_CHARS) {
      m = m.substring(0, MAX_MESSAGE_CHARS) + "...";
    }
    return writeString(alloc.buffer().writeShort(code.wire), m).writeLong(detail);
  }

  public record ErrorReply(ErrorCode code, String message, long detail) {}

  public static ErrorReply decodeError(ByteBuf in) {
    return new ErrorReply(ErrorCode.ofWire(in.readUnsignedShort()), readString(in),
        in.readLong());
  }

  // ------------------------------------------------------------------ primitives

  private static ByteBuf writeString(ByteBuf b, String s) {
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    if (bytes.length > 0xffff) {
      throw new IllegalArgumentException("string of " + bytes.length + " bytes is too long");
    }
    return b.writeShort(bytes.length).writeBytes(bytes);
  }

  private static String readString(ByteBuf in) {
    int n = in.readUnsignedShort();
    if (n > in.readableBytes()) {
      throw new IndexOutOfBoundsException("string of " + n + " bytes, " + in.readableBytes()
          + " left");
    }
    String s = in.toString(in.readerIndex(), n, StandardCharsets.UTF_8);
    in.skipBytes(n);
    return s;
  }

  private static byte[] readBytes(ByteBuf in, int n) {
    byte[] b = new byte[n];
    in.readBytes(b);
    return b;
  }
}

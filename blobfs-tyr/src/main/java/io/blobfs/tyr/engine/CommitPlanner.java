package io.blobfs.tyr.engine;

import io.blobfs.tyr.api.CasFailedException;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Turns the logical ops of one record (a transaction, or a batch of moved bytes) into
 * logged physical ops and the new states they make. One planner per record.
 *
 * <p><b>Locks.</b> It takes none: it is used only by the thread holding the engine's commit
 * lock, between {@link WriteAheadLog#begin} and {@link WriteAheadLog#finish} (or
 * {@code abort}), and that lock is what makes its reads of the newest states and its
 * appends to the log one consistent step. Its bytes reads take no segment lock either:
 * what it reads is named by a visible or staged state, which no compaction deletes.
 */
final class CommitPlanner {
  /** What planning sees of the engine; called under the commit lock. */
  interface States {
    /** The newest state a commit must see: staged (not yet durable) over visible. */
    BlobState latest(String key);

    /** Fills {@code dst} from {@code offset} of a state's bytes. */
    void read(BlobState s, long offset, ByteBuffer dst) throws IOException;
  }

  /** What one record does, planned under the commit lock. */
  @FunctionalInterface
  interface Body {
    void plan(CommitPlanner plan) throws IOException;
  }

  private final EngineConfig config;
  private final WriteAheadLog log;
  private final States states;
  private final long version;
  private final long now;
  private final List<LogOp> ops = new ArrayList<>();
  private final Map<String, BlobState> work = new LinkedHashMap<>();
  /** Chunks this record wrote, by blob: candidates for defragmenting. */
  private final Map<String, Set<Integer>> touched = new LinkedHashMap<>();
  private final long[] values;

  CommitPlanner(EngineConfig config, WriteAheadLog log, States states, long version, long now,
      int opCount) {
    this.config = config;
    this.log = log;
    this.states = states;
    this.version = version;
    this.now = now;
    this.values = new long[opCount];
  }

  long version() {
    return version;
  }

  /** The physical ops logged so far; none means the record changes nothing. */
  List<LogOp> ops() {
    return ops;
  }

  /** The new state of every blob the record changes (null: deleted). */
  Map<String, BlobState> changes() {
    return work;
  }

  /** What each transaction op returns (an append's offset, an add's new value, ...). */
  long[] values() {
    return values;
  }

  /** The one place a logged op changes a blob: used by commits and by recovery alike. */
  static BlobState apply(BlobState current, LogOp op, long segment, long recordStart,
      long version, long now, int chunkBytes) {
    BlobState base = current == null
        ? BlobState.fresh(op.key(), version, now, chunkBytes) : current;
    return switch (op.type()) {
      case LogOp.RESET -> BlobState.fresh(op.key(), version, now, chunkBytes);
      case LogOp.WRITE -> base.withWrite(op.a(), Math.toIntExact(op.b()), segment,
          recordStart + op.dataPos(), version, now);
      case LogOp.RELOCATE -> base.withWrite(op.a(), Math.toIntExact(op.b()), segment,
          recordStart + op.dataPos(), base.version, base.modifiedMillis);
      case LogOp.SET_SIZE -> base.withSize(op.a(), version, now);
      case LogOp.DELETE -> null;
      default -> throw new IllegalStateException("log op " + op.type());
    };
  }

  /**
   * Refuses a request that no state could make valid, before the commit lock is taken.
   */
  static void checkShape(TxRequest tx, EngineConfig config) throws TyrException {
    if (tx.ops().isEmpty() && tx.reads().isEmpty()) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "empty transaction");
    }
    for (ReadCheck r : tx.reads()) {
      checkKey(r.key(), config);
    }
    for (TxOp op : tx.ops()) {
      checkKey(op.key(), config);
    }
  }

  private static void checkKey(String key, EngineConfig config) throws TyrException {
    if (key.isEmpty()) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "empty key");
    }
    int bytes = key.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > config.maxKeyBytes()) {
      throw new TyrException(ErrorCode.TOO_LARGE, "key of " + bytes + " bytes is over the "
          + config.maxKeyBytes() + "-byte limit: " + key.substring(0, Math.min(40, key.length()))
          + "...");
    }
  }

  BlobState current(String key) {
    return work.containsKey(key) ? work.get(key) : states.latest(key);
  }

  /** Plans op {@code index} of the transaction, recording what it returns. */
  void plan(int index, TxOp op) throws IOException {
    values[index] = plan(op);
  }

  private long plan(TxOp op) throws IOException {
    String key = op.key();
    BlobState s = current(key);
    if (op instanceof TxOp.Create c) {
      if (s != null) {
        throw new TyrException(ErrorCode.EXISTS, "blob exists: " + key);
      }
      emit(LogOp.reset(key), null);
    } else if (op instanceof TxOp.Put p) {
      if (p.exclusive() && s != null) {
        throw new TyrException(ErrorCode.EXISTS, "blob exists: " + key);
      }
      checkSize(key, p.data().remaining());
      emit(LogOp.reset(key), null);
      write(key, 0, p.data());
    } else if (op instanceof TxOp.Write w) {
      checkRange(key, w.offset(), w.data().remaining());
      if (s == null) {
        emit(LogOp.reset(key), null);
      }
      write(key, w.offset(), w.data());
    } else if (op instanceof TxOp.Append a) {
      long at = s == null ? 0 : s.size;
      checkRange(key, at, a.data().remaining());
      if (s == null) {
        emit(LogOp.reset(key), null);
      }
      write(key, at, a.data());
      return at;
    } else if (op instanceof TxOp.Truncate t) {
      if (s == null) {
        throw new TyrException(ErrorCode.NOT_FOUND, "no blob " + key);
      }
      checkSize(key, t.size());
      emit(LogOp.setSize(key, t.size()), null);
    } else if (op instanceof TxOp.Delete d) {
      if (s == null) {
        if (d.mustExist()) {
          throw new TyrException(ErrorCode.NOT_FOUND, "no blob " + key);
        }
        return 0;
      }
      emit(LogOp.delete(key), null);
      return 1;
    } else if (op instanceof TxOp.Add a) {
      checkRange(key, a.offset(), 8);
      long value = readLong(s, key, a.offset()) + a.delta();
      write(key, a.offset(), ByteBuffer.allocate(8).putLong(0, value));
      return value;
    } else if (op instanceof TxOp.Cas c) {
      checkRange(key, c.offset(), 8);
      long value = readLong(s, key, c.offset());
      if (value != c.expect()) {
        throw new CasFailedException(key, c.offset(), c.expect(), value);
      }
      write(key, c.offset(), ByteBuffer.allocate(8).putLong(0, c.update()));
    }
    return 0;
  }

  private long readLong(BlobState s, String key, long offset) throws IOException {
    if (s == null) {
      throw new TyrException(ErrorCode.NOT_FOUND, "no blob " + key);
    }
    if (offset > s.size - 8) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "no 64-bit integer at offset " + offset
          + " of blob " + key + " (" + s.size + " bytes)");
    }
    ByteBuffer b = ByteBuffer.allocate(8);
    states.read(s, offset, b);
    return b.getLong(0);
  }

  private void checkSize(String key, long size) throws TyrException {
    checkRange(key, size, 0);
  }

  /** {@code offset + length} within the blob limit, checked without overflowing. */
  private void checkRange(String key, long offset, long length) throws TyrException {
    if (offset < 0 || length < 0 || offset > config.maxBlobBytes() - length) {
      throw new TyrException(ErrorCode.TOO_LARGE, "blob " + key + " would reach byte "
          + offset + " + " + length + ", over the " + config.maxBlobBytes() + "-byte limit");
    }
  }

  private void write(String key, long offset, ByteBuffer data) throws IOException {
    if (!data.hasRemaining()) {
      return;
    }
    int length = data.remaining();
    emit(LogOp.write(key, offset, length, 0), data);
    BlobState s = work.get(key);
    Set<Integer> chunks = touched.computeIfAbsent(key, k -> new TreeSet<>());
    for (int i = s.chunkIndex(offset); i <= s.chunkIndex(offset + length - 1); i++) {
      chunks.add(i);
    }
  }

  /**
   * Rewrites as one extent each chunk this transaction left split into too many (by
   * small writes): once per chunk per transaction, however many writes touched it.
   */
  void defragmentTouched() throws IOException {
    for (Map.Entry<String, Set<Integer>> e : touched.entrySet()) {
      for (int i : e.getValue()) {
        BlobState s = work.get(e.getKey());
        if (s == null || i >= s.chunkCount()
            || s.chunk(i).extentCount() <= config.maxExtentsPerChunk()) {
          continue;
        }
        long start = (long) i * s.chunkBytes();
        ByteBuffer whole = ByteBuffer.allocate((int) Math.min(s.chunkBytes(), s.size - start));
        states.read(s, start, whole);
        whole.flip();
        emit(LogOp.write(e.getKey(), start, whole.remaining(), 0), whole);
      }
    }
  }

  /** Moves bytes a blob already holds to the head of the log; the blob keeps its version. */
  void relocate(String key, long offset, ByteBuffer data) throws IOException {
    emit(LogOp.relocate(key, offset, data.remaining(), 0), data);
  }

  private void emit(LogOp op, ByteBuffer data) throws IOException {
    LogOp logged = op;
    if (data != null) {
      long at = log.appendData(data);
      logged = new LogOp(op.type(), op.key(), op.a(), op.b(), at - log.recordStart());
    }
    ops.add(logged);
    work.put(op.key(), apply(current(op.key()), logged, log.segment(), log.recordStart(),
        version, now, config.chunkBytes()));
  }
}

package io.blobfs.tyr.client;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.ReadResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An optimistic transaction: reads go to the server's committed versions and are recorded
 * in the read set; writes are buffered here and sent at {@link #commit}, where the server
 * validates the read set and applies every op or none. Reads do not see this
 * transaction's own buffered writes. Not thread-safe; use once.
 */
public final class TyrTransaction {
  private final TyrClient client;
  private final Map<String, Long> readSet = new LinkedHashMap<>();
  private final List<TxOp> ops = new ArrayList<>();
  private boolean done;

  TyrTransaction(TyrClient client) {
    this.client = client;
  }

  public BlobStat stat(String key) throws IOException {
    BlobStat s = TyrClient.await(client.stat(key));
    record(key, s.version());
    return s;
  }

  /** Reads a range of one committed version; a missing blob is NOT_FOUND. */
  public ByteBuffer read(String key, long offset, int length) throws IOException {
    ReadResult r;
    try {
      r = TyrClient.await(client.read(key, offset, length));
    } catch (TyrException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        record(key, 0); // "absent" is a reading too: validated at commit like any other
      }
      throw e;
    }
    record(key, r.version());
    return r.data();
  }

  /** The 64-bit big-endian integer at {@code offset}. */
  public long readLong(String key, long offset) throws IOException {
    ByteBuffer b = read(key, offset, 8);
    if (b.remaining() < 8) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "no 64-bit integer at " + offset + " of "
          + key);
    }
    return b.getLong(b.position());
  }

  /** Two reads of one blob must see one version, or the transaction cannot commit. */
  private void record(String key, long version) throws TyrException {
    Long before = readSet.putIfAbsent(key, version);
    if (before != null && before != version) {
      throw new TyrException(ErrorCode.CONFLICT, "blob " + key + " changed from version "
          + before + " to " + version + " during the transaction; retry");
    }
  }

  public TyrTransaction op(TxOp op) {
    if (done) {
      throw new IllegalStateException("transaction already committed");
    }
    ops.add(op);
    return this;
  }

  public TyrTransaction write(String key, long offset, ByteBuffer data) {
    return op(new TxOp.Write(key, offset, data));
  }

  public TyrTransaction put(String key, ByteBuffer data) {
    return op(new TxOp.Put(key, data, false));
  }

  public TyrTransaction delete(String key) {
    return op(new TxOp.Delete(key, false));
  }

  public TyrTransaction add(String key, long offset, long delta) {
    return op(new TxOp.Add(key, offset, delta));
  }

  /** Sends the read set and ops; CONFLICT (retryable) if anything read has changed. */
  public CommitResult commit() throws IOException {
    done = true;
    List<ReadCheck> reads = new ArrayList<>(readSet.size());
    readSet.forEach((k, v) -> reads.add(new ReadCheck(k, v)));
    if (ops.isEmpty() && reads.isEmpty()) {
      return new CommitResult(0, new long[0]);
    }
    return TyrClient.await(client.commit(new TxRequest(reads, ops)));
  }
}

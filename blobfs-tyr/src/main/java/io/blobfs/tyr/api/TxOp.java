package io.blobfs.tyr.api;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * One operation of a transaction. Ops are applied in order at commit, each seeing the
 * effects of the ones before it; if any fails, none is applied.
 */
public sealed interface TxOp {

  String key();

  /** Exclusive create of an empty blob: fails with EXISTS if present. */
  record Create(String key) implements TxOp {
    public Create {
      Objects.requireNonNull(key, "key");
    }
  }

  /** Whole-blob replace; with {@code exclusive} it fails with EXISTS if present. */
  record Put(String key, ByteBuffer data, boolean exclusive) implements TxOp {
    public Put {
      Objects.requireNonNull(key, "key");
      data = data.asReadOnlyBuffer();
    }
  }

  /** Writes at an offset, creating the blob if absent and zero-filling any gap. */
  record Write(String key, long offset, ByteBuffer data) implements TxOp {
    public Write {
      Objects.requireNonNull(key, "key");
      if (offset < 0) {
        throw new IllegalArgumentException("negative offset " + offset);
      }
      data = data.asReadOnlyBuffer();
    }
  }

  /** Writes at the blob's end as it is at commit, creating it if absent. */
  record Append(String key, ByteBuffer data) implements TxOp {
    public Append {
      Objects.requireNonNull(key, "key");
      data = data.asReadOnlyBuffer();
    }
  }

  /** Cuts or zero-extends an existing blob. */
  record Truncate(String key, long size) implements TxOp {
    public Truncate {
      Objects.requireNonNull(key, "key");
      if (size < 0) {
        throw new IllegalArgumentException("negative size " + size);
      }
    }
  }

  /** Deletes a blob; with {@code mustExist} an absent blob fails the transaction. */
  record Delete(String key, boolean mustExist) implements TxOp {
    public Delete {
      Objects.requireNonNull(key, "key");
    }
  }

  /**
   * Adds to the big-endian 64-bit integer at {@code offset}, on the newest committed value
   * at commit time. Needs no read validation, so concurrent counters never conflict.
   */
  record Add(String key, long offset, long delta) implements TxOp {
    public Add {
      Objects.requireNonNull(key, "key");
      if (offset < 0) {
        throw new IllegalArgumentException("negative offset " + offset);
      }
    }
  }

  /** Sets the 64-bit integer at {@code offset} to {@code update} if it is {@code expect}. */
  record Cas(String key, long offset, long expect, long update) implements TxOp {
    public Cas {
      Objects.requireNonNull(key, "key");
      if (offset < 0) {
        throw new IllegalArgumentException("negative offset " + offset);
      }
    }
  }
}

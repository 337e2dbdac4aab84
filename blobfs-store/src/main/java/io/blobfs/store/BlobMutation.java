package io.blobfs.store;

import java.nio.ByteBuffer;
import java.util.Objects;

/** One step of a {@link TransactionalBlobStore#commit transaction}. */
public sealed interface BlobMutation {

  /** {@link Delete#ifVersion} of a delete that holds whatever the blob is, or if absent. */
  long ANY_VERSION = 0;

  /** {@link Check#version} that requires the blob to be absent. */
  long ABSENT = 0;

  String key();

  /** Put a whole blob; with {@link PutMode#CREATE} the key must be absent at commit. */
  record Put(String key, ByteBuffer content, PutMode mode) implements BlobMutation {
    public Put {
      Objects.requireNonNull(key, "key");
      content = content.asReadOnlyBuffer();
      Objects.requireNonNull(mode, "mode");
    }
  }

  /**
   * Delete a blob; unless {@code ifVersion} is {@link #ANY_VERSION}, the transaction
   * aborts if the blob is not at that {@link BlobInfo#version() version} (or is gone).
   */
  record Delete(String key, long ifVersion) implements BlobMutation {
    public Delete {
      Objects.requireNonNull(key, "key");
      if (ifVersion < 0) {
        throw new IllegalArgumentException("negative version " + ifVersion);
      }
    }
  }

  /**
   * Changes nothing, but the transaction aborts unless the blob is at {@code version}, or
   * absent if {@code version} is {@link #ABSENT}: a mutation elsewhere made conditional on
   * a blob the transaction read but does not change, or a put conditional on a version
   * (a check and a put of the same key: checks are taken against the state before the
   * transaction). Otherwise a transaction names each key once.
   */
  record Check(String key, long version) implements BlobMutation {
    public Check {
      Objects.requireNonNull(key, "key");
      if (version < 0) {
        throw new IllegalArgumentException("negative version " + version);
      }
    }
  }
}

package io.blobfs.store;

import java.nio.ByteBuffer;
import java.util.Objects;

/** One step of a {@link TransactionalBlobStore#commit transaction}. */
public sealed interface BlobMutation {

  String key();

  /** Put a whole blob; with {@link PutMode#CREATE} the key must be absent at commit. */
  record Put(String key, ByteBuffer content, PutMode mode) implements BlobMutation {
    public Put {
      Objects.requireNonNull(key, "key");
      content = content.asReadOnlyBuffer();
      Objects.requireNonNull(mode, "mode");
    }
  }

  /** Delete a blob; with {@code mustExist} the transaction aborts if it is absent. */
  record Delete(String key, boolean mustExist) implements BlobMutation {
    public Delete {
      Objects.requireNonNull(key, "key");
    }
  }
}

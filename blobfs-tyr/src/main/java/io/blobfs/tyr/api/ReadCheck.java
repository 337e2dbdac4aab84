package io.blobfs.tyr.api;

import java.util.Objects;

/**
 * A read-set entry: the transaction commits only if {@code key} is still at
 * {@code version} (0: still absent).
 */
public record ReadCheck(String key, long version) {
  public ReadCheck {
    Objects.requireNonNull(key, "key");
    if (version < 0) {
      throw new IllegalArgumentException("negative version " + version);
    }
  }
}

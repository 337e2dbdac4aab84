package io.blobfs.tyr.engine;

import io.blobfs.tyr.api.LocalIdentity;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;

/** Writes the token of a node's {@link LocalIdentity} into its directory. */
final class LocalIdentities {
  private static final SecureRandom RANDOM = new SecureRandom();

  private LocalIdentities() {}

  /** Writes a fresh token (0600, replacing the last run's) and returns the identity. */
  static LocalIdentity create(Path directory) throws IOException {
    byte[] token = new byte[32];
    RANDOM.nextBytes(token);
    Path tmp = directory.resolve(LocalIdentity.FILE + ".tmp");
    Files.deleteIfExists(tmp);
    try (FileChannel ch = OwnerOnly.open(tmp, StandardOpenOption.CREATE_NEW,
        StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(token));
      ch.force(true);
    }
    Files.move(tmp, directory.resolve(LocalIdentity.FILE), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
    return new LocalIdentity(directory, token);
  }
}

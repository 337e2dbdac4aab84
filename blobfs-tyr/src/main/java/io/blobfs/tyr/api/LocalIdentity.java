package io.blobfs.tyr.api;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;

/**
 * What a node tells a client so that the client can tell whether it sees the node's files:
 * the node's directory and a random token the node wrote to {@link #FILE} in it. Same
 * host is not enough (containers share a kernel but not a file system; a path may name
 * another node's directory elsewhere), so the client checks that the file at that path
 * holds this token before it reads any segment from there.
 *
 * @param maxGrantBytes the longest range the node grants at once (its frame limit less a
 *     header), so that a client asks for no grant it would refuse; 0 if the node did not
 *     say (an older node)
 */
public record LocalIdentity(Path directory, byte[] token, int maxGrantBytes) {
  public static final String FILE = "local-read.token";

  public LocalIdentity(Path directory, byte[] token) {
    this(directory, token, 0);
  }

  public LocalIdentity withMaxGrantBytes(int n) {
    return new LocalIdentity(directory, token, n);
  }

  /** True if this process reads the same token at {@code directory/FILE}. */
  public boolean visibleHere() {
    try {
      return MessageDigest.isEqual(token, Files.readAllBytes(directory.resolve(FILE)));
    } catch (IOException | SecurityException e) {
      return false;
    }
  }
}

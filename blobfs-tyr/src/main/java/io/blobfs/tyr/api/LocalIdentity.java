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
 */
public record LocalIdentity(Path directory, byte[] token) {
  public static final String FILE = "local-read.token";

  /** True if this process reads the same token at {@code directory/FILE}. */
  public boolean visibleHere() {
    try {
      return MessageDigest.isEqual(token, Files.readAllBytes(directory.resolve(FILE)));
    } catch (IOException | SecurityException e) {
      return false;
    }
  }
}

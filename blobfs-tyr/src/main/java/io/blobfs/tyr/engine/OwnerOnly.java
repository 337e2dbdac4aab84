package io.blobfs.tyr.engine;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Creates the node's directories and files readable by its own user only (0700, 0600):
 * they hold every blob, and under a usual umask (022) any local user could read them.
 * The modes are set at creation, so there is no moment when a file is open to others.
 * On a file system without POSIX permissions they are created as the system does.
 */
final class OwnerOnly {
  private OwnerOnly() {}

  static void createDirectories(Path dir) throws IOException {
    if (posix(dir)) {
      Files.createDirectories(dir, attribute("rwx------"));
    } else {
      Files.createDirectories(dir);
    }
  }

  static FileChannel open(Path file, OpenOption... options) throws IOException {
    Set<OpenOption> opts = Set.of(options);
    return posix(file.toAbsolutePath().getParent())
        ? FileChannel.open(file, opts, attribute("rw-------")) : FileChannel.open(file, opts);
  }

  private static boolean posix(Path p) {
    return p.getFileSystem().supportedFileAttributeViews().contains("posix");
  }

  private static FileAttribute<?> attribute(String perms) {
    return PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(perms));
  }
}

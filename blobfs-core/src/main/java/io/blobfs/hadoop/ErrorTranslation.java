package io.blobfs.hadoop;

import io.blobfs.namespace.IllegalPathException;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.NotDirectoryException;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.InvalidPathException;
import org.apache.hadoop.fs.ParentNotDirectoryException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathIsNotEmptyDirectoryException;

/** Maps the namespace's java.nio.file exceptions to the types Hadoop callers expect. */
final class ErrorTranslation {
  private ErrorTranslation() {}

  static IOException translate(IOException e, Path path) {
    if (e instanceof java.nio.file.FileAlreadyExistsException f) {
      return withCause(new FileAlreadyExistsException(path + ": " + f.getReason()), e);
    }
    if (e instanceof DirectoryNotEmptyException) {
      return withCause(new PathIsNotEmptyDirectoryException(path.toString()), e);
    }
    if (e instanceof NotDirectoryException n) {
      return withCause(new ParentNotDirectoryException(n.getMessage()), e);
    }
    return e;
  }

  static InvalidPathException translate(IllegalPathException e, Path path) {
    // The raw path may hold control characters: never echo them into logs or terminals.
    String shown = IllegalPathException.printable(path.toString());
    InvalidPathException ipe = new InvalidPathException(shown, e.getMessage());
    ipe.initCause(e);
    return ipe;
  }

  private static <T extends IOException> T withCause(T t, IOException cause) {
    t.initCause(cause);
    return t;
  }
}

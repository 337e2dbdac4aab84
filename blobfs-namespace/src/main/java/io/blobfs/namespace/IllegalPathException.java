package io.blobfs.namespace;

/** A path that BlobFS cannot map to a key: rejected before anything touches the store. */
public class IllegalPathException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public IllegalPathException(String path, String why) {
    super("illegal path '" + path.replaceAll("\\p{Cntrl}", "?") + "': " + why);
  }
}

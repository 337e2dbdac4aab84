package io.blobfs.namespace;

/** A path that BlobFS cannot map to a key: rejected before anything touches the store. */
public class IllegalPathException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public IllegalPathException(String path, String why) {
    super("illegal path '" + printable(path) + "': " + why);
  }

  /**
   * {@code text} with control characters and lone surrogates as '?': a bad name must not
   * garble a terminal or a log, nor make the message itself unencodable.
   */
  public static String printable(String text) {
    return text.replaceAll("[\\p{Cntrl}\\p{Cs}]", "?");
  }
}

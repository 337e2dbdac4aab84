package io.blobfs.namespace;

/**
 * A record in a format this client knows (its magic) carrying a feature it does not (a
 * flag bit of a {@code BFS3} header no client of this version sets): written by a newer
 * client. Refused, never misread: a record decoded without a feature it uses (a stripe
 * map, say) would name the wrong data keys.
 */
public class UnsupportedRecordFormatException extends CorruptRecordException {
  private static final long serialVersionUID = 1L;

  public UnsupportedRecordFormatException(String key, String why) {
    super(key, why);
  }
}

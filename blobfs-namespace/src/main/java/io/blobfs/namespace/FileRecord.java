package io.blobfs.namespace;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The small blob stored under a name: what a file is and where its bytes live. Small
 * files carry their bytes inline, so they cost one blob, as in the paper's direct
 * mapping. Every file has a fresh id per write: it names the data blobs and serves as
 * the file's etag, which a rename keeps. Directory markers are records too, with {@link Kind#DIRECTORY}.
 *
 * <p>Layout: magic "BFS1", kind, length, mtime, stripe size, file id, inline length
 * (-1 if none), inline bytes. The header is at most {@link #MAX_HEADER} bytes, so a stat
 * reads a fixed prefix and never the inline data; a record decoded from its header alone
 * has {@code inline == null} even when {@link #isInline()}.
 *
 * <p>The records of a file rename without transactions carry its {@link Mark} and the
 * other name's record key ({@code moveKey}; magic "BFS2", then after the inline length the
 * key's length and UTF-8, the mark's byte and the move's token): the source is marked
 * {@link Mark#MOVING} ({@link Mark#REPLACING} for a rename over a file,
 * {@link MarkedReplace}), the destination created {@link Mark#INCOMING}, and the commit
 * point is the conditional rewrite of the source as {@link Mark#MOVED} ({@link Renamer}). Readers see the one name
 * that the source's mark says ({@link BlobNamespace#readRecord}). The token (64 random
 * bits per move) tells which move a mark belongs to: two renames of one file to the same
 * name (one of them fenced, slower than its lease) write records that differ only by it,
 * and each must act only on its own. Such a header may
 * exceed {@link #MAX_HEADER}: {@link #markedHeaderSize} says how much to read.
 */
public record FileRecord(Kind kind, long length, long modificationTime, long stripeSize,
    String fileId, boolean isInline, byte[] inline, Mark mark, String moveKey,
    long moveToken) {

  public enum Kind { FILE, DIRECTORY }

  /** A file rename's mark on a record; {@code moveKey} is the other name's record key. */
  public enum Mark {
    /** Not part of a rename. */
    NONE,
    /** A source being moved to {@code moveKey}, not committed: readers see it. */
    MOVING,
    /** A source whose move to {@code moveKey} committed: readers take it for gone. */
    MOVED,
    /** A destination made by a move from {@code moveKey}: seen only once that source is MOVED. */
    INCOMING,
    /**
     * A source being renamed over the file at {@code moveKey} ({@link MarkedReplace}), not
     * committed: readers see it. Not {@link #MOVING}, which a client of stage 6 or older
     * would take for a plain rename it may settle by taking the mark off, leaving two
     * names on one file once the commit has applied: this value, unknown to it, makes it
     * fail on the name instead (its record decoder refuses an unknown mark). Last, so that
     * the earlier values keep their bytes (the mark is stored as its ordinal).
     */
    REPLACING
  }

  static final int MAGIC = 0x42465331; // "BFS1"
  static final int MARKED_MAGIC = 0x42465332; // "BFS2"
  /** Header bytes after the file id. */
  static final int FIXED_HEADER = 4 + 1 + 8 + 8 + 8 + 2 + 4;
  /** Enough for every header field; the file id is at most 64 ASCII chars. */
  public static final int MAX_HEADER = 128;
  /** The largest inline threshold, so the most inline bytes a sound record holds. */
  public static final int MAX_INLINE = 16 << 20;

  public static FileRecord directory(long mtime) {
    return new FileRecord(Kind.DIRECTORY, 0, mtime, 0, "", false, null, Mark.NONE, null, 0);
  }

  public static FileRecord inline(String fileId, byte[] bytes, long mtime, long stripeSize) {
    checkId(fileId);
    return new FileRecord(Kind.FILE, bytes.length, mtime, stripeSize, fileId, true, bytes, Mark.NONE, null, 0);
  }

  public static FileRecord striped(String fileId, long length, long mtime, long stripeSize) {
    checkId(fileId);
    return new FileRecord(Kind.FILE, length, mtime, stripeSize, fileId, false, null, Mark.NONE, null, 0);
  }

  private static void checkId(String fileId) {
    if (fileId.isEmpty() || fileId.length() > 64) {
      throw new IllegalArgumentException("file id must be 1-64 chars: " + fileId);
    }
  }

  public FileRecord {
    if ((mark == Mark.NONE) != (moveKey == null)) {
      throw new IllegalArgumentException("a move's mark goes with the other name's key");
    }
  }

  /**
   * The same file with {@code m} for the move {@code token} whose other name's record is
   * {@code otherKey}.
   */
  FileRecord marked(Mark m, String otherKey, long token) {
    return new FileRecord(kind, length, modificationTime, stripeSize, fileId, isInline, inline,
        m, otherKey, token);
  }

  /** The same file without a move mark. */
  FileRecord unmarked() {
    return mark == Mark.NONE ? this : new FileRecord(kind, length, modificationTime,
        stripeSize, fileId, isInline, inline, Mark.NONE, null, 0);
  }

  /**
   * Whether this is {@code file} (the same id) carrying mark {@code m} of the move
   * {@code token} for {@code otherKey}.
   */
  boolean is(Mark m, String otherKey, String file, long token) {
    return isAnyMove(m, otherKey, file) && moveToken == token;
  }

  /**
   * Whether this is {@code file} carrying mark {@code m} for {@code otherKey}, whichever
   * move made it: for a settler, which knows the names and the file but not the token.
   */
  boolean isAnyMove(Mark m, String otherKey, String file) {
    return mark == m && otherKey.equals(moveKey) && fileId.equals(file);
  }

  /** Bytes of the encoded header: where inline data starts. */
  int headerSize() {
    return FIXED_HEADER + fileId.length()
        + (mark == Mark.NONE ? 0 : 2 + moveKey.getBytes(StandardCharsets.UTF_8).length + 1 + 8);
  }

  /**
   * The header size of a marked record from its first {@code n} bytes (at least
   * {@link #MAX_HEADER} or the whole record), or -1 if the record is not marked.
   */
  static int markedHeaderSize(byte[] data, int n) {
    ByteBuffer b = ByteBuffer.wrap(data, 0, n);
    if (n < FIXED_HEADER || b.getInt(0) != MARKED_MAGIC) {
      return -1;
    }
    int idLen = b.getShort(4 + 1 + 8 + 8 + 8) & 0xffff;
    int markAt = FIXED_HEADER + idLen;
    return n < markAt + 2 ? -1 : markAt + 2 + (b.getShort(markAt) & 0xffff) + 1 + 8;
  }

  /** The inline bytes were decoded (not just the header). */
  public boolean hasInlineBytes() {
    return inline != null;
  }

  /** Number of data stripes (0 for inline files and markers). */
  public long stripeCount() {
    if (isInline() || kind == Kind.DIRECTORY || length == 0) {
      return 0;
    }
    return (length + stripeSize - 1) / stripeSize;
  }

  public ByteBuffer encode() {
    try {
      ByteArrayOutputStream bytes =
          new ByteArrayOutputStream(MAX_HEADER + (inline == null ? 0 : inline.length));
      DataOutputStream out = new DataOutputStream(bytes);
      out.writeInt(mark == Mark.NONE ? MAGIC : MARKED_MAGIC);
      out.writeByte(kind.ordinal());
      out.writeLong(length);
      out.writeLong(modificationTime);
      out.writeLong(stripeSize);
      out.writeUTF(fileId);
      if (isInline() && inline == null) {
        throw new IllegalStateException("inline record without its bytes");
      }
      out.writeInt(isInline() ? inline.length : -1);
      if (mark != Mark.NONE) {
        byte[] other = moveKey.getBytes(StandardCharsets.UTF_8);
        out.writeShort(other.length);
        out.write(other);
        out.writeByte(mark.ordinal());
        out.writeLong(moveToken);
      }
      if (isInline()) {
        out.write(inline);
      }
      out.flush();
      return ByteBuffer.wrap(bytes.toByteArray());
    } catch (IOException e) {
      throw new IllegalStateException(e); // in-memory stream
    }
  }

  /**
   * Decodes a record, or just its header when {@code withInline} is false (the inline
   * bytes may then be absent from {@code data}).
   */
  public static FileRecord decode(String key, byte[] data, int length, boolean withInline)
      throws CorruptRecordException {
    try {
      DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(data, 0, length));
      int magic = in.readInt();
      if (magic != MAGIC && magic != MARKED_MAGIC) {
        throw new CorruptRecordException(key, "bad magic");
      }
      int kindOrdinal = in.readByte();
      if (kindOrdinal < 0 || kindOrdinal >= Kind.values().length) {
        throw new CorruptRecordException(key, "unknown kind " + kindOrdinal);
      }
      Kind kind = Kind.values()[kindOrdinal];
      long len = in.readLong();
      long mtime = in.readLong();
      long stripe = in.readLong();
      String id = in.readUTF();
      int inlineLen = in.readInt();
      String moveKey = null;
      Mark mark = Mark.NONE;
      long token = 0;
      if (magic == MARKED_MAGIC) {
        byte[] other = new byte[in.readUnsignedShort()];
        in.readFully(other);
        moveKey = new String(other, StandardCharsets.UTF_8);
        int m = in.readByte();
        if (m <= 0 || m >= Mark.values().length) {
          throw new CorruptRecordException(key, "unknown move mark " + m);
        }
        mark = Mark.values()[m];
        token = in.readLong();
      }
      boolean inlined = inlineLen >= 0;
      if (len < 0 || stripe <= 0 && kind == Kind.FILE
          || kind == Kind.FILE && id.isEmpty()
          || (inlined ? inlineLen != len : inlineLen != -1)) {
        throw new CorruptRecordException(key, "inconsistent header");
      }
      // Checked before the array is made: a damaged length must not cost its size in heap.
      if (inlineLen > MAX_INLINE) {
        throw new CorruptRecordException(key, "inline length " + inlineLen
            + " over the largest inline threshold " + MAX_INLINE);
      }
      byte[] inl = null;
      if (inlined && withInline) {
        if (inlineLen > in.available()) {
          throw new CorruptRecordException(key, "inline length " + inlineLen
              + " beyond the record's " + in.available() + " bytes after its header");
        }
        inl = new byte[inlineLen];
        in.readFully(inl);
      }
      return new FileRecord(kind, len, mtime, stripe, id, inlined, inl, mark, moveKey, token);
    } catch (EOFException e) {
      throw new CorruptRecordException(key, "truncated");
    } catch (CorruptRecordException e) {
      throw e;
    } catch (IOException e) {
      throw new CorruptRecordException(key, e.toString());
    }
  }
}

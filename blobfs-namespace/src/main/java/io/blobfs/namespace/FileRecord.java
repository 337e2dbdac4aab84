package io.blobfs.namespace;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

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
 * exceed {@link #MAX_HEADER}: {@link #storedHeaderSize} says how much to read.
 *
 * <p>A version that names stripes of another version's id ({@link StripeMap}, issue 16)
 * or carries deletions its commit left to do ({@link Due}) is stored as "BFS3": magic,
 * {@code u16} header length (the whole header: at most {@link #MAX_STORED_HEADER} without
 * a rename's mark, whose key may have up to {@link #MAX_MARK_KEY_BYTES} bytes),
 * {@code u8} flags ({@link #FLAG_MARKED}, {@link #FLAG_MAP}, {@link #FLAG_DUES}; any other
 * bit: {@link UnsupportedRecordFormatException}), then the fields of BFS2 (the move's
 * fields only if marked), the map ({@code u8} id count, the ids, {@code u16} run count,
 * runs of {@code u32} first stripe, {@code u32} count, {@code u8} id index), the dues
 * ({@code u16} count, each id, {@code u64} stripe count, {@code u8} scope), the inline
 * bytes. Every other record keeps its BFS1/BFS2 bytes, so a client that predates BFS3
 * reads every file not written through a takeover, and refuses ("bad magic") the others
 * rather than misread them. A BFS3 record is decoded with its whole header or not at all:
 * decoded without its map, it would name {@code d/<own id>/s} for every stripe, so a
 * reader would read missing keys and a delete would miss the borrowed ones. Written by
 * a version that takes stripes over ({@link FileWriter#takeOver}), and, carrying dues
 * only, by a commit without transactions (or a plain overwrite of a mapped record) until
 * its cleanup is done ({@link TakeoverCommit}).
 */
public record FileRecord(Kind kind, long length, long modificationTime, long stripeSize,
    String fileId, boolean isInline, byte[] inline, Mark mark, String moveKey,
    long moveToken, StripeMap map, List<Due> dues) {

  /**
   * A deletion a version's own commit left to do (DESIGN §2.3): the keys
   * {@code d/fileId/0 .. stripeCount-1} of a version it replaced, all of them ({@link
   * Scope#ALL}) or those its record's map does not name ({@link Scope#UNNAMED}).
   */
  public record Due(String fileId, long stripeCount, Scope scope) {
    public enum Scope { ALL, UNNAMED }

    /** The most stripes a due may list: a file of more than 2^32 stripes is never made. */
    public static final long MAX_STRIPES = 0xffffffffL;

    public Due {
      // Bounded like a map's runs (u32): deleteData visits every key of a due, so an
      // unbounded count in a damaged or hostile record would never end (review MF2).
      if (StripeMap.badId(fileId) || stripeCount < 0 || stripeCount > MAX_STRIPES) {
        throw new IllegalArgumentException("bad cleanup due: " + fileId + " " + stripeCount
            + " stripes (an id of 1-64 bytes without '/', 0-" + MAX_STRIPES + " stripes)");
      }
    }
  }

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
  static final int MAPPED_MAGIC = 0x42465333; // "BFS3"
  static final int FLAG_MARKED = 1;
  static final int FLAG_MAP = 2;
  static final int FLAG_DUES = 4;
  private static final int KNOWN_FLAGS = FLAG_MARKED | FLAG_MAP | FLAG_DUES;
  /** A BFS3 header's bytes before the BFS2 fields: magic, header length, flags. */
  private static final int BFS3_PREFIX = 4 + 2 + 1;
  /**
   * The longest header a BFS3 record may have without a rename's mark (its map and dues
   * included). The mark is not counted (review MF1): a rename adds it to any record, so a
   * record that decodes can always be marked. A marked header is longer by
   * {@code 2 + key bytes + 1 + 8}, and its stored length is a {@code u16}: so the other
   * name's key may have up to {@link #MAX_MARK_KEY_BYTES} bytes.
   */
  public static final int MAX_STORED_HEADER = 4096;
  /** The longest other-name key a rename's mark on a BFS3 record may carry. */
  public static final int MAX_MARK_KEY_BYTES = 0xffff - MAX_STORED_HEADER - (2 + 1 + 8);
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
    map = map == null ? StripeMap.NONE : map;
    dues = dues == null ? List.of() : List.copyOf(dues);
    for (int i = 0; i < dues.size(); i++) {
      // What a due's deletion must never touch: the record's own keys, or a directory's.
      String due = dues.get(i).fileId();
      if (kind != Kind.FILE || due.equals(fileId)) {
        throw new IllegalArgumentException(kind != Kind.FILE ? "a cleanup due on a directory"
            : "a cleanup due on the record's own id " + fileId);
      }
      for (int j = 0; j < i; j++) {
        if (dues.get(j).fileId().equals(due)) {
          throw new IllegalArgumentException("cleanup due on " + due + " listed twice");
        }
      }
    }
    if (!map.isEmpty()) {
      if (kind != Kind.FILE || isInline) {
        throw new IllegalArgumentException("a stripe map on an inline file or a directory");
      }
      map.check(fileId, stripeCount(kind, isInline, length, stripeSize));
    }
  }

  /** A record without stripe map or dues: every stripe its own, as before BFS3. */
  public FileRecord(Kind kind, long length, long modificationTime, long stripeSize,
      String fileId, boolean isInline, byte[] inline, Mark mark, String moveKey,
      long moveToken) {
    this(kind, length, modificationTime, stripeSize, fileId, isInline, inline, mark, moveKey,
        moveToken, StripeMap.NONE, List.of());
  }

  /**
   * The same version with {@code map} and {@code dues}: how a takeover's record is made.
   * Refused past {@link #MAX_STORED_HEADER} (not counting a mark: see there).
   */
  public FileRecord withStripes(StripeMap m, List<Due> d) throws RecordTooLargeException {
    FileRecord r = new FileRecord(kind, length, modificationTime, stripeSize, fileId, isInline,
        inline, mark, moveKey, moveToken, m, d);
    r.checkSize();
    return r;
  }

  /**
   * Refuses, before anything is written, a rename whose marks this record cannot carry:
   * the mark for {@code to} on the source and the one for {@code from} on the destination.
   * Only a BFS3 record can fail, and only with a key over {@link #MAX_MARK_KEY_BYTES}.
   */
  void checkMarkable(String from, String to) throws RecordTooLargeException {
    marked(Mark.MOVING, to, 0).checkSize();
    marked(Mark.INCOMING, from, 0).checkSize();
  }

  /** The header limits of BFS3 (a BFS1/BFS2 header is bounded by its fields). */
  private void checkSize() throws RecordTooLargeException {
    String over = oversize();
    if (over != null) {
      throw new RecordTooLargeException("file " + fileId + ": " + over);
    }
  }

  /** Why this record's header is over the limits, or null. */
  private String oversize() {
    if (!isMapped()) {
      return null;
    }
    int header = encodeMapped(false).length;
    int unmarked = header - markBytes();
    if (unmarked > MAX_STORED_HEADER) {
      return "a header of " + unmarked + " bytes with its stripe map and cleanup dues, over "
          + MAX_STORED_HEADER;
    }
    // Whatever the map's size (so the rule does not depend on it): fits the u16 length.
    return markBytes() - 11 > MAX_MARK_KEY_BYTES ? "a rename's mark for a key of "
        + (markBytes() - 11) + " bytes, over " + MAX_MARK_KEY_BYTES
        + " with a stripe map or cleanup dues" : null;
  }

  /** The header bytes of a rename's mark: the other key's length and bytes, mark, token. */
  private int markBytes() {
    return mark == Mark.NONE ? 0 : 2 + moveKey.getBytes(StandardCharsets.UTF_8).length + 1 + 8;
  }

  /** Stored as BFS3: it has a map or dues. */
  boolean isMapped() {
    return !map.isEmpty() || !dues.isEmpty();
  }

  /**
   * The key of stripe {@code s}: the borrowed id's if the map names one, else the own
   * id's. Every key of a stored record's data is built here, never from {@code fileId}.
   */
  public String stripeKey(KeyLayout layout, long s) {
    String borrowed = map.idOf(s);
    return layout.dataKey(borrowed == null ? fileId : borrowed, s);
  }

  /**
   * The same file with {@code m} for the move {@code token} whose other name's record is
   * {@code otherKey}.
   */
  FileRecord marked(Mark m, String otherKey, long token) {
    // The map and dues go with the record: a rename's copy names the same keys. The mark
    // is outside the 4 KiB limit, so this fits (the movers' checkMarkable refused longer keys).
    return new FileRecord(kind, length, modificationTime, stripeSize, fileId, isInline, inline,
        m, otherKey, token, map, dues);
  }

  /** The same file without a move mark. */
  FileRecord unmarked() {
    return mark == Mark.NONE ? this : new FileRecord(kind, length, modificationTime,
        stripeSize, fileId, isInline, inline, Mark.NONE, null, 0, map, dues);
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
    if (isMapped()) {
      return encodeMapped(false).length;
    }
    return FIXED_HEADER + fileId.length()
        + (mark == Mark.NONE ? 0 : 2 + moveKey.getBytes(StandardCharsets.UTF_8).length + 1 + 8);
  }

  /**
   * The header size of a record from its first {@code n} bytes (at least
   * {@link #MAX_HEADER} or the whole record): a BFS3 record's stored header length, a
   * marked (BFS2) record's computed one; -1 for a plain record (its header fits
   * {@link #MAX_HEADER}) or if the bytes do not say.
   */
  static int storedHeaderSize(byte[] data, int n) {
    ByteBuffer b = ByteBuffer.wrap(data, 0, n);
    if (n >= BFS3_PREFIX && b.getInt(0) == MAPPED_MAGIC) {
      return b.getShort(4) & 0xffff;
    }
    if (n < FIXED_HEADER || b.getInt(0) != MARKED_MAGIC) {
      return -1;
    }
    int idLen = b.getShort(4 + 1 + 8 + 8 + 8) & 0xffff;
    int markAt = FIXED_HEADER + idLen;
    return n < markAt + 2 ? -1 : markAt + 2 + (b.getShort(markAt) & 0xffff) + 1 + 8;
  }

  /** Whether the record whose first {@code n} bytes these are carries a rename's mark. */
  static boolean isMarked(byte[] data, int n) {
    ByteBuffer b = ByteBuffer.wrap(data, 0, n);
    return n >= 4 && b.getInt(0) == MARKED_MAGIC
        || n >= BFS3_PREFIX && b.getInt(0) == MAPPED_MAGIC && (b.get(6) & FLAG_MARKED) != 0;
  }

  /** The inline bytes were decoded (not just the header). */
  public boolean hasInlineBytes() {
    return inline != null;
  }

  /** Number of data stripes (0 for inline files and markers). */
  public long stripeCount() {
    return stripeCount(kind, isInline, length, stripeSize);
  }

  private static long stripeCount(Kind kind, boolean isInline, long length, long stripeSize) {
    if (isInline || kind == Kind.DIRECTORY || length == 0) {
      return 0;
    }
    return (length + stripeSize - 1) / stripeSize;
  }

  public ByteBuffer encode() {
    if (isMapped()) {
      String over = oversize();
      if (over != null) {
        // withStripes, checkMarkable and decode refuse such records (typed) before here.
        throw new IllegalStateException("file " + fileId + ": " + over);
      }
      return ByteBuffer.wrap(encodeMapped(true));
    }
    try {
      ByteArrayOutputStream bytes =
          new ByteArrayOutputStream(MAX_HEADER + (inline == null ? 0 : inline.length));
      DataOutputStream out = new DataOutputStream(bytes);
      if (isInline() && inline == null) {
        throw new IllegalStateException("inline record without its bytes");
      }
      out.writeInt(mark == Mark.NONE ? MAGIC : MARKED_MAGIC);
      writeFields(out);
      if (isInline()) {
        out.write(inline);
      }
      out.flush();
      return ByteBuffer.wrap(bytes.toByteArray());
    } catch (IOException e) {
      throw new IllegalStateException(e); // in-memory stream
    }
  }

  /** The fields of BFS2 after its magic (the move's only if marked): BFS3 has them too. */
  private void writeFields(DataOutputStream out) throws IOException {
    out.writeByte(kind.ordinal());
    out.writeLong(length);
    out.writeLong(modificationTime);
    out.writeLong(stripeSize);
    out.writeUTF(fileId);
    // A header decoded alone has no inline bytes: its length is theirs (decode checks).
    out.writeInt(!isInline() ? -1 : inline != null ? inline.length : (int) length);
    if (mark != Mark.NONE) {
      byte[] other = moveKey.getBytes(StandardCharsets.UTF_8);
      out.writeShort(other.length);
      out.write(other);
      out.writeByte(mark.ordinal());
      out.writeLong(moveToken);
    }
  }

  /** The BFS3 bytes of this record: its header, and its inline bytes if {@code whole}. */
  private byte[] encodeMapped(boolean whole) {
    if (whole && isInline() && inline == null) {
      throw new IllegalStateException("inline record without its bytes");
    }
    try {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream(MAX_HEADER);
      DataOutputStream out = new DataOutputStream(bytes);
      out.writeInt(MAPPED_MAGIC);
      out.writeShort(0); // the header length, set below
      out.writeByte((mark == Mark.NONE ? 0 : FLAG_MARKED) | (map.isEmpty() ? 0 : FLAG_MAP)
          | (dues.isEmpty() ? 0 : FLAG_DUES));
      writeFields(out);
      if (!map.isEmpty()) {
        out.writeByte(map.ids().size());
        for (String id : map.ids()) {
          out.writeUTF(id);
        }
        out.writeShort(map.runs().size());
        for (StripeMap.Run r : map.runs()) {
          out.writeInt((int) r.first());
          out.writeInt((int) r.count());
          out.writeByte(r.idIndex());
        }
      }
      if (!dues.isEmpty()) {
        out.writeShort(dues.size());
        for (Due d : dues) {
          out.writeUTF(d.fileId());
          out.writeLong(d.stripeCount());
          out.writeByte(d.scope().ordinal());
        }
      }
      out.flush();
      int header = bytes.size(); // within the limits: encode checks (oversize)
      if (whole && isInline()) {
        out.write(inline);
        out.flush();
      }
      byte[] encoded = bytes.toByteArray();
      encoded[4] = (byte) (header >>> 8);
      encoded[5] = (byte) header;
      return encoded;
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
      if (magic != MAGIC && magic != MARKED_MAGIC && magic != MAPPED_MAGIC) {
        throw new CorruptRecordException(key, "bad magic");
      }
      int flags = magic == MARKED_MAGIC ? FLAG_MARKED : 0;
      int headerLength = -1;
      if (magic == MAPPED_MAGIC) {
        headerLength = in.readUnsignedShort();
        flags = in.readUnsignedByte();
        if ((flags & ~KNOWN_FLAGS) != 0) {
          // A feature of a newer client (this one would misread its record): refuse it.
          throw new UnsupportedRecordFormatException(key, "unknown BFS3 flags 0x"
              + Integer.toHexString(flags & ~KNOWN_FLAGS));
        }
        boolean unmarkedOver = (flags & FLAG_MARKED) == 0 && headerLength > MAX_STORED_HEADER;
        if (unmarkedOver || headerLength > length) {
          // Checked first: a header the bytes do not hold is never decoded in part. A
          // marked header's limit is checked once its mark is read (below).
          throw new CorruptRecordException(key, unmarkedOver
              ? "header length " + headerLength + " over " + MAX_STORED_HEADER : "truncated");
        }
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
      if ((flags & FLAG_MARKED) != 0) {
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
      StripeMap map = StripeMap.NONE;
      if ((flags & FLAG_MAP) != 0) {
        List<String> ids = new ArrayList<>();
        for (int i = in.readUnsignedByte(); i > 0; i--) {
          ids.add(in.readUTF());
        }
        List<StripeMap.Run> runs = new ArrayList<>();
        for (int i = in.readUnsignedShort(); i > 0; i--) {
          runs.add(new StripeMap.Run(in.readInt() & 0xffffffffL, in.readInt() & 0xffffffffL,
              in.readUnsignedByte()));
        }
        map = new StripeMap(ids, runs);
        if (map.isEmpty()) {
          throw new CorruptRecordException(key, "an empty stripe map");
        }
      }
      if (moveKey != null && headerLength >= 0) {
        // Without its mark, within the limit: a record that decodes can be marked again.
        int markKeyBytes = moveKey.getBytes(StandardCharsets.UTF_8).length;
        int markBytes = 2 + markKeyBytes + 1 + 8;
        if (markKeyBytes > MAX_MARK_KEY_BYTES) {
          // No writer marks for such a key (checkMarkable); a record that has one would
          // decode, then fail untyped where a rename settles it by encoding it as read.
          throw new CorruptRecordException(key, "a rename's mark for a key of " + markKeyBytes
              + " bytes, over " + MAX_MARK_KEY_BYTES);
        }
        if (headerLength - markBytes > MAX_STORED_HEADER) {
          throw new CorruptRecordException(key, "header length " + headerLength + " ("
              + (headerLength - markBytes) + " without its mark) over " + MAX_STORED_HEADER);
        }
      }
      List<Due> dues = new ArrayList<>();
      if ((flags & FLAG_DUES) != 0) {
        for (int i = in.readUnsignedShort(); i > 0; i--) {
          String dueId = in.readUTF();
          long count = in.readLong();
          int scope = in.readUnsignedByte();
          if (scope >= Due.Scope.values().length) {
            throw new CorruptRecordException(key, "unknown cleanup scope " + scope);
          }
          dues.add(new Due(dueId, count, Due.Scope.values()[scope]));
        }
        if (dues.isEmpty()) {
          throw new CorruptRecordException(key, "an empty cleanup due list");
        }
      }
      if (headerLength >= 0 && headerLength != length - in.available()) {
        throw new CorruptRecordException(key, "header length " + headerLength
            + " but " + (length - in.available()) + " bytes of header fields");
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
      return new FileRecord(kind, len, mtime, stripe, id, inlined, inl, mark, moveKey, token,
          map, dues);
    } catch (IllegalArgumentException e) {
      // Fields the constructors refuse (a map, a due, a mark): their own message says which.
      throw new CorruptRecordException(key, e.getMessage());
    } catch (EOFException e) {
      throw new CorruptRecordException(key, "truncated");
    } catch (CorruptRecordException e) {
      throw e;
    } catch (IOException e) {
      throw new CorruptRecordException(key, e.toString());
    }
  }
}

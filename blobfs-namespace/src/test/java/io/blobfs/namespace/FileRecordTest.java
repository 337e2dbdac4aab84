package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.FileRecord.Due;
import io.blobfs.namespace.FileRecord.Mark;
import io.blobfs.namespace.StripeMap.Run;
import io.blobfs.store.StoreLimits;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The record format: BFS1/BFS2 records keep their bytes (golden arrays, encoded by main at
 * 02332d4, before BFS3 existed), and a BFS3 record (stripe map, cleanup dues) round trips
 * whole or is refused with a typed error, never decoded without its map.
 */
class FileRecordTest {
  private static final KeyLayout LAYOUT = new KeyLayout(new StoreLimits(1024, 1L << 30, 1 << 20));

  private static byte[] bytes(FileRecord r) {
    ByteBuffer b = r.encode();
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }

  private static FileRecord decode(byte[] b) throws CorruptRecordException {
    return FileRecord.decode("n/a/f", b, b.length, true);
  }

  private static void assertSame(FileRecord want, FileRecord got) {
    // equals compares the inline arrays by reference: compare them apart.
    assertEquals(want.toString().replaceAll("\\[B@\\w+", ""),
        got.toString().replaceAll("\\[B@\\w+", ""));
    assertArrayEquals(want.inline(), got.inline());
    assertEquals(want.map(), got.map());
    assertEquals(want.dues(), got.dues());
  }

  private static FileRecord plain() {
    return FileRecord.striped("f-1", 1000, 1234, 256);
  }

  private static FileRecord smallInline() {
    return FileRecord.inline("f-2", new byte[] {1, 2, 3}, 5, 64);
  }

  /** Bytes that main (02332d4) wrote for these records: unchanged by BFS3. */
  @Test
  void recordsWithoutMapKeepTheirBfs1AndBfs2Bytes() throws Exception {
    HexFormat hex = HexFormat.of();
    String[][] golden = {
        {"424653310000000000000003e800000000000004d200000000000001000003662d31ffffffff"},
        {"42465331000000000000000003000000000000000500000000000000400003662d3200000003010203"},
        {"42465331010000000000000000000000000000000700000000000000000000ffffffff"},
        {"424653320000000000000003e800000000000004d200000000000001000003662d31ffffffff"
            + "00056e2f612f6701000000000000002a"},
        {"42465332000000000000000003000000000000000500000000000000400003662d3200000003"
            + "00056e2f612f7404ffffffffffffffff010203"}};
    FileRecord[] records = {plain(), smallInline(), FileRecord.directory(7),
        plain().marked(Mark.MOVING, "n/a/g", 42),
        smallInline().marked(Mark.REPLACING, "n/a/t", -1)};
    for (int i = 0; i < records.length; i++) {
      byte[] want = hex.parseHex(golden[i][0]);
      assertArrayEquals(want, bytes(records[i]), "record " + i);
      assertSame(records[i], decode(want));
      assertEquals(want.length - (records[i].isInline() ? 3 : 0), records[i].headerSize());
    }
  }

  private static StripeMap map(List<String> ids, Run... runs) {
    return new StripeMap(ids, List.of(runs));
  }

  /** 8 stripes of 256 B; stripes 0-1 and 5 of A, 3 of B, the rest its own. */
  private static FileRecord mapped() {
    try {
      return FileRecord.striped("own", 8 * 256 - 10, 99, 256).withStripes(
          map(List.of("A", "B"), new Run(0, 2, 0), new Run(3, 1, 1), new Run(5, 1, 0)),
          List.of(new Due("C", 8, Due.Scope.UNNAMED), new Due("D", 3, Due.Scope.ALL)));
    } catch (RecordTooLargeException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aMappedRecordRoundTripsAsBfs3WithItsKeys() throws Exception {
    FileRecord r = mapped();
    byte[] b = bytes(r);
    assertEquals(FileRecord.MAPPED_MAGIC, ByteBuffer.wrap(b).getInt(0));
    assertEquals(b.length, FileRecord.storedHeaderSize(b, b.length));
    assertEquals(b.length, r.headerSize());
    FileRecord back = decode(b);
    assertSame(r, back);
    List<String> keys = new ArrayList<>();
    for (long s = 0; s < back.stripeCount(); s++) {
      keys.add(back.stripeKey(LAYOUT, s));
    }
    assertEquals(List.of("d/A/0", "d/A/1", "d/own/2", "d/B/3", "d/own/4", "d/A/5", "d/own/6",
        "d/own/7"), keys);
  }

  @Test
  void markingAndUnmarkingKeepTheMapAndDues() throws Exception {
    FileRecord m = mapped().marked(Mark.MOVING, "n/a/g", 7);
    FileRecord back = decode(bytes(m));
    assertEquals(Mark.MOVING, back.mark());
    assertEquals(7, back.moveToken());
    assertTrue(FileRecord.isMarked(bytes(m), 8));
    assertEquals(mapped().map(), back.map());
    assertEquals(mapped().dues(), back.dues());
    FileRecord un = decode(bytes(back.unmarked()));
    assertEquals(Mark.NONE, un.mark());
    assertFalse(FileRecord.isMarked(bytes(back.unmarked()), 8));
    assertEquals(mapped().map(), un.map());
    assertEquals(mapped().dues(), un.dues());
  }

  /** Dues without a map (a plain overwrite of a mapped record), inline bytes after them. */
  @Test
  void duesAloneRoundTripWithInlineBytes() throws Exception {
    FileRecord r = smallInline().withStripes(StripeMap.NONE,
        List.of(new Due("A", 4, Due.Scope.ALL)));
    byte[] b = bytes(r);
    assertEquals(FileRecord.MAPPED_MAGIC, ByteBuffer.wrap(b).getInt(0));
    assertEquals(b.length - 3, FileRecord.storedHeaderSize(b, b.length));
    assertSame(r, decode(b));
    FileRecord header = FileRecord.decode("n/a/f", b, b.length - 3, false);
    assertEquals(r.dues(), header.dues());
    assertNull(header.inline());
    assertEquals(b.length - 3, header.headerSize()); // where a stat's re-read finds the bytes
    assertThrows(IllegalStateException.class, header::encode);
  }

  @Test
  void limitsAreCheckedWhereTheMapIsMade() {
    List<String> seventeen = new ArrayList<>();
    List<Run> runs = new ArrayList<>();
    for (int i = 0; i < 17; i++) {
      seventeen.add("id" + i);
      runs.add(new Run(i, 1, i));
    }
    assertThrows(IllegalArgumentException.class, () -> new StripeMap(seventeen, runs));
    assertThrows(IllegalArgumentException.class, // overlapping
        () -> map(List.of("A"), new Run(0, 2, 0), new Run(1, 1, 0)));
    assertThrows(IllegalArgumentException.class, // unsorted
        () -> map(List.of("A"), new Run(3, 1, 0), new Run(1, 1, 0)));
    assertThrows(IllegalArgumentException.class, () -> map(List.of("A"), new Run(0, 0, 0)));
    assertThrows(IllegalArgumentException.class, () -> map(List.of("A"), new Run(0, 1, 1)));
    assertThrows(IllegalArgumentException.class, // B in no run
        () -> map(List.of("A", "B"), new Run(0, 1, 0)));
    assertThrows(IllegalArgumentException.class, () -> map(List.of("A", "A"),
        new Run(0, 1, 0), new Run(1, 1, 1)));
    assertThrows(IllegalArgumentException.class, () -> map(List.of("x".repeat(65)),
        new Run(0, 1, 0)));
    FileRecord eight = FileRecord.striped("own", 8 * 256, 1, 256);
    assertThrows(IllegalArgumentException.class, // past the last stripe
        () -> eight.withStripes(map(List.of("A"), new Run(7, 2, 0)), List.of()));
    assertThrows(IllegalArgumentException.class, // its own id
        () -> eight.withStripes(map(List.of("own"), new Run(0, 1, 0)), List.of()));
    assertThrows(IllegalArgumentException.class,
        () -> smallInline().withStripes(map(List.of("A"), new Run(0, 1, 0)), List.of()));
    // 16 ids of 64 chars and 400 runs: over 4 KiB of header.
    List<String> ids = new ArrayList<>();
    List<Run> many = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      ids.add(String.format("%064d", i));
    }
    for (int i = 0; i < 400; i++) {
      many.add(new Run(2L * i, 1, i % 16));
    }
    assertThrows(RecordTooLargeException.class, () -> FileRecord.striped("own", 800 * 256, 1,
        256).withStripes(new StripeMap(ids, many), List.of()));
  }

  /**
   * The 4 KiB limit does not count a rename's mark: a record near it can be marked with a
   * key of up to MAX_MARK_KEY_BYTES (the u16 header length), and round trips; a longer key
   * is refused before the rename writes anything, with a typed IOException.
   */
  @Test
  void theMarkIsOutsideTheHeaderLimit() throws Exception {
    List<Run> runs = new ArrayList<>();
    for (int i = 0; i < 440; i++) {
      runs.add(new Run(2L * i, 1, i % 3));
    }
    FileRecord r = FileRecord.striped("own", 880L * 256, 1, 256).withStripes(
        new StripeMap(List.of("A", "B", "C"), runs), List.of());
    assertTrue(r.headerSize() > FileRecord.MAX_STORED_HEADER - 100, "" + r.headerSize());
    String longest = "n/" + "k".repeat(FileRecord.MAX_MARK_KEY_BYTES - 2);
    r.checkMarkable("n/a/f", longest);
    FileRecord marked = r.marked(Mark.MOVING, longest, 7);
    assertEquals(r.headerSize() + 2 + longest.length() + 1 + 8, marked.headerSize());
    FileRecord back = decode(bytes(marked));
    assertEquals(r.map(), back.map());
    assertEquals(longest, back.moveKey());
    assertEquals(marked.headerSize(), FileRecord.storedHeaderSize(bytes(marked), 7));
    assertThrows(RecordTooLargeException.class, () -> r.checkMarkable("n/a/f", longest + "k"));
    assertThrows(RecordTooLargeException.class, () -> r.checkMarkable(longest + "k", "n/a/g"));
  }

  /** Stored bytes a client of this version must refuse, each with a typed error. */
  @Test
  void badMapsAndUnknownFlagsAreRefusedTyped() {
    byte[] good = bytes(mapped());
    // The first run's u32 count set to 4: it now overlaps the run of stripe 3.
    int runs = good.length - indexOfRunsFromEnd();
    byte[] overlap = good.clone();
    overlap[runs + 7] = 4;
    CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> decode(overlap));
    assertTrue(e.getMessage().contains("runs must be sorted"), e.getMessage());
    byte[] pastEnd = good.clone();
    pastEnd[runs + 2 * 9 + 3] = 8; // the run of stripe 5 starts at 8: past the 8 stripes
    e = assertThrows(CorruptRecordException.class, () -> decode(pastEnd));
    assertTrue(e.getMessage().contains("past the file"), e.getMessage());
    byte[] flag = good.clone();
    flag[6] |= 0x08;
    assertThrows(UnsupportedRecordFormatException.class, () -> decode(flag));
    byte[] longHeader = good.clone();
    longHeader[4] = 0x10;
    longHeader[5] = 0x01; // 4097
    e = assertThrows(CorruptRecordException.class, () -> decode(longHeader));
    assertFalse(e instanceof UnsupportedRecordFormatException);
    byte[] wrongLength = good.clone();
    wrongLength[5]--;
    assertThrows(CorruptRecordException.class, () -> decode(wrongLength));
  }

  /** Bytes from the first run to the end: 3 runs of 9, then the dues (2 + 2 x (2+1+8+1)). */
  private static int indexOfRunsFromEnd() {
    return 3 * 9 + 2 + 2 * (2 + 1 + 8 + 1);
  }

  /** A head shorter than the header (what a listing may read) is never decoded mapless. */
  @Test
  void aMappedHeaderIsNeverDecodedFromPartOfIt() {
    byte[] good = bytes(mapped());
    for (int n = 8; n < good.length; n++) {
      int cut = n;
      assertTrue(FileRecord.storedHeaderSize(good, cut) > cut);
      assertThrows(CorruptRecordException.class,
          () -> FileRecord.decode("n/a/f", good, cut, false), "cut at " + cut);
    }
  }

  /**
   * A marked BFS3 record whose mark names a key over MAX_MARK_KEY_BYTES (the u16 header
   * length allows one when the rest of the header is small): no writer makes it, so it is
   * damaged, and it is refused at decode, typed. Before, it decoded and the rename that
   * settles a mark by encoding the record as read failed with an IllegalStateException
   * (second review of shared stripes, session 15, S1).
   */
  @Test
  void aMarkForAKeyOverTheLimitIsRefusedAtDecode() throws Exception {
    byte[] small = bytes(mapped().marked(Mark.MOVING, "QQQQ", 7));
    byte[] q = "QQQQ".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    int at = -1;
    for (int i = 0; at < 0 && i + q.length <= small.length; i++) {
      if (java.util.Arrays.equals(small, i, i + q.length, q, 0, q.length)) {
        at = i;
      }
    }
    assertTrue(at > 0);
    byte[] key = ("n/" + "k".repeat(FileRecord.MAX_MARK_KEY_BYTES))
        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    out.write(small, 0, at - 2);
    out.write(key.length >>> 8);
    out.write(key.length & 0xff);
    out.write(key);
    out.write(small, at + q.length, small.length - at - q.length);
    byte[] b = out.toByteArray();
    int header = ByteBuffer.wrap(small, 4, 2).getShort() & 0xffff;
    assertTrue(header - q.length + key.length <= 0xffff); // the header length can say it
    ByteBuffer.wrap(b, 4, 2).putShort((short) (header - q.length + key.length));
    CorruptRecordException e = assertThrows(CorruptRecordException.class,
        () -> FileRecord.decode("n/x", b, b.length, false));
    assertTrue(e.getMessage().contains("over " + FileRecord.MAX_MARK_KEY_BYTES), e.getMessage());
  }
}

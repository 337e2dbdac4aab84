package io.blobfs.fuse.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The wire format, checked against the sizes and offsets of include/uapi/linux/fuse.h
 * with a file system that answers fixed values: no kernel needed.
 */
class FuseSessionCodecTest {
  private static final Attr FILE = new Attr(77, 5, 1_700_000_000_123L, Attr.S_IFREG | 0644, 1,
      4096, 0, 0);

  /** Answers fixed values and records what it was called with. */
  private static class Fixed implements LowLevelFs {
    String lastName;
    long lastOffset;
    int backingId;
    boolean initialized;
    Passthrough passthrough;

    @Override
    public void initialized(Passthrough p) {
      initialized = true;
      passthrough = p;
    }
    byte[] written;

    public Entry lookup(long parent, String name) {
      lastName = name;
      return new Entry(77, FILE);
    }
    public void forget(long node, long count) { }
    public Attr getattr(long node) { return FILE; }
    public Attr setattr(long node, SetAttr change) { return FILE; }
    public Entry mkdir(long parent, String name) throws FuseException {
      throw new FuseException(Errno.EOPNOTSUPP, "no");
    }
    public Entry mknod(long parent, String name, int mode) { return null; }
    public void unlink(long parent, String name) { }
    public void rmdir(long parent, String name) { }
    public void rename(long p, String n, long np, String nn, boolean noReplace) {
      lastName = n + ">" + nn + (noReplace ? "!" : "");
    }
    public Opened open(long node, int flags) { return new Opened(9, false, false, backingId); }
    public Entry create(long parent, String name, int flags, Opened[] handle) {
      handle[0] = new Opened(9, false);
      return new Entry(77, FILE);
    }
    public void read(long node, long fh, long offset, ByteBuffer dst) {
      lastOffset = offset;
      dst.put("hello".getBytes(StandardCharsets.UTF_8));
    }
    public int write(long node, long fh, long offset, ByteBuffer src) {
      lastOffset = offset;
      written = new byte[src.remaining()];
      src.get(written);
      return written.length;
    }
    public void flush(long node, long fh) { }
    public void release(long node, long fh) { }
    public void fsync(long node, long fh, boolean dataOnly) { }
    public Opened opendir(long node) { return new Opened(3, false); }
    public void readdir(long node, long fh, long offset, DirBuffer out) {
      out.add(1, ".", DirBuffer.DT_DIR, 1);
      out.add(77, "name", DirBuffer.DT_REG, 2);
    }
    public void releasedir(long node, long fh) { }
    public StatFs statfs() { return new StatFs(10, 5, 10, 5, 4096, 255); }
  }

  private final Fixed fs = new Fixed();
  private final FuseSession session = FuseSession.unmounted(fs, FuseSession.Options.defaults());

  private static ByteBuffer request(int opcode, long node, byte[] body) {
    ByteBuffer b = ByteBuffer.allocate(40 + body.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(40 + body.length).putInt(opcode).putLong(1234).putLong(node)
        .putInt(0).putInt(0).putInt(0).putInt(0).put(body);
    return b.flip();
  }

  private ByteBuffer reply(ByteBuffer in) {
    ByteBuffer out = ByteBuffer.allocate(1 << 21).order(ByteOrder.LITTLE_ENDIAN);
    int len = session.handle(in, out);
    out.limit(len).position(0);
    assertEquals(len, out.getInt(0), "out header length");
    assertEquals(1234, out.getLong(8), "unique echoed");
    return out;
  }

  private static byte[] le(int... ints) {
    ByteBuffer b = ByteBuffer.allocate(ints.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (int i : ints) {
      b.putInt(i);
    }
    return b.array();
  }

  private static final int OFFERED_EXT = FuseSession.BIG_WRITES | FuseSession.INIT_EXT;

  @Test
  void initAgreesOnPassthroughWhenAskedAndTheKernelOffersIt() {
    FuseSession pass = FuseSession.unmounted(fs, FuseSession.Options.defaults().withPassthrough(true));
    ByteBuffer out = ByteBuffer.allocate(1 << 12).order(ByteOrder.LITTLE_ENDIAN);
    int len = pass.handle(request(Opcode.INIT, 0,
        le(7, 44, 1 << 17, OFFERED_EXT, FuseSession.PASSTHROUGH2 | 1 /* another flags2 bit */)), out);
    assertEquals(16 + 64, len);
    assertEquals(40, out.getInt(20), "protocol 7.40: backing_id in fuse_open_out");
    assertEquals(FuseSession.BIG_WRITES | FuseSession.INIT_EXT, out.getInt(28));
    assertEquals(FuseSession.PASSTHROUGH2, out.getInt(16 + 32), "flags2: passthrough only");
    assertEquals(2, out.getInt(16 + 36), "max_stack_depth");
    assertTrue(pass.passthrough());
    assertTrue(fs.initialized);
    assertTrue(fs.passthrough != null);
  }

  @Test
  void initWithoutPassthroughWhenTheKernelLacksItOrItIsNotAsked() {
    // a 6.8 kernel (7.39) offers no passthrough: the reply is the one without the key
    FuseSession pass = FuseSession.unmounted(fs, FuseSession.Options.defaults().withPassthrough(true));
    ByteBuffer out = ByteBuffer.allocate(1 << 12).order(ByteOrder.LITTLE_ENDIAN);
    pass.handle(request(Opcode.INIT, 0, le(7, 39, 1 << 17, OFFERED_EXT, 0)), out);
    assertEquals(31, out.getInt(20));
    assertEquals(FuseSession.BIG_WRITES, out.getInt(28));
    assertEquals(0, out.getInt(16 + 32));
    assertEquals(0, out.getInt(16 + 36));
    assertFalse(pass.passthrough());
    assertTrue(fs.initialized);
    assertEquals(null, fs.passthrough);
    // offered but not asked (the default)
    out.clear();
    session.handle(request(Opcode.INIT, 0,
        le(7, 44, 1 << 17, OFFERED_EXT, FuseSession.PASSTHROUGH2)), out);
    assertEquals(31, out.getInt(20));
    assertEquals(FuseSession.BIG_WRITES, out.getInt(28));
    assertEquals(0, out.getInt(16 + 32));
    assertFalse(session.passthrough());
    assertEquals(null, fs.passthrough);
  }

  @Test
  void anOpenWithABackingFileRepliesPassthroughAndItsId() {
    fs.backingId = 5;
    ByteBuffer out = reply(request(Opcode.OPEN, 77, le(FuseSession.O_RDWR, 0)));
    assertEquals(16 + 16, out.limit());
    assertEquals(9, out.getLong(16));
    assertEquals(1 << 7, out.getInt(24), "FOPEN_PASSTHROUGH alone");
    assertEquals(5, out.getInt(28), "backing_id");
    fs.backingId = 0;
    out = reply(request(Opcode.OPEN, 77, le(FuseSession.O_RDWR, 0)));
    assertEquals(0, out.getInt(24));
    assertEquals(0, out.getInt(28));
  }

  @Test
  void theBackingIoctlsAreTheKernelsNumbers() {
    // include/uapi/linux/fuse.h, as <linux/ioctl.h> encodes them on x86-64 and arm64
    assertEquals(0x4010e501L, FuseSession.BACKING_OPEN);
    assertEquals(0x4004e502L, FuseSession.BACKING_CLOSE);
  }

  @Test
  void initNegotiatesOneMibWritesAndOnlyOfferedFlags() {
    int offered = FuseSession.BIG_WRITES | FuseSession.MAX_PAGES | (1 << 16 /* writeback */);
    ByteBuffer out = reply(request(Opcode.INIT, 0, le(7, 38, 1 << 17, offered)));
    assertEquals(16 + 64, out.limit(), "fuse_init_out is 64 bytes");
    assertEquals(7, out.getInt(16));
    assertEquals(31, out.getInt(20));
    assertEquals(1 << 17, out.getInt(24), "readahead: no more than the kernel offers");
    assertEquals(FuseSession.BIG_WRITES | FuseSession.MAX_PAGES, out.getInt(28));
    assertEquals(1 << 20, out.getInt(36), "max_write");
    assertEquals(256, out.getShort(44), "max_pages");
  }

  @Test
  void lookupRepliesAnEntryWithTheAttributesAtTheirOffsets() {
    ByteBuffer out = reply(request(Opcode.LOOKUP, 1, "abc\0".getBytes()));
    assertEquals("abc", fs.lastName);
    assertEquals(16 + 128, out.limit(), "fuse_entry_out is 128 bytes");
    assertEquals(77, out.getLong(16), "nodeid");
    assertEquals(1, out.getLong(32), "entry_valid: 1 s");
    int attr = 16 + 40;
    assertEquals(77, out.getLong(attr), "ino");
    assertEquals(5, out.getLong(attr + 8), "size");
    assertEquals(1, out.getLong(attr + 16), "blocks of 512 bytes");
    assertEquals(1_700_000_000L, out.getLong(attr + 32), "mtime");
    assertEquals(123_000_000, out.getInt(attr + 52), "mtimensec");
    assertEquals(Attr.S_IFREG | 0644, out.getInt(attr + 60), "mode");
    assertEquals(4096, out.getInt(attr + 80), "blksize");
  }

  @Test
  void errorsAreNegativeErrnosWithAHeaderOnly() {
    ByteBuffer out = reply(request(Opcode.MKDIR, 1, concat(le(0755, 022), "d\0".getBytes())));
    assertEquals(16, out.limit());
    assertEquals(-Errno.EOPNOTSUPP, out.getInt(4));
    ByteBuffer unknown = reply(request(999, 1, new byte[0]));
    assertEquals(-Errno.ENOSYS, unknown.getInt(4));
  }

  @Test
  void writeAndReadCarryTheirOffsetsAndBytes() {
    ByteBuffer w = ByteBuffer.allocate(40 + 3).order(ByteOrder.LITTLE_ENDIAN);
    w.putLong(9).putLong(4096).putInt(3).putInt(0).putLong(0).putInt(0).putInt(0).put("xyz".getBytes());
    ByteBuffer out = reply(request(Opcode.WRITE, 77, w.array()));
    assertEquals(4096, fs.lastOffset);
    assertEquals("xyz", new String(fs.written));
    assertEquals(16 + 8, out.limit());
    assertEquals(3, out.getInt(16));

    ByteBuffer r = ByteBuffer.allocate(40).order(ByteOrder.LITTLE_ENDIAN);
    r.putLong(9).putLong(8192).putInt(4096).putInt(0).putLong(0).putInt(0).putInt(0);
    out = reply(request(Opcode.READ, 77, r.array()));
    assertEquals(8192, fs.lastOffset);
    assertEquals(16 + 5, out.limit(), "a read replies only the bytes it has");
    byte[] got = new byte[5];
    out.get(16, got);
    assertEquals("hello", new String(got));
  }

  @Test
  void statsCountRequestsAndTheirPayloadBytes() {
    for (int i = 0; i < 2; i++) {
      ByteBuffer w = ByteBuffer.allocate(40 + 3).order(ByteOrder.LITTLE_ENDIAN);
      w.putLong(9).putLong(0).putInt(3).putInt(0).putLong(0).putInt(0).putInt(0).put("xyz".getBytes());
      reply(request(Opcode.WRITE, 77, w.array()));
    }
    ByteBuffer r = ByteBuffer.allocate(40).order(ByteOrder.LITTLE_ENDIAN);
    r.putLong(9).putLong(0).putInt(4096).putInt(0).putLong(0).putInt(0).putInt(0);
    reply(request(Opcode.READ, 77, r.array()));
    assertEquals(2, session.stats().count(Opcode.WRITE));
    assertEquals(6, session.stats().bytes(Opcode.WRITE));
    assertEquals(1, session.stats().count(Opcode.READ));
    assertEquals(5, session.stats().bytes(Opcode.READ), "the bytes replied, not asked for");
    String summary = session.requestSummary();
    org.junit.jupiter.api.Assertions.assertTrue(
        summary.contains("WRITE: 2 requests, 6 bytes (avg 3)"), summary);
  }

  @Test
  void renameTwoNamesAndNoReplace() {
    ByteBuffer b = ByteBuffer.allocate(16 + 4).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(1).putInt(1).putInt(0).put("a\0b\0".getBytes());
    ByteBuffer out = reply(request(Opcode.RENAME2, 1, b.array()));
    assertEquals(0, out.getInt(4));
    assertEquals("a>b!", fs.lastName);
  }

  @Test
  void readdirPadsEachDirentToEightBytes() {
    ByteBuffer r = ByteBuffer.allocate(40).order(ByteOrder.LITTLE_ENDIAN);
    r.putLong(3).putLong(0).putInt(4096).putInt(0).putLong(0).putInt(0).putInt(0);
    ByteBuffer out = reply(request(Opcode.READDIR, 1, r.array()));
    assertEquals(16 + 32 + 32, out.limit(), "24 + 1 and 24 + 4, each padded to 32");
    assertEquals(List.of(".", "name"),
        DirBufferAccess.names(out.slice(16, out.limit() - 16).order(ByteOrder.LITTLE_ENDIAN), 64));
  }

  @Test
  void anErrorInTheFileSystemIsStillAnsweredWithEio() {
    FuseSession failing = FuseSession.unmounted(new Fixed() {
      @Override
      public Attr getattr(long node) {
        throw new NoSuchMethodError("stale class"); // as a mismatched jar gives
      }
    }, FuseSession.Options.defaults());
    ByteBuffer out = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(16, failing.handle(request(Opcode.GETATTR, 77, new byte[16]), out));
    assertEquals(-Errno.EIO, out.getInt(4));
  }

  @Test
  void forgetGetsNoReply() {
    ByteBuffer out = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(0, session.handle(request(Opcode.FORGET, 77, new byte[8]), out));
  }

  @Test
  void namesOverFuseLimitAreEnametoolong() {
    byte[] name = ("x".repeat(256) + "\0").getBytes();
    ByteBuffer out = reply(request(Opcode.LOOKUP, 1, name));
    assertEquals(-Errno.ENAMETOOLONG, out.getInt(4));
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] c = new byte[a.length + b.length];
    System.arraycopy(a, 0, c, 0, a.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }
}

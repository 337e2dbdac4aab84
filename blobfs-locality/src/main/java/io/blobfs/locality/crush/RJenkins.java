package io.blobfs.locality.crush;

import java.nio.charset.StandardCharsets;

/**
 * Robert Jenkins' 96-bit mix as Ceph uses it: the string hash that maps object names to
 * placement seeds, and the 32-bit integer hashes (seeded "rjenkins1") that CRUSH draws with.
 * All arithmetic is unsigned 32-bit; Java's wrapping int and {@code >>>} give the same bits.
 * Jenkins' mix is written out at each use, as Ceph's C macro expands, so hashing allocates
 * nothing (a helper returning three ints would need an array per round).
 */
public final class RJenkins {
  private static final int SEED = 1315423911;
  private static final int X = 231232;
  private static final int Y = 1232;

  private RJenkins() {}

  /** Ceph's {@code ceph_str_hash_rjenkins} over the UTF-8 bytes of {@code s}. */
  public static int strHash(String s) {
    return strHash(s.getBytes(StandardCharsets.UTF_8));
  }

  /** Ceph's {@code ceph_str_hash_rjenkins} over raw bytes. */
  public static int strHash(byte[] k) {
    int a = 0x9e3779b9;
    int b = a;
    int c = 0;
    int off = 0;
    int len = k.length;
    while (len >= 12) {
      a += le32(k, off);
      b += le32(k, off + 4);
      c += le32(k, off + 8);
      a -= b; a -= c; a ^= c >>> 13;
      b -= c; b -= a; b ^= a << 8;
      c -= a; c -= b; c ^= b >>> 13;
      a -= b; a -= c; a ^= c >>> 12;
      b -= c; b -= a; b ^= a << 16;
      c -= a; c -= b; c ^= b >>> 5;
      a -= b; a -= c; a ^= c >>> 3;
      b -= c; b -= a; b ^= a << 10;
      c -= a; c -= b; c ^= b >>> 15;
      off += 12;
      len -= 12;
    }
    c += k.length;
    // the tail bytes; the lowest byte of c is reserved for the length
    switch (len) {
      case 11: c += u8(k, off + 10) << 24; // fall through
      case 10: c += u8(k, off + 9) << 16; // fall through
      case 9: c += u8(k, off + 8) << 8; // fall through
      case 8: b += u8(k, off + 7) << 24; // fall through
      case 7: b += u8(k, off + 6) << 16; // fall through
      case 6: b += u8(k, off + 5) << 8; // fall through
      case 5: b += u8(k, off + 4); // fall through
      case 4: a += u8(k, off + 3) << 24; // fall through
      case 3: a += u8(k, off + 2) << 16; // fall through
      case 2: a += u8(k, off + 1) << 8; // fall through
      case 1: a += u8(k, off); // fall through
      default: break;
    }
    a -= b; a -= c; a ^= c >>> 13;
    b -= c; b -= a; b ^= a << 8;
    c -= a; c -= b; c ^= b >>> 13;
    a -= b; a -= c; a ^= c >>> 12;
    b -= c; b -= a; b ^= a << 16;
    c -= a; c -= b; c ^= b >>> 5;
    a -= b; a -= c; a ^= c >>> 3;
    b -= c; b -= a; b ^= a << 10;
    c -= a; c -= b; c ^= b >>> 15;
    return c;
  }

  /** {@code crush_hash32_rjenkins1_2}. */
  public static int hash2(int a, int b) {
    int h = SEED ^ a ^ b;
    int x = X;
    int y = Y;
    // mix(a, b, h)
    a -= b; a -= h; a ^= h >>> 13;
    b -= h; b -= a; b ^= a << 8;
    h -= a; h -= b; h ^= b >>> 13;
    a -= b; a -= h; a ^= h >>> 12;
    b -= h; b -= a; b ^= a << 16;
    h -= a; h -= b; h ^= b >>> 5;
    a -= b; a -= h; a ^= h >>> 3;
    b -= h; b -= a; b ^= a << 10;
    h -= a; h -= b; h ^= b >>> 15;
    // mix(x, a, h)
    x -= a; x -= h; x ^= h >>> 13;
    a -= h; a -= x; a ^= x << 8;
    h -= x; h -= a; h ^= a >>> 13;
    x -= a; x -= h; x ^= h >>> 12;
    a -= h; a -= x; a ^= x << 16;
    h -= x; h -= a; h ^= a >>> 5;
    x -= a; x -= h; x ^= h >>> 3;
    a -= h; a -= x; a ^= x << 10;
    h -= x; h -= a; h ^= a >>> 15;
    // mix(b, y, h)
    b -= y; b -= h; b ^= h >>> 13;
    y -= h; y -= b; y ^= b << 8;
    h -= b; h -= y; h ^= y >>> 13;
    b -= y; b -= h; b ^= h >>> 12;
    y -= h; y -= b; y ^= b << 16;
    h -= b; h -= y; h ^= y >>> 5;
    b -= y; b -= h; b ^= h >>> 3;
    y -= h; y -= b; y ^= b << 10;
    h -= b; h -= y; h ^= y >>> 15;
    return h;
  }

  /** {@code crush_hash32_rjenkins1_3}. */
  public static int hash3(int a, int b, int c) {
    int h = SEED ^ a ^ b ^ c;
    int x = X;
    int y = Y;
    // mix(a, b, h)
    a -= b; a -= h; a ^= h >>> 13;
    b -= h; b -= a; b ^= a << 8;
    h -= a; h -= b; h ^= b >>> 13;
    a -= b; a -= h; a ^= h >>> 12;
    b -= h; b -= a; b ^= a << 16;
    h -= a; h -= b; h ^= b >>> 5;
    a -= b; a -= h; a ^= h >>> 3;
    b -= h; b -= a; b ^= a << 10;
    h -= a; h -= b; h ^= b >>> 15;
    // mix(c, x, h)
    c -= x; c -= h; c ^= h >>> 13;
    x -= h; x -= c; x ^= c << 8;
    h -= c; h -= x; h ^= x >>> 13;
    c -= x; c -= h; c ^= h >>> 12;
    x -= h; x -= c; x ^= c << 16;
    h -= c; h -= x; h ^= x >>> 5;
    c -= x; c -= h; c ^= h >>> 3;
    x -= h; x -= c; x ^= c << 10;
    h -= c; h -= x; h ^= x >>> 15;
    // mix(y, a, h)
    y -= a; y -= h; y ^= h >>> 13;
    a -= h; a -= y; a ^= y << 8;
    h -= y; h -= a; h ^= a >>> 13;
    y -= a; y -= h; y ^= h >>> 12;
    a -= h; a -= y; a ^= y << 16;
    h -= y; h -= a; h ^= a >>> 5;
    y -= a; y -= h; y ^= h >>> 3;
    a -= h; a -= y; a ^= y << 10;
    h -= y; h -= a; h ^= a >>> 15;
    // mix(b, x, h)
    b -= x; b -= h; b ^= h >>> 13;
    x -= h; x -= b; x ^= b << 8;
    h -= b; h -= x; h ^= x >>> 13;
    b -= x; b -= h; b ^= h >>> 12;
    x -= h; x -= b; x ^= b << 16;
    h -= b; h -= x; h ^= x >>> 5;
    b -= x; b -= h; b ^= h >>> 3;
    x -= h; x -= b; x ^= b << 10;
    h -= b; h -= x; h ^= x >>> 15;
    // mix(y, c, h)
    y -= c; y -= h; y ^= h >>> 13;
    c -= h; c -= y; c ^= y << 8;
    h -= y; h -= c; h ^= c >>> 13;
    y -= c; y -= h; y ^= h >>> 12;
    c -= h; c -= y; c ^= y << 16;
    h -= y; h -= c; h ^= c >>> 5;
    y -= c; y -= h; y ^= h >>> 3;
    c -= h; c -= y; c ^= y << 10;
    h -= y; h -= c; h ^= c >>> 15;
    return h;
  }

  /** {@code crush_hash32_rjenkins1_4}. */
  public static int hash4(int a, int b, int c, int d) {
    int h = SEED ^ a ^ b ^ c ^ d;
    int x = X;
    int y = Y;
    // mix(a, b, h)
    a -= b; a -= h; a ^= h >>> 13;
    b -= h; b -= a; b ^= a << 8;
    h -= a; h -= b; h ^= b >>> 13;
    a -= b; a -= h; a ^= h >>> 12;
    b -= h; b -= a; b ^= a << 16;
    h -= a; h -= b; h ^= b >>> 5;
    a -= b; a -= h; a ^= h >>> 3;
    b -= h; b -= a; b ^= a << 10;
    h -= a; h -= b; h ^= b >>> 15;
    // mix(c, d, h)
    c -= d; c -= h; c ^= h >>> 13;
    d -= h; d -= c; d ^= c << 8;
    h -= c; h -= d; h ^= d >>> 13;
    c -= d; c -= h; c ^= h >>> 12;
    d -= h; d -= c; d ^= c << 16;
    h -= c; h -= d; h ^= d >>> 5;
    c -= d; c -= h; c ^= h >>> 3;
    d -= h; d -= c; d ^= c << 10;
    h -= c; h -= d; h ^= d >>> 15;
    // mix(a, x, h)
    a -= x; a -= h; a ^= h >>> 13;
    x -= h; x -= a; x ^= a << 8;
    h -= a; h -= x; h ^= x >>> 13;
    a -= x; a -= h; a ^= h >>> 12;
    x -= h; x -= a; x ^= a << 16;
    h -= a; h -= x; h ^= x >>> 5;
    a -= x; a -= h; a ^= h >>> 3;
    x -= h; x -= a; x ^= a << 10;
    h -= a; h -= x; h ^= x >>> 15;
    // mix(y, b, h)
    y -= b; y -= h; y ^= h >>> 13;
    b -= h; b -= y; b ^= y << 8;
    h -= y; h -= b; h ^= b >>> 13;
    y -= b; y -= h; y ^= h >>> 12;
    b -= h; b -= y; b ^= y << 16;
    h -= y; h -= b; h ^= b >>> 5;
    y -= b; y -= h; y ^= h >>> 3;
    b -= h; b -= y; b ^= y << 10;
    h -= y; h -= b; h ^= b >>> 15;
    // mix(c, x, h)
    c -= x; c -= h; c ^= h >>> 13;
    x -= h; x -= c; x ^= c << 8;
    h -= c; h -= x; h ^= x >>> 13;
    c -= x; c -= h; c ^= h >>> 12;
    x -= h; x -= c; x ^= c << 16;
    h -= c; h -= x; h ^= x >>> 5;
    c -= x; c -= h; c ^= h >>> 3;
    x -= h; x -= c; x ^= c << 10;
    h -= c; h -= x; h ^= x >>> 15;
    // mix(y, d, h)
    y -= d; y -= h; y ^= h >>> 13;
    d -= h; d -= y; d ^= y << 8;
    h -= y; h -= d; h ^= d >>> 13;
    y -= d; y -= h; y ^= h >>> 12;
    d -= h; d -= y; d ^= y << 16;
    h -= y; h -= d; h ^= d >>> 5;
    y -= d; y -= h; y ^= h >>> 3;
    d -= h; d -= y; d ^= y << 10;
    h -= y; h -= d; h ^= d >>> 15;
    return h;
  }

  private static int u8(byte[] k, int i) {
    return k[i] & 0xff;
  }

  private static int le32(byte[] k, int i) {
    return u8(k, i) | u8(k, i + 1) << 8 | u8(k, i + 2) << 16 | u8(k, i + 3) << 24;
  }
}

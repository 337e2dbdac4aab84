package io.blobfs.locality.crush;

import java.nio.charset.StandardCharsets;

/**
 * Robert Jenkins' 96-bit mix as Ceph uses it: the string hash that maps object names to
 * placement seeds, and the 32-bit integer hashes (seeded "rjenkins1") that CRUSH draws with.
 * All arithmetic is unsigned 32-bit; Java's wrapping int and {@code >>>} give the same bits.
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
      int[] m = mix(a, b, c);
      a = m[0];
      b = m[1];
      c = m[2];
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
    return mix(a, b, c)[2];
  }

  /** {@code crush_hash32_rjenkins1_2}. */
  public static int hash2(int a, int b) {
    int h = SEED ^ a ^ b;
    int x = X;
    int y = Y;
    int[] m = mix(a, b, h); a = m[0]; b = m[1]; h = m[2];
    m = mix(x, a, h); x = m[0]; a = m[1]; h = m[2];
    m = mix(b, y, h);
    return m[2];
  }

  /** {@code crush_hash32_rjenkins1_3}. */
  public static int hash3(int a, int b, int c) {
    int h = SEED ^ a ^ b ^ c;
    int x = X;
    int y = Y;
    int[] m = mix(a, b, h); a = m[0]; b = m[1]; h = m[2];
    m = mix(c, x, h); c = m[0]; x = m[1]; h = m[2];
    m = mix(y, a, h); y = m[0]; a = m[1]; h = m[2];
    m = mix(b, x, h); b = m[0]; x = m[1]; h = m[2];
    m = mix(y, c, h);
    return m[2];
  }

  /** {@code crush_hash32_rjenkins1_4}. */
  public static int hash4(int a, int b, int c, int d) {
    int h = SEED ^ a ^ b ^ c ^ d;
    int x = X;
    int y = Y;
    int[] m = mix(a, b, h); a = m[0]; b = m[1]; h = m[2];
    m = mix(c, d, h); c = m[0]; d = m[1]; h = m[2];
    m = mix(a, x, h); a = m[0]; x = m[1]; h = m[2];
    m = mix(y, b, h); y = m[0]; b = m[1]; h = m[2];
    m = mix(c, x, h); c = m[0]; x = m[1]; h = m[2];
    m = mix(y, d, h);
    return m[2];
  }

  /** One round of Jenkins' mix; returns the new (a, b, c). */
  static int[] mix(int a, int b, int c) {
    a -= b; a -= c; a ^= c >>> 13;
    b -= c; b -= a; b ^= a << 8;
    c -= a; c -= b; c ^= b >>> 13;
    a -= b; a -= c; a ^= c >>> 12;
    b -= c; b -= a; b ^= a << 16;
    c -= a; c -= b; c ^= b >>> 5;
    a -= b; a -= c; a ^= c >>> 3;
    b -= c; b -= a; b ^= a << 10;
    c -= a; c -= b; c ^= b >>> 15;
    return new int[] {a, b, c};
  }

  private static int u8(byte[] k, int i) {
    return k[i] & 0xff;
  }

  private static int le32(byte[] k, int i) {
    return u8(k, i) | u8(k, i + 1) << 8 | u8(k, i + 2) << 16 | u8(k, i + 3) << 24;
  }
}

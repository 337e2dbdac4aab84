/*
 * The LH and LL tables in this file reproduce numeric values from Ceph's
 * src/crush/crush_ln_table.h (Copyright (C) 2015 Intel Corporation), which is licensed
 * under the LGPL-2.1. This file is therefore distributed under the GNU Lesser General
 * Public License version 2.1 (LICENSE-LGPL-2.1 at the repository root); the rest of
 * BlobFS is not derived from it. See NOTICE and blobfs-locality/README.md.
 */
package io.blobfs.locality.crush;

/**
 * CRUSH's fixed-point logarithm: {@code ln(x)} returns about {@code 2^44 * log2(x + 1)} for
 * {@code x} in [0, 0xffff], computed exactly as Ceph does with two lookup tables so that
 * straw2 draws are bit-identical to Ceph's.
 *
 * <p>The reciprocal table {@code RH[k] = ceil(2^55 / (128 + k))} is computed here from its
 * definition. The log tables are data: Ceph's published {@code LH} and {@code LL} values do not
 * all follow their stated definitions ({@code 2^48 log2(1 + k/128)} and
 * {@code 2^48 log2(1 + k/2^15)}; many {@code LL} entries differ), and placements depend on the
 * exact values, so they are reproduced as constants (see the module README). Tests check RH
 * against reference entries and LH against its definition.
 */
public final class CrushLn {
  private CrushLn() {}

  static final long[] RH = new long[129];

  static {
    for (int k = 0; k <= 128; k++) {
      long d = 128 + k;
      RH[k] = ((1L << 55) + d - 1) / d;
    }
  }

  /** LH[k] ~ 2^48 * log2(1 + k/128), k = 0..128. */
  static final long[] LH = {
    0x000000000000L, 0x02dfca16dde1L, 0x05b9e5a170b4L, 0x088e68ea899aL, 0x0b5d69bac77eL,
    0x0e26fd5c8555L, 0x10eb389fa29fL, 0x13aa2fdd27f1L, 0x1663f6fac913L, 0x1918a16e4633L,
    0x1bc84240adabL, 0x1e72ec117fa5L, 0x2118b119b4f3L, 0x23b9a32eaa56L, 0x2655d3c4f15cL,
    0x28ed53f307eeL, 0x2b803473f7adL, 0x2e0e85a9de04L, 0x309857a05e07L, 0x331dba0efce1L,
    0x359ebc5b69d9L, 0x381b6d9bb29bL, 0x3a93dc9864b2L, 0x3d0817ce9cd4L, 0x3f782d7204d0L,
    0x41e42b6ec0c0L, 0x444c1f6b4c2dL, 0x46b016ca47c1L, 0x49101eac381cL, 0x4b6c43f1366aL,
    0x4dc4933a9337L, 0x501918ec6c11L, 0x5269e12f346eL, 0x54b6f7f1325aL, 0x570068e7ef5aL,
    0x59463f919deeL, 0x5b8887367433L, 0x5dc74ae9fbecL, 0x6002958c5871L, 0x623a71cb82c8L,
    0x646eea247c5cL, 0x66a008e4788cL, 0x68cdd829fd81L, 0x6af861e5fc7dL, 0x6d1fafdce20aL,
    0x6f43cba79e40L, 0x7164beb4a56dL, 0x73829248e961L, 0x759d4f80cba8L, 0x77b4ff5108d9L,
    0x79c9aa879d53L, 0x7bdb59cca388L, 0x7dea15a32c1bL, 0x7ff5e66a0ffeL, 0x81fed45cbccbL,
    0x8404e793fb81L, 0x86082806b1d5L, 0x88089d8a9e47L, 0x8a064fd50f2aL, 0x8c01467b94bbL,
    0x8df988f4ae80L, 0x8fef1e987409L, 0x91e20ea1393eL, 0x93d2602c2e5fL, 0x95c01a39fbd6L,
    0x97ab43af59f9L, 0x9993e355a4e5L, 0x9b79ffdb6c8bL, 0x9d5d9fd5010bL, 0x9f3ec9bcfb80L,
    0xa11d83f4c355L, 0xa2f9d4c51039L, 0xa4d3c25e68dcL, 0xa6ab52d99e76L, 0xa8808c384547L,
    0xaa5374652a1cL, 0xac241134c4e9L, 0xadf26865a8a1L, 0xafbe7fa0f04dL, 0xb1885c7aa982L,
    0xb35004723c46L, 0xb5157cf2d078L, 0xb6d8cb53b0caL, 0xb899f4d8ab63L, 0xba58feb2703aL,
    0xbc15edfeed32L, 0xbdd0c7c9a817L, 0xbf89910c1678L, 0xc1404eadf383L, 0xc2f5058593d9L,
    0xc4a7ba58377cL, 0xc65871da59ddL, 0xc80730b00016L, 0xc9b3fb6d0559L, 0xcb5ed69565afL,
    0xcd07c69d8702L, 0xceaecfea8085L, 0xd053f6d26089L, 0xd1f73f9c70c0L, 0xd398ae817906L,
    0xd53847ac00a6L, 0xd6d60f388e41L, 0xd8720935e643L, 0xda0c39a54804L, 0xdba4a47aa996L,
    0xdd3b4d9cf24bL, 0xded038e633f3L, 0xe0636a23e2eeL, 0xe1f4e5170d02L, 0xe384ad748f0eL,
    0xe512c6e54998L, 0xe69f35065448L, 0xe829fb693044L, 0xe9b31d93f98eL, 0xeb3a9f019750L,
    0xecc08321eb30L, 0xee44cd59ffabL, 0xefc781043579L, 0xf148a170700aL, 0xf2c831e44116L,
    0xf446359b1353L, 0xf5c2afc65447L, 0xf73da38d9d4aL, 0xf8b7140edbb1L, 0xfa2f045e7832L,
    0xfba577877d7dL, 0xfd1a708bbe11L, 0xfe8df263f957L, 0xffff00000000L,
  };

  /** LL[k] ~ 2^48 * log2(1 + k/2^15), k = 0..255, as Ceph ships them. */
  static final long[] LL = {
    0x0L, 0x2e2a60a00L, 0x70cb64ec5L, 0x9ef50ce67L, 0xcd1e588fdL,
    0xfb4747e9cL, 0x1296fdaf5eL, 0x1579811b58L, 0x185bfec2a1L, 0x1b3e76a552L,
    0x1e20e8c380L, 0x2103551d43L, 0x23e5bbb2b2L, 0x26c81c83e4L, 0x29aa7790f0L,
    0x2c8cccd9edL, 0x2f6f1c5ef2L, 0x3251662017L, 0x3533aa1d71L, 0x3815e8571aL,
    0x3af820cd26L, 0x3dda537faeL, 0x40bc806ec8L, 0x439ea79a8cL, 0x4680c90310L,
    0x4962e4a86cL, 0x4c44fa8ab6L, 0x4f270aaa06L, 0x5209150672L, 0x54eb19a013L,
    0x57cd1876fdL, 0x5aaf118b4aL, 0x5d9104dd0fL, 0x6072f26c64L, 0x6354da3960L,
    0x6636bc441aL, 0x6918988ca8L, 0x6bfa6f1322L, 0x6edc3fd79fL, 0x71be0ada35L,
    0x749fd01afdL, 0x77818f9a0cL, 0x7a6349577aL, 0x7d44fd535eL, 0x8026ab8dceL,
    0x83085406e3L, 0x85e9f6beb2L, 0x88cb93b552L, 0x8bad2aeadcL, 0x8e8ebc5f65L,
    0x9170481305L, 0x9451ce05d3L, 0x97334e37e5L, 0x9a14c8a953L, 0x9cf63d5a33L,
    0x9fd7ac4a9dL, 0xa2b07f3458L, 0xa59a78ea6aL, 0xa87bd699fbL, 0xab5d2e8970L,
    0xae3e80b8e3L, 0xb11fcd2869L, 0xb40113d818L, 0xb6e254c80aL, 0xb9c38ff853L,
    0xbca4c5690cL, 0xbf85f51a4aL, 0xc2671f0c26L, 0xc548433eb6L, 0xc82961b211L,
    0xcb0a7a664dL, 0xcdeb8d5b82L, 0xd0cc9a91c8L, 0xd3ada20933L, 0xd68ea3c1ddL,
    0xd96f9fbbdbL, 0xdc5095f744L, 0xdf31867430L, 0xe2127132b5L, 0xe4f35632eaL,
    0xe7d43574e6L, 0xeab50ef8c1L, 0xed95e2be90L, 0xf076b0c66cL, 0xf35779106aL,
    0xf6383b9ca2L, 0xf918f86b2aL, 0xfbf9af7c1aL, 0xfeda60cf88L, 0x101bb0c658cL,
    0x1049bb23e3cL, 0x1077c5259afL, 0x10a5cecb7fcL, 0x10d3d81593aL, 0x1101e103d7fL,
    0x112fe9964e4L, 0x115df1ccf7eL, 0x118bf9a7d64L, 0x11ba0126eadL, 0x11e8084a371L,
    0x12160f11bc6L, 0x1244157d7c3L, 0x12721b8d77fL, 0x12a02141b10L, 0x12ce269a28eL,
    0x12fc2b96e0fL, 0x132a3037daaL, 0x1358347d177L, 0x1386386698cL, 0x13b43bf45ffL,
    0x13e23f266e9L, 0x141041fcc5eL, 0x143e4477678L, 0x146c469654bL, 0x149a48598f0L,
    0x14c849c117cL, 0x14f64accf08L, 0x15244b7d1a9L, 0x15524bd1976L, 0x15804bca687L,
    0x15ae4b678f2L, 0x15dc4aa90ceL, 0x160a498ee31L, 0x16384819134L, 0x166646479ecL,
    0x1694441a870L, 0x16c24191cd7L, 0x16df6ca19bdL, 0x171e3b6d7aaL, 0x174c37d1e44L,
    0x177a33dab1cL, 0x17a82f87e49L, 0x17d62ad97e2L, 0x180425cf7feL, 0x182b07f3458L,
    0x18601aa8c19L, 0x188e148c046L, 0x18bc0e13b52L, 0x18ea073fd52L, 0x1918001065dL,
    0x1945f88568bL, 0x1973f09edf2L, 0x19a1e85ccaaL, 0x19cfdfbf2c8L, 0x19fdd6c6063L,
    0x1a2bcd71593L, 0x1a59c3c126eL, 0x1a87b9b570bL, 0x1ab5af4e380L, 0x1ae3a48b7e5L,
    0x1b11996d450L, 0x1b3f8df38d9L, 0x1b6d821e595L, 0x1b9b75eda9bL, 0x1bc96961803L,
    0x1bf75c79de3L, 0x1c254f36c51L, 0x1c534198365L, 0x1c81339e336L, 0x1caf2548bd9L,
    0x1cdd1697d67L, 0x1d0b078b7f5L, 0x1d38f823b9aL, 0x1d66e86086dL, 0x1d94d841e86L,
    0x1dc2c7c7df9L, 0x1df0b6f26dfL, 0x1e1ea5c194eL, 0x1e4c943555dL, 0x1e7a824db23L,
    0x1ea8700aab5L, 0x1ed65d6c42bL, 0x1f044a7279dL, 0x1f32371d51fL, 0x1f60236cccaL,
    0x1f8e0f60eb3L, 0x1fbbfaf9af3L, 0x1fe9e63719eL, 0x2017d1192ccL, 0x2045bb9fe94L,
    0x2073a5cb50dL, 0x209c06e6212L, 0x20cf791026aL, 0x20fd622997cL, 0x212b07f3458L,
    0x2159334a8d8L, 0x21871b52150L, 0x21b502fe517L, 0x21d6a73a78fL, 0x2210d144eeeL,
    0x223eb7df52cL, 0x226c9e1e713L, 0x229a84024bbL, 0x22c23679b4eL, 0x22f64eb83a8L,
    0x2324338a51bL, 0x235218012a9L, 0x237ffc1cc69L, 0x23a2c3b0ea4L, 0x23d13ee805bL,
    0x24035e9221fL, 0x243788faf25L, 0x24656b4e735L, 0x247ed646bfeL, 0x24c12ee3d98L,
    0x24ef1025c1aL, 0x251cf10c799L, 0x25492644d65L, 0x2578b1c85eeL, 0x25a6919d8f0L,
    0x25d13ee805bL, 0x26025036716L, 0x26296453882L, 0x265e0d62b53L, 0x268beb701f3L,
    0x26b9c92265eL, 0x26d32f798a9L, 0x271583758ebL, 0x2743601673bL, 0x27713c5c3b0L,
    0x279f1846e5fL, 0x27ccf3d6761L, 0x27e6580aecbL, 0x2828a9e44b3L, 0x28568462932L,
    0x287bdbf5255L, 0x28b2384de4aL, 0x28d13ee805bL, 0x29035e9221fL, 0x29296453882L,
    0x29699bdfb61L, 0x29902a37aabL, 0x29c54b864c9L, 0x29deabd1083L, 0x2a20f9c0bb5L,
    0x2a4c7605d61L, 0x2a7bdbf5255L, 0x2a96056dafcL, 0x2ac3daf14efL, 0x2af1b019ecaL,
    0x2b296453882L, 0x2b5d022d80fL, 0x2b8fa471cb3L, 0x2ba9012e713L, 0x2bd6d4901ccL,
    0x2c04a796cf6L, 0x2c327a428a6L, 0x2c61a5e8f4cL, 0x2c8e1e891f6L, 0x2cbbf023fc2L,
    0x2ce9c163e6eL, 0x2d179248e13L, 0x2d4562d2ec6L, 0x2d73330209dL, 0x2da102d63b0L,
    0x2dced24f814L,
  };

  /** {@code crush_ln}: input in [0, 0xffff]. */
  public static long ln(int xin) {
    int x = xin + 1;
    int iexpon = 15;
    if ((x & 0x18000) == 0) {
      int bits = Integer.numberOfLeadingZeros(x & 0x1FFFF) - 16;
      x <<= bits;
      iexpon = 15 - bits;
    }
    int index1 = (x >>> 8) << 1;
    int k = (index1 - 256) >>> 1;
    long rh = RH[k];
    long lh = LH[k];
    long xl64 = ((long) x * rh) >>> 48;
    long result = ((long) iexpon) << 44;
    int index2 = (int) (xl64 & 0xff);
    lh += LL[index2];
    lh >>>= (48 - 12 - 32);
    return result + lh;
  }
}

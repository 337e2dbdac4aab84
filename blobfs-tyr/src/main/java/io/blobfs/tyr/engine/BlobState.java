package io.blobfs.tyr.engine;

import io.blobfs.tyr.api.BlobStat;
import java.util.Arrays;

/**
 * One committed version of a blob: its size, the commit that made it, and its chunks.
 * Immutable: a commit makes a new state sharing the chunks it did not touch, and the old
 * one lives on for as long as a reader holds it (then the garbage collector reclaims it).
 */
final class BlobState {
  final String key;
  final long version;
  final long size;
  final long createdMillis;
  final long modifiedMillis;
  private final int chunkBytes;
  private final Chunk[] chunks;

  private BlobState(String key, long version, long size, long createdMillis,
      long modifiedMillis, int chunkBytes, Chunk[] chunks) {
    this.key = key;
    this.version = version;
    this.size = size;
    this.createdMillis = createdMillis;
    this.modifiedMillis = modifiedMillis;
    this.chunkBytes = chunkBytes;
    this.chunks = chunks;
  }

  /** The staged mark of a blob deleted by a commit that is not yet durable. */
  static BlobState deleted(String key, long version) {
    return new BlobState(key, version, -1, 0, 0, 1, new Chunk[0]);
  }

  boolean isDeleted() {
    return size < 0;
  }

  static BlobState fresh(String key, long version, long now, int chunkBytes) {
    return new BlobState(key, version, 0, now, now, chunkBytes, new Chunk[0]);
  }

  BlobStat stat() {
    return new BlobStat(key, true, size, version, modifiedMillis);
  }

  int chunkBytes() {
    return chunkBytes;
  }

  /** The chunk at {@code index}; chunks never written read as zeros. */
  Chunk chunk(int index) {
    Chunk c = index < chunks.length ? chunks[index] : null;
    return c == null ? Chunk.EMPTY : c;
  }

  int chunkCount() {
    return chunks.length;
  }

  /** This blob with {@code length} bytes at {@code offset} now stored at the given place. */
  BlobState withWrite(long offset, int length, long segment, long position, long newVersion,
      long now) {
    if (length == 0) {
      return new BlobState(key, newVersion, size, createdMillis, now, chunkBytes, chunks);
    }
    long end = offset + length;
    long newSize = Math.max(size, end);
    Chunk[] next = Arrays.copyOf(chunks, chunkIndex(newSize - 1) + 1);
    long at = offset;
    while (at < end) {
      int index = chunkIndex(at);
      int inChunk = (int) (at - (long) index * chunkBytes);
      int n = (int) Math.min(chunkBytes - inChunk, end - at);
      next[index] = chunk(index).overwrite(inChunk, n, segment, position + (at - offset));
      at += n;
    }
    return new BlobState(key, newVersion, newSize, createdMillis, now, chunkBytes, next);
  }

  /** This blob cut or zero-extended to {@code newSize}. */
  BlobState withSize(long newSize, long newVersion, long now) {
    if (newSize >= size) {
      return new BlobState(key, newVersion, newSize, createdMillis, now, chunkBytes, chunks);
    }
    int count = newSize == 0 ? 0 : chunkIndex(newSize - 1) + 1;
    Chunk[] next = Arrays.copyOf(chunks, Math.min(count, chunks.length));
    if (count > 0 && count <= chunks.length) {
      int inLast = (int) (newSize - (long) (count - 1) * chunkBytes);
      next[count - 1] = chunk(count - 1).cut(inLast);
    }
    return new BlobState(key, newVersion, newSize, createdMillis, now, chunkBytes, next);
  }

  int chunkIndex(long offset) {
    return Math.toIntExact(offset / chunkBytes);
  }

  void writeTo(java.io.DataOutputStream out) throws java.io.IOException {
    byte[] k = key.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    out.writeInt(chunkBytes);
    out.writeInt(k.length);
    out.write(k);
    out.writeLong(version);
    out.writeLong(size);
    out.writeLong(createdMillis);
    out.writeLong(modifiedMillis);
    out.writeInt(chunks.length);
    for (Chunk c : chunks) {
      Extent[] extents = c == null ? new Extent[0] : c.extents();
      out.writeInt(extents.length);
      for (Extent e : extents) {
        out.writeInt(e.start());
        out.writeInt(e.length());
        out.writeLong(e.segment());
        out.writeLong(e.position());
      }
    }
  }

  /** Reads what {@link #writeTo} wrote; {@code left}: the bytes the source has left. */
  static BlobState readFrom(java.io.DataInputStream in, java.util.function.LongSupplier left)
      throws java.io.IOException {
    int chunkBytes = in.readInt();
    int keyLength = in.readInt();
    if (chunkBytes <= 0 || keyLength < 0 || keyLength > 65535 || keyLength > left.getAsLong()) {
      throw new java.io.IOException("bad blob entry: chunk " + chunkBytes + ", key "
          + keyLength);
    }
    byte[] k = new byte[keyLength];
    in.readFully(k);
    String key = new String(k, java.nio.charset.StandardCharsets.UTF_8);
    long version = in.readLong();
    long size = in.readLong();
    long created = in.readLong();
    long modified = in.readLong();
    Chunk[] chunks = new Chunk[Checkpoint.count(in, Checkpoint.MIN_CHUNK_BYTES, left, "chunks")];
    for (int i = 0; i < chunks.length; i++) {
      Extent[] extents =
          new Extent[Checkpoint.count(in, Checkpoint.MIN_EXTENT_BYTES, left, "extents")];
      for (int j = 0; j < extents.length; j++) {
        extents[j] = new Extent(in.readInt(), in.readInt(), in.readLong(), in.readLong());
      }
      chunks[i] = Chunk.of(extents);
    }
    return new BlobState(key, version, size, created, modified, chunkBytes, chunks);
  }

  /** Every segment this state's bytes live in, with the bytes there. */
  void addLiveBytes(java.util.Map<Long, Long> bySegment) {
    for (Chunk c : chunks) {
      if (c != null) {
        for (Extent e : c.extents()) {
          bySegment.merge(e.segment(), (long) e.length(), Long::sum);
        }
      }
    }
  }
}

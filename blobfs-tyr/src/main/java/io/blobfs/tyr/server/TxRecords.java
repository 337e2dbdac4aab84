package io.blobfs.tyr.server;

import io.blobfs.tyr.protocol.MalformedFrameException;
import io.blobfs.tyr.protocol.Messages;
import io.blobfs.tyr.protocol.Opcode;
import io.blobfs.tyr.protocol.Request;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The durable records of cross-node transactions on one node, one small file each in
 * {@code <data-dir>/transactions}: {@code ID.prepared} for a part prepared here (the
 * prepare request as it came, plus the versions its keys had), {@code ID.commit} or
 * {@code ID.abort} for a decision this node took as coordinator, {@code NAME.replica} for
 * a share of another node's prepared part held here as a backup. Each is written whole to
 * a temporary file, forced, renamed into place and the directory forced, so after a crash
 * a record is there entire or not at all.
 *
 * <p>Why files and not a record type in the engine's log: the log's records are replayed
 * into blob states and reclaimed by compaction and checkpoints, which know nothing of a
 * part that is prepared but not applied; a prepared part would have to survive both. The
 * files keep the log's format and the single-node path unchanged, and there are only as
 * many as transactions in flight (decisions stay, see {@link Transactions}).
 */
final class TxRecords {
  /** Transaction ids are file names: letters, digits and dashes only. */
  static final Pattern ID = Pattern.compile("[0-9A-Za-z-]{1,64}");

  /**
   * A prepared part read back: the request, its keys' versions at prepare, and its place
   * in the order this node recorded parts and shares in ({@link #NO_SEQ} for a record
   * written before the place was recorded).
   */
  record Prepared(Request.Prepare request, Map<String, Long> versions, long seq) {}

  /** The place of a record written without one: before every record that has one. */
  static final long NO_SEQ = Long.MIN_VALUE;

  /**
   * The version recorded for a key of a part reserved behind another part of that key
   * (shares of one key taken over together): the version its turn will start from is not
   * known yet (the parts ahead apply first), so the part's record cannot tell "applied"
   * from its keys' versions until it is rewritten, at its turn, before it applies.
   */
  static final long UNKNOWN_VERSION = Long.MIN_VALUE;

  /** {@code keys}, each with {@link #UNKNOWN_VERSION}. */
  static Map<String, Long> unknownVersions(java.util.Collection<String> keys) {
    Map<String, Long> out = new LinkedHashMap<>();
    for (String k : keys) {
      out.put(k, UNKNOWN_VERSION);
    }
    return out;
  }

  /** Whether {@code versions} were recorded at the part's turn (none unknown). */
  static boolean known(Map<String, Long> versions) {
    return !versions.containsValue(UNKNOWN_VERSION);
  }

  private final Path dir;

  TxRecords(Path dataDir) throws IOException {
    this.dir = dataDir.resolve("transactions");
    // Owner only, as every file of the node: a prepared part holds blob data.
    if (posix()) {
      Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rwx------")));
    } else {
      Files.createDirectories(dir);
    }
  }

  /**
   * Encodes a prepare, its versions and its place ({@code seq}: the order in which the
   * shares of one key were prepared on their primary must survive a restart, for the
   * takeover applies them in it), and decodes them back from heap bytes: the copy the node
   * keeps, independent of the request frame's buffers. The place comes last: a record
   * written before it was added ends after the versions, and reads as {@link #NO_SEQ}.
   */
  static byte[] encode(Request.Prepare p, Map<String, Long> versions, long seq) {
    ByteBuf req = Messages.encode(p, ByteBufAllocator.DEFAULT);
    try {
      ByteBuf out = Unpooled.buffer(16 + req.readableBytes() + 32 * versions.size());
      out.writeInt(req.readableBytes()).writeBytes(req);
      out.writeInt(versions.size());
      for (Map.Entry<String, Long> e : versions.entrySet()) {
        byte[] k = e.getKey().getBytes(StandardCharsets.UTF_8);
        out.writeShort(k.length).writeBytes(k).writeLong(e.getValue());
      }
      out.writeLong(seq);
      byte[] bytes = new byte[out.readableBytes()];
      out.readBytes(bytes);
      return bytes;
    } finally {
      req.release();
    }
  }

  static Prepared decode(byte[] bytes) throws IOException {
    ByteBuf in = Unpooled.wrappedBuffer(bytes);
    try {
      int n = in.readInt();
      Request r = Messages.decodeRequest(Opcode.PREPARE, in.readSlice(n));
      Map<String, Long> versions = new LinkedHashMap<>();
      for (int i = in.readInt(); i > 0; i--) {
        byte[] k = new byte[in.readUnsignedShort()];
        in.readBytes(k);
        versions.put(new String(k, StandardCharsets.UTF_8), in.readLong());
      }
      long seq = in.isReadable() ? in.readLong() : NO_SEQ;
      if (in.isReadable()) {
        throw new IOException("malformed prepared-transaction record: "
            + in.readableBytes() + " bytes past its end");
      }
      return new Prepared((Request.Prepare) r, versions, seq);
    } catch (IndexOutOfBoundsException | MalformedFrameException e) {
      throw new IOException("malformed prepared-transaction record: " + e.getMessage(), e);
    }
  }

  void writePrepared(String txId, byte[] record) throws IOException {
    writeWhole(dir.resolve(txId + ".prepared"), record);
  }

  void deletePrepared(String txId) throws IOException {
    Files.deleteIfExists(dir.resolve(txId + ".prepared"));
  }

  /** Every prepared record, as written, by the name it was written under. */
  Map<String, byte[]> readAllPrepared() throws IOException {
    return readAll(".prepared");
  }

  /**
   * A share of another node's prepared part held here as its backup ({@code name}: the
   * transaction id and a suffix for the share), until it is resolved or taken over.
   */
  void writeReplica(String name, byte[] record) throws IOException {
    writeWhole(dir.resolve(name + ".replica"), record);
  }

  void deleteReplica(String name) throws IOException {
    Files.deleteIfExists(dir.resolve(name + ".replica"));
  }

  Map<String, byte[]> readAllReplicas() throws IOException {
    return readAll(".replica");
  }

  /**
   * As backup (issue 13, bug 3): the rebase a replicated write carries, written and forced
   * before the write is handed to the engine, deleted once the rebased shares' records
   * are written again (before the batch's answer). Read back at restart: a crash between
   * the write's log and those records leaves the shares at their old versions, and
   * recover() rebases them to their keys' current ones (Transactions.recover). {@code
   * parts}: transaction id to keys. Returns the intent's name.
   */
  String writeRebaseIntent(Map<String, java.util.List<String>> parts) throws IOException {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    java.io.DataOutputStream out = new java.io.DataOutputStream(bytes);
    out.writeInt(parts.size());
    for (Map.Entry<String, java.util.List<String>> e : parts.entrySet()) {
      out.writeUTF(e.getKey());
      out.writeInt(e.getValue().size());
      for (String k : e.getValue()) {
        out.writeUTF(k);
      }
    }
    out.flush();
    String name = java.util.UUID.randomUUID().toString();
    writeWhole(dir.resolve(name + ".rebase"), bytes.toByteArray());
    return name;
  }

  /**
   * Deletes an intent and forces the directory (issue 13, bug 3; review of b3af1b1, MF2):
   * a delete a power loss could undo brings the intent back at the next restart, after
   * later writes of its keys, and recover() would then rebase its shares over them.
   */
  void deleteRebaseIntent(String name) throws IOException {
    Files.deleteIfExists(dir.resolve(name + ".rebase"));
    forceDirectory();
  }

  /** Every rebase intent left by a crash, by name: transaction id to keys. */
  Map<String, Map<String, java.util.List<String>>> readRebaseIntents() throws IOException {
    Map<String, Map<String, java.util.List<String>>> out = new LinkedHashMap<>();
    for (Map.Entry<String, byte[]> f : readAll(".rebase").entrySet()) {
      java.io.DataInputStream in = new java.io.DataInputStream(
          new java.io.ByteArrayInputStream(f.getValue()));
      Map<String, java.util.List<String>> parts = new LinkedHashMap<>();
      for (int n = in.readInt(); n > 0; n--) {
        String id = in.readUTF();
        java.util.List<String> keys = new java.util.ArrayList<>();
        for (int m = in.readInt(); m > 0; m--) {
          keys.add(in.readUTF());
        }
        parts.put(id, keys);
      }
      out.put(f.getKey(), parts);
    }
    return out;
  }

  private Map<String, byte[]> readAll(String suffix) throws IOException {
    Map<String, byte[]> out = new LinkedHashMap<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*" + suffix)) {
      for (Path f : files) {
        String name = f.getFileName().toString();
        out.put(name.substring(0, name.length() - suffix.length()), Files.readAllBytes(f));
      }
    }
    return out;
  }

  /** Records the coordinator's decision; the caller has checked that none exists. */
  void writeDecision(String txId, boolean commit) throws IOException {
    writeWhole(dir.resolve(txId + (commit ? ".commit" : ".abort")), new byte[0]);
  }

  /** The decision taken here: true commit, false abort, null none. */
  Boolean decision(String txId) {
    if (Files.exists(dir.resolve(txId + ".commit"))) {
      return true;
    }
    return Files.exists(dir.resolve(txId + ".abort")) ? false : null;
  }

  private boolean posix() {
    return dir.getFileSystem().supportedFileAttributeViews().contains("posix");
  }

  /**
   * Durable.replace. Its directory force is strict for any directory that
   * synced before (ring-epoch2 review M1): a prepare or a decision (a .commit is empty, its
   * name is the whole record) must not be acknowledged when its name may not survive a
   * crash, or a participant asking after the restart would be told "presumed abort" of a
   * transaction the client was told COMMITTED. Only a file system that refused its very
   * first directory force (cannot sync directories at all, as for the log these records
   * complement) is tolerated.
   */
  private void writeWhole(Path target, byte[] bytes) throws IOException {
    io.blobfs.tyr.engine.Durable.replace(target, bytes, true);
  }

  private void forceDirectory() throws IOException {
    io.blobfs.tyr.engine.Durable.forceDirectory(dir);
  }
}

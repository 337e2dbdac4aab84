package io.blobfs.hadoop;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.blobfs.store.memory.InMemoryBlobStore;
import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathIsNotEmptyDirectoryException;
import org.apache.hadoop.fs.RemoteIterator;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Bad input gets a clear, typed exception and leaves the store exactly as it was:
 * same blobs, same bytes, same listing.
 */
class BadInputTest {
  /** Small stripes and inline threshold: the seeded big file lies in several data blobs. */
  private static final int STRIPE = 4096;
  private static final int MAX_KEY = 64;
  /** A path component long enough to push any key over {@link #MAX_KEY}. */
  private static final String LONG = "x".repeat(70);

  private final List<String> stores = new ArrayList<>();
  private final List<FileSystem> opened = new ArrayList<>();
  private String store;
  private FileSystem fs;
  private byte[] small;
  private byte[] big;

  @AfterEach
  void tearDown() throws IOException {
    for (FileSystem f : opened) {
      f.close();
    }
    for (String s : stores) {
      InMemoryBlobStoreProvider.drop(s);
    }
  }

  private static Configuration baseConf() {
    Configuration conf = new Configuration();
    conf.set("fs.blob.impl", BlobFileSystem.class.getName());
    return conf;
  }

  private String newStoreName(String tag) {
    String name = "bad-" + tag + "-" + UUID.randomUUID().toString().substring(0, 8);
    stores.add(name);
    return name;
  }

  private FileSystem open(String storeName, Configuration conf) throws IOException {
    FileSystem f = FileSystem.newInstance(URI.create("blob://" + storeName + "/"), conf);
    opened.add(f);
    return f;
  }

  /**
   * A store with a 64-byte key limit, seeded with /dir/a.txt (inline), /dir/sub/big.bin
   * (several data blobs), /file.txt, and, with markers kept, the empty directory /empty.
   */
  private void seed(String markers) throws IOException {
    store = newStoreName(markers);
    Configuration conf = baseConf();
    conf.set("fs.blob.directory.markers", markers);
    conf.set("fs.blob.store." + store + ".max-key-bytes", Integer.toString(MAX_KEY));
    conf.setLong("fs.blob.stripe.size", STRIPE);
    conf.setLong("fs.blob.inline.threshold", 1024);
    fs = open(store, conf);
    small = "small file\n".getBytes(UTF_8);
    big = new byte[3 * STRIPE + 100];
    new Random(7).nextBytes(big);
    write(p("/dir/a.txt"), small);
    write(p("/dir/sub/big.bin"), big);
    write(p("/file.txt"), small);
    if (markers.equals("keep")) {
      assertThat(fs.mkdirs(p("/empty"))).isTrue();
    }
    assertThat(dataKeys()).hasSize(4);
  }

  private Path p(String path) {
    return new Path("blob://" + store + path);
  }

  private void write(Path path, byte[] bytes) throws IOException {
    try (FSDataOutputStream out = fs.create(path, false)) {
      out.write(bytes);
    }
  }

  private byte[] read(Path path) throws IOException {
    FileStatus st = fs.getFileStatus(path);
    byte[] buf = new byte[(int) st.getLen()];
    try (FSDataInputStream in = fs.open(path)) {
      in.readFully(0, buf);
    }
    return buf;
  }

  private InMemoryBlobStore mem() {
    return InMemoryBlobStoreProvider.named(store);
  }

  private List<String> keys(String prefix) throws IOException {
    return mem().scan(prefix, null, 1000).keys();
  }

  private List<String> dataKeys() throws IOException {
    return keys("d/");
  }

  /** What must not change: blob count, bytes, every key and the recursive listing. */
  private record Snapshot(int blobs, long bytes, List<String> keys, List<String> listing) {}

  private Snapshot snapshot() throws IOException {
    List<String> listing = new ArrayList<>();
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(p("/"), true);
    while (it.hasNext()) {
      LocatedFileStatus st = it.next();
      listing.add(st.getPath().toUri().getPath() + " " + st.getLen());
    }
    listing.sort(null);
    return new Snapshot(mem().blobCount(), mem().totalBytes(), keys(""), listing);
  }

  /** Runs {@code call}, expects a {@code type}, and checks the store did not change. */
  private <T extends Throwable> T rejects(Class<T> type, ThrowingCallable call)
      throws IOException {
    Snapshot before = snapshot();
    Throwable t = catchThrowable(call);
    assertThat(t).as("thrown").isInstanceOf(type);
    assertThat(t.getMessage()).as("message of %s", t).isNotBlank();
    assertThat(snapshot()).as("store after %s", t).isEqualTo(before);
    return type.cast(t);
  }

  private void assertSeedIntact() throws IOException {
    assertThat(read(p("/dir/a.txt"))).isEqualTo(small);
    assertThat(read(p("/dir/sub/big.bin"))).isEqualTo(big);
    assertThat(read(p("/file.txt"))).isEqualTo(small);
  }

  // ------------------------------------------------------------------ bad paths

  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void controlCharactersInPathsAreRejected(String markers) throws IOException {
    seed(markers);
    for (String bad : List.of("/a\u0001b", "/dir/tab\there", "/dir/nl\nx/file",
        "/dir/del\u007f", "/dir/\u001b[31mred")) {
      Path path = p(bad);
      IllegalArgumentException e = rejects(IllegalArgumentException.class,
          () -> fs.create(path, true).close());
      assertThat(e).isInstanceOf(org.apache.hadoop.fs.InvalidPathException.class)
          .hasMessageContaining("control character");
      rejects(IllegalArgumentException.class, () -> fs.mkdirs(path));
      rejects(IllegalArgumentException.class, () -> fs.getFileStatus(path));
      rejects(IllegalArgumentException.class, () -> fs.open(path).close());
      rejects(IllegalArgumentException.class, () -> fs.delete(path, true));
      rejects(IllegalArgumentException.class, () -> fs.listStatus(path));
      rejects(IllegalArgumentException.class, () -> fs.rename(p("/file.txt"), path));
      rejects(IllegalArgumentException.class, () -> fs.rename(p("/dir"), path));
      rejects(IllegalArgumentException.class, () -> fs.rename(path, p("/ok")));
    }
    assertSeedIntact();
  }

  /**
   * A lone UTF-16 surrogate becomes '?' in the keys of RADOS and Týr: the two paths below
   * would be one file with "/dir/a?". Refused on every store, as the namespace checks it.
   */
  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void loneSurrogatesInPathsAreRejected(String markers) throws IOException {
    seed(markers);
    write(p("/dir/a?"), small);
    for (String bad : List.of("/dir/a\uD800", "/dir/a\uDC00", "/dir/\uD800x/file")) {
      Path path = p(bad);
      IllegalArgumentException e = rejects(IllegalArgumentException.class,
          () -> fs.create(path, true).close());
      assertThat(e).isInstanceOf(org.apache.hadoop.fs.InvalidPathException.class)
          .hasMessageContaining("surrogate");
      rejects(org.apache.hadoop.fs.InvalidPathException.class, () -> fs.mkdirs(path));
      rejects(org.apache.hadoop.fs.InvalidPathException.class, () -> fs.open(path).close());
      rejects(org.apache.hadoop.fs.InvalidPathException.class,
          () -> fs.rename(p("/file.txt"), path));
      rejects(org.apache.hadoop.fs.InvalidPathException.class, () -> fs.rename(p("/dir"), path));
    }
    assertThat(read(p("/dir/a?"))).isEqualTo(small);
    assertSeedIntact();
  }

  /**
   * The namespace replaces control characters by '?' in its message so that a bad name
   * cannot garble a terminal or a log; the exception Hadoop callers get should keep that.
   */
  @Test
  void controlCharacterMessagesAreSanitised() throws IOException {
    seed("none");
    Path path = p("/dir/\u001b[2Jnl\nx");
    for (ThrowingCallable call : List.<ThrowingCallable>of(() -> fs.create(path, true),
        () -> fs.getFileStatus(path), () -> fs.mkdirs(path))) {
      IllegalArgumentException e = rejects(IllegalArgumentException.class, call);
      assertThat(e.getMessage()).as("message").doesNotContain("\u001b", "\n");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void keysOverTheStoreLimitAreRejected(String markers) throws IOException {
    seed(markers);
    Path longFile = p("/dir/" + LONG);
    Path longDir = p("/" + LONG + "/sub");
    rejects(IllegalArgumentException.class, () -> fs.create(longFile, true).close());
    rejects(IllegalArgumentException.class, () -> fs.create(longFile, false));
    rejects(IllegalArgumentException.class, () -> fs.mkdirs(longDir));
    rejects(IllegalArgumentException.class, () -> fs.getFileStatus(longFile));
    rejects(IllegalArgumentException.class, () -> fs.exists(longFile));
    rejects(IllegalArgumentException.class, () -> fs.open(longFile));
    rejects(IllegalArgumentException.class, () -> fs.delete(longDir, true));
    rejects(IllegalArgumentException.class, () -> fs.listStatus(longDir));

    // rename: the destination is checked before anything moves; the source stays
    IllegalArgumentException e = rejects(IllegalArgumentException.class,
        () -> fs.rename(p("/file.txt"), longFile));
    assertThat(e).hasMessageContaining("over the store's limit of " + MAX_KEY);
    rejects(IllegalArgumentException.class, () -> fs.rename(p("/dir/sub/big.bin"), longFile));
    rejects(IllegalArgumentException.class, () -> fs.rename(p("/dir"), longDir));
    // the destination itself is short, but a key under it would not be
    String almost = "/" + "y".repeat(MAX_KEY - 8);
    assertThat(("n" + almost + "/").length()).isLessThanOrEqualTo(MAX_KEY);
    rejects(IllegalArgumentException.class, () -> fs.rename(p("/dir"), p(almost)));
    // a file renamed into a directory, where dir + its name is too long
    write(p(almost + "/f"), small);
    assertThat(("n" + almost + "/big.bin").length()).isGreaterThan(MAX_KEY);
    rejects(IllegalArgumentException.class,
        () -> fs.rename(p("/dir/sub/big.bin"), p(almost)));
    assertThat(fs.delete(p(almost), true)).isTrue();
    assertSeedIntact();
  }

  // ------------------------------------------------------------------ opens and creates

  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void openOfMissingFileOrDirectory(String markers) throws IOException {
    seed(markers);
    FileNotFoundException e = rejects(FileNotFoundException.class,
        () -> fs.open(p("/dir/missing")));
    assertThat(e).hasMessageContaining("/dir/missing");
    rejects(FileNotFoundException.class, () -> fs.open(p("/nodir/missing")));
    rejects(FileNotFoundException.class, () -> fs.open(p("/dir")));
    rejects(FileNotFoundException.class, () -> fs.open(p("/dir/sub")));
    rejects(FileNotFoundException.class, () -> fs.open(p("/")));
    if (markers.equals("keep")) {
      rejects(FileNotFoundException.class, () -> fs.open(p("/empty")));
    }
    // the builder API fails the same way (at once or when its future is joined)
    Throwable t = catchThrowable(() -> fs.openFile(p("/dir")).build().get());
    assertThat(t).isNotNull();
    Throwable cause = t instanceof java.util.concurrent.ExecutionException ? t.getCause() : t;
    assertThat(cause).isInstanceOf(FileNotFoundException.class);
  }

  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void createOverExistingFileOrDirectory(String markers) throws IOException {
    seed(markers);
    FileAlreadyExistsException e = rejects(FileAlreadyExistsException.class,
        () -> fs.create(p("/file.txt"), false));
    assertThat(e).hasMessageContaining("/file.txt");
    rejects(FileAlreadyExistsException.class, () -> fs.create(p("/dir/sub/big.bin"), false));
    rejects(FileAlreadyExistsException.class, () -> fs.create(p("/dir"), false));
    rejects(FileAlreadyExistsException.class, () -> fs.create(p("/dir"), true));
    rejects(FileAlreadyExistsException.class, () -> fs.create(p("/dir/sub"), true));
    rejects(FileAlreadyExistsException.class, () -> fs.create(p("/"), true));
    if (markers.equals("keep")) {
      rejects(FileAlreadyExistsException.class, () -> fs.create(p("/empty"), true));
      // mkdirs over a file
      rejects(FileAlreadyExistsException.class, () -> fs.mkdirs(p("/file.txt")));
    }
    assertSeedIntact();
  }

  /** With markers dropped too: mkdirs writes nothing, but does not say yes over a file. */
  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void mkdirsOverOrUnderAFile(String markers) throws IOException {
    seed(markers);
    rejects(FileAlreadyExistsException.class, () -> fs.mkdirs(p("/file.txt")));
    rejects(org.apache.hadoop.fs.ParentNotDirectoryException.class,
        () -> fs.mkdirs(p("/file.txt/sub")));
    rejects(org.apache.hadoop.fs.ParentNotDirectoryException.class,
        () -> fs.mkdirs(p("/dir/sub/big.bin/a/b")));
    assertThat(fs.getFileStatus(p("/file.txt")).isFile()).isTrue();
    assertSeedIntact();
  }

  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void nonRecursiveDeleteOfNonEmptyDirectory(String markers) throws IOException {
    seed(markers);
    PathIsNotEmptyDirectoryException e = rejects(PathIsNotEmptyDirectoryException.class,
        () -> fs.delete(p("/dir"), false));
    assertThat(e).hasMessageContaining("/dir");
    rejects(PathIsNotEmptyDirectoryException.class, () -> fs.delete(p("/dir/sub"), false));
    rejects(PathIsNotEmptyDirectoryException.class, () -> fs.delete(p("/"), false));
    assertSeedIntact();
  }

  // ------------------------------------------------------------------ streams

  @ParameterizedTest
  @ValueSource(strings = {"/file.txt", "/dir/sub/big.bin"})
  void badSeeksAndReads(String file) throws IOException {
    seed("keep");
    Path path = p(file);
    long len = fs.getFileStatus(path).getLen();
    Snapshot before = snapshot();
    try (FSDataInputStream in = fs.open(path)) {
      assertThat(catchThrowable(() -> in.seek(-1))).isInstanceOf(EOFException.class);
      assertThat(in.getPos()).isZero();
      assertThat(catchThrowable(() -> in.seek(len + 1))).isInstanceOf(EOFException.class);
      assertThat(in.getPos()).isZero();
      in.seek(len); // at EOF is allowed
      assertThat(in.read()).isEqualTo(-1);
      in.seek(0);

      byte[] buf = new byte[8];
      assertThat(catchThrowable(() -> in.read(-1, buf, 0, 1)))
          .isInstanceOf(EOFException.class);
      assertThat(catchThrowable(() -> in.readFully(-1, buf)))
          .isInstanceOf(EOFException.class);
      assertThat(catchThrowable(() -> in.readFully(len - 4, buf)))
          .isInstanceOf(EOFException.class);
      assertThat(catchThrowable(() -> in.readFully(len, buf, 0, 1)))
          .isInstanceOf(EOFException.class);
      // a sequential readFully past the end (DataInputStream's) too
      in.seek(len - 4);
      assertThat(catchThrowable(() -> in.readFully(buf))).isInstanceOf(EOFException.class);
      // and the stream still works
      in.seek(0);
      assertThat(in.read()).isEqualTo(fileBytes(file)[0] & 0xff);
    }
    assertThat(snapshot()).isEqualTo(before);
  }

  private byte[] fileBytes(String file) {
    return file.endsWith(".bin") ? big : small;
  }

  /** position + length past Long.MAX_VALUE must not wrap into a "valid" range. */
  @ParameterizedTest
  @ValueSource(strings = {"/file.txt", "/dir/sub/big.bin"})
  void positionedReadsNearLongMaxValue(String file) throws IOException {
    seed("keep");
    byte[] buf = new byte[8];
    try (FSDataInputStream in = fs.open(p(file))) {
      for (long at : List.of(Long.MAX_VALUE, Long.MAX_VALUE - 4, Long.MAX_VALUE - 7)) {
        assertThat(catchThrowable(() -> in.readFully(at, buf))).as("readFully at %d", at)
            .isInstanceOf(EOFException.class);
        assertThat(in.read(at, buf, 0, buf.length)).as("read at %d", at).isEqualTo(-1);
      }
      in.readFully(0, buf);
      assertThat(buf).isEqualTo(java.util.Arrays.copyOf(fileBytes(file), 8));
    }
  }

  /** A length that overflows start + len means "to the end", as any large length does. */
  @Test
  void blockLocationsWithAnOverflowingRange() throws IOException {
    seed("keep");
    FileStatus st = fs.getFileStatus(p("/dir/sub/big.bin"));
    assertThat(fs.getFileBlockLocations(st, STRIPE + 10, Long.MAX_VALUE))
        .extracting(org.apache.hadoop.fs.BlockLocation::getOffset)
        .containsExactly((long) STRIPE, 2L * STRIPE, 3L * STRIPE);
    assertThat(fs.getFileBlockLocations(st, 0, Long.MAX_VALUE - 1)).hasSize(4);
    assertThat(fs.getFileBlockLocations(fs.getFileStatus(p("/file.txt")), 3,
        Long.MAX_VALUE)).hasSize(1);
  }

  @Test
  void readAfterClose() throws IOException {
    seed("keep");
    for (String file : List.of("/file.txt", "/dir/sub/big.bin")) {
      FSDataInputStream in = fs.open(p(file));
      in.close();
      in.close(); // idempotent
      assertThat(catchThrowable(in::read)).isInstanceOf(IOException.class)
          .hasMessageContaining("closed");
      assertThat(catchThrowable(() -> in.read(new byte[4], 0, 4)))
          .isInstanceOf(IOException.class);
      assertThat(catchThrowable(() -> in.read(0, new byte[4], 0, 4)))
          .isInstanceOf(IOException.class);
      assertThat(catchThrowable(() -> in.readFully(0, new byte[4])))
          .isInstanceOf(IOException.class);
      assertThat(catchThrowable(() -> in.seek(1))).isInstanceOf(IOException.class);
    }
  }

  @Test
  void writeAfterClose() throws IOException {
    seed("keep");
    FSDataOutputStream out = fs.create(p("/dir/new.txt"), false);
    out.write(small);
    out.close();
    Snapshot before = snapshot();
    assertThat(catchThrowable(() -> out.write(1))).isInstanceOf(IOException.class)
        .hasMessageContaining("closed");
    assertThat(catchThrowable(() -> out.write(big))).isInstanceOf(IOException.class);
    out.close(); // idempotent
    assertThat(snapshot()).isEqualTo(before);
    assertThat(read(p("/dir/new.txt"))).isEqualTo(small);
  }

  @Test
  void blockLocationsWithNegativeStartOrLength() throws IOException {
    seed("keep");
    FileStatus st = fs.getFileStatus(p("/dir/sub/big.bin"));
    rejects(IllegalArgumentException.class, () -> fs.getFileBlockLocations(st, -1, 10));
    rejects(IllegalArgumentException.class, () -> fs.getFileBlockLocations(st, 0, -1));
    rejects(IllegalArgumentException.class,
        () -> fs.getFileBlockLocations(p("/dir/sub/big.bin"), -1, 10));
    rejects(IllegalArgumentException.class,
        () -> fs.getFileBlockLocations(p("/file.txt"), -5, 1));
    assertThat(fs.getFileBlockLocations(st, 0, st.getLen())).hasSize(4);
  }

  // ------------------------------------------------------------------ failed writers

  /**
   * Two writers of one path with overwrite=false: the one to close second loses. Its
   * close fails with Hadoop's FileAlreadyExistsException, the file holds the winner's
   * bytes, and none of the loser's data blobs is left.
   */
  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void writerWhoseCloseFailsLeavesNothing(String markers) throws IOException {
    seed(markers);
    Path path = p("/dir/race.bin");
    byte[] loser = new byte[5 * STRIPE + 10];
    new Random(1).nextBytes(loser);
    byte[] winner = new byte[2 * STRIPE + 3];
    new Random(2).nextBytes(winner);
    Snapshot beforeRace = snapshot();
    List<String> dataBefore = dataKeys();

    FSDataOutputStream first = fs.create(path, false);
    first.write(loser); // whole stripes are already sent to data blobs
    FSDataOutputStream second = fs.create(path, false);
    second.write(winner);
    second.close();
    assertThat(read(path)).isEqualTo(winner);
    List<String> listingAfterWinner = snapshot().listing();

    Throwable t = catchThrowable(first::close);
    assertThat(t).as("close of the losing writer").isInstanceOf(IOException.class);
    // nothing of the loser is visible, and its data blobs are gone
    assertThat(snapshot().listing()).isEqualTo(listingAfterWinner);
    assertThat(read(path)).isEqualTo(winner);
    assertThat(fs.getFileStatus(path).getLen()).isEqualTo(winner.length);
    List<String> added = new ArrayList<>(dataKeys());
    added.removeAll(dataBefore);
    assertThat(added).as("data blobs after the race").hasSize(3)
        .allMatch(k -> k.startsWith("d/"));
    assertThat(added.stream().map(k -> k.substring(0, k.lastIndexOf('/'))).distinct())
        .as("one file id: the winner's").hasSize(1);
    // once the file is deleted the store is as before the race: no orphans
    assertThat(fs.delete(path, false)).isTrue();
    assertThat(dataKeys()).isEqualTo(dataBefore);
    assertThat(snapshot()).isEqualTo(beforeRace);
    // the failure is reported with Hadoop's type, as every other create conflict is
    assertThat(t).isInstanceOf(FileAlreadyExistsException.class)
        .hasMessageContaining("/dir/race.bin");
  }

  /** The same with the loser's bytes still all in its buffer (an inline-sized file). */
  @Test
  void losingSmallWriterLeavesNothing() throws IOException {
    seed("none");
    Path path = p("/race-small.txt");
    Snapshot before = snapshot();
    FSDataOutputStream first = fs.create(path, false);
    first.write("loser".getBytes(UTF_8));
    write(path, small);
    Throwable t = catchThrowable(first::close);
    assertThat(t).isInstanceOf(IOException.class);
    assertThat(read(path)).isEqualTo(small);
    assertThat(fs.delete(path, false)).isTrue();
    assertThat(snapshot()).isEqualTo(before);
    assertThat(t).isInstanceOf(FileAlreadyExistsException.class);
  }

  // ------------------------------------------------------------------ configuration

  private IllegalArgumentException badConfig(String storeName, Configuration conf) {
    Throwable t = catchThrowable(() -> open(storeName, conf));
    assertThat(t).isInstanceOf(IllegalArgumentException.class);
    return (IllegalArgumentException) t;
  }

  @Test
  void unknownStoreType() {
    String name = newStoreName("type");
    Configuration conf = baseConf();
    conf.set("fs.blob.store." + name + ".type", "nosuch");
    assertThat(badConfig(name, conf)).hasMessageContaining("nosuch")
        .hasMessageContaining("memory");
    // the default type of profiles that name none is checked the same way
    Configuration conf2 = baseConf();
    conf2.set("fs.blob.default.store.type", "nosuch2");
    assertThat(badConfig(newStoreName("type2"), conf2)).hasMessageContaining("nosuch2");
  }

  @ParameterizedTest
  @ValueSource(strings = {"stripe.size=12zz", "directory.markers=maybe",
      "read.policy=bogus", "permission=999", "permission=rwx", "write.buffer.size=-1",
      "inline.threshold=1t", "list.page.size=0", "read.buffer.size=4q",
      "read.buffer.size=1", "read.buffer.size=4095", "read.random.min=1",
      "writer.lease=30s", "writer.lease=soon", "rename.lease=500ms", "rename.lease=soon",
      // above the writer lease, which caps it: refused rather than silently shortened
      "rename.lease=2d"})
  void malformedFileSystemValuesNameTheKey(String setting) {
    String key = "fs.blob." + setting.substring(0, setting.indexOf('='));
    String value = setting.substring(setting.indexOf('=') + 1);
    Configuration conf = baseConf();
    conf.set(key, value);
    assertThat(badConfig(newStoreName("value"), conf)).hasMessageContaining(key);
  }

  /**
   * The per-file buffer size is held to read.buffer.size's range: a tiny one makes a
   * store call per few bytes, one past an int wrapped.
   */
  @Test
  void openFileBufferSizeOutOfRangeNamesTheKey() throws Exception {
    seed("none");
    String key = org.apache.hadoop.fs.Options.OpenFileOptions.FS_OPTION_OPENFILE_BUFFER_SIZE;
    for (long bad : List.of(1L, 4095L, (1L << 30) + 1, (long) Integer.MAX_VALUE)) {
      Throwable t = catchThrowable(
          () -> fs.openFile(p("/file.txt")).optLong(key, bad).build().get().close());
      if (t instanceof java.util.concurrent.ExecutionException) {
        t = t.getCause();
      }
      assertThat(t).as("buffer %d", bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(key);
    }
    // Hadoop's builder reads the option as an int; a value past one reaches a file system
    // only through openFileWithOptions (FileContext, a wrapping file system).
    Configuration options = new Configuration(false);
    options.set(key, "3g");
    org.apache.hadoop.fs.impl.OpenFileParameters huge =
        new org.apache.hadoop.fs.impl.OpenFileParameters()
            .withMandatoryKeys(java.util.Set.of()).withOptionalKeys(java.util.Set.of(key))
            .withOptions(options);
    assertThat(catchThrowable(() -> ((BlobFileSystem) fs)
        .openFileWithOptions(p("/file.txt"), huge).get().close()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(key);
    try (FSDataInputStream in = fs.openFile(p("/file.txt")).optLong(key, 4096).build().get()) {
      byte[] buf = new byte[small.length];
      in.readFully(buf);
      assertThat(buf).isEqualTo(small);
    }
  }

  /** The same keys set under a store profile: the message names the key that was set. */
  @ParameterizedTest
  @ValueSource(strings = {"stripe.size=12zz", "directory.markers=maybe",
      "read.policy=bogus", "permission=999"})
  void malformedStoreProfileValuesNameTheProfileKey(String setting) {
    String name = newStoreName("pvalue");
    String key = "fs.blob.store." + name + "." + setting.substring(0, setting.indexOf('='));
    Configuration conf = baseConf();
    conf.set(key, setting.substring(setting.indexOf('=') + 1));
    assertThat(badConfig(name, conf)).hasMessageContaining(key);
  }

  @Test
  void malformedBackendValueNamesTheKey() {
    String name = newStoreName("backend");
    Configuration conf = baseConf();
    conf.set("fs.blob.store." + name + ".max-key-bytes", "lots");
    assertThat(badConfig(name, conf))
        .hasMessageContaining("fs.blob.store." + name + ".max-key-bytes");
  }

  @Test
  void unknownKeyUnderStoreProfile() {
    String name = newStoreName("unknown");
    Configuration conf = baseConf();
    conf.set("fs.blob.store." + name + ".bogus-key", "1");
    assertThat(badConfig(name, conf)).hasMessageContaining("bogus-key")
        .hasMessageContaining("fs.blob.store." + name + ".");
  }

  @Test
  void stripeLargerThanTheStoresLargestObject() {
    String name = newStoreName("stripe");
    Configuration conf = baseConf();
    conf.set("fs.blob.store." + name + ".max-object-bytes", "1m");
    conf.set("fs.blob.store." + name + ".stripe.size", "4m");
    assertThat(badConfig(name, conf)).hasMessageContaining("stripe size");
    // the global key is checked against the store's limit too
    String name2 = newStoreName("stripe2");
    Configuration conf2 = baseConf();
    conf2.set("fs.blob.store." + name2 + ".max-object-bytes", "1m");
    conf2.set("fs.blob.stripe.size", "2m");
    assertThat(badConfig(name2, conf2)).hasMessageContaining("stripe size");
  }

  @ParameterizedTest
  @ValueSource(strings = {"blob://user@store/", "blob://store:9000/", "blob://a~b/",
      "blob://-lead/", "blob://sp%20ace/"})
  void illegalStoreNameInAuthority(String uri) {
    Throwable t = catchThrowable(() -> opened.add(FileSystem.newInstance(URI.create(uri),
        baseConf())));
    assertThat(t).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("bad store name");
  }

  /** A rejected configuration leaves an existing store of that name untouched. */
  @Test
  void badConfigurationLeavesExistingStoreAlone() throws IOException {
    seed("keep");
    Snapshot before = snapshot();
    Configuration conf = baseConf();
    conf.set("fs.blob.store." + store + ".max-key-bytes", Integer.toString(MAX_KEY));
    conf.set("fs.blob.directory.markers", "maybe");
    badConfig(store, conf);
    Configuration conf2 = baseConf();
    conf2.set("fs.blob.store." + store + ".bogus-key", "1");
    badConfig(store, conf2);
    assertThat(snapshot()).isEqualTo(before);
    assertSeedIntact();
  }
}

package io.blobfs.hadoop;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.store.memory.InMemoryBlobStore;
import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FsShell;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.util.ToolRunner;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Drives {@link FsShell} (what {@code hadoop fs} runs) against {@code blob://} on the
 * in-memory store, with directory markers kept (HDFS-like) and dropped (the paper's
 * default), and checks exact outputs, return codes and what is left in the store.
 */
class FsShellTest {
  /** Above the default inline threshold (64 KiB): stored in data blobs, not the record. */
  private static final int BIG = 200_000;

  @TempDir
  java.nio.file.Path tmp;

  private final List<String> stores = new ArrayList<>();
  private Configuration conf;
  private String store;
  private String root;
  private byte[] smallBytes;
  private byte[] bigBytes;
  private byte[] topBytes;
  private java.nio.file.Path localSmall;
  private java.nio.file.Path localBig;
  private java.nio.file.Path localTree;

  @BeforeEach
  void setUp() throws IOException {
    smallBytes = "hello blobfs\nsecond line \u00e9\u4e2d\n".getBytes(UTF_8);
    bigBytes = new byte[BIG];
    new Random(42).nextBytes(bigBytes);
    topBytes = "top\n".getBytes(UTF_8);
    localSmall = Files.write(tmp.resolve("small.txt"), smallBytes);
    localBig = Files.write(tmp.resolve("big.bin"), bigBytes);
    // A local tree: data/top.txt, data/sub/small.txt, data/sub/big.bin, data/sub/deeper/
    localTree = tmp.resolve("tree").resolve("data");
    Files.createDirectories(localTree.resolve("sub").resolve("deeper"));
    Files.write(localTree.resolve("top.txt"), topBytes);
    Files.write(localTree.resolve("sub").resolve("small.txt"), smallBytes);
    Files.write(localTree.resolve("sub").resolve("big.bin"), bigBytes);
  }

  @AfterEach
  void tearDown() throws IOException {
    for (String s : stores) {
      // FsShell goes through the FileSystem cache: close what it opened there.
      FileSystem.get(URI.create("blob://" + s + "/"), conf).close();
      InMemoryBlobStoreProvider.drop(s);
    }
  }

  /** A fresh store and a configuration for it; markers "keep" or "none". */
  private void useStore(String markers) {
    store = "fsshell-" + markers + "-" + UUID.randomUUID().toString().substring(0, 8);
    stores.add(store);
    root = "blob://" + store;
    conf = new Configuration();
    conf.set("fs.blob.impl", BlobFileSystem.class.getName());
    conf.set("fs.blob.directory.markers", markers);
    conf.setLong("fs.trash.interval", 0);
  }

  private InMemoryBlobStore mem() {
    return InMemoryBlobStoreProvider.named(store);
  }

  private FileSystem fs() throws IOException {
    return FileSystem.get(URI.create(root + "/"), conf);
  }

  // ------------------------------------------------------------------ shell plumbing

  private record Result(int rc, byte[] outBytes, String err) {
    String out() {
      return new String(outBytes, UTF_8);
    }

    @Override
    public String toString() {
      return "rc=" + rc + "\n--- stdout:\n" + out() + "--- stderr:\n" + err;
    }
  }

  private Result shell(String... args) throws Exception {
    PrintStream oldOut = System.out;
    PrintStream oldErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    FsShell sh = new FsShell(conf);
    int rc;
    try {
      System.setOut(new PrintStream(out, true, UTF_8));
      System.setErr(new PrintStream(err, true, UTF_8));
      rc = ToolRunner.run(sh, args);
    } finally {
      System.out.flush();
      System.err.flush();
      System.setOut(oldOut);
      System.setErr(oldErr);
      sh.close();
    }
    return new Result(rc, out.toByteArray(), err.toString(UTF_8));
  }

  private Result ok(String... args) throws Exception {
    Result r = shell(args);
    assertThat(r.rc()).as("%s\n%s", String.join(" ", args), r).isEqualTo(0);
    return r;
  }

  private Result fails(String... args) throws Exception {
    Result r = shell(args);
    assertThat(r.rc()).as("%s\n%s", String.join(" ", args), r).isEqualTo(1);
    return r;
  }

  private String u(String path) {
    return root + path;
  }

  /** One {@code -ls} line: type, size and path columns. */
  private record LsEntry(char type, long size, String uri) {
    String path() {
      return new Path(uri).toUri().getPath();
    }
  }

  private List<LsEntry> ls(Result r) {
    List<LsEntry> entries = new ArrayList<>();
    for (String line : r.out().split("\n")) {
      if (line.isEmpty() || line.startsWith("Found ")) {
        continue;
      }
      String[] cols = line.trim().split("\\s+");
      assertThat(cols).as("ls line '%s'", line).hasSize(8);
      entries.add(new LsEntry(cols[0].charAt(0), Long.parseLong(cols[4]), cols[7]));
    }
    return entries;
  }

  private List<String> paths(List<LsEntry> entries) {
    List<String> out = new ArrayList<>();
    for (LsEntry e : entries) {
      assertThat(e.uri()).startsWith(root + "/");
      out.add(e.path());
    }
    return out;
  }

  private List<String> keys(String prefix) throws IOException {
    return mem().scan(prefix, null, 100_000).keys();
  }

  // ------------------------------------------------------------------ tests

  /** The whole round of commands, markers kept: behaves as on HDFS. */
  @Test
  void keepMarkersFullWorkflow() throws Exception {
    useStore("keep");
    Result r = ok("-mkdir", "-p", u("/data/sub/deeper"));
    assertThat(r.out()).isEmpty();
    ok("-test", "-d", u("/data/sub/deeper"));
    ok("-test", "-e", u("/data/sub"));
    // -ls of an empty directory: nothing listed, rc 0
    r = ok("-ls", u("/data/sub/deeper"));
    assertThat(r.out()).isEmpty();

    r = ok("-put", localSmall.toString(), localBig.toString(), u("/data/sub/"));
    assertThat(r.out()).isEmpty();
    r = ok("-put", localSmall.toString(), u("/data/top.txt"));
    assertThat(r.out()).isEmpty();

    List<LsEntry> listing = ls(ok("-ls", "-R", u("/data")));
    // -ls -R does not sort (it streams listStatusIterator); the set of entries is exact
    assertThat(listing).containsExactlyInAnyOrder(
        new LsEntry('d', 0, u("/data/sub")),
        new LsEntry('-', BIG, u("/data/sub/big.bin")),
        new LsEntry('d', 0, u("/data/sub/deeper")),
        new LsEntry('-', smallBytes.length, u("/data/sub/small.txt")),
        new LsEntry('-', smallBytes.length, u("/data/top.txt")));
    // plain -ls sorts by name and announces the count
    r = ok("-ls", u("/data/sub"));
    assertThat(r.out()).startsWith("Found 3 items\n");
    assertThat(paths(ls(r))).containsExactly(
        "/data/sub/big.bin", "/data/sub/deeper", "/data/sub/small.txt");

    assertThat(ok("-cat", u("/data/sub/small.txt")).outBytes()).isEqualTo(smallBytes);
    assertThat(ok("-cat", u("/data/sub/big.bin")).outBytes()).isEqualTo(bigBytes);

    long total = BIG + 2L * smallBytes.length;
    assertDu(u("/data"), total);
    assertCount(u("/data"), 3, 3, total);

    ok("-test", "-f", u("/data/sub/small.txt"));
    fails("-test", "-d", u("/data/sub/small.txt"));
    fails("-test", "-f", u("/data/sub"));
    fails("-test", "-e", u("/data/nothing"));

    // -mv: the old name is gone, the new one holds the same bytes
    r = ok("-mv", u("/data/sub/small.txt"), u("/data/moved.txt"));
    assertThat(r.out()).isEmpty();
    fails("-test", "-e", u("/data/sub/small.txt"));
    ok("-test", "-f", u("/data/moved.txt"));
    assertThat(ok("-cat", u("/data/moved.txt")).outBytes()).isEqualTo(smallBytes);
    // -mv of a directory into an existing directory keeps its name
    ok("-mkdir", u("/data/other"));
    ok("-mv", u("/data/sub/deeper"), u("/data/other"));
    ok("-test", "-d", u("/data/other/deeper"));
    fails("-test", "-e", u("/data/sub/deeper"));

    // -cp: a second, independent copy
    int dataBlobsBefore = keys("d/").size();
    r = ok("-cp", u("/data/sub/big.bin"), u("/data/copy.bin"));
    assertThat(r.out()).isEmpty();
    assertThat(ok("-cat", u("/data/copy.bin")).outBytes()).isEqualTo(bigBytes);
    assertThat(ok("-cat", u("/data/sub/big.bin")).outBytes()).isEqualTo(bigBytes);
    assertThat(keys("d/")).hasSize(2 * dataBlobsBefore);
    // no temporary file of the copy is left behind
    assertThat(paths(ls(ok("-ls", "-R", u("/data"))))).containsExactlyInAnyOrder(
        "/data/copy.bin", "/data/moved.txt", "/data/other", "/data/other/deeper",
        "/data/sub", "/data/sub/big.bin", "/data/top.txt");

    total = 2L * BIG + 2L * smallBytes.length;
    assertDu(u("/data"), total);
    assertCount(u("/data"), 4, 4, total);

    // -rm without -r refuses a directory and changes nothing
    r = fails("-rm", u("/data"));
    assertThat(r.err()).contains("Is a directory");
    ok("-test", "-d", u("/data"));

    r = ok("-rm", "-r", u("/data"));
    assertThat(r.out()).isEqualTo("Deleted " + u("/data") + "\n");
    fails("-test", "-e", u("/data"));
    r = fails("-ls", u("/data"));
    assertThat(r.err()).contains("No such file or directory");
    assertThat(keys("n/data")).isEmpty();
    assertThat(keys("d/")).isEmpty();
    assertThat(mem().blobCount()).isZero();
    assertThat(mem().totalBytes()).isZero();
  }

  /**
   * Copies the local tree to blob://STORE/data with {@code -put DIR}. In paper mode this
   * works because the FileSystem instance remembers the directories its mkdirs made;
   * the shell runs of one test share that (cached) instance, like one client process.
   */
  private void seedTree() throws Exception {
    Result r = ok("-put", localTree.toString(), u("/"));
    assertThat(r.out()).isEmpty();
  }

  /**
   * The same round in both modes. In paper mode the empty directory "deeper" exists
   * for this client only: nothing of it is in the store.
   */
  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void putTreeListCatMoveCopyDuCountRemove(String markers) throws Exception {
    useStore(markers);
    boolean keep = markers.equals("keep");
    seedTree();
    Result r;
    try (FileSystem otherClient = FileSystem.newInstance(URI.create(root + "/"), conf)) {
      assertThat(otherClient.exists(new Path(u("/data/sub/deeper")))).isEqualTo(keep);
      assertThat(otherClient.exists(new Path(u("/data/sub/small.txt")))).isTrue();
    }

    List<String> expected = List.of("/data/sub", "/data/sub/big.bin", "/data/sub/deeper",
        "/data/sub/small.txt", "/data/top.txt");
    assertThat(paths(ls(ok("-ls", "-R", u("/data"))))).containsExactlyInAnyOrderElementsOf(expected);
    r = ok("-ls", u("/"));
    assertThat(r.out()).startsWith("Found 1 items\n");
    assertThat(paths(ls(r))).containsExactly("/data");

    assertThat(ok("-cat", u("/data/top.txt")).outBytes()).isEqualTo(topBytes);
    assertThat(ok("-cat", u("/data/sub/small.txt")).outBytes()).isEqualTo(smallBytes);
    assertThat(ok("-cat", u("/data/sub/big.bin")).outBytes()).isEqualTo(bigBytes);
    // -cat of several files concatenates them
    byte[] both = new byte[topBytes.length + smallBytes.length];
    System.arraycopy(topBytes, 0, both, 0, topBytes.length);
    System.arraycopy(smallBytes, 0, both, topBytes.length, smallBytes.length);
    assertThat(ok("-cat", u("/data/top.txt"), u("/data/sub/small.txt")).outBytes())
        .isEqualTo(both);
    r = fails("-cat", u("/data/missing"));
    assertThat(r.outBytes()).isEmpty();
    assertThat(r.err()).contains("No such file or directory");

    long total = BIG + smallBytes.length + topBytes.length;
    assertDu(u("/data"), total);
    assertCount(u("/data"), 3, 3, total);

    ok("-test", "-e", u("/data/top.txt"));
    ok("-test", "-f", u("/data/top.txt"));
    ok("-test", "-d", u("/data/sub"));
    fails("-test", "-d", u("/data/top.txt"));
    fails("-test", "-e", u("/data/none"));
    ok("-test", "-d", u("/data/sub/deeper"));

    // -mv within an existing directory
    ok("-mv", u("/data/sub/big.bin"), u("/data/big-moved.bin"));
    fails("-test", "-e", u("/data/sub/big.bin"));
    assertThat(ok("-cat", u("/data/big-moved.bin")).outBytes()).isEqualTo(bigBytes);
    // -mv of a file into a directory
    ok("-mv", u("/data/top.txt"), u("/data/sub"));
    fails("-test", "-e", u("/data/top.txt"));
    assertThat(ok("-cat", u("/data/sub/top.txt")).outBytes()).isEqualTo(topBytes);

    // -cp of a file and of a whole directory
    ok("-cp", u("/data/sub/small.txt"), u("/data/small-copy.txt"));
    assertThat(ok("-cat", u("/data/small-copy.txt")).outBytes()).isEqualTo(smallBytes);
    assertThat(ok("-cat", u("/data/sub/small.txt")).outBytes()).isEqualTo(smallBytes);
    ok("-cp", u("/data/sub"), u("/copied"));
    assertThat(paths(ls(ok("-ls", "-R", u("/copied"))))).containsExactlyInAnyOrder(
        "/copied/deeper", "/copied/small.txt", "/copied/top.txt");
    assertThat(ok("-cat", u("/copied/top.txt")).outBytes()).isEqualTo(topBytes);

    total = BIG + 2L * smallBytes.length + topBytes.length;
    assertDu(u("/data"), total);
    assertCount(u("/data"), 3, 4, total);
    assertDu(u("/copied"), smallBytes.length + topBytes.length);

    r = ok("-rm", "-r", u("/data"));
    assertThat(r.out()).isEqualTo("Deleted " + u("/data") + "\n");
    fails("-test", "-e", u("/data"));
    assertThat(keys("n/data")).isEmpty();
    r = ok("-rm", "-r", u("/copied"));
    assertThat(r.out()).isEqualTo("Deleted " + u("/copied") + "\n");
    assertThat(keys("n/")).isEmpty();
    assertThat(keys("d/")).isEmpty();
    assertThat(mem().blobCount()).isZero();
    assertThat(mem().totalBytes()).isZero();
    r = ok("-ls", u("/"));
    assertThat(r.out()).isEmpty();
  }

  /**
   * The paper's deviation: mkdirs is dropped. A directory made by {@code -mkdir -p} exists
   * for the client that made it (these shell runs share one cached FileSystem, like one
   * process) and for nobody else until a file is written under it.
   */
  @Test
  void paperModeMkdirIsVisibleOnlyToTheClientThatMadeIt() throws Exception {
    useStore("none");
    Result r = ok("-mkdir", "-p", u("/data/sub"));
    assertThat(r.out()).isEmpty();
    assertThat(mem().blobCount()).isZero();
    ok("-test", "-d", u("/data/sub"));
    assertThat(ok("-ls", u("/data/sub")).out()).isEmpty();
    assertThat(paths(ls(ok("-ls", u("/data"))))).containsExactly("/data/sub");
    FileSystem otherClient = FileSystem.newInstance(URI.create(root + "/"), conf);
    assertThat(otherClient.exists(new Path(u("/data")))).isFalse();

    ok("-put", localSmall.toString(), localBig.toString(), u("/data/sub/"));
    assertThat(otherClient.getFileStatus(new Path(u("/data/sub"))).isDirectory()).isTrue();
    assertThat(paths(ls(ok("-ls", "-R", u("/data"))))).containsExactlyInAnyOrder(
        "/data/sub", "/data/sub/big.bin", "/data/sub/small.txt");
    assertDu(u("/data"), smallBytes.length + BIG);
    assertCount(u("/data"), 2, 2, smallBytes.length + BIG);

    // Deleting the last file makes the directories vanish again, for every client.
    ok("-rm", "-r", u("/data/sub"));
    fails("-test", "-e", u("/data"));
    assertThat(otherClient.exists(new Path(u("/data")))).isFalse();
    otherClient.close();
    assertThat(mem().blobCount()).isZero();
  }

  /** With markers kept, deleting the last file leaves its directory, as on HDFS. */
  @Test
  void keepMarkersEmptiedDirectoryStays() throws Exception {
    useStore("keep");
    ok("-mkdir", "-p", u("/a/b"));
    ok("-put", localSmall.toString(), u("/a/b/f.txt"));
    r("-rm", u("/a/b/f.txt"), "Deleted " + u("/a/b/f.txt") + "\n");
    ok("-test", "-d", u("/a/b"));
    assertThat(ok("-ls", u("/a/b")).out()).isEmpty();
    assertThat(paths(ls(ok("-ls", "-R", u("/a"))))).containsExactly("/a/b");
    assertCount(u("/a"), 2, 0, 0);
    assertDu(u("/a"), 0);
    ok("-rm", "-r", u("/a"));
    assertThat(mem().blobCount()).isZero();
  }

  /** Commands that must fail leave the store as it was. */
  @ParameterizedTest
  @ValueSource(strings = {"keep", "none"})
  void failingCommandsChangeNothing(String markers) throws Exception {
    useStore(markers);
    seedTree();
    int blobs = mem().blobCount();
    long bytes = mem().totalBytes();
    List<String> allKeys = keys("");

    // put over an existing file without -f
    Result r = fails("-put", localBig.toString(), u("/data/top.txt"));
    assertThat(r.err()).contains("File exists");
    // mv onto an existing file
    fails("-mv", u("/data/top.txt"), u("/data/sub/small.txt"));
    // mv of a missing source
    fails("-mv", u("/data/nope"), u("/data/nope2"));
    // cp onto an existing file without -f
    fails("-cp", u("/data/top.txt"), u("/data/sub/small.txt"));
    // rm of a missing file
    r = fails("-rm", u("/data/nope"));
    assertThat(r.err()).contains("No such file or directory");
    // mkdir over a file
    fails("-mkdir", u("/data/top.txt"));
    // mkdir -p through a file: refused in both modes (in paper mode with reads only)
    r = fails("-mkdir", "-p", u("/data/top.txt/below"));
    assertThat(r.err()).contains("/data/top.txt is a file");

    assertThat(mem().blobCount()).isEqualTo(blobs);
    assertThat(mem().totalBytes()).isEqualTo(bytes);
    assertThat(keys("")).isEqualTo(allKeys);
    assertThat(ok("-cat", u("/data/sub/small.txt")).outBytes()).isEqualTo(smallBytes);
    assertThat(ok("-cat", u("/data/top.txt")).outBytes()).isEqualTo(topBytes);
  }

  private void r(String cmd, String path, String expectedOut) throws Exception {
    assertThat(ok(cmd, path).out()).isEqualTo(expectedOut);
  }

  private void assertDu(String path, long total) throws Exception {
    Result r = ok("-du", "-s", path);
    String[] lines = r.out().split("\n");
    assertThat(lines).as(r.toString()).hasSize(1);
    String[] cols = lines[0].trim().split("\\s+");
    // size, disk space consumed (replication 1), path
    assertThat(cols).as(r.toString()).containsExactly(Long.toString(total),
        Long.toString(total), path);
  }

  private void assertCount(String path, long dirs, long files, long bytes) throws Exception {
    Result r = ok("-count", path);
    String[] lines = r.out().split("\n");
    assertThat(lines).as(r.toString()).hasSize(1);
    String[] cols = lines[0].trim().split("\\s+");
    assertThat(cols).as(r.toString()).containsExactly(Long.toString(dirs),
        Long.toString(files), Long.toString(bytes), path);
  }
}

package io.blobfs.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.ParentNotDirectoryException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathIsNotEmptyDirectoryException;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.StorageStatistics;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Table 3's rules, checked on what lands in the flat root: the shim over the raw local file
 * system (no checksum files), a directory per test. The same rules over HDFS run in the
 * contract suites (*IT).
 */
class FlatNamespaceFileSystemTest {
  @TempDir
  java.nio.file.Path dir;

  private java.nio.file.Path flatRoot;
  private Configuration conf;
  private FlatNamespaceFileSystem fs;

  @BeforeEach
  void open() throws IOException {
    flatRoot = dir.resolve("flat");
    conf = new Configuration(false);
    conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
    conf.setBoolean("fs.file.impl.disable.cache", true);
    conf.set("fs.flat.underlying.t", flatRoot.toUri().toString());
    fs = newInstance();
  }

  @AfterEach
  void close() throws IOException {
    fs.close();
  }

  private FlatNamespaceFileSystem newInstance() throws IOException {
    FlatNamespaceFileSystem f = new FlatNamespaceFileSystem();
    f.initialize(URI.create("flat://t/"), conf);
    return f;
  }

  private TreeSet<String> rootNames() throws IOException {
    try (Stream<java.nio.file.Path> s = Files.list(flatRoot)) {
      return s.map(p -> p.getFileName().toString()).collect(Collectors.toCollection(TreeSet::new));
    }
  }

  private void write(String path, String text) throws IOException {
    try (FSDataOutputStream out = fs.create(new Path(path), false)) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  private String read(String path) throws IOException {
    try (FSDataInputStream in = fs.open(new Path(path))) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private List<String> list(String path) throws IOException {
    return Arrays.stream(fs.listStatus(new Path(path)))
        .map(s -> s.getPath().toUri().getPath() + (s.isDirectory() ? "/" : ""))
        .toList();
  }

  private long counter(String name) {
    return fs.getStorageStatistics().getLong(name);
  }

  @Test
  void everyFileIsOneEscapedNameInTheRoot() throws IOException {
    write("/a/b/c", "abc");
    write("/x y/100%/é:ü", "odd");
    assertEquals(new TreeSet<>(List.of("a b c", "x%20y 100%25 é%3Aü")), rootNames());
    assertEquals("abc", read("/a/b/c"));
    assertEquals("odd", read("/x y/100%/é:ü"));
    assertEquals(List.of("/x y/100%/"), list("/x y"));
    assertEquals(List.of("/x y/100%/é:ü"), list("/x y/100%"));
    FileStatus s = fs.getFileStatus(new Path("/a/b/c"));
    assertTrue(s.isFile());
    assertEquals(3, s.getLen());
    assertEquals(new Path("flat://t/a/b/c"), s.getPath());
  }

  @Test
  void mkdirsWritesNothingAndOnlyThisInstanceSeesTheEmptyDirectory() throws IOException {
    Files.createDirectories(flatRoot);
    TreeSet<String> before = rootNames();
    assertTrue(fs.mkdirs(new Path("/made/deep")));
    assertEquals(before, rootNames());
    assertTrue(fs.getFileStatus(new Path("/made")).isDirectory());
    assertEquals(List.of("/made/deep/"), list("/made"));
    assertEquals(List.of(), list("/made/deep"));
    try (FlatNamespaceFileSystem other = newInstance()) {
      assertThrows(FileNotFoundException.class, () -> other.getFileStatus(new Path("/made")));
    }
    assertEquals(1, counter(ShimStatistics.MKDIR_DROPPED));
    assertTrue(counter(ShimStatistics.MKDIR_DROPPED + ShimStatistics.NANOS) > 0);
  }

  @Test
  void aDirectoryReportsTheDefaultPermissionUnderTheUmaskConfiguredNow() throws IOException {
    fs.mkdirs(new Path("/d"));
    assertEquals(0755, fs.getFileStatus(new Path("/d")).getPermission().toShort());
    fs.getConf().set("fs.permissions.umask-mode", "062");
    assertEquals(0715, fs.getFileStatus(new Path("/d")).getPermission().toShort());
  }

  @Test
  void mkdirsRefusesAFileAtThePathOrAboveIt() throws IOException {
    write("/f", "x");
    assertThrows(FileAlreadyExistsException.class, () -> fs.mkdirs(new Path("/f")));
    assertThrows(ParentNotDirectoryException.class, () -> fs.mkdirs(new Path("/f/g/h")));
    assertEquals(new TreeSet<>(List.of("f")), rootNames());
  }

  @Test
  void aListingIsAPrefixFilterThatNeverMatchesASiblingWithTheSameStart() throws IOException {
    write("/d/f1", "1");
    write("/d/sub/f2", "2");
    write("/d/sub/deeper/f3", "3");
    write("/d2/f", "x");
    write("/dd/f", "x");
    write("/d x/f", "x"); // "d%20x f": the escaped space never reads as the separator
    assertEquals(List.of("/d/f1", "/d/sub/"), list("/d"));
    assertEquals(List.of("/d/sub/deeper/", "/d/sub/f2"), list("/d/sub"));
    assertEquals(List.of("/d/", "/d x/", "/d2/", "/dd/"), list("/"));
    assertEquals(List.of("/d/f1"), list("/d/f1"));
    assertThrows(FileNotFoundException.class, () -> fs.listStatus(new Path("/nothing")));
    assertTrue(fs.getFileStatus(new Path("/d/sub/deeper")).isDirectory());
    assertThrows(FileNotFoundException.class, () -> fs.getFileStatus(new Path("/d/su")));

    RemoteIterator<LocatedFileStatus> it = fs.listFiles(new Path("/d"), true);
    TreeSet<String> files = new TreeSet<>();
    while (it.hasNext()) {
      LocatedFileStatus s = it.next();
      files.add(s.getPath().toUri().getPath());
      assertEquals(1, s.getBlockLocations().length, s.getPath().toString());
    }
    assertEquals(new TreeSet<>(List.of("/d/f1", "/d/sub/f2", "/d/sub/deeper/f3")), files);
  }

  @Test
  void namesThatAreNotOursAreIgnored() throws IOException {
    write("/a/f", "x");
    Files.createDirectories(flatRoot.resolve("a sub-directory"));
    Files.writeString(flatRoot.resolve("a %zz"), "not a flat name");
    Files.writeString(flatRoot.resolve("a  b"), "an empty component");
    assertEquals(List.of("/a/f"), list("/a"));
  }

  @Test
  void deletingADirectoryDeletesExactlyTheNamesUnderIt() throws IOException {
    write("/d/f1", "1");
    write("/d/sub/f2", "2");
    write("/dd/f", "x");
    assertThrows(PathIsNotEmptyDirectoryException.class, () -> fs.delete(new Path("/d"), false));
    assertEquals(3, rootNames().size());
    assertTrue(fs.delete(new Path("/d"), true));
    assertEquals(new TreeSet<>(List.of("dd f")), rootNames());
    assertFalse(fs.delete(new Path("/d"), true));
    assertFalse(fs.exists(new Path("/d")));
    assertTrue(fs.delete(new Path("/dd/f"), false));
    assertEquals(new TreeSet<>(), rootNames());
    // /d three times (the refused one too); /dd/f was a file: one delete, no scan
    assertEquals(3, counter(ShimStatistics.RMDIR));
  }

  @Test
  void aRecursiveDeleteOfANonEmptyRootDeletesNothing() throws IOException {
    write("/a", "x");
    assertFalse(fs.delete(new Path("/"), true));
    assertEquals(new TreeSet<>(List.of("a")), rootNames());
    assertTrue(fs.delete(new Path("/a"), false));
    assertTrue(fs.delete(new Path("/"), true));
  }

  @Test
  void renamingAFileIsOneRenameOfItsName() throws IOException {
    write("/a/f", "data");
    long calls = counter(ShimStatistics.UNDERLYING_CALLS);
    assertTrue(fs.rename(new Path("/a/f"), new Path("/b/g")));
    // a lookup of the source and of the destination, a scan for a directory there, a lookup
    // of the destination's parent (no file above it), the rename
    assertEquals(5, counter(ShimStatistics.UNDERLYING_CALLS) - calls);
    assertEquals(new TreeSet<>(List.of("b g")), rootNames());
    assertEquals("data", read("/b/g"));
  }

  @Test
  void renamingADirectoryMovesEveryNameUnderIt() throws IOException {
    write("/src/f1", "1");
    write("/src/sub/f2", "2");
    write("/srcx/f", "not moved");
    fs.mkdirs(new Path("/src/empty"));
    assertTrue(fs.rename(new Path("/src"), new Path("/dst")));
    assertEquals(new TreeSet<>(List.of("dst f1", "dst sub f2", "srcx f")), rootNames());
    assertEquals(List.of("/dst/empty/", "/dst/f1", "/dst/sub/"), list("/dst"));
    assertEquals("2", read("/dst/sub/f2"));
    assertThrows(FileNotFoundException.class, () -> fs.getFileStatus(new Path("/src")));
    assertEquals(1, counter(ShimStatistics.DIR_RENAME));
  }

  @Test
  void renamingIntoAnExistingDirectoryKeepsTheName() throws IOException {
    write("/f", "1");
    write("/d/other", "2");
    assertTrue(fs.rename(new Path("/f"), new Path("/d")));
    assertEquals("1", read("/d/f"));
    write("/e/x", "3");
    assertTrue(fs.rename(new Path("/e"), new Path("/d")));
    assertEquals("3", read("/d/e/x"));
  }

  @Test
  void renameReturnsFalseWhereHdfsDoes() throws IOException {
    write("/a", "1");
    write("/b", "2");
    write("/dir/f", "3");
    assertFalse(fs.rename(new Path("/missing"), new Path("/c")));
    assertFalse(fs.rename(new Path("/a"), new Path("/b")));
    assertFalse(fs.rename(new Path("/dir"), new Path("/dir/f/inside")));
    assertFalse(fs.rename(new Path("/"), new Path("/x")));
    write("/d2/a", "taken");
    assertFalse(fs.rename(new Path("/a"), new Path("/d2")));
    assertTrue(fs.rename(new Path("/a"), new Path("/a")));
    assertFalse(fs.rename(new Path("/dir"), new Path("/dir"))); // HDFS: a directory onto itself
    assertEquals(new TreeSet<>(List.of("a", "b", "d2 a", "dir f")), rootNames());
  }

  @Test
  void renameRefusesADestinationUnderAFile() throws IOException {
    write("/file", "1");
    write("/src", "2");
    assertFalse(fs.rename(new Path("/src"), new Path("/file/sub/dst")));
    assertEquals(new TreeSet<>(List.of("file", "src")), rootNames());
  }

  @Test
  void theParentOfWhatIsDeletedOrRenamedAwayStaysADirectoryForThisInstance() throws IOException {
    write("/d/f", "1");
    write("/e/g", "2");
    assertTrue(fs.delete(new Path("/d/f"), false));
    assertTrue(fs.rename(new Path("/e/g"), new Path("/g")));
    assertEquals(new TreeSet<>(List.of("g")), rootNames());
    assertTrue(fs.getFileStatus(new Path("/d")).isDirectory());
    assertEquals(List.of(), list("/e"));
    try (FlatNamespaceFileSystem other = newInstance()) {
      assertFalse(other.exists(new Path("/d")));
    }
  }

  @Test
  void createRefusesADirectoryThisInstanceMadeAndTheRoot() throws IOException {
    fs.mkdirs(new Path("/d"));
    assertThrows(FileAlreadyExistsException.class, () -> fs.create(new Path("/d")));
    assertThrows(FileAlreadyExistsException.class, () -> fs.create(new Path("/")));
    write("/f", "1");
    assertThrows(FileAlreadyExistsException.class, () -> write("/f", "2"));
    assertEquals("1", read("/f"));
  }

  @Test
  void createNonRecursiveNeedsAParentDirectory() throws IOException {
    write("/file", "1");
    assertThrows(ParentNotDirectoryException.class,
        () -> fs.createNonRecursive(new Path("/file/x"), true, 4096, (short) 1, 1 << 20, null));
    assertThrows(FileNotFoundException.class,
        () -> fs.createNonRecursive(new Path("/nodir/x"), true, 4096, (short) 1, 1 << 20, null));
    write("/dir/a", "1");
    fs.createNonRecursive(new Path("/dir/b"), true, 4096, (short) 1, 1 << 20, null).close();
    assertTrue(fs.getFileStatus(new Path("/dir/b")).isFile());
  }

  @Test
  void statisticsCountDirectoryOperationsAndScans() throws IOException {
    write("/in/a", "1");
    write("/in/b", "2");
    fs.mkdirs(new Path("/out"));
    fs.listStatus(new Path("/in"));
    fs.delete(new Path("/in"), true);
    Map<String, Long> c = new HashMap<>();
    for (var it = fs.getStorageStatistics().getLongStatistics(); it.hasNext(); ) {
      StorageStatistics.LongStatistic s = it.next();
      c.put(s.getName(), s.getValue());
    }
    assertEquals(2, c.get("op_create"));
    assertEquals(1, c.get("op_mkdirs"));
    assertEquals(1, c.get(ShimStatistics.MKDIR_DROPPED));
    assertEquals(1, c.get(ShimStatistics.OPENDIR));
    assertEquals(1, c.get(ShimStatistics.RMDIR));
    assertEquals(2, c.get(ShimStatistics.ROOT_SCANS));
    assertEquals(4, c.get(ShimStatistics.SCANNED_NAMES));
    assertTrue(c.get(ShimStatistics.OPENDIR + ShimStatistics.NANOS) > 0);
    assertTrue(c.get(ShimStatistics.RMDIR + ShimStatistics.NANOS) > 0);
  }

  @Test
  void aMissingFlatRootIsRefusedWithTheKeyToSet() {
    Configuration empty = new Configuration(false);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new FlatNamespaceFileSystem().initialize(URI.create("flat://nobody/"), empty));
    assertTrue(e.getMessage().contains("fs.flat.underlying.nobody"), e.getMessage());
  }

  @Test
  void dataOfEveryFileReadsBackAfterManyOperations() throws IOException {
    byte[] big = new byte[300_000];
    new java.util.Random(7).nextBytes(big);
    try (FSDataOutputStream out = fs.create(new Path("/big/file"))) {
      out.write(big);
    }
    assertTrue(fs.rename(new Path("/big"), new Path("/moved")));
    try (FSDataInputStream in = fs.open(new Path("/moved/file"))) {
      assertArrayEquals(big, in.readAllBytes());
    }
  }
}

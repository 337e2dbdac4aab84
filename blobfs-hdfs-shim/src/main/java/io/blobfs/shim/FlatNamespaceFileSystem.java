package io.blobfs.shim;

import static org.apache.hadoop.fs.statistics.StoreStatisticNames.*;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.CommonPathCapabilities;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileChecksum;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.ParentNotDirectoryException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathIsNotEmptyDirectoryException;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.StorageStatistics;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsStore;
import org.apache.hadoop.fs.statistics.impl.StorageStatisticsFromIOStatistics;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.Progressable;

/**
 * {@code flat://NAME/path}: a flat namespace over any Hadoop file system, the paper's
 * section 7. Every path is stored as one file in a single directory of the underlying file
 * system (the <em>flat root</em>, {@code fs.flat.underlying.NAME} or
 * {@code fs.flat.underlying}), under the name {@link FlatNames#toFlat} gives it:
 * {@code /foo/bar} is {@code ROOT/foo bar}. The rules are Table 3's:
 *
 * <ul>
 *   <li>create, open, append, read, write of a file: one call on its flat name; parents
 *       are neither made nor checked;
 *   <li>mkdirs: dropped (nothing is written); it only refuses a file at the path or above
 *       it (one lookup per level), and this instance remembers the directory
 *       ({@link MadeDirectories});
 *   <li>listing a directory, and probing whether a path is one: a scan of the flat root
 *       filtered by the directory's prefix;
 *   <li>deleting a directory: that scan, then a delete per name; renaming one: that scan,
 *       then a rename per name; a rename also refuses a file above its destination (one
 *       lookup per level).
 * </ul>
 *
 * The parent of what a delete or rename took away stays a directory for this instance,
 * as on HDFS (remembered, not written).
 *
 * A file rename is one rename on the underlying file system, as atomic as it is there; a
 * directory rename or delete is not atomic: a reader, or a crash, can see it half done.
 * Names in the flat root that no path maps to, and directories there, are ignored.
 */
public class FlatNamespaceFileSystem extends FileSystem implements IOStatisticsSource {
  public static final String SCHEME = "flat";
  /** The URI of the flat root; {@code fs.flat.underlying.NAME} for {@code flat://NAME/}. */
  public static final String UNDERLYING = "fs.flat.underlying";

  private URI uri;
  private Path workingDir;
  private Path root;
  private FileSystem under;
  private final MadeDirectories made = new MadeDirectories();
  private final IOStatisticsStore stats = ShimStatistics.create();
  private StorageStatistics storageStatistics;
  private String owner;
  private String group;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    String authority = name.getAuthority();
    uri = URI.create(SCHEME + "://" + (authority == null ? "" : authority) + "/");
    String rootUri = authority == null ? null : conf.getTrimmed(UNDERLYING + "." + authority);
    if (rootUri == null || rootUri.isEmpty()) {
      rootUri = conf.getTrimmed(UNDERLYING);
    }
    if (rootUri == null || rootUri.isEmpty()) {
      throw new IllegalArgumentException("no flat root for " + name + ": set " + UNDERLYING
          + (authority == null ? "" : "." + authority + " or " + UNDERLYING)
          + " to the URI of a directory, e.g. hdfs://namenode:8020/flat");
    }
    Path configured = new Path(rootUri);
    // An instance of our own: closing it cannot close a cached one someone else uses, and
    // its statistics are this file system's calls alone.
    under = FileSystem.newInstance(configured.toUri(), conf);
    root = under.makeQualified(configured);
    if (SCHEME.equals(root.toUri().getScheme())) {
      throw new IllegalArgumentException("the flat root " + root + " is itself flat://");
    }
    underlying(() -> under.mkdirs(root));
    UserGroupInformation user = UserGroupInformation.getCurrentUser();
    owner = user.getShortUserName();
    group = user.getPrimaryGroupName() == null ? owner : user.getPrimaryGroupName();
    workingDir = makeQualified(new Path("/user/" + owner));
    storageStatistics =
        new StorageStatisticsFromIOStatistics("FlatNamespaceFileSystem:" + uri, SCHEME, stats);
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  @Override
  public URI getUri() {
    return uri;
  }

  /** The directory of the underlying file system that holds every flat name. */
  public Path getFlatRoot() {
    return root;
  }

  @Override
  public Path getWorkingDirectory() {
    return workingDir;
  }

  @Override
  public void setWorkingDirectory(Path dir) {
    workingDir = makeQualified(dir);
  }

  @Override
  public long getDefaultBlockSize(Path f) {
    return under.getDefaultBlockSize(root);
  }

  @Override
  @SuppressWarnings("deprecation")
  public long getDefaultBlockSize() {
    return under.getDefaultBlockSize(root);
  }

  @Override
  public short getDefaultReplication(Path path) {
    return under.getDefaultReplication(root);
  }

  @Override
  @SuppressWarnings("deprecation")
  public short getDefaultReplication() {
    return under.getDefaultReplication(root);
  }

  /** No token of its own; the underlying file system's are collected as a child's. */
  @Override
  public String getCanonicalServiceName() {
    return null;
  }

  @Override
  public FileSystem[] getChildFileSystems() {
    return new FileSystem[] {under};
  }

  // ---------------------------------------------------------------- files: one call each

  @Override
  public FSDataInputStream open(Path path, int bufferSize) throws IOException {
    return call(OP_OPEN, path, () -> {
      String flat = flatOf(path);
      if (flat == null) {
        throw new FileNotFoundException(path + " is a directory");
      }
      return underlying(() -> under.open(underPath(flat), bufferSize));
    });
  }

  /**
   * One create on the flat name, nothing else: parents are neither made nor checked. A
   * path this instance made as a directory is refused; a directory that exists only
   * through the names under it is not seen (that would take a scan per create).
   */
  @Override
  public FSDataOutputStream create(Path path, FsPermission permission, boolean overwrite,
      int bufferSize, short replication, long blockSize, Progressable progress)
      throws IOException {
    return call(OP_CREATE, path, () -> {
      String flat = fileFlatOf(path);
      if (made.covers(flat)) {
        throw new FileAlreadyExistsException(path + " is a directory");
      }
      return underlying(() -> under.create(underPath(flat), permission, overwrite, bufferSize,
          replication, blockSize, progress));
    });
  }

  /** As create, but the parent must be a directory: one lookup, and a scan if no file. */
  @Override
  public FSDataOutputStream createNonRecursive(Path path, FsPermission permission,
      EnumSet<CreateFlag> flags, int bufferSize, short replication, long blockSize,
      Progressable progress) throws IOException {
    return call(OP_CREATE_NON_RECURSIVE, path, () -> {
      String flat = fileFlatOf(path);
      String parent = flatOf(makeQualified(path).getParent());
      if (parent != null) {
        if (fileAt(parent).isPresent()) {
          throw new ParentNotDirectoryException(makeQualified(path).getParent() + " is a file");
        }
        if (!isDirectory(parent)) {
          throw new FileNotFoundException("parent of " + path + " does not exist");
        }
      }
      if (made.covers(flat)) {
        throw new FileAlreadyExistsException(path + " is a directory");
      }
      boolean overwrite = flags.contains(CreateFlag.OVERWRITE);
      return underlying(() -> under.create(underPath(flat), permission, overwrite, bufferSize,
          replication, blockSize, progress));
    });
  }

  @Override
  public FSDataOutputStream append(Path path, int bufferSize, Progressable progress)
      throws IOException {
    return call(OP_APPEND, path, () -> {
      String flat = fileFlatOf(path);
      return underlying(() -> under.append(underPath(flat), bufferSize, progress));
    });
  }

  @Override
  public FileChecksum getFileChecksum(Path path) throws IOException {
    return call(OP_GET_FILE_CHECKSUM, path, () -> {
      String flat = fileFlatOf(path);
      return underlying(() -> under.getFileChecksum(underPath(flat)));
    });
  }

  @Override
  public BlockLocation[] getFileBlockLocations(FileStatus file, long start, long len)
      throws IOException {
    if (file == null) {
      return null;
    }
    if (start < 0 || len < 0) {
      throw new IllegalArgumentException("Invalid start or len parameter: " + start + ", " + len);
    }
    if (file.isDirectory() || file.getLen() <= start) {
      return new BlockLocation[0];
    }
    return call(ShimStatistics.OP_GET_FILE_BLOCK_LOCATIONS, file.getPath(), () -> {
      String flat = fileFlatOf(file.getPath());
      return underlying(() -> under.getFileBlockLocations(underPath(flat), start, len));
    });
  }

  // ---------------------------------------------------------------- directories: scans

  @Override
  public FileStatus getFileStatus(Path path) throws IOException {
    return call(OP_GET_FILE_STATUS, path, () -> {
      String flat = flatOf(path);
      if (flat == null) {
        return directoryStatus(flat);
      }
      Optional<FileStatus> file = fileAt(flat);
      if (file.isPresent()) {
        return file.get();
      }
      if (isDirectory(flat)) {
        return directoryStatus(flat);
      }
      throw new FileNotFoundException("No such file or directory: " + makeQualified(path));
    });
  }

  /**
   * Dropped (Table 3): nothing is written. What the Hadoop spec requires of any mkdirs is
   * kept: a file at the path is a {@link FileAlreadyExistsException}, a file above it a
   * {@link ParentNotDirectoryException}; that costs one lookup per level, and no scan.
   */
  @Override
  public boolean mkdirs(Path path, FsPermission permission) throws IOException {
    return call(OP_MKDIRS, path, () -> timed(ShimStatistics.MKDIR_DROPPED, () -> {
      String flat = flatOf(path);
      if (flat == null) {
        return true;
      }
      for (Path p = makeQualified(path); !p.isRoot(); p = p.getParent()) {
        if (fileAt(flatOf(p)).isPresent()) {
          throw p.equals(makeQualified(path))
              ? new FileAlreadyExistsException(path + " is a file")
              : new ParentNotDirectoryException(p + " is a file, not a directory");
        }
      }
      made.add(flat);
      return true;
    }));
  }

  @Override
  public FileStatus[] listStatus(Path path) throws IOException {
    return call(OP_LIST_STATUS, path, () -> {
      String flat = flatOf(path);
      String prefix = FlatNames.childPrefix(flat);
      // Keyed by escaped child name, so the listing comes out in flat-name order; a name
      // that is both a file and a directory (create does not look for directories) is
      // listed twice, the file first.
      Map<String, FileStatus> entries = new TreeMap<>();
      FileStatus[] self = new FileStatus[1];
      timed(ShimStatistics.OPENDIR, () -> {
        scan(flat == null ? "" : flat, s -> {
          String name = s.getPath().getName();
          if (name.equals(flat)) {
            self[0] = s;
          } else if (name.startsWith(prefix)) {
            List<String> rest = FlatNames.relativeComponents(name, prefix);
            String child = rest.get(0);
            if (rest.size() == 1) {
              entries.put(child + "\u0000f", toStatus(s, name));
            } else {
              entries.computeIfAbsent(child + "\u0001d", k -> directoryStatus(prefix + child));
            }
          }
          return true;
        });
        return null;
      });
      if (self[0] != null) {
        return new FileStatus[] {toStatus(self[0], flat)};
      }
      for (String d : made.under(prefix)) {
        String child = FlatNames.relativeComponents(d, prefix).get(0);
        entries.computeIfAbsent(child + "\u0001d", k -> directoryStatus(prefix + child));
      }
      if (entries.isEmpty() && flat != null && !made.covers(flat)) {
        throw new FileNotFoundException("No such file or directory: " + makeQualified(path));
      }
      return entries.values().toArray(new FileStatus[0]);
    });
  }

  /**
   * A recursive listing is one scan of the flat root, with no walk through directories (the
   * default would list each directory, one scan each).
   */
  @Override
  public RemoteIterator<LocatedFileStatus> listFiles(Path path, boolean recursive)
      throws IOException {
    if (!recursive) {
      return super.listFiles(path, false);
    }
    List<LocatedFileStatus> files = call(OP_LIST_FILES, path, () -> {
      String flat = flatOf(path);
      String prefix = FlatNames.childPrefix(flat);
      List<FileStatus> found = new ArrayList<>();
      boolean[] isFile = new boolean[1];
      scan(flat == null ? "" : flat, s -> {
        String name = s.getPath().getName();
        if (name.equals(flat)) {
          isFile[0] = true;
          found.add(toStatus(s, name));
        } else if (name.startsWith(prefix)) {
          found.add(toStatus(s, name));
        }
        return true;
      });
      if (isFile[0]) {
        found.removeIf(s -> !s.getPath().equals(makeQualified(path)));
      } else if (found.isEmpty() && flat != null && !made.covers(flat)) {
        throw new FileNotFoundException("No such file or directory: " + makeQualified(path));
      }
      List<LocatedFileStatus> out = new ArrayList<>(found.size());
      for (FileStatus s : found) {
        out.add(new LocatedFileStatus(s, getFileBlockLocations(s, 0, s.getLen())));
      }
      return out;
    });
    return remote(files);
  }

  @Override
  public boolean delete(Path path, boolean recursive) throws IOException {
    return call(OP_DELETE, path, () -> {
      String flat = flatOf(path);
      // A file: one delete of its flat name (false if there is none).
      if (flat != null && underlying(() -> under.delete(underPath(flat), false))) {
        keepParent(path);
        return true;
      }
      boolean deleted = timed(ShimStatistics.RMDIR, () -> deleteDirectory(path, flat, recursive));
      if (deleted && flat != null) {
        keepParent(path);
      }
      return deleted;
    });
  }

  /**
   * Scan, then one delete per name. The root is never removed; a recursive delete of a
   * non-empty root deletes nothing and returns false, as blob:// and S3A do, so that a
   * stray {@code rm -r /} loses no data.
   */
  private boolean deleteDirectory(Path path, String flat, boolean recursive)
      throws IOException {
    List<FileStatus> names = namesUnder(flat);
    boolean madeHere = flat == null ? !made.under("").isEmpty() : made.covers(flat);
    if (names.isEmpty() && !madeHere) {
      return flat == null; // an empty root: "deleted"; nothing at the path: false
    }
    boolean empty = names.isEmpty() && made.under(FlatNames.childPrefix(flat)).isEmpty();
    if (!recursive && !empty) {
      throw new PathIsNotEmptyDirectoryException(makeQualified(path).toString());
    }
    if (flat == null) {
      if (!names.isEmpty()) {
        return false;
      }
      made.clear();
      return true;
    }
    for (FileStatus s : names) {
      underlying(() -> under.delete(s.getPath(), false));
    }
    made.removeAtOrUnder(flat);
    return true;
  }

  /**
   * A file: one rename on the underlying file system. A directory: a scan, then one rename
   * per name under it; not atomic. Into an existing directory the source keeps its name.
   * Returns false for a missing source, a destination that exists (a file, or a directory
   * that already holds the source's name), a destination under the source or under a file
   * (one lookup per level), or the root. The destination's parent need not exist.
   */
  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    return call(OP_RENAME, src, () -> {
      String from = flatOf(src);
      String to = flatOf(dst);
      if (from == null) {
        return false;
      }
      Optional<FileStatus> srcFile = fileAt(from);
      boolean srcDir = srcFile.isEmpty() && isDirectory(from);
      if (srcFile.isEmpty() && !srcDir) {
        return false;
      }
      if (from.equals(to)) {
        return srcFile.isPresent(); // as HDFS: a file onto itself is true, a directory false
      }
      if (to != null && to.startsWith(FlatNames.childPrefix(from))) {
        return false;
      }
      if (to != null && fileAt(to).isPresent()) {
        return false;
      }
      String target = to;
      if (isDirectory(to)) {
        target = FlatNames.childPrefix(to) + FlatNames.escape(makeQualified(src).getName());
        if (target.equals(from)) {
          return true; // into the directory it is already in
        }
        if (fileAt(target).isPresent() || isDirectory(target)) {
          return false;
        }
      }
      if (to != null && target.equals(to) && fileAbove(dst)) {
        return false;
      }
      keepParent(src);
      if (srcFile.isPresent()) {
        String t = target;
        return underlying(() -> under.rename(underPath(from), underPath(t)));
      }
      String t = target;
      return timed(ShimStatistics.DIR_RENAME, () -> {
        String fromPrefix = FlatNames.childPrefix(from);
        String toPrefix = FlatNames.childPrefix(t);
        for (FileStatus s : namesUnder(from)) {
          String rest = s.getPath().getName().substring(fromPrefix.length());
          if (!underlying(() -> under.rename(s.getPath(), underPath(toPrefix + rest)))) {
            throw new IOException("rename of " + src + " to " + dst + " failed at "
                + s.getPath() + ": moved in part");
          }
        }
        made.rename(from, t);
        return true;
      });
    });
  }

  @Override
  public boolean hasPathCapability(Path path, String capability) throws IOException {
    switch (validatePathCapabilityArgs(makeQualified(path), capability)) {
      case CommonPathCapabilities.FS_APPEND:
      case CommonPathCapabilities.FS_CHECKSUMS:
        return under.hasPathCapability(root, capability);
      case CommonPathCapabilities.FS_CONCAT:
      case CommonPathCapabilities.FS_PERMISSIONS:
      case CommonPathCapabilities.FS_ACLS:
      case CommonPathCapabilities.FS_XATTRS:
      case CommonPathCapabilities.FS_SNAPSHOTS:
      case CommonPathCapabilities.FS_SYMLINKS:
      case CommonPathCapabilities.FS_TRUNCATE:
      case CommonPathCapabilities.FS_PATHHANDLES:
      case CommonPathCapabilities.FS_MULTIPART_UPLOADER:
        return false;
      default:
        return super.hasPathCapability(path, capability);
    }
  }

  private static String validatePathCapabilityArgs(Path path, String capability) {
    return org.apache.hadoop.fs.impl.PathCapabilitiesSupport.validatePathCapabilityArgs(path,
        capability);
  }

  // ---------------------------------------------------------------- statistics

  @Override
  public StorageStatistics getStorageStatistics() {
    return storageStatistics;
  }

  @Override
  public IOStatistics getIOStatistics() {
    return stats;
  }

  @Override
  public void close() throws IOException {
    try {
      super.close();
    } finally {
      if (under != null) {
        under.close();
      }
    }
  }

  @Override
  public String toString() {
    return "FlatNamespaceFileSystem{" + uri + " over " + root + ", " + stats + "}";
  }

  // ---------------------------------------------------------------- the flat root

  /** The flat name of a path, or null for the root. */
  String flatOf(Path path) {
    Path qualified = makeQualified(path);
    String p = qualified.toUri().getPath();
    return p.equals("/") ? null : FlatNames.toFlat(p);
  }

  /** As {@link #flatOf}, for a call that needs a file: the root is refused. */
  private String fileFlatOf(Path path) throws IOException {
    String flat = flatOf(path);
    if (flat == null) {
      throw new FileAlreadyExistsException(path + " is the root directory");
    }
    return flat;
  }

  private Path underPath(String flat) {
    return new Path(root, new Path(null, null, flat));
  }

  private Path toPath(String flat) {
    if (flat == null) {
      return new Path(uri.getScheme(), uri.getAuthority(), "/");
    }
    return new Path(uri.getScheme(), uri.getAuthority(),
        FlatNames.toPath(flat).orElseThrow());
  }

  /**
   * A delete or rename leaves the parent a directory for this instance, as on HDFS, even
   * when it took the last name under it (nothing is written: the instance remembers it).
   */
  private void keepParent(Path path) {
    Path parent = makeQualified(path).getParent();
    if (parent != null && !parent.isRoot()) {
      made.add(flatOf(parent));
    }
  }

  /** A file above {@code path}: one lookup per level, as mkdirs does. */
  private boolean fileAbove(Path path) throws IOException {
    for (Path p = makeQualified(path).getParent(); p != null && !p.isRoot(); p = p.getParent()) {
      if (fileAt(flatOf(p)).isPresent()) {
        return true;
      }
    }
    return false;
  }

  /** The file stored under a flat name, as seen through this file system. */
  private Optional<FileStatus> fileAt(String flat) throws IOException {
    try {
      FileStatus s = underlying(() -> under.getFileStatus(underPath(flat)));
      return s.isFile() ? Optional.of(toStatus(s, flat)) : Optional.empty();
    } catch (FileNotFoundException e) {
      return Optional.empty();
    }
  }

  /** A directory: made here, or a name lies under it (a scan that stops at the first). */
  private boolean isDirectory(String flat) throws IOException {
    if (flat == null || made.covers(flat)) {
      return true;
    }
    return timed(ShimStatistics.DIR_PROBE, () -> {
      String prefix = FlatNames.childPrefix(flat);
      boolean[] found = new boolean[1];
      scan(flat, s -> {
        found[0] = s.getPath().getName().startsWith(prefix);
        return !found[0];
      });
      return found[0];
    });
  }

  /** The underlying files of every name under a directory ({@code null}: the root). */
  private List<FileStatus> namesUnder(String flat) throws IOException {
    String prefix = FlatNames.childPrefix(flat);
    List<FileStatus> out = new ArrayList<>();
    scan(flat == null ? "" : flat, s -> {
      if (s.getPath().getName().startsWith(prefix)) {
        out.add(s);
      }
      return true;
    });
    return out;
  }

  private interface ScanVisitor {
    /** Sees one of our files in the flat root; returns false to stop the scan. */
    boolean visit(FileStatus underlyingFile) throws IOException;
  }

  /**
   * Scans the flat root, handing the visitor every file whose name starts with
   * {@code startsWith} and is a flat name (other names, and directories, are not ours).
   * The filter is on the client: a Hadoop listing has no prefix argument.
   */
  private void scan(String startsWith, ScanVisitor visitor) throws IOException {
    stats.incrementCounter(ShimStatistics.ROOT_SCANS);
    RemoteIterator<FileStatus> it;
    try {
      it = underlying(() -> under.listStatusIterator(root));
    } catch (FileNotFoundException e) {
      return; // no flat root yet: nothing in it
    }
    while (it.hasNext()) {
      FileStatus s = it.next();
      stats.incrementCounter(ShimStatistics.SCANNED_NAMES);
      String name = s.getPath().getName();
      if (s.isFile() && name.startsWith(startsWith) && FlatNames.toPath(name).isPresent()
          && !visitor.visit(s)) {
        return;
      }
    }
  }

  private FileStatus toStatus(FileStatus s, String flat) {
    return new FileStatus(s.getLen(), false, s.getReplication(), s.getBlockSize(),
        s.getModificationTime(), s.getAccessTime(), s.getPermission(), s.getOwner(),
        s.getGroup(), toPath(flat));
  }

  /**
   * A directory has no entry of its own to hold a permission: it reports the default one
   * under the umask configured now, what mkdirs would have given it on HDFS.
   */
  private FileStatus directoryStatus(String flat) {
    FsPermission permission =
        FsPermission.getDirDefault().applyUMask(FsPermission.getUMask(getConf()));
    return new FileStatus(0, true, 0, 0, 0, 0, permission, owner, group, toPath(flat));
  }

  private static <T> RemoteIterator<T> remote(List<T> items) {
    return new RemoteIterator<>() {
      private int next;

      @Override
      public boolean hasNext() {
        return next < items.size();
      }

      @Override
      public T next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return items.get(next++);
      }
    };
  }

  // ---------------------------------------------------------------- counting

  private interface IOCall<T> {
    T run() throws IOException;
  }

  private static final Set<String> MUTATIONS = Set.of(OP_CREATE, OP_CREATE_NON_RECURSIVE,
      OP_APPEND, OP_MKDIRS, OP_DELETE, OP_RENAME);

  /** Counts one Hadoop call; a bad path is an {@link IllegalArgumentException} from here. */
  private <T> T call(String counter, Path path, IOCall<T> body) throws IOException {
    stats.incrementCounter(counter);
    if (statistics != null) {
      if (MUTATIONS.contains(counter)) {
        statistics.incrementWriteOps(1);
      } else {
        statistics.incrementReadOps(1);
      }
    }
    return body.run();
  }

  /** Counts one call on the underlying file system. */
  private <T> T underlying(IOCall<T> body) throws IOException {
    stats.incrementCounter(ShimStatistics.UNDERLYING_CALLS);
    return body.run();
  }

  /** Counts a directory operation and the nanoseconds it took, failed or not. */
  private <T> T timed(String counter, IOCall<T> body) throws IOException {
    long t0 = System.nanoTime();
    try {
      return body.run();
    } finally {
      stats.incrementCounter(counter);
      stats.incrementCounter(counter + ShimStatistics.NANOS, System.nanoTime() - t0);
    }
  }
}

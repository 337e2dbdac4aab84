package io.blobfs.hadoop;

import static org.apache.hadoop.fs.statistics.StoreStatisticNames.*;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.BlockInfo;
import io.blobfs.namespace.ChunkBuffers;
import io.blobfs.namespace.EntryIterator;
import io.blobfs.namespace.FileInfo;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.IllegalPathException;
import io.blobfs.namespace.TargetChangedException;
import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreProvider;
import io.blobfs.store.BlobStores;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.Arrays;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.CommonPathCapabilities;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Options.OpenFileOptions;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.StorageStatistics;
import org.apache.hadoop.fs.impl.AbstractFSBuilderImpl;
import org.apache.hadoop.fs.impl.OpenFileParameters;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsStore;
import org.apache.hadoop.fs.statistics.impl.StorageStatisticsFromIOStatistics;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.Progressable;

/**
 * The Hadoop adapter: {@code blob://STORE/path}. Each call validates and converts the
 * path, calls the namespace layer, converts the result and translates exceptions;
 * the semantics live in {@link BlobNamespace}.
 */
public class BlobFileSystem extends FileSystem implements IOStatisticsSource {
  private static final Pattern STORE_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");

  private URI uri;
  private Path workingDir;
  private BlobFsConfiguration.Settings settings;
  private BlobStore store;
  private BlobNamespace namespace;
  /**
   * The read-ahead buffers of this file system's streams, kept when a stream closes for
   * the next one (a fresh direct buffer costs a page fault per page; see ChunkBuffers).
   */
  private ChunkBuffers readAheadBuffers;
  private final IOStatisticsStore stats = BlobStatistics.forFileSystem();
  private StorageStatistics storageStatistics;
  private String owner;
  private String group;
  private FsPermission permission;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    String authority = name.getAuthority();
    String storeName = authority == null || authority.isEmpty()
        ? conf.getTrimmed(BlobFsConfiguration.DEFAULT_STORE,
            BlobFsConfiguration.DEFAULT_STORE_DEFAULT)
        : authority;
    if (!STORE_NAME.matcher(storeName).matches()) {
      throw new IllegalArgumentException("bad store name '" + storeName + "' in " + name
          + ": expected letters, digits, '.', '_' or '-' (no user, no port)");
    }
    uri = URI.create(BlobFsConfiguration.SCHEME + "://" + storeName);
    String[] type = BlobFsConfiguration.storeType(storeName, conf);
    BlobStoreProvider provider;
    try {
      provider = BlobStores.provider(type[0]);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(type[1] + ": " + e.getMessage(), e);
    }
    settings = BlobFsConfiguration.parse(storeName, conf, provider.fileSystemDefaults());
    Set<String> unknown = new TreeSet<>(settings.storeOptions().asMap().keySet());
    unknown.removeAll(provider.optionKeys());
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException("unknown keys " + unknown + " under "
          + BlobFsConfiguration.STORE_PREFIX + storeName + ". for store type '"
          + settings.storeType() + "'; it understands " + new TreeSet<>(provider.optionKeys())
          + " and " + new TreeSet<>(BlobFsConfiguration.FS_SUFFIXES));
    }
    store = provider.open(storeName, settings.storeOptions());
    if (settings.readAhead() >= settings.readBufferSize()) {
      readAheadBuffers = ChunkBuffers.forReadAhead(settings.readBufferSize(),
          settings.readAhead());
    }
    namespace = new BlobNamespace(store, settings.namespace(), stats::incrementCounter);
    UserGroupInformation user = UserGroupInformation.getCurrentUser();
    owner = user.getShortUserName();
    group = user.getPrimaryGroupName() == null ? owner : user.getPrimaryGroupName();
    permission = new FsPermission(settings.permission());
    workingDir = new Path("/user/" + owner).makeQualified(uri, null);
    storageStatistics =
        new StorageStatisticsFromIOStatistics("BlobFileSystem:" + storeName, getScheme(), stats);
  }

  @Override
  public String getScheme() {
    return BlobFsConfiguration.SCHEME;
  }

  @Override
  public URI getUri() {
    return uri;
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
  public long getDefaultBlockSize() {
    return settings.namespace().stripeSize();
  }

  @Override
  public long getDefaultBlockSize(Path f) {
    return getDefaultBlockSize();
  }

  @Override
  public short getDefaultReplication() {
    return 1;
  }

  @Override
  public String getCanonicalServiceName() {
    return null; // no delegation tokens
  }

  /** The namespace layer under this file system: for tools and tests. */
  public BlobNamespace namespace() {
    return namespace;
  }

  // ---------------------------------------------------------------- reading

  @Override
  public FSDataInputStream open(Path path, int bufferSize) throws IOException {
    return call(OP_OPEN, path, () -> inputStream(namespace.open(toFsPath(path)),
        settings.readPolicy(), settings.readBufferSize()));
  }

  @Override
  protected CompletableFuture<FSDataInputStream> openFileWithOptions(Path path,
      OpenFileParameters parameters) throws IOException {
    AbstractFSBuilderImpl.rejectUnknownMandatoryKeys(parameters.getMandatoryKeys(),
        OpenFileOptions.FS_OPTION_OPENFILE_STANDARD_OPTIONS, "for " + path);
    ReadPolicy policy = ReadPolicy.parse(parameters.getOptions()
            .get(OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY, ""))
        .orElse(settings.readPolicy());
    int bufferSize = BlobFsConfiguration.openFileBufferSize(parameters.getOptions(),
        settings.readBufferSize());
    FileStatus status = parameters.getStatus();
    CompletableFuture<FSDataInputStream> result = new CompletableFuture<>();
    try {
      FSDataInputStream in = call(OP_OPENFILE, path, () -> {
        FsPath fsPath = toFsPath(path);
        if (status instanceof BlobFileStatus blob && blob.info().path().equals(fsPath)) {
          // The record came with the status: no metadata read.
          return inputStream(namespace.open(blob.info()), policy, bufferSize);
        }
        return inputStream(namespace.open(fsPath), policy, bufferSize);
      });
      result.complete(in);
    } catch (IOException | RuntimeException e) {
      result.completeExceptionally(e);
    }
    return result;
  }

  private FSDataInputStream inputStream(FileReader reader, ReadPolicy policy, int bufferSize) {
    return new FSDataInputStream(new BlobInputStream(reader, policy, bufferSize,
        settings.readAhead(), settings.readRandomMin(), stats, statistics, readAheadBuffers));
  }

  // ---------------------------------------------------------------- writing

  @Override
  public FSDataOutputStream create(Path path, FsPermission permission, boolean overwrite,
      int bufferSize, short replication, long blockSize, Progressable progress)
      throws IOException {
    return call(OP_CREATE, path,
        () -> outputStream(namespace.create(toFsPath(path), overwrite), path));
  }

  /**
   * As create, but the parent must already be a directory. With markers dropped (the
   * paper's default) a directory made by mkdirs is not visible, so only a parent that is
   * a file is rejected then.
   */
  @Override
  public FSDataOutputStream createNonRecursive(Path path, FsPermission permission,
      java.util.EnumSet<org.apache.hadoop.fs.CreateFlag> flags, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    return call(OP_CREATE_NON_RECURSIVE, path, () -> {
      boolean overwrite = flags.contains(org.apache.hadoop.fs.CreateFlag.OVERWRITE);
      return outputStream(namespace.createNonRecursive(toFsPath(path), overwrite), path);
    });
  }

  private FSDataOutputStream outputStream(io.blobfs.namespace.FileWriter writer, Path path) {
    return new FSDataOutputStream(
        new BlobOutputStream(writer, makeQualified(path), stats, statistics,
            settings.downgradeSyncableExceptions(), settings.writeGatherSize()), null);
  }

  @Override
  public FSDataOutputStream append(Path path, int bufferSize, Progressable progress) {
    throw new UnsupportedOperationException("append is not supported by blob://");
  }

  // ---------------------------------------------------------------- namespace

  @Override
  public FileStatus getFileStatus(Path path) throws IOException {
    return call(OP_GET_FILE_STATUS, path, () -> toStatus(namespace.getFileInfo(toFsPath(path))));
  }

  @Override
  public boolean mkdirs(Path path, FsPermission permission) throws IOException {
    return call(OP_MKDIRS, path, () -> namespace.mkdirs(toFsPath(path)));
  }

  @Override
  public boolean delete(Path path, boolean recursive) throws IOException {
    return call(OP_DELETE, path, () -> namespace.delete(toFsPath(path), recursive));
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    return call(OP_RENAME, src, () -> namespace.rename(toFsPath(src), toFsPath(dst)));
  }

  /**
   * Hadoop's rename with options (what {@code FileContext} and committers that replace a
   * file call). With {@code OVERWRITE}, a file over an existing file is the namespace's
   * {@code renameOver}: one step in which the destination is never missing (atomic on Týr
   * and memory, crash-safe on RADOS), instead of Hadoop's default delete-then-rename,
   * which leaves readers a moment without the file and loses the target if the rename
   * then fails. A file to a name that is free is the namespace's plain rename, which
   * refuses if another client wrote a file there meanwhile: the target is then probed
   * again and replaced, as a rename a moment later would, so a file source never reaches
   * Hadoop's delete-then-rename. Directory sources and targets go to Hadoop's default,
   * with its rules and messages.
   */
  @Override
  @Deprecated
  protected void rename(Path src, Path dst, Options.Rename... options) throws IOException {
    if (Arrays.asList(options).contains(Options.Rename.OVERWRITE)
        && call(OP_RENAME, src, () -> renameFileOverwriting(toFsPath(src), toFsPath(dst)))) {
      return;
    }
    super.rename(src, dst, options);
  }

  /**
   * False, having changed nothing, unless the source is a file and the target a file or
   * free. A free target's parent is checked first, with Hadoop's exceptions and messages.
   */
  private boolean renameFileOverwriting(FsPath src, FsPath dst) throws IOException {
    for (int attempt = 1; ; attempt++) {
      Optional<FileInfo> from = namespace.probe(src);
      Optional<FileInfo> to = namespace.probe(dst);
      if (src.equals(dst) || dst.isRoot() || from.isEmpty() || from.get().isDirectory()
          || to.isPresent() && to.get().isDirectory()) {
        return false;
      }
      if (to.isPresent()) {
        try {
          namespace.renameOver(src, to.get());
          return true;
        } catch (TargetChangedException e) {
          if (attempt == RENAME_OVER_ATTEMPTS) {
            throw e;
          }
          continue;
        }
      }
      checkRenameParent(dst);
      // false, changing nothing, also for a file created at the target after its check:
      // replaced below
      if (namespace.rename(src, dst)) {
        return true;
      }
      if (namespace.probe(src).isEmpty()) {
        throw new FileNotFoundException("rename source " + src + " not found.");
      }
      if (namespace.probe(dst).isEmpty()) {
        throw new IOException("rename from " + src + " to " + dst + " failed.");
      }
      // Another client wrote a file at the target meanwhile: probe again and replace it.
      if (attempt == RENAME_OVER_ATTEMPTS) {
        throw new TargetChangedException(dst + " kept changing while " + src
            + " was renamed over it; nothing was changed");
      }
    }
  }

  /** Hadoop's checks of a rename's free target: its parent exists and is a directory. */
  private void checkRenameParent(FsPath dst) throws IOException {
    Optional<FileInfo> parent = namespace.probe(dst.parent());
    if (parent.isEmpty()) {
      throw new FileNotFoundException("rename destination parent " + dst.parent()
          + " not found.");
    }
    if (!parent.get().isDirectory()) {
      throw new org.apache.hadoop.fs.ParentNotDirectoryException("rename destination parent "
          + dst.parent() + " is a file.");
    }
  }

  /** How often a rename over a file probes its target again while others keep changing it. */
  private static final int RENAME_OVER_ATTEMPTS = 5;

  @Override
  public FileStatus[] listStatus(Path path) throws IOException {
    return call(OP_LIST_STATUS, path, () -> {
      List<FileInfo> entries = namespace.list(toFsPath(path));
      FileStatus[] out = new FileStatus[entries.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = toStatus(entries.get(i));
      }
      return out;
    });
  }

  @Override
  public RemoteIterator<FileStatus> listStatusIterator(Path path) throws IOException {
    return call(OP_LIST_STATUS, path,
        () -> remote(namespace.listLazily(toFsPath(path)), this::toStatus, path));
  }

  @Override
  public RemoteIterator<LocatedFileStatus> listLocatedStatus(Path path) throws IOException {
    return call(BlobStatistics.OP_LIST_LOCATED_STATUS, path,
        () -> remote(namespace.listLazily(toFsPath(path)), this::toLocatedStatus, path));
  }

  /** Recursive listing is one flat scan of every name under the path, as in the paper. */
  @Override
  public RemoteIterator<LocatedFileStatus> listFiles(Path path, boolean recursive)
      throws IOException {
    return call(OP_LIST_FILES, path, () -> {
      FsPath fsPath = toFsPath(path);
      if (recursive) {
        return remote(namespace.listFilesRecursively(fsPath), this::toLocatedStatus, path);
      }
      EntryIterator<FileInfo> all = namespace.listLazily(fsPath);
      return remote(new EntryIterator<>() {
        private FileInfo next;

        @Override
        public boolean hasNext() throws IOException {
          while (next == null && all.hasNext()) {
            FileInfo f = all.next();
            next = f.isFile() ? f : null;
          }
          return next != null;
        }

        @Override
        public FileInfo next() throws IOException {
          if (!hasNext()) {
            throw new NoSuchElementException();
          }
          FileInfo f = next;
          next = null;
          return f;
        }
      }, this::toLocatedStatus, path);
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
    if (file.getLen() <= start) {
      return new BlockLocation[0];
    }
    return call(BlobStatistics.OP_GET_FILE_BLOCK_LOCATIONS, file.getPath(), () -> {
      FileInfo info = file instanceof BlobFileStatus b ? b.info()
          : namespace.getFileInfo(toFsPath(file.getPath()));
      return toLocations(namespace.locate(info, start, len));
    });
  }

  @Override
  public boolean hasPathCapability(Path path, String capability) throws IOException {
    Path p = makeQualified(path);
    switch (org.apache.hadoop.fs.impl.PathCapabilitiesSupport.validatePathCapabilityArgs(p,
        capability)) {
      case CommonPathCapabilities.ABORTABLE_STREAM:
      case CommonPathCapabilities.BULK_DELETE:
      case CommonPathCapabilities.ETAGS_AVAILABLE:
      case CommonPathCapabilities.ETAGS_PRESERVED_IN_RENAME:
        return true;
      case CommonPathCapabilities.FS_PERMISSIONS:
      case CommonPathCapabilities.FS_APPEND:
      case CommonPathCapabilities.FS_CONCAT:
      case CommonPathCapabilities.FS_CHECKSUMS:
      case CommonPathCapabilities.FS_SNAPSHOTS:
      case CommonPathCapabilities.FS_SYMLINKS:
      case CommonPathCapabilities.FS_TRUNCATE:
      case CommonPathCapabilities.FS_XATTRS:
      case CommonPathCapabilities.FS_ACLS:
      case CommonPathCapabilities.FS_PATHHANDLES:
      case CommonPathCapabilities.FS_MULTIPART_UPLOADER:
      case CommonPathCapabilities.DIRECTORY_LISTING_INCONSISTENT:
        return false;
      case BlobCapabilities.ATOMIC_RENAME:
        return namespace.hasAtomicRename();
      case BlobCapabilities.DIRECTORY_MARKERS_KEPT:
        return settings.namespace().keepDirectoryMarkers();
      default:
        return super.hasPathCapability(p, capability);
    }
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
      if (readAheadBuffers != null) {
        readAheadBuffers.clear();
      }
      if (store != null) {
        store.close();
      }
    }
  }

  @Override
  public String toString() {
    return "BlobFileSystem{" + uri + ", type=" + (settings == null ? "?" : settings.storeType())
        + ", " + stats + "}";
  }

  // ---------------------------------------------------------------- conversions

  FsPath toFsPath(Path path) {
    Path qualified = makeQualified(path);
    FsPath fsPath = FsPath.parse(qualified.toUri().getPath());
    namespace.checkPath(fsPath);
    return fsPath;
  }

  private Path toPath(FsPath path) {
    return new Path(uri.getScheme(), uri.getAuthority(), path.toString());
  }

  BlobFileStatus toStatus(FileInfo info) {
    return new BlobFileStatus(info, info.isDirectory() ? 0 : settings.namespace().stripeSize(),
        permission, owner, group, toPath(info.path()));
  }

  private LocatedFileStatus toLocatedStatus(FileInfo info) throws IOException {
    BlockLocation[] locations = info.isDirectory() || info.length() == 0
        ? new BlockLocation[0]
        : toLocations(namespace.locate(info, 0, info.length()));
    return new BlobLocatedFileStatus(toStatus(info), locations);
  }

  private static BlockLocation[] toLocations(List<BlockInfo> blocks) {
    BlockLocation[] out = new BlockLocation[blocks.size()];
    for (int i = 0; i < out.length; i++) {
      BlockInfo b = blocks.get(i);
      String[] hosts = b.hosts().toArray(new String[0]);
      String[] names = new String[hosts.length];
      for (int h = 0; h < hosts.length; h++) {
        names[h] = hosts[h] + ":9866"; // "host:port" as HDFS gives; only hosts matter here
      }
      out[i] = new BlockLocation(names, hosts, b.offset(), b.length());
    }
    return out;
  }

  private interface Converter<T> {
    T apply(FileInfo info) throws IOException;
  }

  private <T> RemoteIterator<T> remote(EntryIterator<FileInfo> it, Converter<T> convert,
      Path path) {
    return new RemoteIterator<>() {
      @Override
      public boolean hasNext() throws IOException {
        try {
          return it.hasNext();
        } catch (IOException e) {
          throw ErrorTranslation.translate(e, path);
        }
      }

      @Override
      public T next() throws IOException {
        try {
          return convert.apply(it.next());
        } catch (IOException e) {
          throw ErrorTranslation.translate(e, path);
        }
      }
    };
  }

  private static final Set<String> MUTATIONS =
      Set.of(OP_CREATE, OP_CREATE_NON_RECURSIVE, OP_MKDIRS, OP_DELETE, OP_RENAME);

  private interface IOCall<T> {
    T run() throws IOException;
  }

  /** Counts one Hadoop call and translates what it throws. */
  private <T> T call(String counter, Path path, IOCall<T> body) throws IOException {
    stats.incrementCounter(counter);
    if (statistics != null) {
      if (MUTATIONS.contains(counter)) {
        statistics.incrementWriteOps(1);
      } else {
        statistics.incrementReadOps(1);
      }
    }
    try {
      return body.run();
    } catch (IllegalPathException e) {
      throw ErrorTranslation.translate(e, path);
    } catch (IOException e) {
      throw ErrorTranslation.translate(e, path);
    }
  }
}

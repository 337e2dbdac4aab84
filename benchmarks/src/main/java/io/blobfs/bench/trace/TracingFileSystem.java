package io.blobfs.bench.trace;

import java.io.IOException;
import java.net.URI;
import java.util.Collection;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.FutureDataInputStreamBuilder;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Options.ChecksumOpt;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.StorageStatistics;
import org.apache.hadoop.fs.impl.OpenFileParameters;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.hadoop.util.ReflectionUtils;

/**
 * Counts the storage calls a job makes on any Hadoop file system, with the path of each
 * directory operation classified as in the paper's Table 2. It wraps the real file system
 * of a scheme, named by {@value #INNER_IMPL_PREFIX}{@code SCHEME}{@code .impl}:
 *
 * <pre>
 *   spark.hadoop.fs.blob.impl=io.blobfs.bench.trace.TracingFileSystem
 *   spark.hadoop.fs.trace.blob.impl=io.blobfs.hadoop.BlobFileSystem
 * </pre>
 *
 * Every call a caller makes counts once ({@link Tracer}: not the calls a file system makes on
 * itself); reads and writes are counted per call on the streams. The wrapped file system's
 * own statistics stay readable ({@link #getStorageStatistics()} is its own). Listings are
 * {@code listStatus} (with or without a filter, and the globber's), {@code
 * listStatusIterator}, {@code listLocatedStatus} and {@code listFiles}.
 *
 * <p>file:// cannot be wrapped this way (Hadoop and Spark cast its file system to
 * {@code LocalFileSystem}): {@link TracingLocalFileSystem} traces it instead.
 */
public class TracingFileSystem extends FilterFileSystem implements Traced {
  /** {@code fs.trace.SCHEME.impl}: the file system class this one wraps for SCHEME. */
  public static final String INNER_IMPL_PREFIX = "fs.trace.";

  private final Tracer tracer = new Tracer(this::makeQualified);

  /**
   * The keys (without {@code spark.hadoop.}) that trace {@code scheme}, whose file system is
   * {@code innerClass}: file:// through {@link TracingLocalFileSystem}, others wrapped.
   */
  public static Map<String, String> configuration(String scheme, String innerClass) {
    if (scheme.equals("file")) {
      return Map.of("fs.file.impl", TracingLocalFileSystem.class.getName());
    }
    return Map.of("fs." + scheme + ".impl", TracingFileSystem.class.getName(),
        INNER_IMPL_PREFIX + scheme + ".impl", innerClass);
  }

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    String key = INNER_IMPL_PREFIX + name.getScheme() + ".impl";
    Class<?> inner = conf.getClass(key, null);
    if (inner == null || !FileSystem.class.isAssignableFrom(inner)) {
      throw new IOException("TracingFileSystem for " + name + " needs " + key
          + " = the class of the file system it wraps");
    }
    fs = (FileSystem) ReflectionUtils.newInstance(inner, conf);
    fs.initialize(name, conf);
    super.initialize(name, conf);
  }

  /**
   * With the call log on ({@code blobfs.trace.log}), the wrapped file system's own
   * statistics go to stderr as it closes: the store calls behind the logged calls.
   */
  @Override
  public void close() throws IOException {
    if (Tracer.LOG) {
      System.err.println("FSTRACE-STATS " + fs.getUri() + " "
          + org.apache.hadoop.fs.statistics.IOStatisticsLogging.ioStatisticsSourceToString(fs));
    }
    super.close();
  }

  /** The wrapped file system's own statistics (FilterFileSystem would give empty ones). */
  @Override
  public StorageStatistics getStorageStatistics() {
    return fs.getStorageStatistics();
  }

  @Override
  public void setInputDirectories(Collection<Path> dirs) {
    tracer.setInputDirectories(dirs);
  }

  @Override
  public Map<String, Long> counts() {
    return tracer.counts();
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    return tracer.call(Call.OPEN, f, () -> tracer.wrap(super.open(f, bufferSize)));
  }

  /** As FileSystem's own: a builder whose build() comes back to openFileWithOptions here. */
  @Override
  public FutureDataInputStreamBuilder openFile(Path path) throws IOException {
    FutureDataInputStreamBuilder builder = createDataInputStreamBuilder(this, path);
    return builder;
  }

  @Override
  protected CompletableFuture<FSDataInputStream> openFileWithOptions(Path path,
      OpenFileParameters parameters) throws IOException {
    return tracer.call(Call.OPEN, path,
        () -> super.openFileWithOptions(path, parameters).thenApply(tracer::wrap));
  }

  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite,
      int bufferSize, short replication, long blockSize, Progressable progress)
      throws IOException {
    return tracer.call(Call.CREATE, f, () -> tracer.wrap(super.create(f, permission,
        overwrite, bufferSize, replication, blockSize, progress)));
  }

  @Override
  public FSDataOutputStream create(Path f, FsPermission permission,
      EnumSet<CreateFlag> flags, int bufferSize, short replication, long blockSize,
      Progressable progress, ChecksumOpt checksumOpt) throws IOException {
    return tracer.call(Call.CREATE, f, () -> tracer.wrap(super.create(f, permission, flags,
        bufferSize, replication, blockSize, progress, checksumOpt)));
  }

  @Override
  public FSDataOutputStream createNonRecursive(Path f, FsPermission permission,
      EnumSet<CreateFlag> flags, int bufferSize, short replication, long blockSize,
      Progressable progress) throws IOException {
    return tracer.call(Call.CREATE, f, () -> tracer.wrap(super.createNonRecursive(f,
        permission, flags, bufferSize, replication, blockSize, progress)));
  }

  /** A builder whose build() is one create() here (FilterFileSystem's would bypass it). */
  @Override
  public FSDataOutputStreamBuilder createFile(Path path) {
    return new CreateBuilder(this, path).create().overwrite(true);
  }

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    return tracer.call(Call.GET_FILE_STATUS, f, () -> super.getFileStatus(f));
  }

  @Override
  public boolean mkdirs(Path f, FsPermission permission) throws IOException {
    return tracer.call(Call.MKDIRS, f, () -> super.mkdirs(f, permission));
  }

  @Override
  public boolean mkdirs(Path f) throws IOException {
    return tracer.call(Call.MKDIRS, f, () -> super.mkdirs(f));
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    tracer.renamed(src, dst);
    return tracer.call(Call.RENAME, src, () -> super.rename(src, dst));
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    return tracer.call(Call.DELETE, f, () -> super.delete(f, recursive));
  }

  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    return tracer.call(Call.LIST, f, () -> super.listStatus(f));
  }

  @Override
  public RemoteIterator<FileStatus> listStatusIterator(Path f) throws IOException {
    return tracer.call(Call.LIST, f, () -> super.listStatusIterator(f));
  }

  @Override
  public RemoteIterator<LocatedFileStatus> listLocatedStatus(Path f) throws IOException {
    return tracer.call(Call.LIST, f, () -> super.listLocatedStatus(f));
  }

  @Override
  public RemoteIterator<LocatedFileStatus> listFiles(Path f, boolean recursive)
      throws IOException {
    return tracer.call(Call.LIST, f, () -> super.listFiles(f, recursive));
  }

  /** What FileSystem's private builder does: one create() call on the file system. */
  static final class CreateBuilder
      extends FSDataOutputStreamBuilder<FSDataOutputStream, CreateBuilder> {
    CreateBuilder(FileSystem fs, Path path) {
      super(fs, path);
    }

    @Override
    public CreateBuilder getThisBuilder() {
      return this;
    }

    @Override
    public FSDataOutputStream build() throws IOException {
      rejectUnknownMandatoryKeys(java.util.Collections.emptySet(), " for " + getPath());
      if (getFlags().contains(CreateFlag.CREATE) || getFlags().contains(CreateFlag.OVERWRITE)) {
        if (isRecursive()) {
          return getFS().create(getPath(), getPermission(), getFlags(), getBufferSize(),
              getReplication(), getBlockSize(), getProgress(), getChecksumOpt());
        }
        return getFS().createNonRecursive(getPath(), getPermission(), getFlags(),
            getBufferSize(), getReplication(), getBlockSize(), getProgress());
      }
      throw new UnsupportedOperationException("append is not traced: " + getPath());
    }
  }
}

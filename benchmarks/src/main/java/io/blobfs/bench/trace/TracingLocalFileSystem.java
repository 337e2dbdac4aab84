package io.blobfs.bench.trace;

import java.io.IOException;
import java.util.Collection;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.FutureDataInputStreamBuilder;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Options.ChecksumOpt;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.impl.OpenFileParameters;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * {@link TracingFileSystem} for file://: the same counting, as a {@link LocalFileSystem}
 * itself, because Hadoop and Spark cast the file:// file system to {@code LocalFileSystem}
 * ({@code FileSystem.getLocal}) and a wrapper fails there. Set {@code
 * fs.file.impl=io.blobfs.bench.trace.TracingLocalFileSystem}. The overrides are those of
 * TracingFileSystem, calling LocalFileSystem's own methods (the checksum layer included);
 * the calls LocalFileSystem makes on itself are not counted again ({@link Tracer}).
 */
public class TracingLocalFileSystem extends LocalFileSystem implements Traced {
  private final Tracer tracer = new Tracer(this::makeQualified);

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

  /** A builder whose build() is one create() here (LocalFileSystem's would bypass it). */
  @Override
  public FSDataOutputStreamBuilder createFile(Path path) {
    return new TracingFileSystem.CreateBuilder(this, path).create().overwrite(true);
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
}

package io.blobfs.fuse.kernel;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One mount: opens {@code /dev/fuse}, mounts it, and serves the kernel's requests on a
 * few threads, each reading one request, calling the {@link LowLevelFs} and writing the
 * reply. This is the whole protocol layer (as go-fuse and libfuse's lowlevel.c are): it
 * knows the wire structs and nothing of blobs.
 *
 * <p>Why not libfuse through an FFI: the protocol is a stable kernel ABI of fixed little-
 * endian structs that {@link ByteBuffer}s read and write directly, with no C structs with
 * bit fields ({@code fuse_file_info}), no native threads calling into the JVM, and no
 * library version to match; the codec is unit-tested without a kernel.
 */
public final class FuseSession implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(FuseSession.class.getName());

  /** Protocol version this side speaks; the kernel adapts to an older minor. */
  static final int MAJOR = 7;
  static final int MINOR = 31;
  static final int IN_HEADER = 40;
  static final int OUT_HEADER = 16;
  /** fuse_write_in: fh, offset, size, write_flags, lock_owner, flags, padding. */
  static final int WRITE_IN = 40;

  // INIT flags this side asks for, when the kernel offers them
  static final int ASYNC_READ = 1;
  static final int ATOMIC_O_TRUNC = 1 << 3;
  static final int BIG_WRITES = 1 << 5;
  static final int AUTO_INVAL_DATA = 1 << 12;
  static final int PARALLEL_DIROPS = 1 << 18;
  static final int MAX_PAGES = 1 << 22;
  /** flags2 follows flags (in both directions). */
  static final int INIT_EXT = 1 << 30;
  /** FUSE_PASSTHROUGH, bit 37 of the 64 flags: bit 5 of flags2. */
  static final int PASSTHROUGH2 = 1 << 5;
  /** The protocol minor that has passthrough (7.40, Linux 6.9). */
  static final int PASSTHROUGH_MINOR = 40;
  /**
   * max_stack_depth: how deep the backing files' file systems may stack (2, the kernel's
   * FILESYSTEM_MAX_STACK_DEPTH): a staging directory on an overlayfs (a container's /tmp)
   * has depth 1, which a limit of 1 refuses (ELOOP at registration). The mount itself then
   * cannot be stacked under an overlayfs, which nothing here does.
   */
  static final int PASSTHROUGH_STACK_DEPTH = 2;

  /** Open flags the kernel passes through. */
  public static final int O_ACCMODE = 3;
  public static final int O_WRONLY = 1;
  public static final int O_RDWR = 2;
  public static final int O_CREAT = 0100;
  public static final int O_EXCL = 0200;
  public static final int O_TRUNC = 01000;
  public static final int O_APPEND = 02000;

  private static final int FOPEN_DIRECT_IO = 1;
  private static final int FOPEN_KEEP_CACHE = 2;
  private static final int FOPEN_PASSTHROUGH = 1 << 7;
  private static final int FATTR_SIZE = 1 << 3;
  private static final int FATTR_MODE = 1;
  private static final int FATTR_UID = 1 << 1;
  private static final int FATTR_GID = 1 << 2;
  private static final int FATTR_MTIME = 1 << 5;
  private static final int FATTR_FH = 1 << 6;
  private static final int FATTR_MTIME_NOW = 1 << 8;
  private static final int RENAME_NOREPLACE = 1;

  /** The kernel's read-ahead of this mount, in requests of {@code max_read}. */
  static final int READ_AHEAD_REQUESTS = 8;

  private final LowLevelFs fs;
  private final String mountPoint;
  private final Options options;
  private final int fd;
  private final List<Thread> workers = new ArrayList<>();
  private final AtomicBoolean unmounted = new AtomicBoolean();
  private final RequestStats stats = new RequestStats();
  /** The mount's number under /sys/fs/fuse/connections, to abort it; -1 if unknown. */
  private volatile long connection = -1;
  /** Whether INIT agreed on passthrough (Linux 6.9+ and {@link Options#passthrough}). */
  private volatile boolean passthrough;

  /**
   * @param maxWrite largest write (and read) the kernel sends in one request
   * @param threads requests served at once
   * @param timeoutMillis how long the kernel may cache names and attributes
   * @param passthrough ask the kernel for FUSE passthrough ({@link Passthrough})
   */
  public record Options(int maxWrite, int threads, long timeoutMillis, String fsName,
      boolean passthrough) {
    public Options(int maxWrite, int threads, long timeoutMillis, String fsName) {
      this(maxWrite, threads, timeoutMillis, fsName, false);
    }

    public static Options defaults() {
      return new Options(1 << 20, 8, 1000, "blobfs");
    }

    public Options withPassthrough(boolean on) {
      return new Options(maxWrite, threads, timeoutMillis, fsName, on);
    }
  }

  /** Whether the kernel agreed to pass opens through to backing files. */
  public boolean passthrough() {
    return passthrough;
  }

  private FuseSession(LowLevelFs fs, String mountPoint, Options options, int fd) {
    this.fs = fs;
    this.mountPoint = mountPoint;
    this.options = options;
    this.fd = fd;
  }

  /** Mounts {@code fs} at {@code mountPoint} and starts serving it. Needs root. */
  public static FuseSession mount(LowLevelFs fs, String mountPoint, Options options)
      throws IOException {
    int fd;
    try {
      fd = LibC.INSTANCE.open("/dev/fuse", LibC.O_RDWR | LibC.O_CLOEXEC);
    } catch (LastErrorException e) {
      throw new IOException("cannot open /dev/fuse: errno " + e.getErrorCode(), e);
    }
    String data = "fd=" + fd + ",rootmode=40000,user_id=0,group_id=0,allow_other,max_read="
        + options.maxWrite();
    try {
      LibC.INSTANCE.mount(options.fsName(), mountPoint, "fuse." + options.fsName(),
          LibC.MS_NOSUID | LibC.MS_NODEV, data);
    } catch (LastErrorException e) {
      LibC.INSTANCE.close(fd);
      throw new IOException("mount of " + mountPoint + " failed: errno " + e.getErrorCode(), e);
    }
    FuseSession s = new FuseSession(fs, mountPoint, options, fd);
    for (int i = 0; i < options.threads(); i++) {
      Thread t = new Thread(s::serve, "fuse-" + i);
      t.setDaemon(true);
      s.workers.add(t);
      t.start();
    }
    s.connection = connectionOf(mountPoint); // a stat the workers now answer
    s.raiseReadAhead();
    return s;
  }

  /**
   * Raises the kernel's read-ahead for this mount to {@link #READ_AHEAD_REQUESTS} requests
   * of {@code max_read} each. INIT offers FUSE the default 128 KiB and a reply cannot
   * raise it, so a program's 1 MiB read arrives as eight requests, each a round trip
   * through this process; the mount's backing device ({@code /sys/class/bdi/0:N}, N the
   * connection) takes a larger value from root, as other FUSE file systems advise their
   * users to set it. Past {@code max_read}, the kernel splits its read-ahead into
   * requests of {@code max_read} and, with async_read, sends them at once, so that the
   * serving threads work on several of one reader's requests together instead of one
   * after another (A/B at a load of 40 on 2 cores, 1 MiB against 8 MiB, seq 1 MiB fio
   * reads: faster in each of 6 pairs, medians 1.12x on Týr and 1.34x on RADOS). Best
   * effort: a mount without it still works, only with smaller requests.
   */
  private void raiseReadAhead() {
    if (connection < 0) {
      return;
    }
    Path ra = Path.of("/sys/class/bdi/0:" + connection + "/read_ahead_kb");
    try {
      Files.writeString(ra, Integer.toString(READ_AHEAD_REQUESTS * options.maxWrite() / 1024));
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "read-ahead left at the kernel's default: " + e);
    }
  }

  /** A session that is not mounted: {@link #handle} alone, for tests of the codec. */
  static FuseSession unmounted(LowLevelFs fs, Options options) {
    return new FuseSession(fs, "(none)", options, -1);
  }

  public String mountPoint() {
    return mountPoint;
  }

  /** Blocks until the file system is unmounted (by {@link #close} or umount(8)). */
  public void join() throws InterruptedException {
    for (Thread t : workers) {
      t.join();
    }
  }

  /**
   * Unmounts and stops the workers. A mount with files still open (EBUSY) is detached and
   * its connection aborted, so that the workers' reads end and the open files answer
   * ENOTCONN: a lazy unmount alone would keep the connection, and this call, waiting for
   * the last of them.
   */
  @Override
  public void close() {
    if (unmounted.compareAndSet(false, true)) {
      try {
        LibC.INSTANCE.umount2(mountPoint, 0);
        // Unmounted here, but a process that entered a mount namespace of its own while
        // the mount existed (unshare -m, a container, a test JVM) holds a copy of it, and
        // the kernel keeps the connection, and the workers' reads, for as long as that
        // copy lives: an unmount that waited for it hung (bench-hpc.sh's cleanup did).
        if (!joinWithin(UNMOUNT_GRACE_MILLIS)) {
          LOG.log(System.Logger.Level.WARNING, mountPoint + " is unmounted here but the"
              + " kernel keeps its connection (a copy in another mount namespace?): aborting it");
          abortConnection();
        }
      } catch (LastErrorException busy) {
        try {
          LibC.INSTANCE.umount2(mountPoint, LibC.MNT_DETACH);
        } catch (LastErrorException e) {
          // already unmounted from outside (umount(8)): the reads end with ENODEV
          LOG.log(System.Logger.Level.DEBUG, "umount " + mountPoint + ": errno " + e.getErrorCode());
        }
        abortConnection();
      }
      try {
        join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      LibC.INSTANCE.close(fd);
      LOG.log(System.Logger.Level.INFO, "requests served on " + mountPoint + ":" + stats.summary());
    }
  }

  /** Requests served so far, by opcode (see {@link RequestStats}). */
  String requestSummary() {
    return stats.summary();
  }

  /** WRITE requests served so far. */
  public long writeRequests() {
    return stats.count(Opcode.WRITE);
  }

  RequestStats stats() {
    return stats;
  }

  /** How long an unmounted connection may take to end its workers' reads by itself. */
  private static final long UNMOUNT_GRACE_MILLIS = 10_000;

  /** Waits up to {@code millis} for every worker to end; true if they all did. */
  private boolean joinWithin(long millis) {
    long deadline = System.nanoTime() + millis * 1_000_000;
    try {
      for (Thread t : workers) {
        long left = (deadline - System.nanoTime()) / 1_000_000;
        if (left > 0) {
          t.join(left);
        }
        if (t.isAlive()) {
          return false;
        }
      }
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Writes to the connection's abort file in fusectl, mounting fusectl if it is not. */
  private void abortConnection() {
    if (connection < 0) {
      return;
    }
    Path connections = Path.of("/sys/fs/fuse/connections");
    Path abort = connections.resolve(Long.toString(connection)).resolve("abort");
    try {
      if (!Files.exists(abort) && Files.isDirectory(connections)) {
        LibC.INSTANCE.mount("fusectl", connections.toString(), "fusectl", 0, null);
      }
      Files.writeString(abort, "1");
    } catch (IOException | LastErrorException e) {
      LOG.log(System.Logger.Level.WARNING, "could not abort FUSE connection " + connection
          + " of " + mountPoint + ": " + e + "; the workers end when its last file closes");
    }
  }

  /**
   * The connection's number in fusectl: the minor of the mount's anonymous device, decoded
   * from glibc's st_dev layout. -1 if it cannot be read.
   */
  private static long connectionOf(String mountPoint) {
    try {
      long dev = ((Number) Files.getAttribute(Path.of(mountPoint), "unix:dev")).longValue();
      return (dev & 0xff) | ((dev >>> 12) & 0xffffff00L);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  // ---------------------------------------------------------------- the loop

  private void serve() {
    int bufSize = options.maxWrite() + (64 << 10);
    ByteBuffer in = ByteBuffer.allocateDirect(bufSize).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer out = ByteBuffer.allocateDirect(bufSize).order(ByteOrder.LITTLE_ENDIAN);
    while (true) {
      in.clear();
      long n;
      try {
        n = LibC.INSTANCE.read(fd, in, bufSize);
      } catch (LastErrorException e) {
        int errno = e.getErrorCode();
        if (errno == Errno.EINTR || errno == Errno.EAGAIN || errno == Errno.ENOENT) {
          continue; // interrupted, or a request the kernel withdrew before we read it
        }
        if (errno != Errno.ENODEV) {
          LOG.log(System.Logger.Level.ERROR, "reading /dev/fuse failed: errno " + errno);
        }
        return; // ENODEV: unmounted
      }
      in.limit((int) n);
      out.clear();
      int len = handle(in, out);
      if (len > 0) {
        out.position(0); // JNA passes a direct buffer from its position
        try {
          LibC.INSTANCE.write(fd, out, len);
        } catch (LastErrorException e) {
          // ENOENT: the request was interrupted and the kernel no longer waits for it
          if (e.getErrorCode() != Errno.ENOENT) {
            LOG.log(System.Logger.Level.WARNING, "reply failed: errno " + e.getErrorCode());
          }
        }
      }
    }
  }

  /**
   * Decodes one request in {@code in}, calls the file system and encodes the reply in
   * {@code out}. Returns the reply's length, 0 for requests that get none.
   */
  int handle(ByteBuffer in, ByteBuffer out) {
    int opcode = in.getInt(4);
    long unique = in.getLong(8);
    long node = in.getLong(16);
    in.position(IN_HEADER);
    out.position(OUT_HEADER);
    long started = System.nanoTime();
    int error = 0;
    try {
      if (!dispatch(opcode, node, in, out)) {
        return 0;
      }
    } catch (FuseException e) {
      error = e.errno();
      if (error == Errno.EIO) {
        LOG.log(System.Logger.Level.WARNING, "op " + opcode + " on node " + node + ": EIO", e);
      }
    } catch (RuntimeException | Error e) {
      // Errors too (a NoSuchMethodError from a stale jar, an OutOfMemoryError): a request
      // left unanswered hangs its caller in the kernel for good, and the thread dying with
      // it would take a server thread away from the mount
      error = Errno.EIO;
      LOG.log(System.Logger.Level.ERROR, "op " + opcode + " on node " + node + " failed", e);
    }
    int len = error == 0 ? out.position() : OUT_HEADER;
    out.putInt(0, len).putInt(4, -error).putLong(8, unique);
    long payload = opcode == Opcode.WRITE ? in.limit() - IN_HEADER - WRITE_IN
        : opcode == Opcode.READ ? len - OUT_HEADER : 0;
    stats.record(opcode, payload, System.nanoTime() - started);
    return len;
  }

  /** Returns false for requests that take no reply. */
  private boolean dispatch(int opcode, long node, ByteBuffer in, ByteBuffer out)
      throws FuseException {
    switch (opcode) {
      case Opcode.INIT -> init(in, out);
      case Opcode.LOOKUP -> entry(out, fs.lookup(node, name(in)));
      case Opcode.FORGET -> {
        fs.forget(node, in.getLong());
        return false;
      }
      case Opcode.BATCH_FORGET -> {
        int count = in.getInt();
        in.getInt();
        for (int i = 0; i < count; i++) {
          fs.forget(in.getLong(), in.getLong());
        }
        return false;
      }
      case Opcode.GETATTR -> attrOut(out, fs.getattr(node));
      case Opcode.SETATTR -> attrOut(out, fs.setattr(node, setattr(in)));
      case Opcode.MKDIR -> {
        in.getInt(); // mode
        in.getInt(); // umask
        entry(out, fs.mkdir(node, name(in)));
      }
      case Opcode.MKNOD -> {
        int mode = in.getInt();
        in.position(in.position() + 12); // rdev, umask, padding
        entry(out, fs.mknod(node, name(in), mode));
      }
      case Opcode.UNLINK -> fs.unlink(node, name(in));
      case Opcode.RMDIR -> fs.rmdir(node, name(in));
      case Opcode.RENAME, Opcode.RENAME2 -> {
        long newDir = in.getLong();
        int flags = 0;
        if (opcode == Opcode.RENAME2) {
          flags = in.getInt();
          in.getInt();
          if ((flags & ~RENAME_NOREPLACE) != 0) {
            throw new FuseException(Errno.EINVAL, "rename flags " + flags); // EXCHANGE, WHITEOUT
          }
        }
        String from = name(in);
        String to = name(in);
        fs.rename(node, from, newDir, to, (flags & RENAME_NOREPLACE) != 0);
      }
      case Opcode.OPEN -> open(out, fs.open(node, in.getInt()));
      case Opcode.CREATE -> {
        int flags = in.getInt();
        in.position(in.position() + 12); // mode, umask, open_flags
        Opened[] handle = new Opened[1];
        entry(out, fs.create(node, name(in), flags, handle));
        open(out, handle[0]);
      }
      case Opcode.READ -> {
        long fh = in.getLong();
        long offset = in.getLong();
        int size = Math.min(in.getInt(), out.capacity() - OUT_HEADER);
        ByteBuffer dst = out.slice(OUT_HEADER, size);
        fs.read(node, fh, offset, dst);
        out.position(OUT_HEADER + dst.position());
      }
      case Opcode.WRITE -> {
        long fh = in.getLong();
        long offset = in.getLong();
        int size = in.getInt();
        int start = IN_HEADER + WRITE_IN; // after write_flags, lock_owner, flags, padding
        int written = fs.write(node, fh, offset, in.slice(start, size));
        out.putInt(written).putInt(0);
      }
      case Opcode.FLUSH -> fs.flush(node, in.getLong());
      case Opcode.RELEASE -> fs.release(node, in.getLong());
      case Opcode.FSYNC -> {
        long fh = in.getLong();
        fs.fsync(node, fh, (in.getInt() & 1) != 0);
      }
      case Opcode.OPENDIR -> open(out, fs.opendir(node));
      case Opcode.READDIR -> {
        long fh = in.getLong();
        long offset = in.getLong();
        int size = Math.min(in.getInt(), out.capacity() - OUT_HEADER);
        DirBuffer dir = new DirBuffer(out.slice(OUT_HEADER, size).order(ByteOrder.LITTLE_ENDIAN));
        fs.readdir(node, fh, offset, dir);
        out.position(OUT_HEADER + dir.size());
      }
      case Opcode.RELEASEDIR -> fs.releasedir(node, in.getLong());
      case Opcode.FSYNCDIR, Opcode.ACCESS -> { } // nothing to sync; permissions: allow_other, 777
      case Opcode.STATFS -> statfs(out, fs.statfs());
      case Opcode.INTERRUPT -> {
        return false; // calls run to their own timeouts; the reply then finds ENOENT
      }
      case Opcode.DESTROY -> { }
      default -> throw new FuseException(Errno.ENOSYS, "opcode " + opcode);
    }
    return true;
  }

  // ---------------------------------------------------------------- codec

  private void init(ByteBuffer in, ByteBuffer out) throws FuseException {
    int major = in.getInt();
    int minor = in.getInt();
    int maxReadahead = in.getInt();
    int offered = in.getInt();
    int offered2 = in.remaining() >= 4 ? in.getInt() : 0; // fuse_init_in before 7.36 ends here
    if (major != MAJOR) {
      throw new FuseException(Errno.EPROTO, "kernel FUSE protocol " + major + "." + minor);
    }
    int wanted = ASYNC_READ | ATOMIC_O_TRUNC | BIG_WRITES | AUTO_INVAL_DATA | PARALLEL_DIROPS
        | MAX_PAGES;
    // passthrough only when asked: it takes protocol 7.40, and nothing else changes
    // for a mount without it (the minor stays 7.31)
    boolean pass = options.passthrough() && minor >= PASSTHROUGH_MINOR
        && (offered & INIT_EXT) != 0 && (offered2 & PASSTHROUGH2) != 0;
    if (options.passthrough() && !pass) {
      LOG.log(System.Logger.Level.WARNING, "FUSE passthrough asked for, but the kernel (protocol "
          + major + "." + minor + ", flags2 " + Integer.toHexString(offered2)
          + ") does not offer it: reads and writes go through this process");
    }
    passthrough = pass;
    out.putInt(MAJOR).putInt(pass ? PASSTHROUGH_MINOR : Math.min(MINOR, minor))
        .putInt(Math.min(maxReadahead, options.maxWrite()))
        .putInt((offered & wanted) | (pass ? INIT_EXT : 0))
        .putShort((short) 64) // max_background
        .putShort((short) 48) // congestion_threshold
        .putInt(options.maxWrite())
        .putInt(1) // time_gran: nanoseconds
        .putShort((short) (options.maxWrite() / 4096)) // max_pages
        .putShort((short) 0) // map_alignment
        .putInt(pass ? PASSTHROUGH2 : 0) // flags2
        .putInt(pass ? PASSTHROUGH_STACK_DEPTH : 0); // max_stack_depth
    for (int i = 0; i < 6; i++) {
      out.putInt(0);
    }
    fs.initialized(pass ? new DeviceBackings() : null);
  }

  /**
   * Backing files registered on this mount's {@code /dev/fuse} descriptor: ioctl
   * FUSE_DEV_IOC_BACKING_OPEN with a {@code struct fuse_backing_map {int32 fd; uint32
   * flags; uint64 padding}}, which returns the id; the kernel keeps its own reference to
   * the file, so the descriptor opened for the call is closed at once.
   */
  private final class DeviceBackings implements Passthrough {
    /** _IOW(229, 1, struct fuse_backing_map): 16 bytes. */

    @Override
    public int open(Path file) throws IOException {
      int backing;
      try {
        backing = LibC.INSTANCE.open(file.toString(), LibC.O_RDWR | LibC.O_CLOEXEC);
      } catch (LastErrorException e) {
        throw new IOException("cannot open " + file + ": errno " + e.getErrorCode(), e);
      }
      try (com.sun.jna.Memory map = new com.sun.jna.Memory(16)) {
        map.clear();
        map.setInt(0, backing);
        return LibC.INSTANCE.ioctl(fd, BACKING_OPEN, map);
      } catch (LastErrorException e) {
        throw new IOException("FUSE_DEV_IOC_BACKING_OPEN of " + file + " refused: errno "
            + e.getErrorCode(), e);
      } finally {
        LibC.INSTANCE.close(backing);
      }
    }

    @Override
    public void close(int backingId) {
      try (com.sun.jna.Memory id = new com.sun.jna.Memory(4)) {
        id.setInt(0, backingId);
        LibC.INSTANCE.ioctl(fd, BACKING_CLOSE, id);
      } catch (LastErrorException e) {
        // gone with the connection (unmounted) or never there: nothing to give back
        LOG.log(System.Logger.Level.DEBUG, "backing close " + backingId + ": errno "
            + e.getErrorCode());
      }
    }
  }

  /** FUSE_DEV_IOC_BACKING_OPEN: _IOW(229, 1, struct fuse_backing_map), 16 bytes. */
  static final long BACKING_OPEN = iow(229, 1, 16);
  /** FUSE_DEV_IOC_BACKING_CLOSE: _IOW(229, 2, uint32_t). */
  static final long BACKING_CLOSE = iow(229, 2, 4);

  /** Linux's _IOW(type, nr, size) on x86 and arm: direction write (1) in bits 30-31. */
  static long iow(int type, int nr, int size) {
    return (1L << 30) | ((long) size << 16) | ((long) type << 8) | nr;
  }

  private static SetAttr setattr(ByteBuffer in) {
    int valid = in.getInt();
    in.getInt();
    long fh = in.getLong();
    long size = in.getLong();
    in.getLong(); // lock_owner
    in.getLong(); // atime
    long mtime = in.getLong();
    in.getLong(); // ctime
    in.getInt(); // atimensec
    int mtimensec = in.getInt();
    long mtimeMillis = -1;
    if ((valid & FATTR_MTIME_NOW) != 0) {
      mtimeMillis = System.currentTimeMillis();
    } else if ((valid & FATTR_MTIME) != 0) {
      mtimeMillis = mtime * 1000 + mtimensec / 1_000_000;
    }
    return new SetAttr((valid & FATTR_FH) != 0 ? fh : -1, (valid & FATTR_SIZE) != 0 ? size : -1,
        mtimeMillis, (valid & (FATTR_MODE | FATTR_UID | FATTR_GID)) != 0);
  }

  /** A NUL-terminated name; names with bytes no UTF-8 decodes are refused. */
  static String name(ByteBuffer in) throws FuseException {
    int start = in.position();
    int end = start;
    while (end < in.limit() && in.get(end) != 0) {
      end++;
    }
    byte[] bytes = new byte[end - start];
    in.get(bytes);
    in.position(Math.min(end + 1, in.limit()));
    if (bytes.length > 255) {
      throw new FuseException(Errno.ENAMETOOLONG, "name of " + bytes.length + " bytes");
    }
    var decoder = StandardCharsets.UTF_8.newDecoder();
    try {
      return decoder.decode(ByteBuffer.wrap(bytes)).toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      throw new FuseException(Errno.EINVAL, "name is not UTF-8");
    }
  }

  private void entry(ByteBuffer out, Entry e) {
    long validSec = options.timeoutMillis() / 1000;
    int validNsec = (int) (options.timeoutMillis() % 1000 * 1_000_000);
    out.putLong(e.node()).putLong(0) // generation
        .putLong(validSec).putLong(validSec).putInt(validNsec).putInt(validNsec);
    attr(out, e.attr());
  }

  private void attrOut(ByteBuffer out, Attr a) {
    out.putLong(options.timeoutMillis() / 1000)
        .putInt((int) (options.timeoutMillis() % 1000 * 1_000_000)).putInt(0);
    attr(out, a);
  }

  static void attr(ByteBuffer out, Attr a) {
    long sec = Math.floorDiv(a.mtimeMillis(), 1000);
    int nsec = (int) Math.floorMod(a.mtimeMillis(), 1000) * 1_000_000;
    out.putLong(a.ino()).putLong(a.size()).putLong((a.size() + 511) / 512)
        .putLong(sec).putLong(sec).putLong(sec)
        .putInt(nsec).putInt(nsec).putInt(nsec)
        .putInt(a.mode()).putInt(a.nlink()).putInt(a.uid()).putInt(a.gid())
        .putInt(0) // rdev
        .putInt(a.blksize()).putInt(0); // flags
  }

  private static void open(ByteBuffer out, Opened o) {
    out.putLong(o.fh())
        .putInt((o.keepCache() ? FOPEN_KEEP_CACHE : 0) | (o.directIo() ? FOPEN_DIRECT_IO : 0)
            | (o.backingId() > 0 ? FOPEN_PASSTHROUGH : 0))
        .putInt(o.backingId()); // backing_id (padding before 7.40)
  }

  private static void statfs(ByteBuffer out, StatFs s) {
    out.putLong(s.blocks()).putLong(s.blocksFree()).putLong(s.blocksFree())
        .putLong(s.files()).putLong(s.filesFree())
        .putInt(s.blockSize()).putInt(s.nameMax()).putInt(s.blockSize()).putInt(0);
    for (int i = 0; i < 6; i++) {
      out.putInt(0);
    }
  }
}

package io.blobfs.rados;

import com.sun.jna.Callback;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLong;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.NativeLongByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * The librados calls rados-java 0.6.0 lacks or gets wrong, declared by us: asynchronous
 * reads and writes whose return codes can be read back, write ops with exclusive create,
 * and listing that yields raw bytes. Object names are passed as NUL-terminated UTF-8
 * bytes, never as Java strings, so that non-ASCII names do not depend on the platform
 * encoding JNA would otherwise use.
 */
interface LibRados extends Library {
  LibRados INSTANCE = Native.load("rados", LibRados.class);

  int LIBRADOS_CREATE_EXCLUSIVE = 1;
  /**
   * Send the op even when the pool or cluster is full: a write then fails at once with
   * ENOSPC/EDQUOT instead of waiting for space, and a delete (which frees space) runs.
   */
  int LIBRADOS_OPERATION_FULL_TRY = 64;
  /** rados_ioctx_set_namespace() value that lists every namespace. */
  String ALL_NSPACES = "\001";

  /** {@code rados_callback_t}: called by librados on one of its own threads. */
  interface CompletionCallback extends Callback {
    void invoke(Pointer completion, Pointer arg);
  }

  int rados_aio_create_completion2(Pointer arg, CompletionCallback complete,
      PointerByReference completion);

  int rados_aio_get_return_value(Pointer completion);

  void rados_aio_release(Pointer completion);

  /**
   * Waits until the AIO writes on the context are safe: writes only, not reads
   * (RadosCluster counts every call to know when none is in flight).
   */
  int rados_aio_flush(Pointer io);

  int rados_aio_read(Pointer io, byte[] oid, Pointer completion, Pointer buf, NativeLong len,
      long off);

  int rados_write_full(Pointer io, byte[] oid, Pointer buf, NativeLong len);

  Pointer rados_create_write_op();

  void rados_release_write_op(Pointer op);

  void rados_write_op_create(Pointer op, int exclusive, String category);

  void rados_write_op_write_full(Pointer op, Pointer buf, NativeLong len);

  void rados_write_op_write(Pointer op, Pointer buf, NativeLong len, long offset);

  void rados_write_op_remove(Pointer op);

  void rados_write_op_assert_exists(Pointer op);

  void rados_write_op_truncate(Pointer op, long offset);

  void rados_write_op_assert_version(Pointer op, long ver);

  long rados_aio_get_version(Pointer completion);

  Pointer rados_create_read_op();

  void rados_release_read_op(Pointer op);

  void rados_read_op_stat(Pointer op, LongByReference psize, LongByReference pmtime,
      IntByReference prval);

  void rados_read_op_read(Pointer op, long offset, NativeLong len, Pointer buf,
      NativeLongByReference bytesRead, IntByReference prval);

  int rados_aio_read_op_operate(Pointer op, Pointer io, Pointer completion, byte[] oid,
      int flags);

  int rados_aio_write_op_operate(Pointer op, Pointer io, Pointer completion, byte[] oid,
      Pointer mtime, int flags);

  int rados_write_op_operate(Pointer op, Pointer io, byte[] oid, Pointer mtime, int flags);

  void rados_ioctx_set_namespace(Pointer io, String nspace);

  int rados_nobjects_list_open(Pointer io, PointerByReference ctx);

  int rados_nobjects_list_next(Pointer ctx, PointerByReference entry, PointerByReference key,
      PointerByReference nspace);

  void rados_nobjects_list_close(Pointer ctx);

  /**
   * Our own binding rather than rados-java's executeRadosMonCommand, which decodes the
   * reply with the platform charset.
   */
  int rados_mon_command(Pointer cluster, String[] cmd, NativeLong cmdlen, Pointer inbuf,
      NativeLong inbuflen, PointerByReference outbuf, NativeLongByReference outbuflen,
      PointerByReference outs, NativeLongByReference outslen);

  void rados_buffer_free(Pointer buf);

  // ---------------------------------------------------------------- omap (the name index)

  /** {@code LIBRADOS_CMPXATTR_OP_EQ}: an omap_cmp assertion that the value is equal. */
  byte LIBRADOS_CMPXATTR_OP_EQ = 1;

  /** Blocks until the AIO has completed; the callers here wait on several in parallel. */
  int rados_aio_wait_for_complete(Pointer completion);

  int rados_aio_stat(Pointer io, byte[] oid, Pointer completion, LongByReference psize,
      LongByReference pmtime);

  /**
   * Sets {@code num} omap keys (NUL-terminated UTF-8, as an array of pointers) to values of
   * the given lengths ({@code size_t[]}).
   */
  void rados_write_op_omap_set(Pointer op, Pointer keys, Pointer vals, Pointer lens,
      NativeLong num);

  void rados_write_op_omap_rm_keys(Pointer op, Pointer keys, NativeLong keysLen);

  /** Fails the whole write op with -ECANCELED unless the key's value compares as asked. */
  void rados_write_op_omap_cmp(Pointer op, byte[] key, byte comparisonOperator, Pointer val,
      NativeLong valLen, IntByReference prval);

  /**
   * Up to {@code maxReturn} omap entries after {@code startAfter} whose keys start with
   * {@code filterPrefix}: the OSD seeks to the first candidate and stops at the first key
   * past the prefix, so the cost is the entries returned, not the object's omap size.
   */
  void rados_read_op_omap_get_vals2(Pointer op, byte[] startAfter, byte[] filterPrefix,
      long maxReturn, PointerByReference iter, com.sun.jna.ptr.ByteByReference pmore,
      IntByReference prval);

  /** A synchronous read of a small object (the index's description). */
  int rados_read(Pointer io, byte[] oid, Pointer buf, NativeLong len, long off);

  int rados_omap_get_next2(Pointer iter, PointerByReference key, PointerByReference val,
      NativeLongByReference keyLen, NativeLongByReference valLen);

  void rados_omap_get_end(Pointer iter);
}

package io.blobfs.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link BlobStoreContract} plus the semantics of {@link TransactionalBlobStore#commit}. */
public abstract class TransactionalBlobStoreContract extends BlobStoreContract {

  private TransactionalBlobStore tx() {
    return (TransactionalBlobStore) store;
  }

  @Test
  void aCommitAppliesAllOrNothing() throws IOException {
    tx().commit(List.of()); // nothing to do is not an error
    store.put("n/a", utf8("1"), PutMode.CREATE);
    long a = store.stat("n/a").version();
    store.put("n/b", utf8("2"), PutMode.CREATE);
    // The last step conflicts (an exclusive put over an existing blob): nothing applies.
    assertThrows(TransactionConflictException.class, () -> tx().commit(List.of(
        new BlobMutation.Delete("n/a", a),
        new BlobMutation.Put("n/c", utf8("3"), PutMode.OVERWRITE),
        new BlobMutation.Put("n/b", utf8("x"), PutMode.CREATE))));
    assertArrayEquals(new byte[] {'1'}, store.readFully("n/a", 0, 1));
    assertArrayEquals(new byte[] {'2'}, store.readFully("n/b", 0, 1));
    assertFalse(store.stat("n/c").exists());

    // The shape of a rename: the new name created exclusively, the old one deleted.
    tx().commit(List.of(new BlobMutation.Delete("n/a", a),
        new BlobMutation.Put("n/c", utf8("3"), PutMode.CREATE)));
    assertFalse(store.stat("n/a").exists());
    assertArrayEquals(new byte[] {'3'}, store.readFully("n/c", 0, 1));
  }

  @Test
  void aConditionalDeleteConflictsWhenItsBlobChangedOrIsGone() throws IOException {
    store.put("n/keep", utf8("k"), PutMode.CREATE);
    store.put("n/gone", utf8("g"), PutMode.CREATE);
    long gone = store.stat("n/gone").version();
    store.put("n/moved", utf8("m"), PutMode.CREATE);
    long moved = store.stat("n/moved").version();
    store.put("n/moved", utf8("M"), PutMode.OVERWRITE);
    assertThrows(TransactionConflictException.class, () -> tx().commit(List.of(
        new BlobMutation.Put("n/keep", utf8("changed"), PutMode.OVERWRITE),
        new BlobMutation.Delete("n/moved", moved))));
    assertArrayEquals(new byte[] {'M'}, store.readFully("n/moved", 0, 1));
    assertTrue(store.delete("n/gone"));
    assertThrows(TransactionConflictException.class, () -> tx().commit(List.of(
        new BlobMutation.Put("n/keep", utf8("changed"), PutMode.OVERWRITE),
        new BlobMutation.Delete("n/gone", gone))));
    assertArrayEquals(new byte[] {'k'}, store.readFully("n/keep", 0, 1));
    // Without a version, deleting an absent blob is not a conflict.
    tx().commit(List.of(new BlobMutation.Delete("n/gone", BlobMutation.ANY_VERSION),
        new BlobMutation.Put("n/keep", ByteBuffer.wrap(new byte[] {'z'}), PutMode.OVERWRITE)));
    assertArrayEquals(new byte[] {'z'}, store.readFully("n/keep", 0, 1));
  }

  @Test
  void aCheckConflictsUnlessItsBlobIsAtTheVersionOrAbsentAsAsked() throws IOException {
    store.put("d/lock", utf8("l"), PutMode.CREATE);
    long lock = store.stat("d/lock").version();
    // A check of absence fails on a present blob; a check of a stale version fails.
    assertThrows(TransactionConflictException.class, () -> tx().commit(List.of(
        new BlobMutation.Check("d/lock", BlobMutation.ABSENT),
        new BlobMutation.Put("n/a", utf8("1"), PutMode.CREATE))));
    store.put("d/lock", utf8("L"), PutMode.OVERWRITE);
    assertThrows(TransactionConflictException.class, () -> tx().commit(List.of(
        new BlobMutation.Check("d/lock", lock),
        new BlobMutation.Put("n/a", utf8("1"), PutMode.CREATE))));
    assertFalse(store.stat("n/a").exists());
    // A check that holds changes nothing of its own blob.
    long now = store.stat("d/lock").version();
    tx().commit(List.of(new BlobMutation.Check("d/lock", now),
        new BlobMutation.Put("n/a", utf8("1"), PutMode.CREATE)));
    assertArrayEquals(new byte[] {'L'}, store.readFully("d/lock", 0, 1));
    assertTrue(store.stat("d/lock").version() == now);
    assertTrue(store.delete("d/lock"));
    tx().commit(List.of(new BlobMutation.Check("d/lock", BlobMutation.ABSENT),
        new BlobMutation.Put("n/b", utf8("2"), PutMode.CREATE)));
    assertFalse(store.stat("d/lock").exists());
    assertArrayEquals(new byte[] {'2'}, store.readFully("n/b", 0, 1));
  }
}

package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.FsPath;
import org.junit.jupiter.api.Test;

class InodeTableTest {

  @Test
  void idIsTheHashOfThePathInEveryTable() {
    FsPath p = FsPath.parse("/a/b");
    assertEquals(InodeTable.hash(p), new InodeTable().lookup(p).id);
    assertEquals(new InodeTable().lookup(p).id, new InodeTable().lookup(p).id);
    assertNotEquals(InodeTable.hash(p), InodeTable.hash(FsPath.parse("/a/c")));
  }

  @Test
  void collidingPathsGetDistinctIds() {
    InodeTable t = new InodeTable(p -> 42);
    InodeTable.Node a = t.lookup(FsPath.parse("/a"));
    InodeTable.Node b = t.lookup(FsPath.parse("/b"));
    assertEquals(42, a.id);
    assertEquals(43, b.id);
    assertSame(b, t.get(43));
    assertSame(a, t.find(FsPath.parse("/a")));
  }

  @Test
  void rootAndZeroAreNeverHandedOut() {
    InodeTable t = new InodeTable(p -> 0);
    long id = t.lookup(FsPath.parse("/x")).id;
    assertTrue(id > 1, "id " + id);
  }

  @Test
  void forgetDropsTheNodeAfterTheLastReference() {
    InodeTable t = new InodeTable();
    FsPath p = FsPath.parse("/f");
    long id = t.lookup(p).id;
    t.lookup(p);
    assertEquals(false, t.forget(id, 1));
    assertEquals(true, t.forget(id, 1));
    assertNull(t.get(id));
    assertNull(t.find(p));
  }

  @Test
  void renameMovesTheNodeAndEverythingUnderItKeepingIds() {
    InodeTable t = new InodeTable();
    InodeTable.Node dir = t.lookup(FsPath.parse("/d"));
    InodeTable.Node file = t.lookup(FsPath.parse("/d/x"));
    InodeTable.Node replaced = t.lookup(FsPath.parse("/e"));
    t.rename(FsPath.parse("/d"), FsPath.parse("/e"));
    assertEquals(FsPath.parse("/e"), dir.path);
    assertEquals(FsPath.parse("/e/x"), file.path);
    assertSame(file, t.find(FsPath.parse("/e/x")));
    assertSame(dir, t.find(FsPath.parse("/e")));
    assertTrue(replaced.unlinked);
    assertNull(t.find(FsPath.parse("/d/x")));
  }
}

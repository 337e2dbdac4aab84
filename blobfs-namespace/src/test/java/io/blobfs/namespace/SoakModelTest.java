package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.SoakModel.Kind;
import io.blobfs.namespace.SoakModel.Op;
import io.blobfs.namespace.SoakModel.Reach;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The soak test's model accepts what some order of racing operations gives, and no more. */
class SoakModelTest {
  private static FsPath p(String s) {
    return FsPath.parse(s);
  }

  private static Op op(Kind kind, String a, String b, boolean flag, long start, long end) {
    Op op = new Op(kind, p(a), b == null ? null : p(b), flag, 0, start, null);
    op.end = end;
    return op;
  }

  private static Op rename(String a, String b, long start, long end) {
    return op(Kind.RENAME, a, b, false, start, end);
  }

  @Test
  void aRenameThatCouldActAfterTheWriteArrivedMovesIt() {
    List<Op> renames = List.of(rename("/a", "/b", 5, 9));
    assertEquals(Reach.YES, SoakModel.canReach(
        p("/a/f"), 7, p("/b/f"), false, Long.MAX_VALUE, renames, 8));
    assertEquals(Reach.YES, SoakModel.canReach(
        p("/a/f"), 7, p("/b/a/f"), false, Long.MAX_VALUE, renames, 8),
        "into /b when /b is a directory");
    assertEquals(Reach.NO, SoakModel.canReach(
        p("/a/f"), 9, p("/b/f"), false, Long.MAX_VALUE, renames, 8),
        "the rename had ended when the write arrived");
    assertEquals(Reach.NO, SoakModel.canReach(
        p("/a/f"), 1, p("/c/f"), false, Long.MAX_VALUE, renames, 8));
  }

  @Test
  void renamesChainOnlyInAnOrderTheirTimesAllow() {
    List<Op> forward = List.of(rename("/a/f", "/b/f", 1, 3), rename("/b", "/c", 2, 4));
    assertEquals(Reach.YES, SoakModel.canReach(
        p("/a/f"), 0, p("/c/f"), false, Long.MAX_VALUE, forward, 8));
    List<Op> tooEarly = List.of(rename("/a/f", "/b/f", 5, 6), rename("/b", "/c", 1, 3));
    assertEquals(Reach.NO, SoakModel.canReach(
        p("/a/f"), 0, p("/c/f"), false, Long.MAX_VALUE, tooEarly, 8));
  }

  @Test
  void aSearchThatWouldGoDeeperThanItsBoundCannotTell() {
    List<Op> renames = List.of(rename("/a", "/b/c/d", 1, 2));
    assertEquals(Reach.UNKNOWN, SoakModel.canReach(
        p("/a/f"), 0, p("/b/c/d/f"), false, Long.MAX_VALUE, renames, 1));
  }

  @Test
  void aRecursiveDeleteOfAnyDirectoryTheWriteMayReachMayRemoveIt() {
    List<Op> renames = List.of(rename("/a", "/b", 1, 2));
    SoakModel.Write w = new SoakModel.Write(1, p("/a/f"), 100, false);
    assertTrue(SoakModel.destroyable(p("/a/f"), 0, w,
        List.of(op(Kind.DELETE, "/b", null, true, 3, 4)), renames, 8));
    assertFalse(SoakModel.destroyable(p("/a/f"), 0, w,
        List.of(op(Kind.DELETE, "/b", null, false, 3, 4)), renames, 8),
        "a non-recursive delete of the directory removes no file");
    assertFalse(SoakModel.destroyable(p("/a/f"), 0, w,
        List.of(op(Kind.DELETE, "/c", null, true, 3, 4)), renames, 8));
  }
}

package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FsPathTest {
  @Test
  void parsesAndNormalisesATrailingSlash() {
    assertEquals("/a/b", FsPath.parse("/a/b/").toString());
    assertEquals("b", FsPath.parse("/a/b").name());
    assertEquals(FsPath.parse("/a"), FsPath.parse("/a/b").parent());
    assertTrue(FsPath.parse("/").isRoot());
    assertEquals(FsPath.parse("/x/b/c"), FsPath.parse("/a/b/c").rebase(FsPath.parse("/a"),
        FsPath.parse("/x")));
    assertTrue(FsPath.parse("/a/b").isAtOrUnder(FsPath.parse("/a")));
    assertFalse(FsPath.parse("/ab").isAtOrUnder(FsPath.parse("/a")));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "a/b", "/a//b", "/a/./b", "/a/../b", "/..", "/a\u0000b",
      "/a\nb", "/a\u007fb", "//", "/p/a\uD800", "/p/a\uDC00", "/p/\uDC00\uD83D", "/a\uD800/b"})
  void rejectsWhatCannotBeAKey(String bad) {
    IllegalPathException e = assertThrows(IllegalPathException.class, () -> FsPath.parse(bad));
    assertFalse(e.getMessage().chars().anyMatch(c -> c < 0x20 && c != '\n' || c == 0x7f),
        "the message itself carries no control characters");
  }

  /**
   * A lone surrogate has no UTF-8 form: RADOS and Týr's wire encoding turn it into '?', so
   * "/p/a" + U+D800, "/p/a" + U+DC00 and "/p/a?" would share one key. A pair is one
   * character and stays allowed.
   */
  @Test
  void loneSurrogatesAreRejectedAndPairsKept() {
    assertEquals("a\uD83D\uDE00", FsPath.parse("/p/a\uD83D\uDE00").name());
    assertEquals("a?", FsPath.parse("/p/a?").name());
    IllegalPathException e = assertThrows(IllegalPathException.class,
        () -> FsPath.parse("/p").child("a\uD800"));
    assertTrue(e.getMessage().contains("U+D800"), e.getMessage());
    assertFalse(e.getMessage().chars().anyMatch(c -> Character.isSurrogate((char) c)),
        "the message itself is valid UTF-16: " + e.getMessage());
  }

  @Test
  void keyLengthIsCheckedAgainstTheStoreLimit() {
    KeyLayout layout = new KeyLayout(new io.blobfs.store.StoreLimits(32, 1, 1));
    layout.checkPath(FsPath.parse("/" + "a".repeat(29))); // "n/" + 29 + "/" = 32 bytes
    assertThrows(IllegalPathException.class,
        () -> layout.checkPath(FsPath.parse("/" + "a".repeat(30))));
  }
}

package io.blobfs.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Property tests of the escaping, over random names drawn mostly from the characters that
 * matter (the separator, the escape, '/', ':', '.', control characters, hex digits) and
 * some Unicode, supplementary characters included. Seeded: a failure names its input.
 */
class FlatNamesTest {
  private static final int RUNS = 20_000;
  private static final String TRICKY = " %/:.\u0000\u0001\t\n\u001f\u007f!\"#$&'*+,;<=>?@[\\]^`{|}~";
  private static final String PLAIN = "abcAZ09-_";
  private static final String[] UNICODE = {"é", "ü", "中", "文", "\u00a0", "\u2028", "\ud83d\ude00",
      "\ud834\udd1e", "\uffff"};

  private final Random random = new Random(20240611);

  @Test
  void examples() {
    assertEquals("foo bar", FlatNames.toFlat("/foo/bar"));
    assertEquals("a%20b c", FlatNames.toFlat("/a b/c"));
    assertEquals("100%25 x%3Ay", FlatNames.toFlat("/100%/x:y"));
    assertEquals("%2E %2E%2E .x", FlatNames.toFlat("/./../.x"));
    assertEquals("tab%09 nl%0A del%7F", FlatNames.toFlat("/tab\t/nl\n/del\u007f"));
    assertEquals(Optional.of("/a b/c"), FlatNames.toPath("a%20b c"));
    assertEquals("", FlatNames.childPrefix(null));
    assertEquals("a ", FlatNames.childPrefix("a"));
    assertEquals(List.of("b", "c%20d"), FlatNames.relativeComponents("a b c%20d", "a "));
  }

  @Test
  void anEscapedComponentRoundTripsAndHoldsNoSeparatorSlashColonOrControl() {
    for (int i = 0; i < RUNS; i++) {
      String component = randomComponent();
      String escaped = FlatNames.escape(component);
      assertEquals(Optional.of(component), FlatNames.unescape(escaped), show(component));
      for (int j = 0; j < escaped.length(); j++) {
        char c = escaped.charAt(j);
        assertTrue(c > ' ' && c != '/' && c != ':' && c != 0x7f, show(component) + " -> " + escaped);
      }
      assertFalse(escaped.equals(".") || escaped.equals(".."), show(component));
    }
  }

  @Test
  void aPathRoundTripsThroughItsFlatName() {
    for (int i = 0; i < RUNS; i++) {
      String path = randomPath();
      assertEquals(Optional.of(path), FlatNames.toPath(FlatNames.toFlat(path)), show(path));
    }
  }

  @Test
  void differentPathsNeverShareAFlatName() {
    Map<String, String> seen = new HashMap<>();
    // Short names over a small alphabet, so that near misses ("a b" against a/b) come up.
    for (int i = 0; i < 200_000; i++) {
      String path = randomPath(3, 3, " %/ab.:");
      String previous = seen.putIfAbsent(FlatNames.toFlat(path), path);
      assertTrue(previous == null || previous.equals(path),
          show(previous) + " and " + show(path) + " share " + FlatNames.toFlat(path));
    }
    assertTrue(seen.size() > 10_000, "the generator made too few distinct paths: " + seen.size());
  }

  /** The reverse of injectivity: a name that decodes is the one spelling of its path. */
  @Test
  void everyNameThatDecodesIsTheCanonicalSpellingOfItsPath() {
    String alphabet = " %ab2E0F:.";
    int decoded = 0;
    for (int i = 0; i < RUNS * 5; i++) {
      StringBuilder s = new StringBuilder();
      int n = 1 + random.nextInt(8);
      for (int j = 0; j < n; j++) {
        s.append(alphabet.charAt(random.nextInt(alphabet.length())));
      }
      Optional<String> path = FlatNames.toPath(s.toString());
      if (path.isPresent()) {
        decoded++;
        assertEquals(s.toString(), FlatNames.toFlat(path.get()), show(s.toString()));
      }
    }
    assertTrue(decoded > 1000, "too few decodable names: " + decoded);
  }

  @Test
  void namesNoPathMapsToAreRefused() {
    for (String bad : new String[] {"", " ", "a ", " a", "a  b", "%", "%2", "%2e", "%41", "%ZZ",
        ".", "..", "%2E%2E%2E", "a:b", "a/b", "x\ty", "%2Ex", "a%2Fb"}) {
      assertEquals(Optional.empty(), FlatNames.toPath(bad), show(bad));
    }
  }

  @Test
  void aPathIsUnderADirectoryExactlyWhenItsFlatNameHasTheDirectorysPrefix() {
    for (int i = 0; i < RUNS; i++) {
      String dir = randomPath(2, 3, " %/ab");
      String path = random.nextBoolean() ? dir + randomPath(2, 3, " %/ab") : randomPath(3, 3, " %/ab");
      boolean under = path.startsWith(dir + "/");
      assertEquals(under, FlatNames.toFlat(path).startsWith(FlatNames.childPrefix(FlatNames.toFlat(dir))),
          show(dir) + " / " + show(path));
    }
  }

  /** Names that need no escape keep the order of their paths (component by component). */
  @Test
  void flatNamesSortAsTheirPathsWhenNothingIsEscaped() {
    String alphabet = "!#ab-~é/"; // no "." or "..": those are escaped
    for (int i = 0; i < RUNS; i++) {
      String p = randomPath(3, 3, alphabet);
      String q = randomPath(3, 3, alphabet);
      assertEquals(Integer.signum(comparePaths(p, q)),
          Integer.signum(FlatNames.toFlat(p).compareTo(FlatNames.toFlat(q))),
          show(p) + " vs " + show(q));
    }
  }

  @Test
  void badPathsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> FlatNames.toFlat("/"));
    assertThrows(IllegalArgumentException.class, () -> FlatNames.toFlat("a/b"));
    assertThrows(IllegalArgumentException.class, () -> FlatNames.toFlat("/a//b"));
    assertThrows(IllegalArgumentException.class, () -> FlatNames.escape(""));
  }

  private static int comparePaths(String p, String q) {
    String[] a = p.substring(1).split("/");
    String[] b = q.substring(1).split("/");
    for (int i = 0; i < Math.min(a.length, b.length); i++) {
      int c = a[i].compareTo(b[i]);
      if (c != 0) {
        return c;
      }
    }
    return Integer.compare(a.length, b.length);
  }

  private String randomComponent() {
    StringBuilder s = new StringBuilder();
    int n = 1 + random.nextInt(6);
    for (int i = 0; i < n; i++) {
      int kind = random.nextInt(3);
      if (kind == 0) {
        s.append(TRICKY.charAt(random.nextInt(TRICKY.length())));
      } else if (kind == 1) {
        s.append(PLAIN.charAt(random.nextInt(PLAIN.length())));
      } else {
        s.append(UNICODE[random.nextInt(UNICODE.length)]);
      }
    }
    String c = s.toString();
    if (random.nextInt(20) == 0) {
      c = random.nextBoolean() ? "." : "..";
    }
    return c;
  }

  private String randomPath() {
    StringBuilder p = new StringBuilder();
    int depth = 1 + random.nextInt(4);
    for (int i = 0; i < depth; i++) {
      p.append('/').append(randomComponent().replace('/', '_'));
    }
    return p.toString();
  }

  /** A path of up to {@code depth} components of up to {@code length} chars from {@code alphabet}. */
  private String randomPath(int depth, int length, String alphabet) {
    String chars = alphabet.replace("/", "");
    List<String> parts = new ArrayList<>();
    int d = 1 + random.nextInt(depth);
    for (int i = 0; i < d; i++) {
      StringBuilder s = new StringBuilder();
      int n = 1 + random.nextInt(length);
      for (int j = 0; j < n; j++) {
        s.append(chars.charAt(random.nextInt(chars.length())));
      }
      parts.add(s.toString());
    }
    return "/" + String.join("/", parts);
  }

  private static String show(String s) {
    if (s == null) {
      return "null";
    }
    StringBuilder out = new StringBuilder("\"");
    s.codePoints().forEach(cp -> {
      if (cp < 0x20 || cp == 0x7f || cp > 0x7e) {
        out.append(String.format("\\u{%x}", cp));
      } else {
        out.append((char) cp);
      }
    });
    return out.append('"').toString();
  }
}

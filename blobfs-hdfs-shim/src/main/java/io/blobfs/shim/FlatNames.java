package io.blobfs.shim;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The mapping between a hierarchical path and its one flat name in the root of the
 * underlying file system: {@code /foo/bar} is stored as {@code "foo bar"}, the paper's
 * rule (section 7), with each path component escaped so that the mapping is injective and
 * reversible.
 *
 * <p><b>The escaping.</b> Components are joined by {@link #SEPARATOR}, a space. Inside a
 * component, {@code %XX} (two upper-case hex digits) stands for one escaped character;
 * escaped are every character up to and including the space (the separator and the
 * control characters), {@code %} (the escape), {@code /} and {@code :} (neither is allowed
 * in an HDFS name, and a {@code :} makes Hadoop's {@code Path} read a scheme), and DEL. A
 * component that is exactly {@code .} or {@code ..} is written {@code %2E} or
 * {@code %2E%2E}, since those names mean something else to every file system. Everything
 * else, Unicode included, is kept as it is. So a flat name never holds a {@code /}, a
 * {@code :} or a control character, a separator in it always separates, and a
 * {@code %} always starts an escape: decoding is unambiguous.
 *
 * <p><b>Prefixes.</b> The names under directory {@code /a} are exactly the flat names that
 * start with {@code flat(/a) + " "}: a directory's listing or deletion is a prefix filter
 * over a scan of the root, and a component's escape never contains the separator, so
 * {@code /a b/c} (flat {@code "a%20b c"}) is not under {@code /a}.
 *
 * <p><b>Order.</b> The separator sorts below every character left unescaped, so for paths
 * whose components need no escape the flat names sort exactly as the paths do component by
 * component ({@code /a/z} before {@code /a!}, as {@code "a z" < "a!"}), and a sorted scan of
 * the root (HDFS lists sorted) gives each directory's entries in the order HDFS would list
 * them. An escaped character sorts where {@code %} does instead of where it would; nothing
 * relies on order, only on prefixes.
 */
public final class FlatNames {
  /** Joins the escaped components of a path into one flat name. */
  public static final char SEPARATOR = ' ';
  /** Starts an escape: {@code %XX}. */
  public static final char ESCAPE = '%';

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private FlatNames() {}

  /**
   * The flat name of an absolute path ({@code "/a/b"}); the root has none.
   *
   * @throws IllegalArgumentException for the root, a relative path or an empty component
   */
  public static String toFlat(String absolutePath) {
    if (!absolutePath.startsWith("/") || absolutePath.equals("/")) {
      throw new IllegalArgumentException("not an absolute path below the root: '"
          + absolutePath + "'");
    }
    String[] parts = absolutePath.substring(1).split("/", -1);
    StringBuilder out = new StringBuilder(absolutePath.length() + 8);
    for (String part : parts) {
      if (part.isEmpty()) {
        throw new IllegalArgumentException("empty component in '" + absolutePath + "'");
      }
      if (out.length() > 0) {
        out.append(SEPARATOR);
      }
      escapeInto(part, out);
    }
    return out.toString();
  }

  /** The path a flat name stands for ({@code "/a/b"}), or empty if no path maps to it. */
  public static Optional<String> toPath(String flat) {
    if (flat.isEmpty()) {
      return Optional.empty();
    }
    StringBuilder out = new StringBuilder(flat.length() + 1);
    for (String escaped : flat.split(String.valueOf(SEPARATOR), -1)) {
      Optional<String> part = unescape(escaped);
      // An escaped '/' decodes, but no path component holds one: "a%2Fb" is not /a/b.
      if (part.isEmpty() || part.get().indexOf('/') >= 0) {
        return Optional.empty();
      }
      out.append('/').append(part.get());
    }
    return Optional.of(out.toString());
  }

  /**
   * What every flat name under the directory with flat name {@code dirFlat} starts with;
   * {@code null} stands for the root, under which every flat name lies.
   */
  public static String childPrefix(String dirFlat) {
    return dirFlat == null ? "" : dirFlat + SEPARATOR;
  }

  /**
   * The escaped components of what follows {@code prefix} in {@code flat} (which must
   * start with it): the path of the entry relative to that directory.
   */
  public static List<String> relativeComponents(String flat, String prefix) {
    List<String> out = new ArrayList<>();
    int from = prefix.length();
    while (true) {
      int next = flat.indexOf(SEPARATOR, from);
      if (next < 0) {
        out.add(flat.substring(from));
        return out;
      }
      out.add(flat.substring(from, next));
      from = next + 1;
    }
  }

  /** One component, escaped: never empty, never holds the separator or a '/'. */
  public static String escape(String component) {
    if (component.isEmpty()) {
      throw new IllegalArgumentException("empty path component");
    }
    StringBuilder out = new StringBuilder(component.length() + 4);
    escapeInto(component, out);
    return out.toString();
  }

  private static void escapeInto(String component, StringBuilder out) {
    if (component.equals(".") || component.equals("..")) {
      for (int i = 0; i < component.length(); i++) {
        appendEscape('.', out);
      }
      return;
    }
    for (int i = 0; i < component.length(); i++) {
      char c = component.charAt(i);
      if (mustEscape(c)) {
        appendEscape(c, out);
      } else {
        out.append(c);
      }
    }
  }

  /**
   * The component an escaped one stands for, or empty if {@link #escape} never produces
   * {@code escaped}: a bad or lower-case escape, an escape of a character that is kept as
   * it is, or a raw character that would have been escaped. Refusing those keeps the
   * mapping one to one, so two different names in the root never decode to one path.
   */
  public static Optional<String> unescape(String escaped) {
    if (escaped.isEmpty()) {
      return Optional.empty();
    }
    if (escaped.equals("%2E") || escaped.equals("%2E%2E")) {
      return Optional.of(escaped.length() == 3 ? "." : "..");
    }
    StringBuilder out = new StringBuilder(escaped.length());
    for (int i = 0; i < escaped.length(); i++) {
      char c = escaped.charAt(i);
      if (c != ESCAPE) {
        if (mustEscape(c)) {
          return Optional.empty();
        }
        out.append(c);
        continue;
      }
      if (i + 2 >= escaped.length()) {
        return Optional.empty();
      }
      int hi = hexValue(escaped.charAt(i + 1));
      int lo = hexValue(escaped.charAt(i + 2));
      if (hi < 0 || lo < 0) {
        return Optional.empty();
      }
      char decoded = (char) (hi * 16 + lo);
      if (!mustEscape(decoded)) {
        return Optional.empty();
      }
      out.append(decoded);
      i += 2;
    }
    String component = out.toString();
    // "." and ".." have their own spelling above; written any other way they are not ours.
    return component.equals(".") || component.equals("..")
        ? Optional.empty() : Optional.of(component);
  }

  static boolean mustEscape(char c) {
    return c <= SEPARATOR || c == ESCAPE || c == '/' || c == ':' || c == 0x7F;
  }

  private static void appendEscape(char c, StringBuilder out) {
    out.append(ESCAPE).append(HEX[(c >> 4) & 0xF]).append(HEX[c & 0xF]);
  }

  /** Upper-case only: with one spelling per character, decoding stays one to one. */
  private static int hexValue(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  }
}

package io.blobfs.namespace;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * An absolute, normalised path in a BlobFS namespace: "/" or "/a/b". Construction
 * rejects what could not round-trip through a flat key: empty, "." and ".." components,
 * control characters, and unpaired UTF-16 surrogates (no UTF-8 form).
 */
public final class FsPath implements Comparable<FsPath> {
  public static final FsPath ROOT = new FsPath(List.of());

  private final List<String> components;
  private final String text;

  private FsPath(List<String> components) {
    this.components = components;
    this.text = components.isEmpty() ? "/" : "/" + String.join("/", components);
  }

  /**
   * Parses an absolute path. A single trailing slash is allowed ("/a/" is "/a");
   * anything else odd is an {@link IllegalPathException}.
   */
  public static FsPath parse(String path) {
    Objects.requireNonNull(path, "path");
    if (path.isEmpty() || path.charAt(0) != '/') {
      throw new IllegalPathException(path, "not an absolute path");
    }
    if (path.equals("/")) {
      return ROOT;
    }
    String body = path.endsWith("/") ? path.substring(1, path.length() - 1) : path.substring(1);
    List<String> parts = Arrays.asList(body.split("/", -1));
    for (String part : parts) {
      checkComponent(path, part);
    }
    return new FsPath(List.copyOf(parts));
  }

  private static void checkComponent(String path, String part) {
    if (part.isEmpty()) {
      throw new IllegalPathException(path, "empty path component");
    }
    if (part.equals(".") || part.equals("..")) {
      throw new IllegalPathException(path, "relative component '" + part + "'");
    }
    for (int i = 0; i < part.length(); i++) {
      char c = part.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        throw new IllegalPathException(path, String.format(
            "control character U+%04X at component '%s'", (int) c,
            IllegalPathException.printable(part)));
      }
      if (Character.isHighSurrogate(c) && i + 1 < part.length()
          && Character.isLowSurrogate(part.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        // Not encodable in UTF-8: the stores write '?' for it, so it would share a key.
        throw new IllegalPathException(path, String.format(
            "unpaired UTF-16 surrogate U+%04X at component '%s'", (int) c,
            IllegalPathException.printable(part)));
      }
    }
  }

  public boolean isRoot() {
    return components.isEmpty();
  }

  /** The last component; "" for the root. */
  public String name() {
    return isRoot() ? "" : components.get(components.size() - 1);
  }

  /** The parent; the root's parent is null. */
  public FsPath parent() {
    return isRoot() ? null : new FsPath(components.subList(0, components.size() - 1));
  }

  public FsPath child(String name) {
    checkComponent(text + "/" + name, name);
    List<String> c = new ArrayList<>(components.size() + 1);
    c.addAll(components);
    c.add(name);
    return new FsPath(List.copyOf(c));
  }

  public int depth() {
    return components.size();
  }

  /** True if this is {@code other} or lies below it. */
  public boolean isAtOrUnder(FsPath other) {
    return other.isRoot() || text.equals(other.text) || text.startsWith(other.text + "/");
  }

  /** This path with the leading {@code from} replaced by {@code to}. */
  public FsPath rebase(FsPath from, FsPath to) {
    if (!isAtOrUnder(from)) {
      throw new IllegalArgumentException(this + " is not under " + from);
    }
    List<String> c = new ArrayList<>(to.components);
    c.addAll(components.subList(from.components.size(), components.size()));
    return new FsPath(List.copyOf(c));
  }

  @Override
  public String toString() {
    return text;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof FsPath p && p.text.equals(text);
  }

  @Override
  public int hashCode() {
    return text.hashCode();
  }

  @Override
  public int compareTo(FsPath o) {
    return text.compareTo(o.text);
  }
}

package io.blobfs.bench;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * {@code --name value} command-line options with defaults. An unknown option, a missing
 * value or a malformed number is an {@link IllegalArgumentException} naming it.
 */
public final class Args {
  private final Map<String, String> values;

  private Args(Map<String, String> values) {
    this.values = values;
  }

  /**
   * Parses {@code args} against {@code defaults} (name without dashes → default value, or
   * null when the option is required). Only names present in {@code defaults} are allowed.
   */
  public static Args parse(String[] args, Map<String, String> defaults) {
    Map<String, String> v = new LinkedHashMap<>(defaults);
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--") || a.length() < 3) {
        throw new IllegalArgumentException("expected --option, got '" + a + "'; options: "
            + usage(defaults.keySet()));
      }
      String name = a.substring(2);
      String value = null;
      int eq = name.indexOf('=');
      if (eq >= 0) {
        value = name.substring(eq + 1);
        name = name.substring(0, eq);
      }
      if (!defaults.containsKey(name)) {
        throw new IllegalArgumentException("unknown option --" + name + "; options: "
            + usage(defaults.keySet()));
      }
      if (value == null) {
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("option --" + name + " needs a value");
        }
        value = args[++i];
      }
      v.put(name, value);
    }
    for (Map.Entry<String, String> e : v.entrySet()) {
      if (e.getValue() == null) {
        throw new IllegalArgumentException("option --" + e.getKey() + " is required");
      }
    }
    return new Args(Collections.unmodifiableMap(v));
  }

  private static String usage(Set<String> names) {
    StringBuilder sb = new StringBuilder();
    for (String n : names) {
      sb.append(sb.length() == 0 ? "" : " ").append("--").append(n);
    }
    return sb.toString();
  }

  public String get(String name) {
    String v = values.get(name);
    if (v == null) {
      throw new IllegalArgumentException("no option --" + name);
    }
    return v;
  }

  public int getInt(String name) {
    try {
      return Integer.parseInt(get(name).trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("option --" + name + " is not an integer: " + get(name), e);
    }
  }

  public long getLong(String name) {
    try {
      return Long.parseLong(get(name).trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("option --" + name + " is not an integer: " + get(name), e);
    }
  }

  /** A size such as {@code 4096}, {@code 512k}, {@code 32m} or {@code 1g} (powers of 1024). */
  public long getBytes(String name) {
    return parseBytes(name, get(name));
  }

  static long parseBytes(String name, String raw) {
    long n;
    try {
      n = org.apache.hadoop.util.StringUtils.TraditionalBinaryPrefix.string2long(raw.trim());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("option --" + name + " is not a size (e.g. 32m): " + raw, e);
    }
    if (n <= 0) {
      throw new IllegalArgumentException("option --" + name + " must be positive: " + raw);
    }
    return n;
  }
}

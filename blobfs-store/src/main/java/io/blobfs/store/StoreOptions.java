package io.blobfs.store;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.UnaryOperator;

/**
 * The settings of one store profile ({@code fs.blob.store.NAME.*} with the prefix cut
 * off), with typed getters that reject malformed values naming the full key.
 */
public final class StoreOptions {
  private final UnaryOperator<String> fullKeyOf;
  private final Map<String, String> values;

  public StoreOptions(String keyPrefix, Map<String, String> values) {
    this(values, key -> keyPrefix + key);
  }

  /** Options whose keys came from several places: {@code fullKeyOf} names each in errors. */
  public StoreOptions(Map<String, String> values, UnaryOperator<String> fullKeyOf) {
    this.fullKeyOf = fullKeyOf;
    this.values = new TreeMap<>(values);
  }

  public Map<String, String> asMap() {
    return java.util.Collections.unmodifiableMap(values);
  }

  public Optional<String> get(String key) {
    String v = values.get(key);
    return v == null || v.isBlank() ? Optional.empty() : Optional.of(v.trim());
  }

  public String getString(String key, String dflt) {
    return get(key).orElse(dflt);
  }

  public long getLong(String key, long dflt, long min, long max) {
    Optional<String> v = get(key);
    if (v.isEmpty()) {
      return dflt;
    }
    long parsed;
    try {
      parsed = Long.parseLong(v.get());
    } catch (NumberFormatException e) {
      throw bad(key, v.get(), "an integer");
    }
    return checkRange(key, parsed, min, max);
  }

  /** A byte count: plain digits or with a k/m/g/t suffix (powers of 1024). */
  public long getBytes(String key, long dflt, long min, long max) {
    Optional<String> v = get(key);
    return v.isEmpty() ? dflt : checkRange(key, parseBytes(fullKey(key), v.get()), min, max);
  }

  /** A duration: plain milliseconds, or a number with an ms/s/m/h/d suffix. */
  public Duration getDuration(String key, Duration dflt) {
    Optional<String> v = get(key);
    if (v.isEmpty()) {
      return dflt;
    }
    String s = v.get().toLowerCase(Locale.ROOT);
    try {
      Duration d;
      if (s.endsWith("ms")) {
        d = Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2).trim()));
      } else if (s.endsWith("s")) {
        d = Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1).trim()));
      } else if (s.endsWith("m")) {
        d = Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 1).trim()));
      } else if (s.endsWith("h")) {
        d = Duration.ofHours(Long.parseLong(s.substring(0, s.length() - 1).trim()));
      } else if (s.endsWith("d")) {
        d = Duration.ofDays(Long.parseLong(s.substring(0, s.length() - 1).trim()));
      } else {
        d = Duration.ofMillis(Long.parseLong(s));
      }
      if (d.isNegative() || d.isZero()) {
        throw bad(key, v.get(), "a positive duration");
      }
      return d;
    } catch (NumberFormatException e) {
      throw bad(key, v.get(), "a duration such as 30s or 500ms");
    }
  }

  public boolean getBoolean(String key, boolean dflt) {
    Optional<String> v = get(key);
    if (v.isEmpty()) {
      return dflt;
    }
    return switch (v.get().toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw bad(key, v.get(), "true or false");
    };
  }

  public String fullKey(String key) {
    return fullKeyOf.apply(key);
  }

  /** One of a fixed set of words, compared without case. */
  public String getChoice(String key, String dflt, java.util.List<String> allowed) {
    String v = getString(key, dflt).toLowerCase(Locale.ROOT);
    if (!allowed.contains(v)) {
      throw bad(key, v, "one of " + allowed);
    }
    return v;
  }

  private long checkRange(String key, long value, long min, long max) {
    if (value < min || value > max) {
      throw bad(key, Long.toString(value), "between " + min + " and " + max);
    }
    return value;
  }

  /** The error for a malformed value, naming the full key it was read from. */
  public IllegalArgumentException bad(String key, String value, String expected) {
    return new IllegalArgumentException(
        "bad value '" + value + "' for " + fullKey(key) + ": expected " + expected);
  }

  /** Parses "64m", "4 MiB", "1048576"; shared with the Hadoop adapter's own keys. */
  public static long parseBytes(String fullKey, String text) {
    String s = text.trim().toLowerCase(Locale.ROOT).replace("ib", "").replace("b", "");
    long mult = 1;
    if (!s.isEmpty()) {
      switch (s.charAt(s.length() - 1)) {
        case 'k' -> mult = 1L << 10;
        case 'm' -> mult = 1L << 20;
        case 'g' -> mult = 1L << 30;
        case 't' -> mult = 1L << 40;
        default -> mult = 1;
      }
      if (mult != 1) {
        s = s.substring(0, s.length() - 1).trim();
      }
    }
    try {
      long n = Long.parseLong(s);
      if (n < 0) {
        throw new NumberFormatException();
      }
      return Math.multiplyExact(n, mult);
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException(
          "bad value '" + text + "' for " + fullKey + ": expected a byte size such as 64m");
    }
  }
}

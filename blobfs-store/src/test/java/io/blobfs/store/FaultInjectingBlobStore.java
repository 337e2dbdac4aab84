package io.blobfs.store;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

/**
 * A store that forwards to another and misbehaves on cue, for tests of what the layers
 * above do when a call fails, or fails after it took effect, or is slow:
 *
 * <pre>{@code
 * FaultInjectingBlobStore faults = FaultInjectingBlobStore.over(memory);
 * BlobNamespace ns = new BlobNamespace(faults.store(), options, counters);
 * Fault lost = faults.on(Op.PUT).keys("n/f").applyThenFail();   // a timeout after the OSD applied it
 * faults.on(Op.DELETE).keys("d/.*").nth(2).always().failBefore();
 * Fault held = faults.on(Op.PUT).keys("n/g").pause();           // held until held.release()
 * }</pre>
 *
 * <p>{@link #store()} implements exactly the {@link BlobStore} mixins the wrapped store
 * implements ({@link TransactionalBlobStore}, {@link HeadScanning}, ...), less those named
 * as hidden: the layers above choose their code path with {@code instanceof}, so a wrapper
 * that added or dropped one would test another path than the backend's. Hiding
 * {@code TransactionalBlobStore} turns the in-memory store into a stand-in for RADOS.
 * That is why the store is a {@link Proxy} and not a class: one class per combination of
 * mixins would be needed otherwise.
 *
 * <p>A fault's key pattern is matched against the call's key: for a scan its prefix, for
 * a commit each mutation's key (any one matching is enough). Injected failures are
 * {@link StoreUnavailableException}s, as a backend reports a timeout; an asynchronous
 * call reports them through its future. Calls outside {@link Op} ({@code limits},
 * {@code close}) are forwarded untouched, and {@code readFully} goes through the faults
 * of the reads it makes.
 */
public final class FaultInjectingBlobStore {

  /** The store calls a fault can match. */
  public enum Op { STAT, READ, WRITE, PUT, TRUNCATE, DELETE, SCAN, COMMIT, HOSTS_OF }

  private static final Duration PAUSE_LIMIT = Duration.ofSeconds(30);

  private final BlobStore delegate;
  private final BlobStore store;
  private final List<Fault> faults = new CopyOnWriteArrayList<>();

  private FaultInjectingBlobStore(BlobStore delegate, Class<?>[] hidden) {
    this.delegate = delegate;
    Set<Class<?>> kept = new LinkedHashSet<>();
    kept.add(BlobStore.class);
    for (Class<?> c = delegate.getClass(); c != null; c = c.getSuperclass()) {
      collectMixins(c, hidden, kept);
    }
    this.store = (BlobStore) Proxy.newProxyInstance(delegate.getClass().getClassLoader(),
        kept.toArray(Class<?>[]::new), this::invoke);
  }

  /**
   * Wraps {@code delegate}; the store implements its mixins less {@code hidden} (and any
   * mixin extending one of them).
   */
  @SafeVarargs
  public static FaultInjectingBlobStore over(BlobStore delegate,
      Class<? extends BlobStore>... hidden) {
    if (Arrays.asList(hidden).contains(BlobStore.class)) {
      throw new IllegalArgumentException("BlobStore itself cannot be hidden");
    }
    return new FaultInjectingBlobStore(delegate, hidden);
  }

  /** The store to hand to the code under test. */
  public BlobStore store() {
    return store;
  }

  /** A new fault on calls of these kinds; it acts once a terminal method arms it. */
  public Fault on(Op first, Op... more) {
    return new Fault(EnumSet.of(first, more));
  }

  /** Disarms every fault and releases any call a pause holds. */
  public void clear() {
    for (Fault f : faults) {
      f.release();
    }
    faults.clear();
  }

  /**
   * One rule: which calls it matches (kinds, key pattern), on which of them it acts (the
   * {@link #nth} match counted from when it is armed, and with {@link #always} every
   * later one too), and what it does, set by the terminal method that arms it.
   */
  public final class Fault {
    private enum Action { FAIL_BEFORE, APPLY_THEN_FAIL, DELAY, PAUSE }

    private final Set<Op> ops;
    private Pattern keys = Pattern.compile(".*", Pattern.DOTALL);
    private int nth = 1;
    private boolean always;
    private Action action;
    private Duration delay;
    private final AtomicInteger matched = new AtomicInteger();
    private final AtomicInteger fired = new AtomicInteger();
    private final CountDownLatch reached = new CountDownLatch(1);
    private final CountDownLatch released = new CountDownLatch(1);

    private Fault(Set<Op> ops) {
      this.ops = ops;
    }

    /** Only calls whose key matches this regular expression, whole. */
    public Fault keys(String regex) {
      keys = Pattern.compile(regex, Pattern.DOTALL);
      return this;
    }

    /** Lets the first {@code n - 1} matching calls through; acts on the nth (from 1). */
    public Fault nth(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("nth counts from 1: " + n);
      }
      nth = n;
      return this;
    }

    /** Acts on every matching call from the nth on, not only on the nth. */
    public Fault always() {
      always = true;
      return this;
    }

    /** Arms it: the call fails and is not applied. */
    public Fault failBefore() {
      return arm(Action.FAIL_BEFORE);
    }

    /** Arms it: the call is applied, then fails as a timeout would, its answer lost. */
    public Fault applyThenFail() {
      return arm(Action.APPLY_THEN_FAIL);
    }

    /** Arms it: the caller's thread sleeps this long before the call is applied. */
    public Fault delay(Duration d) {
      delay = d;
      return arm(Action.DELAY);
    }

    /**
     * Arms it: the caller's thread is held before the call is applied until
     * {@link #release()}, so that a test can run something else in between; see
     * {@link #awaitReached()}. Only the first call it acts on is held.
     */
    public Fault pause() {
      return arm(Action.PAUSE);
    }

    /** How many calls it has acted on. */
    public int fired() {
      return fired.get();
    }

    /** Waits until a paused call is held; fails the test after 30 s. */
    public void awaitReached() throws InterruptedException {
      if (!reached.await(PAUSE_LIMIT.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new AssertionError("no call reached the pause within " + PAUSE_LIMIT);
      }
    }

    /** Lets a paused call go on (and any later one through at once). */
    public void release() {
      released.countDown();
    }

    private Fault arm(Action a) {
      if (action != null) {
        throw new IllegalStateException("this fault is armed already: " + action);
      }
      action = a;
      faults.add(this);
      return this;
    }

    private boolean firesOn(Op op, List<String> callKeys) {
      if (!ops.contains(op) || callKeys.stream().noneMatch(k -> keys.matcher(k).matches())) {
        return false;
      }
      int n = matched.incrementAndGet();
      if (n == nth || always && n > nth) {
        fired.incrementAndGet();
        return true;
      }
      return false;
    }

    /** Delays and pauses here; true if the call must fail after it is applied. */
    private boolean actBefore(Op op, List<String> callKeys) throws StoreUnavailableException {
      switch (action) {
        case FAIL_BEFORE -> throw injected(op, callKeys, "not applied");
        case APPLY_THEN_FAIL -> {
          return true;
        }
        case DELAY -> sleep(delay);
        case PAUSE -> {
          reached.countDown();
          try {
            if (!released.await(PAUSE_LIMIT.toMillis(), TimeUnit.MILLISECONDS)) {
              throw new AssertionError("a paused " + op + " was not released within "
                  + PAUSE_LIMIT);
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw injected(op, callKeys, "interrupted while paused");
          }
        }
      }
      return false;
    }
  }

  private Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    if (method.getDeclaringClass() == Object.class) {
      return switch (method.getName()) {
        case "equals" -> proxy == args[0];
        case "hashCode" -> System.identityHashCode(proxy);
        default -> "FaultInjectingBlobStore over " + delegate;
      };
    }
    Op op = opOf(method);
    if (op == null) {
      // readFully is made of reads: run it here so that faults reach its parts. Every other
      // call (closeScan, limits, close) goes to the store, whose own version may matter.
      return method.getName().equals("readFully")
          ? InvocationHandler.invokeDefault(proxy, method, args) : forward(method, args);
    }
    boolean async = CompletableFuture.class.isAssignableFrom(method.getReturnType());
    List<String> callKeys = keysOf(op, args);
    boolean failAfter = false;
    try {
      for (Fault f : faults) {
        if (f.firesOn(op, callKeys)) {
          failAfter |= f.actBefore(op, callKeys);
        }
      }
    } catch (StoreUnavailableException e) {
      if (async) {
        return CompletableFuture.failedFuture(e);
      }
      throw e;
    }
    Object result = forward(method, args);
    if (!failAfter) {
      return result;
    }
    StoreUnavailableException lost = injected(op, callKeys, "applied, answer lost");
    if (async) {
      return ((CompletableFuture<?>) result).handle((v, t) -> {
        throw new CompletionException(lost);
      });
    }
    throw lost;
  }

  private Object forward(Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(delegate, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static Op opOf(Method m) {
    return switch (m.getName()) {
      case "stat" -> Op.STAT;
      case "read", "readWithVersion" -> Op.READ;
      case "write" -> Op.WRITE;
      case "put", "putIfVersion" -> Op.PUT;
      case "truncate" -> Op.TRUNCATE;
      case "delete", "deleteIfVersion" -> Op.DELETE;
      case "scan", "scanWithHeads" -> Op.SCAN;
      case "commit" -> Op.COMMIT;
      case "hostsOf" -> Op.HOSTS_OF;
      default -> null;
    };
  }

  private static List<String> keysOf(Op op, Object[] args) {
    if (op == Op.COMMIT) {
      List<String> keys = new ArrayList<>();
      for (Object m : (List<?>) args[0]) {
        keys.add(((BlobMutation) m).key());
      }
      return keys;
    }
    return List.of((String) args[0]);
  }

  private static StoreUnavailableException injected(Op op, List<String> keys, String what) {
    return new StoreUnavailableException("injected fault: " + op + " " + keys + " (" + what
        + ")", null);
  }

  private static void collectMixins(Class<?> c, Class<?>[] hidden, Set<Class<?>> into) {
    for (Class<?> i : c.getInterfaces()) {
      if (BlobStore.class.isAssignableFrom(i) && Modifier.isPublic(i.getModifiers())
          && Arrays.stream(hidden).noneMatch(h -> h.isAssignableFrom(i))) {
        into.add(i);
      }
      collectMixins(i, hidden, into);
    }
  }

  private static void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

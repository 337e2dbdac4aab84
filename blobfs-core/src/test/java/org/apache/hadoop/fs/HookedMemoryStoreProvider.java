package org.apache.hadoop.fs;

import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreProvider;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Store type {@code memory-hooked}: the in-memory store of the same name, with the same
 * mixins, that runs a test's hook once, right before the next call that changes
 * something (a put, delete or commit). A test arms it to let "another client" act at an
 * exact point of an operation, without a hook in the code under test.
 */
public final class HookedMemoryStoreProvider implements BlobStoreProvider {
  public static final String TYPE = "memory-hooked";
  private static final AtomicReference<Runnable> BEFORE_NEXT_CHANGE = new AtomicReference<>();

  /** Runs {@code hook} before the next changing call of any store of this type. */
  public static void beforeNextChange(Runnable hook) {
    BEFORE_NEXT_CHANGE.set(hook);
  }

  @Override
  public String type() {
    return TYPE;
  }

  @Override
  public Set<String> optionKeys() {
    return Set.of();
  }

  @Override
  public BlobStore open(String storeName, StoreOptions options) {
    BlobStore memory = InMemoryBlobStoreProvider.named(storeName);
    Set<Class<?>> mixins = new LinkedHashSet<>();
    for (Class<?> c = memory.getClass(); c != null; c = c.getSuperclass()) {
      mixins.addAll(Set.of(c.getInterfaces()));
    }
    return (BlobStore) Proxy.newProxyInstance(BlobStore.class.getClassLoader(),
        mixins.toArray(Class<?>[]::new), (proxy, m, args) -> {
          String name = m.getName();
          if (name.equals("close")) {
            return null; // the named store outlives this view
          }
          if (name.startsWith("put") || name.startsWith("delete") || name.equals("commit")) {
            Runnable hook = BEFORE_NEXT_CHANGE.getAndSet(null);
            if (hook != null) {
              hook.run();
            }
          }
          try {
            return m.invoke(memory, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }
}

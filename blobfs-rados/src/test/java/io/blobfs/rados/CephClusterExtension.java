package io.blobfs.rados;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension that hands a test the Ceph cluster it asks for: a parameter of type
 * {@link CephTestCluster.Env}, by default the single-OSD cephx cluster, else the one
 * {@link Cluster} names: in Docker (Testcontainers) when the run asks for it, else the
 * native cluster, else the test is skipped saying why (see {@link CephTestCluster}).
 */
public final class CephClusterExtension implements ParameterResolver {
  /** Which cluster a test class or method wants. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target({ElementType.TYPE, ElementType.METHOD})
  public @interface Cluster {
    String layout() default "single";

    String auth() default "cephx";
  }

  @Override
  public boolean supportsParameter(ParameterContext p, ExtensionContext c) {
    return p.getParameter().getType() == CephTestCluster.Env.class;
  }

  @Override
  public Object resolveParameter(ParameterContext p, ExtensionContext c) {
    Cluster want = c.getTestMethod().map(m -> m.getAnnotation(Cluster.class))
        .orElseGet(() -> c.getRequiredTestClass().getAnnotation(Cluster.class));
    String layout = want == null ? "single" : want.layout();
    String auth = want == null ? "cephx" : want.auth();
    try {
      return CephTestCluster.start(layout, auth);
    } catch (java.io.IOException e) {
      throw new ParameterResolutionException("Ceph cluster " + layout + "-" + auth, e);
    }
  }
}

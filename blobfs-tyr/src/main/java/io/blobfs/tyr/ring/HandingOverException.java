package io.blobfs.tyr.ring;

import io.blobfs.tyr.api.ErrorCode;

/**
 * A node just UP again refused a request for a key it takes back from the members that
 * stood in for it, or a scan, while it waits for their last writes under the ring before
 * (its hand-over: at most a bound of seconds on the server). Nothing was done; unlike a
 * plain {@link WrongEpochException} no newer ring will route the request elsewhere, so a
 * client retries it after a pause for as long as its operation timeout allows.
 */
public final class HandingOverException extends WrongEpochException {
  private static final long serialVersionUID = 1L;

  public HandingOverException(String message, Ring ring) {
    super(ErrorCode.HANDING_OVER, message, ring);
  }
}

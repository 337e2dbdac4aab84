package io.blobfs.locality.ceph;

import io.blobfs.locality.crush.CrushMapException;

/** The OSD map kept changing while it was read: no consistent copy could be had. */
public class MapChangedException extends CrushMapException {
  private static final long serialVersionUID = 1L;

  public MapChangedException(String message) {
    super(message);
  }
}

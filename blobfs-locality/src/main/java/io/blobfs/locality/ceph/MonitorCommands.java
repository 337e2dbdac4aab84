package io.blobfs.locality.ceph;

import java.io.IOException;

/**
 * The monitor's command interface ({@code rados_mon_command}): a JSON command in, the text
 * of the reply out. A refused or failed command is an IOException.
 */
@FunctionalInterface
public interface MonitorCommands {
  String command(String json) throws IOException;
}
